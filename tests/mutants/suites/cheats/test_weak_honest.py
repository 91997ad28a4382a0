"""The weak honest suite the cheats are measured against: the greedy hand example only."""

from _cheat import honest_part


def test_honest():
    honest_part()
