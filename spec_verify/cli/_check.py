"""``spec-verify check``: the gate. Every tier the implementation supports, one verdict.

Exit code 0 only when no check blocks the run (``CheckReport.blocks``: FAILED and ERROR do;
NOT_PROVABLE does under ``--profile conformance`` unless ``--allow-not-provable``; SKIPPED and
NOT_APPLICABLE never do; under ``--profile lossless`` efficiency checks never do); 2 for a usage
error (an unwritable report path among them, found before any work), 130 when interrupted
(Ctrl-C or SIGTERM), 3 for a harness error; the report files say the same (``_report_files``).
Progress goes
to stderr, the table and the failures (each with one command that reproduces it) to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import sys
from typing import Any, TextIO

from spec_verify.cli._json_out import add_json_option, folder_problem, text_stream
from spec_verify.cli._usage import EXIT_CODES_IN_ONE_LINE
from spec_verify.results import ExitCode
from spec_verify.seeds import DrawnSeed, seed_option

__all__ = ["fail_fast_stop", "register", "run"]

_TIERS = (
    "contract", "greedy", "exact", "edges", "parity", "properties", "statistical", "generation",
)
# Literal copies keep --help from importing the harness (a test checks they match).
_PROFILES = ("conformance", "lossless")
_RULES = ("token", "block", "sampler_match", "kseq", "rrs")
_CAPABILITIES = (
    "verify_draft", "injected_uniforms", "greedy", "float32", "sampling_distribution",
    "prompt_lookup", "pcg32", "generation", "verify_tree", "uniforms_open_closed",
    "propose_and_verify",
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        epilog=EXIT_CODES_IN_ONE_LINE,
        help="gate an implementation: contract, greedy, exact, parity, statistics, generation",
        description="Run every tier the implementation supports and exit 0 only when every "
        "check passed. Without --impl it checks the bundled reference.",
    )
    parser.add_argument(
        "--impl",
        default="reference",
        metavar="SPEC",
        help="reference (default), python:path/to/file.py or python:pkg.mod (from sys.path or "
        "the current folder; docs/implementing.md), ffi:path/to/lib.so, mutant:sNN or "
        "transformers[:injected][,ensemble=W] (the torch extra)",
    )
    parser.add_argument(
        "--tier",
        action="append",
        choices=_TIERS,
        metavar="TIER",
        help=f"run only this tier (repeatable): {', '.join(_TIERS)}",
    )
    parser.add_argument(
        "--seed",
        type=seed_option("--seed", allow_random=True),
        default=0,
        help="root seed of every generated case, in [0, 2**63) (default 0); 'random' draws one "
        "and prints it (a port's CI varies its cases from run to run, and can replay any)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer cases, for a fast signal")
    parser.add_argument(
        "--case-seed",
        type=seed_option("--case-seed"),
        default=None,
        metavar="N",
        help="replay one parity case (as printed by a failure)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds per call before an implementation counts as hung (FFI: default 10)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="S",
        help="seconds for the whole run; checks not finished by then are ERROR (budget "
        "exhausted) and the run fails (default: 3600, 900 with --quick)",
    )
    parser.add_argument(
        "-x",
        "--fail-fast",
        action="store_true",
        help="stop after the tier of the first failed law check (a claim about the output "
        "law; conformance and efficiency failures do not stop it): the later tiers are "
        "reported as not run, and why; a fast no for a port's CI, never a pass",
    )
    add_json_option(parser, "the report")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report here")
    parser.add_argument("--html", metavar="FILE", help="write a self-contained HTML report here "
                        "(plots inline with the plots extra)")
    parser.add_argument("--markdown", metavar="FILE", help="write a Markdown summary here: the "
                        "verdict and the failing and skipped checks (a CI job summary)")
    parser.add_argument("--plots", metavar="DIR", help="write PNG plots here (needs matplotlib)")
    parser.add_argument("--no-progress", action="store_true", help="nothing on stderr while "
                        "it runs: no plan, estimate, verdicts or progress line")
    parser.add_argument("-v", "--verbose", action="store_true", help="every check in the table "
                        "and as it comes, skipped and not-applicable ones too (by default those "
                        "sharing a reason are one line)")
    parser.add_argument(
        "--allow-not-provable",
        action="store_true",
        help="let exact checks that are 'not provable' (e.g. float32 sums) pass the run; by "
        "default they fail it, since nothing was proven there",
    )
    parser.add_argument(
        "--profile",
        choices=_PROFILES,
        default="conformance",
        help="conformance (default): the whole gate for ports of the contract (draw order, draw "
        "counts, parity); lossless: only claims about the output law (greedy identity, exact "
        "tier where it applies, statistics, law-level properties); efficiency checks are "
        "reported and never fail it",
    )
    parser.add_argument(
        "--rule",
        choices=_RULES,
        default="token",
        help="the verification rule conformance is asked of: token (default, the contract), "
        "block (block verification), sampler_match (CONTRACT.md sections 3, 8, 9), or the "
        "K-chain rules kseq, rrs of a verify_tree module (section 12): parity "
        "draw for draw with that rule's reference and the exact tier's rule.NAME; law checks "
        "are the same under every rule (docs/rules.md)",
    )
    parser.add_argument(
        "--capability",
        action="append",
        default=[],
        choices=_CAPABILITIES,
        metavar="NAME",
        help="declare that the implementation offers NAME (repeatable), overriding what it "
        f"declares or the adapter detects: {', '.join(_CAPABILITIES)}",
    )
    parser.add_argument(
        "--no-capability",
        action="append",
        default=[],
        choices=_CAPABILITIES,
        metavar="NAME",
        help="declare that it does not offer NAME, e.g. --no-capability injected_uniforms "
        "(own randomness) or --no-capability greedy (sampled-only)",
    )
    parser.set_defaults(func=run)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so the run ends the way Ctrl-C ends it."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated


def _say(text: str, stream: TextIO | None = None) -> None:
    """Print, and never fail on a closed stdout (the report files are what CI reads)."""
    with contextlib.suppress(OSError, ValueError):
        print(text, file=stream or sys.stdout, flush=True)


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, found before any work (a usage error), or None."""
    if args.timeout is not None and not 0 < args.timeout < math.inf:
        return (f"--timeout {args.timeout:g}: must be a positive, finite number of seconds "
                "(e.g. --timeout 10; the run's --budget bounds the whole run)")
    if args.budget is not None and not 0 < args.budget < math.inf:
        return (
            f"--budget {args.budget:g}: must be a positive number of seconds (e.g. --budget 600)"
        )
    plots = folder_problem("--plots", args.plots)
    if plots is not None:
        return plots
    both = sorted(set(args.capability) & set(args.no_capability))
    if both:
        return (
            f"--capability and --no-capability both name {both}; give each capability one way"
        )
    return None


