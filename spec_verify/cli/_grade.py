"""``spec-verify grade PATH``: score a test suite by the planted bugs it catches."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spec_verify.cli._json_out import (
    STDOUT,
    add_json_option,
    atomic_write,
    json_problem,
    text_stream,
    versioned,
)
from spec_verify.cli._usage import EXIT_CODES_IN_ONE_LINE
from spec_verify.results import ExitCode

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``grade`` sub-command to the CLI."""
    parser = subparsers.add_parser(
        "grade",
        epilog=EXIT_CODES_IN_ONE_LINE,
        help="grade a pytest suite by the share of the catalogue's mutants it kills",
        description="Run the pytest suite at PATH against the clean reference (repeatedly: it must "
        "pass every time), a canary reference that fails everything (the suite must fail), "
        "decoy clean runs hidden among the mutants (it must pass), and each mutant of the "
        "catalogue in its own process, every run alike; detections are confirmed by a rerun. "
        "The grade is the share of mutants detected (docs/grading.md). The "
        "suite imports the contract as spec_verify.reference (or uses the plugin's spec_impl "
        "fixture). Exit code 0 when the suite was graded and the grade reaches --fail-under.",
    )
    parser.add_argument("path", metavar="PATH", help="a folder of tests or one test file "
                        "(with --submissions: a folder of submissions, one folder each)")
    parser.add_argument("--submissions", action="store_true",
                        help="PATH holds one folder per submission: grade each, print a "
                        "summary table (exit 0 when the batch ran, whatever the grades)")
    parser.add_argument("--csv", metavar="FILE",
                        help="with --submissions: one row per submission (grade, reason)")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="runs at a time (default: the available CPUs)")
    parser.add_argument("--mutants", default=None, metavar="IDS",
                        help="comma-separated mutant ids to grade against, built-in or from "
                        "--catalogue (default: the --catalogue file's, else the 36 built-in)")
    parser.add_argument("--catalogue", metavar="FILE", default=None,
                        help="an instructors' catalogue (JSON, docs/grading.md): its mutants "
                        "are graded (mix with built-in ones through --mutants); every entry "
                        "is checked first, its kill test run on it")
    add_json_option(parser, "a mutation-testing-elements report")
    parser.add_argument("--gradescope", metavar="FILE", help="write Gradescope's results.json")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    parser.add_argument("--html", metavar="FILE", help="write a self-contained HTML page: each "
                        "mutant's state and, for the ones missed, the pitfall's hint")
    parser.add_argument("--fail-under", type=float, default=0.0, metavar="PCT",
                        help="exit 1 when the grade is below PCT percent (default: 0)")
    parser.add_argument("--timeout-factor", type=float, default=5.0, metavar="F",
                        help="a run's time limit is max(--min-timeout, F x the clean run)")
    parser.add_argument("--min-timeout", type=float, default=10.0, metavar="S",
                        help="smallest time limit per run, in seconds (default: %(default)g)")
    parser.add_argument("--clean-timeout", type=float, default=600.0, metavar="S",
                        help="time limit of the clean run, in seconds (default: %(default)g)")
    parser.add_argument("--decoys", type=int, default=3, metavar="N",
                        help="clean runs hidden among the mutants, each must pass "
                        "(default: %(default)d)")
    parser.add_argument("--repeats", type=int, default=3, metavar="N",
                        help="clean runs, the first alone, the others shuffled among the mutants, "
                        "each must pass; a suite whose "
                        "result changes is refused as flaky (default: %(default)d)")
    parser.add_argument("--confirmations", type=int, default=2, metavar="N",
                        help="reruns of each detection on its mutant; a detection that does "
                        "not reproduce refuses the grade as flaky (default: %(default)d)")
    parser.add_argument("--clean-reruns", type=int, default=None, metavar="N",
                        help="clean runs shuffled with the confirmations, each must pass "
                        "(default: the fewest that keep a suite failing at random below 1 win "
                        "in 100, 13 with the other defaults: docs/grading.md)")
    parser.add_argument("--allow-unsealed", action="store_true",
                        help="grade even where the kernel refuses the namespaces that seal "
                        "each run off (a suite could then read the graded sampler; the "
                        "reports say what did not hold)")
    parser.add_argument("--short", action="store_true",
                        help="abbreviate failure messages in the table (reports stay full)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:  # noqa: PLR0911 (one return per exit code)
    """Grade, print the table, write the requested reports; 0 when graded and high enough."""
    from spec_verify.adapters._process import REPORT_FOLDERS
    from spec_verify.cli._usage import usage_line
    from spec_verify.errors import InvalidArgument
    from spec_verify.mutants.grader import grade
    from spec_verify.mutants.reports import terminal_report

    mutants = None if args.mutants is None else [m.strip() for m in args.mutants.split(",")]

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    shared = grading_options_problem("grade", args, mutants)
    if shared is not None:
        print(shared, file=sys.stderr)
        return ExitCode.USAGE_ERROR
    if args.submissions:
        return _batch(args, mutants, progress)
    problem = _usage_problem(args)
    if problem is not None:  # before the suite runs (minutes), not after
        print(f"spec-verify grade: error: {problem}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    # The report folders are read-only inside every sealed run (spec_verify/_sandbox.py).
    folders = [str(Path(t).expanduser().absolute().parent)
               for t in (args.json, args.gradescope, args.junit, args.html) if t and t != STDOUT]
    previous_folders = os.environ.get(REPORT_FOLDERS)
    os.environ[REPORT_FOLDERS] = json.dumps(folders)
    # SIGTERM ends the grading as Ctrl-C does: the runs killed, the temporary folder removed
    previous_term = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        result = grade(
            args.path, jobs=args.jobs, mutants=mutants, timeout_factor=args.timeout_factor,
            min_timeout=args.min_timeout, clean_timeout=args.clean_timeout, decoys=args.decoys,
            repeats=args.repeats, confirmations=args.confirmations,
            clean_reruns=args.clean_reruns, progress=progress,
            allow_unsealed=args.allow_unsealed, catalogue=args.catalogue,
        )
    except InvalidArgument as error:
        print(usage_line("grade", error, OPTION_BY_ARGUMENT), file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except _Terminated:
        print("spec-verify grade: interrupted by SIGTERM; no report was written",
              file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        if previous_folders is None:
            os.environ.pop(REPORT_FOLDERS, None)
        else:
            os.environ[REPORT_FOLDERS] = previous_folders
    print(terminal_report(result, full=not args.short), end="", file=text_stream(args))
    if not _write_reports(args, result):
        return ExitCode.USAGE_ERROR
    if not result.graded or 100 * result.grade < args.fail_under:
        return ExitCode.FAILED
    return ExitCode.PASSED


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so the grading unwinds (its pool closes)."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated


# The grader's argument names as the command line spells them.
OPTION_BY_ARGUMENT = {
    "jobs": "--jobs", "timeout_factor": "--timeout-factor", "min_timeout": "--min-timeout",
    "clean_timeout": "--clean-timeout", "decoys": "--decoys", "repeats": "--repeats",
    "confirmations": "--confirmations", "clean_reruns": "--clean-reruns",
    "mutants": "--mutants", "mutant": "--mutants", "catalogue": "--catalogue",
}


def grading_options_problem(command: str, args: argparse.Namespace,
                            mutants: list[str] | None) -> str | None:
    """The grader's own rules for the options ``grade`` and ``gradescope-bundle`` share,
    applied before any run (one usage line naming the option), or None."""
    from spec_verify.cli._usage import usage_line
    from spec_verify.errors import InvalidArgument
    from spec_verify.mutants.grader import _check_options, _selected

    jobs = getattr(args, "jobs", None)
    try:
        _check_options(1 if jobs is None else jobs, args.timeout_factor, args.min_timeout,
                       args.clean_timeout, args.decoys, args.repeats, args.confirmations,
                       args.clean_reruns)
        if mutants is not None and args.catalogue is None:  # with one, the grader checks
            _selected(mutants)
    except InvalidArgument as error:
        return usage_line(command, error, OPTION_BY_ARGUMENT)
    return None


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options of a single grade, found before any run, or None."""
    if args.csv:
        return "--csv needs --submissions"
    if not 0 <= args.fail_under <= 100:
        return (f"--fail-under {args.fail_under:g}: must be a percentage in [0, 100]; e.g. "
                "--fail-under 80")
    for option, target in (("--json", args.json), ("--gradescope", args.gradescope),
                           ("--junit", args.junit), ("--html", args.html)):  # fmt: skip
        problem = json_problem(target, option)
        if problem is not None:
            return problem
    return None


def _write_reports(args: argparse.Namespace, result: Any) -> bool:
    """Write --json, --gradescope, --junit and --html; False (said on stderr) when one cannot
    be."""
    from spec_verify.html_report import grade_html
    from spec_verify.mutants.reports import gradescope_results, junit_xml, mutation_testing_report

    writers: tuple[tuple[str | None, Callable[[], str]], ...] = (
        (args.json, lambda: json.dumps(versioned("grade", mutation_testing_report(result)),
                                       indent=2)),
        (args.gradescope, lambda: json.dumps(gradescope_results(result), indent=2)),
        (args.junit, lambda: junit_xml(result)),
        (args.html, lambda: grade_html(result, args.fail_under)),
    )
    for target, render in writers:
        if target == STDOUT:
            print(render())
        elif target:
            try:  # a temporary file beside it, then a rename: never half a report
                atomic_write(Path(target).expanduser().absolute(),
                             render() + ("" if target in (args.junit, args.html) else "\n"))
            except OSError as exc:
                print(f"spec-verify grade: error: {exc}", file=sys.stderr)
                return False
            print(f"wrote {target}", file=sys.stderr)
    return True


def _batch(args: argparse.Namespace, mutants: list[str] | None,
           progress: Callable[[str], None]) -> int:
    """``--submissions``: grade every submission folder; the table and the CSV."""
    from spec_verify.cli._usage import usage_line
    from spec_verify.errors import InvalidArgument
    from spec_verify.mutants.batch import grade_submissions, summary_table, write_csv

    try:
        rows = grade_submissions(
            args.path, progress=progress, jobs=args.jobs, mutants=mutants,
            timeout_factor=args.timeout_factor, min_timeout=args.min_timeout,
            clean_timeout=args.clean_timeout, decoys=args.decoys, repeats=args.repeats,
            confirmations=args.confirmations, clean_reruns=args.clean_reruns,
            allow_unsealed=args.allow_unsealed, catalogue=args.catalogue)
    except InvalidArgument as error:
        print(usage_line("grade", error, OPTION_BY_ARGUMENT), file=sys.stderr)
        return ExitCode.USAGE_ERROR
    print(summary_table(rows), end="")
    if args.csv:
        write_csv(rows, args.csv)
        print(f"wrote {args.csv}", file=sys.stderr)
    return ExitCode.PASSED
