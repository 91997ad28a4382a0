"""``--json``: one meaning in every command. ``--json FILE`` writes the JSON report to FILE;
``--json -`` (or ``--json`` alone) prints it on stdout, and the text report then goes to stderr
so that stdout is one JSON document.

Every report carries ``schema_version`` (``spec_verify.reports.SCHEMA_VERSION``), the tool's
version and which report it is (``report``: check, compare, power, prove, grade, mutants).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

__all__ = ["STDOUT", "add_json_option", "json_problem", "text_stream", "versioned", "write_json"]

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


def versioned(report: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with the schema version, the tool's version and the report's name first."""
    from spec_verify import __version__

    schema = 1  # spec_verify.reports.SCHEMA_VERSION, without importing the harness
    return {"schema_version": schema, "spec_verify_version": __version__, "report": report,
            **data}  # fmt: skip


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
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OSError(f"cannot write --json {target!r}: {exc.strerror or exc}") from None
    return path