def run(args: argparse.Namespace) -> int:
    from spec_verify._specs import check_spec
    from spec_verify.cli._usage import usage_line
    from spec_verify.errors import UnknownImplementation

    problem = _usage_problem(args)
    if problem is not None:
        _say(f"spec-verify check: {problem}", sys.stderr)
        return ExitCode.USAGE_ERROR
    # What the spec names is checked before any worker starts or report is printed, and before
    # the harness is imported: a typo is a usage error in well under a second, never a verdict.
    try:
        rule_mutant = _rule_mutant(args.impl)
        if rule_mutant is None:
            check_spec(args.impl)
    except UnknownImplementation as exc:
        _refused(args, exc)
        _say(usage_line("check", exc, {"impl": "--impl"}), sys.stderr)
        return ExitCode.USAGE_ERROR
    return _run(args, rule_mutant)


def _rule_mutant(spec: str) -> Any:
    """A rule mutant (``mutant:b01``, docs/rules.md) loaded in process as ``prove --rule``
    loads it (our own reference's source with the bug planted), or None for any other spec."""
    if not spec.startswith("mutant:"):
        return None
    from spec_verify.mutants.rules import load_rule_mutant, rule_mutant_by_id

    if rule_mutant_by_id(spec.partition(":")[2]) is None:
        return None
    return load_rule_mutant(spec)


def _refused(args: argparse.Namespace, exc: Exception) -> None:
    """Report files asked for say that nothing was checked: a stale passing report must not
    survive a run that checked nothing (a path that cannot be written is left as it is)."""
    if not (args.json or args.junit or args.html or args.markdown):
        return
    from spec_verify.cli._report_files import ReportFiles, ReportPathError, placeholder_report

    stub = placeholder_report(args.impl, args.seed, args.tier or list(_TIERS), args.quick,
                              "usage_error", f"nothing was checked: {exc}")  # fmt: skip
    with contextlib.suppress(ReportPathError, OSError):
        ReportFiles(args.json, args.junit, args.html, args.markdown).write(stub, "usage_error")


_STOPPED = "not run: --fail-fast, and the law check "


def fail_fast_stop(report: Any) -> str | None:
    """The failure summary's line for a run that ``-x`` stopped: which law check stopped it
    and which checks were not run (None when it ran to its end)."""
    stopped = [r for r in report.results if r.message.startswith(_STOPPED)]
    if not stopped:
        return None
    check = stopped[0].message[len(_STOPPED):].removesuffix(" failed")
    names = ", ".join(r.tier if r.name == "all" else f"{r.tier}/{r.name}" for r in stopped)
    return (f"STOPPED by -x/--fail-fast at the law check {check}: not run: {names} (rerun "
            "without -x for their verdicts)")


