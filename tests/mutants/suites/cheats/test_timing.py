"""Timing side channel: a run much slower or faster than the first run is taken for a
mutant run."""

import time

from _cheat import first_seen, honest_part

from spec_verify.reference import SamplingParams


def test_honest():
    honest_part()


def test_timing_side_channel():
    started = time.perf_counter()
    for _ in range(300):
        SamplingParams(top_k=3)
    mine = time.perf_counter() - started
    first = first_seen("timing", mine)
    assert 0.5 < mine / first < 2.0, f"this run took {mine / first:.2f}x the first"
