"""The maxfail lottery: the first test passes, the second fails at random (with probability
LOTTERY_P, from a seeded stream shared by the runs in order), hoping to fail on mutants only."""

import os
import random

from _cheat import honest_part, locked


def test_honest():
    honest_part()


def test_lottery():
    with locked("draws") as draws:
        draws.append(0)
        n = len(draws)
    seed = int(os.environ.get("LOTTERY_SEED", "0"))
    p = float(os.environ.get("LOTTERY_P", "0.25"))
    assert random.Random(seed * 1000003 + n).random() >= p, f"draw {n} lost the lottery"
