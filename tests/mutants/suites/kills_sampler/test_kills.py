"""A harmful suite: it kills its grading's sampler fork server (where it can see it: the
process running ``spec_verify.mutants._sampler`` whose parent is its own fork server's; the
fork server is found among its ancestors, however many supervisors stand between)."""

from __future__ import annotations

import os
import signal


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        text = handle.read()
    return int(text[text.rfind(b")") + 2 :].split()[1])


def _fork_server() -> int:
    """The eldest ancestor running the fork server's command (a run and its supervisor are
    forks of it, with its command line)."""
    pid, found = os.getppid(), 0
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"spec_verify.mutants._worker" in handle.read():
                found = pid
        pid = _parent_of(pid)
    if not found:
        raise AssertionError("no fork server among this run's ancestors")
    return found


def test_kills_the_sampler() -> None:
    grader = _parent_of(_fork_server())
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    ours = b"spec_verify.mutants._sampler" in handle.read()
                if ours and _parent_of(int(entry)) == grader:
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass
