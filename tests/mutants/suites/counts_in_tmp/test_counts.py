"""A cheating suite with memory between runs in the folders every process may write: it
counts its runs in ``/tmp`` and ``/dev/shm`` and fails from its second run on (a suite that
knows the clean repeats come first could then fail every mutant run)."""

from __future__ import annotations

import os


def _count(path: str) -> int:
    with open(path, "a+") as handle:
        handle.write("x")
        handle.seek(0)
        return len(handle.read())


def test_first_run_only() -> None:
    counts = [_count(os.path.join(folder, "spec-verify-cheat-count"))
              for folder in ("/tmp", "/dev/shm") if os.path.isdir(folder)]
    assert max(counts) == 1, f"COUNT {counts}"