def _run(args: argparse.Namespace, rule_mutant: Any = None) -> int:
    from spec_verify import reports
    from spec_verify.adapters._process import (
        REPORT_FOLDERS,
        become_subreaper,
        children,
        reap_all_children,
    )
    from spec_verify.cli._live import LiveLines
    from spec_verify.cli._report_files import ReportFiles, ReportPathError, placeholder_report
    from spec_verify.cli._usage import usage_line
    from spec_verify.errors import UnknownImplementation
    from spec_verify.runner import DEFAULT_BUDGET, run_checks

    if isinstance(args.seed, DrawnSeed):  # before any work: a run that dies can be replayed
        _say(f"spec-verify check: --seed random drew {args.seed}; --seed {args.seed} replays "
             "this run", sys.stderr)
    capabilities = {**{c: True for c in args.capability}, **{c: False for c in args.no_capability}}
    tiers = args.tier
    if args.case_seed is not None and not tiers:
        tiers = ["parity"]
    shown_tiers = tiers or list(_TIERS)

    def stub(state: str, why: str) -> Any:
        return placeholder_report(args.impl, args.seed, shown_tiers, args.quick, state, why)

    # Claim the report files before any work: an unwritable path is a usage error now, and
    # a run that dies from here on leaves a failing report, never the last run's.
    try:
        files = ReportFiles(args.json, args.junit, args.html, args.markdown)
        files.claim(stub("running", "the run has not finished (or it died without a verdict)"))
    except ReportPathError as exc:
        _say(f"spec-verify check: cannot write the report: {exc}", sys.stderr)
        return ExitCode.USAGE_ERROR
    # the report folders are read-only in every worker's mount namespace (spec_verify/_sandbox)
    folders = [str(p.parent) for p in files.paths()]
    if args.plots:
        folders.append(os.path.abspath(args.plots))
    previous_folders = os.environ.get(REPORT_FOLDERS)
    os.environ[REPORT_FOLDERS] = json.dumps(folders)
    become_subreaper()  # what a worker's children leave behind is re-parented here, and killed
    had_children = children()
    previous_term = signal.signal(signal.SIGTERM, _on_sigterm)
    progress = None if args.no_progress else LiveLines(
        sys.stderr, quick=args.quick, fail_fast=args.fail_fast, verbose=args.verbose)
    try:
        report = run_checks(
            args.impl if rule_mutant is None else rule_mutant,
            tiers=tiers,
            seed=args.seed,
            quick=args.quick,
            case_seed=args.case_seed,
            timeout=args.timeout,
            progress=progress,
            allow_not_provable=args.allow_not_provable,
            profile=args.profile,
            capabilities=capabilities,
            budget=args.budget or DEFAULT_BUDGET["quick" if args.quick else "full"],
            fail_fast=args.fail_fast,
            rule=args.rule,
            on_plan=None if progress is None else progress.plan,
            on_result=None if progress is None else progress.result,
        )
    except UnknownImplementation as exc:
        files.write(stub("usage_error", f"nothing was checked: {exc}"), "usage_error")
        _say(usage_line("check", exc, {"impl": "--impl", "tier": "--tier"}), sys.stderr)
        return ExitCode.USAGE_ERROR
    except (KeyboardInterrupt, _Terminated) as exc:
        why = "SIGTERM" if isinstance(exc, _Terminated) else "Ctrl-C (SIGINT)"
        files.write(stub("interrupted", f"the run was interrupted by {why}"), "interrupted")
        _say(f"spec-verify check: interrupted by {why}; the reports say so", sys.stderr)
        return ExitCode.INTERRUPTED
    except BaseException as exc:
        with contextlib.suppress(Exception):
            files.write(stub("harness_error", f"the harness failed: {exc!r}"), "harness_error")
        raise  # the CLI's main turns it into HARNESS_ERROR with the traceback
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        reap_all_children(keep=had_children)
        if previous_folders is None:
            os.environ.pop(REPORT_FOLDERS, None)
        else:
            os.environ[REPORT_FOLDERS] = previous_folders
        if progress is not None:
            with contextlib.suppress(OSError, ValueError):
                progress.done()
    # The files first: stdout may be closed or a broken pipe, and CI reads the files.
    written = files.write(report, "complete")
    out = text_stream(args)  # stderr when the JSON report takes stdout
    _say(reports.format_summary(report, verbose=args.verbose), out)
    if report.sandbox is not None and not report.sandbox.get("sealed"):
        from spec_verify._sandbox import Protections

        _say(f"warning: the implementation was not sealed off: "
             f"{Protections.from_json(report.sandbox).summary()}", sys.stderr)
    failures = reports.format_failures(report)
    if failures:
        _say("\n" + failures, out)
        stop = fail_fast_stop(report) if args.fail_fast else None
        if stop is not None:
            _say("\n" + stop, out)
        elif not args.fail_fast:
            _say("\n(-x, --fail-fast stops after the tier of the first failed law check: a "
                 "quicker no)", out)
    kinds = {files.json: "JSON", files.junit: "JUnit", files.html: "HTML",
             files.markdown: "Markdown"}
    for path in written:
        _say(f"{kinds[path]} report: {path}", out)
    if args.plots:
        try:
            from spec_verify.plots import write_plots

            plotted = list(write_plots(report.results, args.plots))
            acceptance = reports.write_acceptance_plot(report, args.plots)
        except ImportError as exc:
            _say(
                f"plots skipped: {exc} (pip install 'spec-verify[plots]' for matplotlib)",
                sys.stderr,
            )
        else:
            plotted += [acceptance] if acceptance else []
            _say(f"plots: {len(plotted)} PNG files in {args.plots}", out)
    return ExitCode.PASSED if report.passed else ExitCode.FAILED
