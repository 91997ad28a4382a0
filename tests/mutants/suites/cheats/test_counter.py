"""Counter in a temporary file: the first three runs (the clean repeats, by default) pass,
every later one fails, as if each were a mutant run."""

import os
import tempfile

from _cheat import honest_part, locked


def test_honest():
    honest_part()


def test_counter_side_channel():
    with locked("runs") as runs:
        runs.append(os.getpid())
        mine = len(runs)
    # also a file in the system's temporary folder, as a student would write it
    with open(os.path.join(tempfile.gettempdir(), "counter.txt"), "a") as handle:
        handle.write("x")
    assert mine <= 3, f"run {mine}: taken for a mutant"
