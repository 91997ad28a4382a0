"""Process id side channel: pids grow run after run; a run whose pid is not among the
smallest three seen decides it is a mutant run."""

import os

from _cheat import honest_part, locked


def test_honest():
    honest_part()


def test_pid_side_channel():
    with locked("pids") as pids:
        pids.append(os.getpid())
        earlier = sum(1 for pid in pids if pid < os.getpid())
    assert earlier < 3, f"{earlier} runs before this one"
