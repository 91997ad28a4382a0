"""Suites that try to tell a mutant run from a clean one without testing the sampler.

Each cheating suite (``suites/cheats``) is the weak honest suite's one test plus a trick: a
side channel (bytecode caches, timing, environment, paths, a counter in a file, process ids)
or a lottery (failing at random). Each must score no more than the weak honest suite alone:
the trick gains nothing (every run looks the same) or the decoys, repeats and confirmations
refuse the suite. The lottery is graded with a fixed seed (its draws and the run order), and
``test_lottery_bound`` evaluates the bound of docs/grading.md: a suite that fails at random,
with any probability, beats the weak suite in fewer than 1 of 100 gradings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_verify.mutants import CATALOGUE
from spec_verify.mutants.grader import (
    DEFAULT_CONFIRMATIONS,
    DEFAULT_DECOYS,
    DEFAULT_REPEATS,
    GradeResult,
    Refusal,
    grade,
)

CHEATS = Path(__file__).resolve().parent / "suites" / "cheats"
MUTANTS = ["s01", "s05", "s06", "s11"]  # the weak suite kills s05 only


@pytest.fixture
def side_channel(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEC_VERIFY_SIDE_CHANNEL", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def weak(tmp_path_factory) -> GradeResult:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEC_VERIFY_SIDE_CHANNEL", str(tmp_path_factory.mktemp("weak")))
        result = grade(CHEATS / "test_weak_honest.py", mutants=MUTANTS)
    assert result.graded, result.reason
    assert result.detected == 1
    return result


def _no_better(result: GradeResult, weak: GradeResult) -> None:
    assert not result.graded or result.detected <= weak.detected, result


@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["cache_mtimes", "environment", "paths"])
def test_a_side_channel_that_finds_nothing_gains_nothing(cheat, weak, side_channel):
    result = grade(CHEATS / f"test_{cheat}.py", mutants=MUTANTS)
    # every run looks the same: the trick never fires, the suite is graded as the weak one
    assert result.graded, (result.reason, result.clean_failures)
    assert [(m.mutant_id, m.state) for m in result.mutants] == [
        (m.mutant_id, m.state) for m in weak.mutants]


@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["counter", "pids"])
def test_a_side_channel_that_counts_runs_is_refused(cheat, weak, side_channel):
    result = grade(CHEATS / f"test_{cheat}.py", mutants=MUTANTS)
    # it passes the first three runs (the clean repeats) and fails every later one, decoys
    # included
    assert not result.graded
    assert result.refusal is Refusal.FLAKY, result.reason
    assert f"test_{cheat}.py::test_{cheat.rstrip('s')}_side_channel" in " ".join(
        result.flaky_tests)
    _no_better(result, weak)


@pytest.mark.slow
def test_a_timing_side_channel_gains_nothing(weak, side_channel):
    _no_better(grade(CHEATS / "test_timing.py", mutants=MUTANTS), weak)


@pytest.mark.slow
def test_the_lottery_with_a_fixed_seed(weak, side_channel, monkeypatch):
    monkeypatch.setenv("LOTTERY_SEED", "7")
    monkeypatch.setenv("LOTTERY_P", "0.25")
    # one run at a time, so the draws go to the runs in the (seeded) order
    result = grade(CHEATS / "test_lottery.py", mutants=MUTANTS, jobs=1, order_seed=7)
    _no_better(result, weak)
    assert not result.graded  # with this seed it lost on a clean run, a decoy or a rerun
    assert "cheats/test_lottery.py::test_lottery" in result.flaky_tests


def lottery_win_probability(f: float, mutants: int, repeats: int = DEFAULT_REPEATS,
                            decoys: int = DEFAULT_DECOYS,
                            confirmations: int = DEFAULT_CONFIRMATIONS) -> float:
    """P(graded with at least one detection the suite did not earn), for a suite whose every
    run fails independently with probability ``f`` (docs/grading.md, "The lottery")."""
    controls = repeats + decoys + confirmations
    reproduced = f ** (confirmations + 1)
    return (1 - f) ** controls * ((1 - f + reproduced) ** mutants - (1 - f) ** mutants)


def lottery_expected_credit(f: float, mutants: int, repeats: int = DEFAULT_REPEATS,
                            decoys: int = DEFAULT_DECOYS,
                            confirmations: int = DEFAULT_CONFIRMATIONS) -> float:
    """The expected number of unearned detections counted (docs/grading.md)."""
    controls = repeats + decoys + confirmations
    reproduced = f ** (confirmations + 1)
    return (1 - f) ** controls * mutants * reproduced * (1 - f + reproduced) ** (mutants - 1)


GRID = [i / 1000 for i in range(1, 1000)]


@pytest.mark.parametrize("mutants", [len(CATALOGUE), 30, 60, 200])
def test_lottery_bound(mutants):
    worst_win = max(lottery_win_probability(f, mutants) for f in GRID)
    worst_credit = max(lottery_expected_credit(f, mutants) for f in GRID)
    assert worst_win < 0.01  # beats the weak suite in fewer than 1 of 100 gradings
    assert worst_credit < 1  # earns less than one mutant in expectation


def test_the_lottery_bound_has_teeth():
    # negative control: without decoys and confirmations the old lottery wins often
    worst = max(lottery_win_probability(f, 24, repeats=1, decoys=0, confirmations=0)
                for f in GRID)
    assert worst > 0.5


def test_the_documented_numbers():
    text = (Path(__file__).resolve().parents[2] / "docs" / "grading.md").read_text()
    worst = max(lottery_win_probability(f, len(CATALOGUE)) for f in GRID)
    credit = max(lottery_expected_credit(f, len(CATALOGUE)) for f in GRID)
    assert f"{worst:.4f}" in text
    assert f"{credit:.4f}" in text


@pytest.mark.slow
def test_reading_the_implementation_gains_nothing(weak, side_channel, tmp_path):
    # the suite ships a pristine copy of the reference and compares everything of the
    # reference its process holds (sources, module files, code objects in memory) with it
    import shutil

    from spec_verify.mutants._source import reference_sources

    suite = tmp_path / "cheats"
    shutil.copytree(CHEATS, suite)
    for name, text in reference_sources().items():
        (suite / "pristine" / name).parent.mkdir(parents=True, exist_ok=True)
        (suite / "pristine" / name).write_text(text)
    result = grade(suite / "test_source_compare.py", mutants=MUTANTS)
    assert result.graded, (result.reason, result.clean_failures)
    assert [(m.mutant_id, m.state) for m in result.mutants] == [
        (m.mutant_id, m.state) for m in weak.mutants]
