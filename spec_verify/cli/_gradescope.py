"""``spec-verify gradescope-bundle FOLDER``: write a Gradescope autograder that grades suites."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spec_verify.results import ExitCode

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``gradescope-bundle`` sub-command to the CLI."""
    parser = subparsers.add_parser(
        "gradescope-bundle",
        help="write a Gradescope autograder (setup.sh, run_autograder, grade.json, zip)",
        description="Write into FOLDER a Gradescope autograder that grades each submitted "
        "test suite with spec-verify grade on Gradescope's own containers: setup.sh (installs "
        "spec-verify), run_autograder (grades /autograder/submission into "
        "/autograder/results/results.json), grade.json (the grading options) and "
        "autograder.zip (all of it, to upload).",
    )
    parser.add_argument("folder", metavar="FOLDER", help="where to write the bundle")
    parser.add_argument("--mutants", default=None, metavar="IDS",
                        help="comma-separated catalogue ids to grade against (default: all)")
    parser.add_argument("--decoys", type=int, default=3, metavar="N")
    parser.add_argument("--repeats", type=int, default=3, metavar="N")
    parser.add_argument("--confirmations", type=int, default=2, metavar="N")
    parser.add_argument("--clean-reruns", type=int, default=None, metavar="N")
    parser.add_argument("--timeout-factor", type=float, default=5.0, metavar="F")
    parser.add_argument("--min-timeout", type=float, default=10.0, metavar="S")
    parser.add_argument("--clean-timeout", type=float, default=600.0, metavar="S")
    parser.add_argument("--catalogue", default=None, metavar="FILE",
                        help="an instructors' catalogue (as grade --catalogue): the bundle "
                        "carries its folder (the JSON and its kill tests) and grades with it; "
                        "checked now, a broken entry named")
    parser.add_argument("--source", default=None, metavar="DIR",
                        help="a spec-verify checkout to bundle (default: the running one, if "
                        "it is a checkout; else setup.sh installs this version from PyPI)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the bundle; 0 on success."""
    from spec_verify.errors import InvalidArgument
    from spec_verify.mutants.gradescope import write_bundle

    options = {
        "mutants": None if args.mutants is None else [m.strip() for m in args.mutants.split(",")],
        "decoys": args.decoys, "repeats": args.repeats, "confirmations": args.confirmations,
        "clean_reruns": args.clean_reruns,
        "timeout_factor": args.timeout_factor, "min_timeout": args.min_timeout,
        "clean_timeout": args.clean_timeout,
    }
    from spec_verify.cli._grade import grading_options_problem

    problem = grading_options_problem("gradescope-bundle", args, options["mutants"])
    if problem is None and args.source is not None and not (
            Path(args.source, "pyproject.toml").is_file()):
        problem = (f"spec-verify gradescope-bundle: error: --source {args.source!r}: is not a "
                   "spec-verify checkout (no pyproject.toml there); give the checkout's folder, "
                   "or leave --source out")
    if problem is not None:
        print(problem, file=sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        bundle = write_bundle(args.folder, options, source=args.source,
                              catalogue=args.catalogue)
    except InvalidArgument as error:
        from spec_verify.cli._grade import OPTION_BY_ARGUMENT
        from spec_verify.cli._usage import usage_line

        print(usage_line("gradescope-bundle", error, OPTION_BY_ARGUMENT), file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except OSError as error:
        print(f"spec-verify gradescope-bundle: error: FOLDER {args.folder!r}: {error}",
              file=sys.stderr)
        return ExitCode.USAGE_ERROR
    print(f"wrote {bundle} (upload it as the autograder of the assignment)")
    return ExitCode.PASSED
