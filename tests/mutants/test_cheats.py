"""Suites that try to tell a mutant run from a clean one without testing the sampler.

Each cheating suite (``suites/cheats``) is the weak honest suite's one test plus a trick: a
side channel (bytecode caches, timing, environment, paths, a counter in a file, process ids)
or a lottery (failing at random). Each must score no more than the weak honest suite alone:
the trick gains nothing (every run looks the same) or the decoys, repeats and confirmations
refuse the suite. The lotteries are graded with fixed seeds (their draws and the run order),
and ``test_lottery_bound`` evaluates the bounds of docs/grading.md: a suite that fails at
random, with any probability (or, counting its runs, with any strategy), beats the weak suite
in fewer than 1 of 100 gradings.

Sealed (the default where the kernel allows it), a run has no memory between runs: the side
channel's folder is out of its reach, and ``test_sealed_runs.py`` shows what such a suite
gets. These tests grade unsealed (``allow_unsealed``), where only the decoys, repeats and
confirmations stand between a suite and a side channel, the defence a machine without
namespaces relies on.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scipy import stats

from spec_verify.errors import InvalidArgument
from spec_verify.mutants import CATALOGUE
from spec_verify.mutants.grader import (
    DEFAULT_CONFIRMATIONS,
    DEFAULT_DECOYS,
    DEFAULT_REPEATS,
    GradeResult,
    Refusal,
    grade,
)
from spec_verify.mutants.lottery import (
    TARGET_WIN,
    clean_reruns_needed,
    counting_lottery_win,
    independent_lottery_credit,
    independent_lottery_win,
)
from tests._once import computed_once

CHEATS = Path(__file__).resolve().parent / "suites" / "cheats"
MUTANTS = ["s01", "s05", "s06", "s11"]  # the weak suite kills s05 only


@pytest.fixture
def side_channel(tmp_path, monkeypatch):
    """A folder for the suite's side channel, in reach of its runs: they are not sealed."""
    monkeypatch.setenv("SPEC_VERIFY_SIDE_CHANNEL", str(tmp_path))
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    return tmp_path


def _unsealed(suite: Path, **options) -> GradeResult:
    return grade(suite, allow_unsealed=True, **options)


@pytest.fixture(scope="session")
def weak(tmp_path_factory) -> GradeResult:
    def graded() -> GradeResult:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("SPEC_VERIFY_SIDE_CHANNEL", str(tmp_path_factory.mktemp("weak")))
            result = grade(CHEATS / "test_weak_honest.py", mutants=MUTANTS)
        assert result.graded, result.reason
        assert result.detected == 1
        return result

    return computed_once(tmp_path_factory, "weak_grade", graded)


def _no_better(result: GradeResult, weak: GradeResult) -> None:
    assert not result.graded or result.detected <= weak.detected, result


@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["cache_mtimes", "environment", "paths"])
def test_a_side_channel_that_finds_nothing_gains_nothing(cheat, weak, side_channel):
    result = _unsealed(CHEATS / f"test_{cheat}.py", mutants=MUTANTS)
    # every run looks the same: the trick never fires, the suite is graded as the weak one
    assert result.graded, (result.reason, result.clean_failures)
    assert [(m.mutant_id, m.state) for m in result.mutants] == [
        (m.mutant_id, m.state) for m in weak.mutants]


@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["counter", "pids"])
def test_a_side_channel_that_counts_runs_is_refused(cheat, weak, side_channel):
    result = _unsealed(CHEATS / f"test_{cheat}.py", mutants=MUTANTS)
    # it passes the first three runs (the clean repeats) and fails every later one, decoys
    # included
    assert not result.graded
    assert result.refusal is Refusal.FLAKY, result.reason
    assert f"test_{cheat}.py::test_{cheat.rstrip('s')}_side_channel" in " ".join(
        result.flaky_tests)
    _no_better(result, weak)


@pytest.mark.slow
def test_a_timing_side_channel_gains_nothing(weak, side_channel):
    _no_better(_unsealed(CHEATS / "test_timing.py", mutants=MUTANTS), weak)


