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
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from spec_verify.results import ExitCode, versioned

__all__ = [
    "STDOUT", "add_json_option", "atomic_write", "emit_json", "folder_problem", "is_mount_point",
    "json_problem", "report_path_problem", "text_stream", "versioned", "write_json",
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
    return report_path_problem(option, target)


_RULE = "a report path must be a regular file or a new name in a folder"


def report_path_problem(option: str, target: str) -> str | None:  # noqa: PLR0911 (one return per kind of path)
    """Why ``target`` cannot be a report file, or None: option, value, rule and fix.

    A report is written next to its path and renamed over it, so the path must be a regular
    file (a symlink to one is followed) or a name that does not exist yet, in a folder (missing
    folders are created). A device (``/dev/full`` would be replaced by a regular file), a
    folder, a link to either, or a mount point (something bound over the path: the rename
    fails, the bound file stays) is refused before anything runs.
    """
    fix = "give a file name such as report.json (or - for stdout)"
    path = Path(target).expanduser()
    try:
        if path.is_dir():
            return f"{option} {target!r}: is a folder; {_RULE}: {fix}"
        if os.path.lexists(path):
            st = path.stat() if path.exists() else None
            if st is None:
                return (f"{option} {target!r}: is a dangling symbolic link; {_RULE}: remove "
                        f"the link or {fix}")
            if not stat.S_ISREG(st.st_mode):
                return f"{option} {target!r}: is {_kind(st.st_mode)}; {_RULE}: {fix}"
            if is_mount_point(path):
                return (f"{option} {target!r}: is a mount point (a file is mounted over it); "
                        f"{_RULE}: unmount it or {fix}")
        return _ancestor_problem(option, target, path.absolute().parent, _RULE, fix)
    except OSError as exc:  # a name too long, a symlink loop
        return f"{option} {target!r}: cannot be used as a file name ({exc.strerror or exc})"
    return None


def _ancestor_problem(option: str, target: str, parent: Path, rule: str, fix: str) -> str | None:
    """The first existing folder above ``target`` must be a folder this process can write (the
    missing ones are created there)."""
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                return (f"{option} {target!r}: {str(folder)!r} is a file, not a folder; "
                        f"{rule}: {fix}")
            if not os.access(folder, os.W_OK | os.X_OK):
                return (f"{option} {target!r}: the folder {str(folder)!r} cannot be written "
                        f"here; {rule}: {fix} in a folder you can write")
            break
    return None


def folder_problem(option: str, target: str | None) -> str | None:
    """Why ``target`` cannot be an output folder (``--plots DIR``), or None: it must be a
    folder or a new name whose first existing parent is a folder this process can write."""
    if target is None:
        return None
    rule, fix = "an output folder must be a folder or a new name", "give a folder such as plots"
    path = Path(target).expanduser()
    try:
        if path.exists():
            if not path.is_dir():
                return f"{option} {target!r}: is not a folder; {rule}: {fix}"
            if not os.access(path, os.W_OK | os.X_OK):
                return f"{option} {target!r}: cannot be written here; {rule}: {fix}"
            return None
        return _ancestor_problem(option, target, path.absolute().parent, rule, fix)
    except OSError as exc:
        return f"{option} {target!r}: cannot be used as a folder name ({exc.strerror or exc})"


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def is_mount_point(path: Path) -> bool:
    """True when something is mounted on ``path`` (a file bound over a file included, which
    ``os.path.ismount`` misses when both are on one file system)."""
    if os.path.ismount(path):
        return True
    try:
        real = os.path.realpath(path)
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        # field 5 is the mount point, with space, tab, newline and backslash octal-escaped
        if len(fields) > 4 and _unescape(fields[4]) == real:
            return True
    return False


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


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


def _still_a_report_path(path: Path) -> None:
    """Refuse, just before the rename, a path that became a device, a folder or a mount point
    during the run (the rename would replace a device node or fail on a mount)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode) or is_mount_point(path):
        what = "a mount point" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
        raise OSError(f"{str(path)!r} is {what} now; {_RULE}")


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
        _still_a_report_path(path)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise OSError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
