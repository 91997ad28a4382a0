"""A graded run's two processes share a core drawn at random among the free ones
(``spec_verify.mutants._cores``): what each run can read of it has the same law whatever the
run is."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from spec_verify.mutants._cores import available_cores, pick_core, pin_to
from spec_verify.mutants._runner import RunPool, RunRequest
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.grader import _BASE_ARGS

PINNED = Path(__file__).resolve().parent / "suites" / "pinned"


def test_a_free_core_is_drawn_when_there_is_one() -> None:
    assert all(pick_core((0, 1, 2, 3), (0, 2)) in (1, 3) for _ in range(50))
    assert pick_core((0, 1), (0,)) == 1
    assert pick_core((5,), ()) is None and pick_core((), ()) is None


def test_the_draw_is_uniform_and_all_cores_when_all_are_held() -> None:
    counts = Counter(pick_core((0, 1, 2), (0, 1, 2)) for _ in range(3000))
    assert set(counts) == {0, 1, 2}
    # each about 1000; 800 is more than 8 standard deviations (26) below
    assert min(counts.values()) > 800, counts


def test_pinning_ignores_what_is_not_a_core() -> None:
    before = os.sched_getaffinity(0)
    pin_to(None)
    pin_to("0")
    pin_to(10**6)  # refused by the system: the process goes on unpinned
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(len(available_cores()) < 2, reason="one core: runs are not pinned")
def test_a_run_shares_its_core_with_its_sampler(monkeypatch) -> None:
    # the suite looks for its sampler in /proc: sealed, it cannot see it (test_sealed_runs)
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    sources = reference_sources()
    with RunPool(PINNED) as pool:
        pool.precompile([sources])
        outcomes = [o for _, o in pool.run_all(2, [RunRequest(sources, _BASE_ARGS, 60)] * 4)]
    assert all(o.passed == 1 and not o.failures for o in outcomes), [
        (o.failures, o.output[-800:]) for o in outcomes]