@pytest.mark.slow
def test_the_lottery_with_a_fixed_seed(weak, side_channel, monkeypatch):
    monkeypatch.setenv("LOTTERY_SEED", "7")
    monkeypatch.setenv("LOTTERY_P", "0.25")
    # one run at a time, so the draws go to the runs in the (seeded) order
    result = _unsealed(CHEATS / "test_lottery.py", mutants=MUTANTS, jobs=1, order_seed=7)
    _no_better(result, weak)
    assert not result.graded  # with this seed it lost on a clean run, a decoy or a rerun
    assert "cheats/test_lottery.py::test_lottery" in result.flaky_tests


def test_the_counting_lottery_beats_two_clean_reruns(weak, side_channel, monkeypatch):
    """The attack is real: with as few clean reruns as confirmations (this project's old
    default), the counting lottery wins about 1 grading in 16 here (3 of the 8 shuffled main
    runs are its misses, then 1 in C(4, 2) = 6 confirmation draws); seed 8 wins."""
    result = _counting_lottery(monkeypatch, seed=8, clean_reruns=2)
    assert result.graded and result.detected > weak.detected, result.reason


def test_the_default_clean_reruns_refuse_the_same_lottery(weak, side_channel, monkeypatch):
    assert clean_reruns_needed(len(MUTANTS), DEFAULT_DECOYS, DEFAULT_CONFIRMATIONS) == 10
    result = _counting_lottery(monkeypatch, seed=8, clean_reruns=None)
    _no_better(result, weak)
    assert not result.graded and result.refusal is Refusal.FLAKY, result.reason
    assert "cheats/test_counting_lottery.py::test_counting_lottery" in result.flaky_tests


def _counting_lottery(monkeypatch, seed, clean_reruns):
    reruns = clean_reruns or clean_reruns_needed(len(MUTANTS), DEFAULT_DECOYS,
                                                 DEFAULT_CONFIRMATIONS)
    # the suite knows the grader's whole plan (the worst case): one clean calibration run,
    # then the other clean repeats shuffled among 3 decoys and the 3 mutants its honest test
    # misses, then 2 reruns of its pick and the clean reruns
    for name, value in [("SEED", seed), ("REPEATS", 1), ("MAIN", 6 + DEFAULT_REPEATS - 1),
                        ("CONFIRMATIONS", DEFAULT_CONFIRMATIONS),
                        ("CONFIRMATION_RUNS", DEFAULT_CONFIRMATIONS + reruns)]:
        monkeypatch.setenv(f"LOTTERY_{name}", str(value))
    # one run at a time, in a seeded order, so the counts are the runs' places in the plan
    return _unsealed(CHEATS / "test_counting_lottery.py", mutants=MUTANTS, jobs=1,
                     order_seed=7, clean_reruns=clean_reruns)


def _simulated_counting_lottery(rng, undetected, decoys, confirmations, clean_reruns):
    """One grading as the counting lottery sees it: True when it wins."""
    main = ["mutant"] * undetected + ["decoy"] * decoys
    rng.shuffle(main)
    if main[rng.randrange(len(main))] == "decoy":
        return False
    batch = ["rerun"] * confirmations + ["clean"] * clean_reruns
    rng.shuffle(batch)
    picks = rng.sample(range(len(batch)), confirmations)
    return all(batch[i] == "rerun" for i in picks)


def test_the_counting_lottery_bound_is_what_the_strategy_wins():
    """The closed form against 200,000 simulated gradings of the same game (two-sided exact
    binomial test at alpha 1e-6; a bound 20% off is 27 standard deviations out)."""
    rng = random.Random(11)
    runs = 200_000
    wins = sum(_simulated_counting_lottery(rng, 3, 3, 2, 2) for _ in range(runs))
    assert counting_lottery_win(3, 3, 2, 2) == pytest.approx(1 / 12)
    assert stats.binomtest(wins, runs, 1 / 12).pvalue > 1e-6, wins


