"""Find, in this machine's /proc, a process a hostile implementation noted about itself.

A sealed worker has a PID namespace and a /proc of its own, so what it started cannot learn its
pid on the host. It notes what any /proc can tell: its PID namespace (``pid:[inode]``), its pid
there and its start time (clock ticks since boot). The three name one process: a namespace's
inode is reused once the namespace is gone and its low pids recur in every namespace, but not
with the same start time.
"""

from __future__ import annotations

import os
from pathlib import Path


def note_this_process(path: str | os.PathLike[str]) -> None:
    """Write this process's identity to ``path``, atomically (a temporary file renamed)."""
    temporary = f"{os.fspath(path)}.{os.getpid()}"
    Path(temporary).write_text(this_process_identity())
    os.replace(temporary, path)


def this_process_identity() -> str:
    """This process's identity, as ``noted_host_pid`` reads it."""
    return _identity("self")


def noted_host_pid(text: str) -> int | None:
    """The pid, in this process's /proc, of the live process that wrote ``text`` (None: it is
    gone or a zombie)."""
    try:
        namespace, pid, start = text.split()
        int(pid), int(start)
    except ValueError:
        raise AssertionError(f"not a noted process identity: {text!r}") from None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if _identity(entry) == f"{namespace} {pid} {start}" and _alive(entry):
                return int(entry)
        except OSError:  # it ended while we looked
            continue
    return None


def _identity(entry: str) -> str:
    namespace = os.readlink(f"/proc/{entry}/ns/pid")
    with open(f"/proc/{entry}/status") as status:
        nspid = next(line for line in status if line.startswith("NSpid:")).split()
    return f"{namespace} {nspid[-1]} {_fields(entry)[19]}"


def _fields(entry: str) -> list[str]:
    """The fields of /proc/<entry>/stat after the command name (state is the first)."""
    with open(f"/proc/{entry}/stat", "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].decode().split()


def _alive(entry: str) -> bool:
    return _fields(entry)[0] != "Z"
