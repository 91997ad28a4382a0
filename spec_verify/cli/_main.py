"""The ``spec-verify`` command: a thin face over the library.

Each sub-command lives in its own ``_cmd_<name>.py`` module exposing
``register(subparsers) -> None`` (adds its parser and sets ``func``) and is listed in
``_COMMANDS``; the modules are imported lazily so that ``spec-verify --help`` stays fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

from spec_verify.results import ExitCode

__all__ = ["EXIT_CODES", "build_parser", "main"]

# Sub-command modules, in the order ``--help`` lists them.
_COMMANDS = (
    "spec_verify.cli._check",
    "spec_verify.cli._demo",
    "spec_verify.cli._power",
    "spec_verify.cli._compare",
    "spec_verify.cli._mutants",
    "spec_verify.cli._grade",
    "spec_verify.cli._gradescope",
    "spec_verify.cli._prove",
)


# What each exit code means, in the order ``--help`` lists them (a test checks that every
# ``ExitCode`` is here and README.md lists the same).
EXIT_CODES = {
    ExitCode.PASSED: "every requested check passed",
    ExitCode.FAILED: "a check failed or errored, or was not proven (a verdict on the "
    "implementation)",
    ExitCode.USAGE_ERROR: "usage error: a bad option or an implementation that cannot be "
    "found; nothing was checked",
    ExitCode.HARNESS_ERROR: "internal error of spec-verify itself (please report it)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM, or the output was closed)",
}


def _epilog() -> str:
    lines = ["exit codes:"]
    lines += [f"  {int(code):<4} {meaning}" for code, meaning in EXIT_CODES.items()]
    lines += ["", "Start with: spec-verify check --impl python:path/to/yours.py --profile "
              "lossless --quick (docs/implementing.md says what the module defines)."]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``spec-verify`` parser, each sub-command registered by its own module."""
    from spec_verify import __version__

    parser = argparse.ArgumentParser(
        prog="spec-verify",
        description="Prove that a speculative sampler produces exactly the target's output.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"spec-verify {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _COMMANDS:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; the return value is the process exit code (0 only when all passed)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.USAGE_ERROR
    refusal = _open_file_limit_refusal()
    if refusal:
        print(f"spec-verify {args.command}: error: {refusal}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    return _run_command(args)


def _run_command(args: argparse.Namespace) -> int:
    """The command's exit code; a harness failure is exit 3 with its traceback, never a pass."""
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # the reader went away (`| head`): not a harness bug, no traceback
        _silence_stdout()
        print(f"spec-verify {args.command}: stopped: its output was closed (broken pipe)",
              file=sys.stderr)
        return ExitCode.INTERRUPTED
    except OSError as error:
        if error.errno not in (errno.EMFILE, errno.ENFILE):
            return _internal_error(args.command)
        print(f"spec-verify {args.command}: error: out of file descriptors ({error.strerror}): "
              f"raise the open-file limit (ulimit -n {_FILES_WANTED}) and run it again",
              file=sys.stderr)  # fmt: skip
        return ExitCode.USAGE_ERROR
    except Exception:  # fail closed: a harness bug is never a pass, and never looks like FAILED
        return _internal_error(args.command)
    return int(code)


def _internal_error(command: str) -> int:
    traceback.print_exc()
    print(
        f"spec-verify {command}: internal error (exit {int(ExitCode.HARNESS_ERROR)}); "
        "please report it with the traceback above",
        file=sys.stderr,
    )
    return ExitCode.HARNESS_ERROR


# Workers talk over pipes, sockets and pidfds, a few per worker: below _FILES_NEEDED a run
# would die part-way with EMFILE, so it is refused up front (after raising the soft limit
# towards _FILES_WANTED where the hard limit allows).
_FILES_NEEDED = 64
_FILES_WANTED = 1024


def _open_file_limit_refusal() -> str:
    """"" when the open-file limit is enough (raising the soft limit first if it can), else
    the one-line reason and fix."""
    try:
        import resource
    except ImportError:  # not POSIX: nothing to check
        return ""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < _FILES_WANTED:
        raised = _FILES_WANTED if hard == resource.RLIM_INFINITY else min(hard, _FILES_WANTED)
        if raised > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (OSError, ValueError):
                pass
    if soft != resource.RLIM_INFINITY and soft < _FILES_NEEDED:
        return (f"the open-file limit is {soft} (ulimit -n) and spec-verify needs at least "
                f"{_FILES_NEEDED} (its workers talk over pipes and sockets): raise it "
                f"(ulimit -n {_FILES_WANTED}) and run it again")  # fmt: skip
    return ""


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test's capture): nothing to flush
        pass


if __name__ == "__main__":
    sys.exit(main())