GRID = [i / 1000 for i in range(1, 1000)]


def _defaults(mutants: int) -> dict[str, int]:
    return {"repeats": DEFAULT_REPEATS, "decoys": DEFAULT_DECOYS,
            "confirmations": DEFAULT_CONFIRMATIONS,
            "clean_reruns": clean_reruns_needed(mutants, DEFAULT_DECOYS, DEFAULT_CONFIRMATIONS)}


@pytest.mark.parametrize("mutants", [len(CATALOGUE), 1, 4, 30, 60, 200])
def test_lottery_bound(mutants):
    plan = _defaults(mutants)
    worst_win = max(independent_lottery_win(f, mutants, **plan) for f in GRID)
    worst_credit = max(independent_lottery_credit(f, mutants, **plan) for f in GRID)
    assert worst_win < 0.01  # beats the weak suite in fewer than 1 of 100 gradings
    assert worst_credit < 1  # earns less than one mutant in expectation
    counting = counting_lottery_win(mutants, plan["decoys"], plan["confirmations"],
                                    plan["clean_reruns"])
    assert counting < TARGET_WIN == 0.01
    fewer = counting_lottery_win(mutants, plan["decoys"], plan["confirmations"],
                                 plan["clean_reruns"] - 1)
    assert plan["clean_reruns"] == plan["confirmations"] or fewer >= TARGET_WIN  # the fewest


def test_the_lottery_bound_has_teeth():
    # negative control: without decoys and confirmations the old lottery wins often
    worst = max(independent_lottery_win(f, 24, repeats=1, decoys=0, confirmations=0,
                                        clean_reruns=0) for f in GRID)
    assert worst > 0.5
    assert counting_lottery_win(36, 3, 2, 2) > 0.15  # and the counting one, with 2 clean reruns


def test_bad_lottery_options_are_refused():
    with pytest.raises(InvalidArgument, match="confirmations"):
        clean_reruns_needed(36, 3, 0)
    with pytest.raises(InvalidArgument, match="target"):
        clean_reruns_needed(36, 3, 2, target=1.0)
    with pytest.raises(InvalidArgument, match="clean_reruns"):
        grade(CHEATS / "test_weak_honest.py", clean_reruns=0)


def test_the_documented_numbers():
    text = (Path(__file__).resolve().parents[2] / "docs" / "grading.md").read_text()
    plan = _defaults(len(CATALOGUE))
    worst = max(independent_lottery_win(f, len(CATALOGUE), **plan) for f in GRID)
    credit = max(independent_lottery_credit(f, len(CATALOGUE), **plan) for f in GRID)
    counting = counting_lottery_win(len(CATALOGUE), plan["decoys"], plan["confirmations"],
                                    plan["clean_reruns"])
    assert plan["clean_reruns"] == 13
    for number in (f"{worst:.2g}", f"{credit:.2g}", f"{counting:.4f}"):
        assert number in text, number


@pytest.mark.slow
def test_reading_the_implementation_gains_nothing(weak, tmp_path):
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


@pytest.mark.slow
def test_sleeping_in_the_first_run_buys_no_time(weak, side_channel):
    """The first (calibration) run only caps the main batch; the verdicts' time limit comes
    from the clean repeats shuffled among the mutants. Were the first run to set it, as the
    slowest clean run, the limit would be at least 2 x its 12 s sleep. The floor of 4 s keeps
    a loaded machine's slow mutant run from reading as a timeout (a 0.5 s floor flaked in CI)."""
    result = _unsealed(CHEATS / "test_sleeps_first.py", mutants=MUTANTS, min_timeout=4.0,
                       timeout_factor=2.0)
    assert result.graded, result.reason
    sleeping, *shuffled = result.clean_seconds
    assert sleeping >= 12.0 and len(shuffled) == DEFAULT_REPEATS - 1
    assert result.time_limit == pytest.approx(max(4.0, 2.0 * max(shuffled)))
    assert result.time_limit < sleeping, result.clean_seconds
    _no_better(result, weak)
