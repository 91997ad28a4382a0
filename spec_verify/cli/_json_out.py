"""``--json``: one meaning in every command. ``--json FILE`` writes the JSON report to FILE;
``--json -`` (or ``--json`` alone) prints it on stdout, and the text report then goes to stderr
so that stdout is one JSON document.

Every report carries ``schema_version`` (``spec_verify.results.SCHEMA_VERSION``), the tool's
version and which report it is (``report``: check, compare, power, prove, grade, mutants).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from spec_verify.results import ExitCode, versioned

__all__ = [
    "STDOUT", "add_json_option", "atomic_write", "emit_json", "json_problem", "text_stream",
    "versioned", "write_json",
]  # fmt: skip

STDOUT = "-"


def add_json_option(parser: argparse.ArgumentParser, what: str = "the report") -> None:
    """Add ``--json [FILE]`` to ``parser``."""
    parser.add_argument(
        "--json",
        nargs="?",
        const=STDOUT,
        default=None,
        metavar="FILE",
        help=f"write {what} as JSON to FILE; '-' (or --json alone) prints it on stdout, and the "
        "text then goes to stderr",
    )


def text_stream(args: argparse.Namespace) -> TextIO:
    """Where the human-readable text goes: stderr when the JSON takes stdout."""
    return sys.stderr if getattr(args, "json", None) == STDOUT else sys.stdout


def json_problem(target: str | None, option: str = "--json") -> str | None:
    """Why ``option target`` cannot be written (a usage error found before any work), or None.
    """
    if target is None or target == STDOUT:
        return None
    path = Path(target).expanduser()
    try:
        if path.is_dir():
            return f"{option} {target!r}: is a folder; give a file name (or - for stdout)"
        parent = path.absolute().parent
        for folder in (parent, *parent.parents):
            if folder.exists():
                if not folder.is_dir():
                    return f"{option} {target!r}: {str(folder)!r} is a file, not a folder"
                break
    except OSError as exc:  # a name too long, a symlink loop
        return f"{option} {target!r}: cannot be used as a file name ({exc.strerror or exc})"
    return None


def write_json(target: str, data: Any) -> Path | None:
    """Write ``data`` to ``target`` (``-``: stdout); the path written, or None for stdout.

    Raises:
        OSError: the file cannot be written (the message names it).
    """
    text = json.dumps(data, indent=2) + "\n"
    if target == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return None
    path = Path(target).expanduser()
    try:
        atomic_write(path, text)
    except OSError as exc:
        raise OSError(f"--json {target!r}: {exc}") from None
    return path


def emit_json(command: str, target: str, data: Any, out: TextIO) -> int | None:
    """Write ``data`` to ``--json target`` and say where on ``out``; the exit code of a file
    that cannot be written (a usage error, said on stderr), or None when it was written."""
    try:
        path = write_json(target, data)
    except OSError as exc:
        print(f"spec-verify {command}: error: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE_ERROR)
    if path is not None:
        print(f"JSON report: {path}", file=out)
    return None


def atomic_write(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file in the same folder and ``os.replace``: a
    reader sees the old file or the new one, never half of one.

    Raises:
        OSError: the folder or the file cannot be written (the message names which).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(f"cannot create the folder of {str(path)!r}: {exc.strerror}") from None
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OSError(f"cannot write a report next to {str(path)!r}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise OSError(f"cannot write {str(path)!r}: {exc.strerror}") from None
