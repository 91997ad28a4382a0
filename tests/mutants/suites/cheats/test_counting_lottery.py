"""The best lottery a suite with memory between runs can play (mutants/lottery.py).

It counts the runs that get past its honest test (a file that outlives the runs) and knows
the grader's plan: the first LOTTERY_REPEATS are the clean repeats; the next LOTTERY_MAIN are
the decoys and the mutants its honest test misses; the rest are its lottery kill's
LOTTERY_CONFIRMATIONS reruns and the clean reruns, LOTTERY_CONFIRMATION_RUNS in all. It fails
exactly one run of the main batch and, among the confirmation runs, exactly as many as a kill
has reruns, each chosen at random (LOTTERY_SEED): no other strategy wins more often."""

import os
import random

from _cheat import honest_part, locked


def test_honest():
    honest_part()  # with -x, a run this fails never reaches the lottery


def _plan(name):
    return int(os.environ[name])


def test_counting_lottery():
    with locked("past_honest") as runs:
        runs.append(0)
        n = len(runs)
    repeats, main = _plan("LOTTERY_REPEATS"), _plan("LOTTERY_MAIN")
    reruns, confirmation_runs = _plan("LOTTERY_CONFIRMATIONS"), _plan("LOTTERY_CONFIRMATION_RUNS")
    chooser = random.Random(_plan("LOTTERY_SEED"))
    main_pick = chooser.randrange(main)
    confirmation_picks = chooser.sample(range(confirmation_runs), reruns)
    if n <= repeats:
        return
    if n <= repeats + main:
        assert n - repeats - 1 != main_pick, f"run {n}: the main batch's pick"
        return
    assert n - repeats - main - 1 not in confirmation_picks, f"run {n}: a confirmation pick"
