"""A harmful suite: it kills its grading's sampler fork server (where it can see it: the
process running ``spec_verify.mutants._sampler`` whose parent is its own fork server's)."""

from __future__ import annotations

import os
import signal


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        text = handle.read()
    return int(text[text.rfind(b")") + 2 :].split()[1])


def test_kills_the_sampler() -> None:
    grader = _parent_of(os.getppid())
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    ours = b"spec_verify.mutants._sampler" in handle.read()
                if ours and _parent_of(int(entry)) == grader:
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass
