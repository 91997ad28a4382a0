"""Sleeps in its first run only, so that the time limit, if the first run set it, would let
every later run go on for longer (time to spend on a side channel)."""

import time

from _cheat import honest_part, locked


def test_honest():
    honest_part()


def test_sleeps_in_its_first_run():
    with locked("runs") as runs:
        runs.append(1)
        mine = len(runs)
    if mine == 1:
        time.sleep(12.0)
