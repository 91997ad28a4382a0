"""The statistical tier: plans, exact laws, verdicts on the reference and on planted bugs,
negative controls at exactly delta, Holm, the e-process, and (slow) the calibration."""

from __future__ import annotations

import math
import types
from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from scipy import stats

from spec_verify.adapters._implementations import Implementation, PythonImplementation
from spec_verify.adapters._loader import load_implementation
from spec_verify.errors import InvalidArgument
from spec_verify.reference import SamplingParams, sampling_distribution
from spec_verify.results import CheckResult, Status
from spec_verify.stats._power import required_samples
from spec_verify.tiers._calibration import hardest_alternative, measure_false_alarms, measure_power
from spec_verify.tiers.statistical import (
    STATISTICAL_CHECKS,
    FirstTokenCheck,
    GenerationCheck,
    SequenceCheck,
    check_delta,
    check_names,
    observe,
    plan_statistical_tier,
    run_statistical_tier,
)

ACCEPT_ALL = "python:tests.properties.impls.accept_all"
NAMES = check_names()
TREE_NAMES = [name for name in NAMES if name.startswith("tree.")]  # need verify_tree
# Probability that one fixed-seed negative control below misses at the declared power: 0.01;
# the seeds are fixed, so the verdicts are deterministic (they were checked once, not chosen).
DELTA = 0.1


@pytest.fixture(scope="module")
def reference_results(reference_check: dict[str, Any]) -> dict[str, CheckResult]:
    """The default gate's statistical tier (family alpha 1e-6, delta 0.05, power 0.99, seed 0),
    as ``spec-verify check --json`` reported it (tests/conftest.py: the run is shared)."""
    return {
        r["name"]: CheckResult(**{**r, "status": Status(r["status"])})
        for r in reference_check["report"]["results"]
        if r["tier"] == "statistical"
    }


# --- the plan ----------------------------------------------------------------------------------


def test_check_names_are_stable() -> None:
    assert NAMES == [
        "first_token.sampled_draft",
        "first_token.disjoint_supports",
        "first_token.deterministic_draft",
        "first_token.filters_and_penalties",
        "first_token.float32_logits_every_processor_cuts",
        "sequence.two_drafts",
        "acceptance_rate",
        "tree.b4_d1_repeats",
        "tree.b1_d5_chain",
        "tree.b2_d4_without_replacement",
        "tree.b3_d2_deterministic_repeats",
        "tree.acceptance_b2_d2",
        "generation.model_draft",
        "generation.prompt_lookup_penalties",
        "sequence.law_k2",
        "sequence.law_k4",
        "sequence.law_k3_deterministic",
        "own_stream.propose_k2",
    ]


# The checks with their own power plan and the TV each is sized for (below the run's delta).
OWN_DELTAS = {"own_stream.propose_k2": 0.04}


def test_sample_sizes_are_computed_from_cells_alpha_delta_power() -> None:
    plan = plan_statistical_tier(None, family_alpha=1e-6, delta=0.05, power=0.99)
    m = len(STATISTICAL_CHECKS)
    for entry in plan.entries:
        cells = sum(1 for v in entry.check.probabilities().values() if v > 0)
        delta = OWN_DELTAS.get(entry.check.name, 0.05)
        assert entry.alpha == pytest.approx(1e-6 / m)
        assert entry.cells == cells
        assert check_delta(entry.check, plan.delta) == delta
        assert entry.n == required_samples(cells, 1e-6 / m, delta, 0.99)
    assert plan.total_samples() == sum(e.n + e.extra for e in plan.entries)
    assert all(0 <= e.extra <= e.n // 8 for e in plan.entries)


def test_a_checks_own_delta_applies_only_below_the_runs() -> None:
    """own_stream.propose_k2 is sized for TV 0.04 (the coupling bug's 4/91, just below) at the
    run's alpha and power; a run declaring a smaller delta keeps its own for every check."""
    for delta, own in [(0.2, 0.04), (0.05, 0.04), (0.03, 0.03)]:
        plan = plan_statistical_tier(
            None, family_alpha=1e-6, delta=delta, power=0.99, budget=1_000_000
        )
        entry = next(e for e in plan.entries if e.check.name == "own_stream.propose_k2")
        assert check_delta(entry.check, delta) == own
        assert entry.alpha == pytest.approx(1e-6 / len(STATISTICAL_CHECKS))
        assert entry.n == required_samples(entry.cells, entry.alpha, own, 0.99)
        others = [e for e in plan.entries if e.check.name not in OWN_DELTAS]
        assert all(check_delta(e.check, delta) == delta for e in others)


def test_sequential_plans_the_g_test_at_half_alpha() -> None:
    plain = plan_statistical_tier(None, delta=0.1)
    sequential = plan_statistical_tier(None, delta=0.1, sequential=True)
    for a, b in zip(plain.entries, sequential.entries, strict=True):
        assert b.alpha == a.alpha
        delta = check_delta(b.check, 0.1)
        assert b.n == required_samples(b.cells, a.alpha / 2, delta, 0.99) > a.n


def test_checks_without_their_capability_are_skipped_and_leave_the_family() -> None:
    module = types.ModuleType("verify_only")
    module.verify_draft = load_implementation("reference", in_process=True).module.verify_draft  # type: ignore[attr-defined]
    impl = PythonImplementation("python:verify_only", module)
    plan = plan_statistical_tier(impl, family_alpha=1e-6)
    skipped = [e.check.name for e in plan.entries if e.skip_reason]
    assert skipped == [
        *TREE_NAMES,
        "generation.model_draft",
        "generation.prompt_lookup_penalties",
        "own_stream.propose_k2",
    ]
    assert all(e.alpha == pytest.approx(1e-6 / 10) for e in plan.entries)
    results = run_statistical_tier(
        impl, delta=0.2, checks=["acceptance_rate", "generation.model_draft"]
    )
    assert [r.status for r in results] == [Status.PASSED, Status.SKIPPED]
    assert "does not offer generation" in results[1].message


BAD_ARGUMENTS = [
    ({"family_alpha": 0.0}, "family_alpha", "in \\(0, 1\\)"),
    ({"family_alpha": 1.5}, "family_alpha", "in \\(0, 1\\)"),
    ({"power": 1.0}, "power", "in \\(0, 1\\)"),
    ({"power": 1e-9}, "power", "must exceed alpha"),
    ({"delta": 0.0}, "delta", "\\(0, 1\\]"),
    ({"delta": -0.1}, "delta", "\\(0, 1\\]"),
    ({"delta": 2.0}, "delta", "\\(0, 1\\]"),
    ({"seed": -1}, "seed", ">= 0"),
    ({"seed": 1.5}, "seed", "integer"),
    ({"budget": 0}, "budget", "at least 1"),
    ({"checks": "acceptance_rate"}, "checks", "list of check names"),
    ({"checks": []}, "checks", "selects no check"),
    ({"checks": ["nope"]}, "checks", "unknown check names \\['nope'\\]"),
    # A plan beyond the budget says what would fit.
    ({"budget": 1000, "delta": 0.05}, "V", "more than budget=1,000; with 1,000 draws: delta >="),
]


@pytest.mark.parametrize(("kwargs", "argument", "rule"), BAD_ARGUMENTS)
def test_bad_arguments(reference, kwargs: dict[str, Any], argument: str, rule: str) -> None:
    with pytest.raises(InvalidArgument, match=rule) as info:
        plan_statistical_tier(None, **kwargs)
    assert info.value.argument == argument
    with pytest.raises(InvalidArgument, match=rule):
        run_statistical_tier(reference, **kwargs)


def test_over_budget_names_the_check() -> None:
    with pytest.raises(InvalidArgument, match=r"check first_token\.sampled_draft: detecting"):
        plan_statistical_tier(None, budget=1000)


# --- the exact laws ------------------------------------------------------------------------------


@pytest.mark.parametrize("check", STATISTICAL_CHECKS, ids=NAMES)
def test_every_law_is_a_distribution(check: Any) -> None:
    law = check.probabilities()
    assert math.isclose(math.fsum(law.values()), 1.0, abs_tol=1e-12)
    assert all(v >= 0 for v in law.values())
    assert sum(1 for v in law.values() if v > 0) >= 2


def test_first_token_laws_are_the_targets() -> None:
    exact = next(c for c in STATISTICAL_CHECKS if c.name == "first_token.sampled_draft")
    assert isinstance(exact, FirstTokenCheck) and exact.target is not None
    assert list(exact.probabilities().values()) == [float(v) for v in exact.target]
    filtered = next(c for c in STATISTICAL_CHECKS if c.name == "first_token.filters_and_penalties")
    assert isinstance(filtered, FirstTokenCheck)
    dist = sampling_distribution(
        filtered.logits, SamplingParams(**filtered.params), filtered.history, filtered.prompt
    )
    assert list(filtered.probabilities().values()) == dist.tolist()
    assert (dist == 0).sum() == 3  # top-k, top-p and min-p rule tokens out


def test_sequence_law_follows_the_target_position_by_position() -> None:
    """The exactness theorem on the check's own tables: the first emitted token follows the
    target's first row; a second token after a kept x_1 follows the target's row after x_1."""
    check = next(c for c in STATISTICAL_CHECKS if isinstance(c, SequenceCheck))
    target, _ = check._tables
    law = check.probabilities()
    first: dict[int, float] = defaultdict(float)
    for seq, prob in law.items():
        first[seq[0]] += prob
    assert [first[t] for t in range(check.vocab_size)] == pytest.approx(
        [float(v) for v in target[()]], abs=1e-15
    )
    for x1 in range(check.vocab_size):
        after: dict[int, float] = defaultdict(float)
        for seq, prob in law.items():
            if len(seq) >= 2 and seq[0] == x1:
                after[seq[1]] += prob
        if after:
            # P(second = b | first = x1, x1 kept): each row sums to the kept mass.
            kept = sum(after.values())
            row = [after.get(b, 0.0) / kept for b in range(check.vocab_size)]
            assert row == pytest.approx([float(v) for v in target[(x1,)]], abs=1e-12)


def test_generation_law_matches_the_seeds_enumeration() -> None:
    check = next(c for c in STATISTICAL_CHECKS if c.name == "generation.model_draft")
    assert isinstance(check, GenerationCheck)
    law = check.probabilities()
    model = check._target()
    logits = model.forward(list(check.prompt), model.new_cache(), 0)[-1]
    first = sampling_distribution(logits, SamplingParams(), [], list(check.prompt))
    marginal = [sum(v for s, v in law.items() if s[0] == t) for t in range(8)]
    assert marginal == pytest.approx(first.tolist(), abs=1e-15)
    assert len(law) == 64


# --- verdicts -------------------------------------------------------------------------------------


def test_the_reference_passes_the_default_gate(reference_results: dict[str, Any]) -> None:
    assert list(reference_results) == NAMES
    for result in reference_results.values():
        assert result.status is Status.PASSED, result.message
        assert result.tier == "statistical"
        assert result.alpha == pytest.approx(1e-6 / len(NAMES))
        details = result.details
        delta = OWN_DELTAS.get(result.name, 0.05)
        assert (details["family_alpha"], details["delta"], details["power"]) == (1e-6, delta, 0.99)
        assert f"detects TV >= {delta:g} with power 0.99" in result.message
        assert details["holm_threshold"] >= result.alpha
        assert result.n == details["draws"] >= details["required_samples"]
        assert sum(details["observed"]) == result.n
        assert result.repro == ""
        assert result.message.startswith("consistent with the target (p=")


def test_the_default_gate_plans_a_bounded_number_of_draws() -> None:
    """About 169,000 draws (48,000 of them tree rounds, 6,400 of those for the efficiency
    check; 28,000 for the chains' sequence laws; 7,000 for the float32-valued case; 16,200
    own-stream rounds, planned at their own TV 0.04), plus the seeded extras (an eighth at
    most: about 6 % more on average)."""
    plan = plan_statistical_tier(None)
    planned = sum(entry.n for entry in plan.entries)
    assert planned < 175_000
    assert planned < plan.total_samples() <= planned * 1.125


def test_same_seed_same_run_and_another_seed_another(reference: Any) -> None:
    run = lambda seed: [
        (r.name, r.details["observed"])
        for r in run_statistical_tier(
            reference,
            seed=seed,
            delta=0.3,
            checks=["first_token.sampled_draft", "sequence.two_drafts"],
        )
    ]
    assert run(3) == run(3)
    assert run(3) != run(4)


def test_a_check_draws_the_same_with_or_without_the_others(reference: Any) -> None:
    alone = run_statistical_tier(reference, delta=0.3, checks=["acceptance_rate"])
    together = run_statistical_tier(
        reference, delta=0.3, checks=["first_token.sampled_draft", "acceptance_rate"]
    )
    # Different family sizes plan different n; the streams are the same, so the shorter
    # sample is a prefix of the longer one: the accepted counts are ordered accordingly.
    assert alone[0].n < together[1].n
    for cell in (0, 1):  # rejected, accepted
        assert alone[0].details["observed"][cell] <= together[1].details["observed"][cell]


def test_the_planted_bug_fails_every_check_by_name() -> None:
    impl = load_implementation(ACCEPT_ALL)
    chains = [name for name in NAMES if name not in TREE_NAMES]  # its verify_tree is right
    results = run_statistical_tier(impl, sequential=True, checks=chains)
    assert [r.name for r in results] == chains
    for result in results:
        assert result.status is Status.FAILED, result.message
        assert result.message.startswith("not the target (p=")
        assert result.repro.startswith("pytest --pyargs spec_verify.properties.test_statistics")
        assert f"--spec-impl={ACCEPT_ALL}" in result.repro and "--spec-seed=0" in result.repro
        # the e-process stopped every check within its first batch
        assert result.n <= 512 < result.details["required_samples"]


def test_zero_probability_outcomes_fail_at_once_and_are_named() -> None:
    impl = load_implementation(ACCEPT_ALL)
    (result,) = run_statistical_tier(impl, checks=["first_token.disjoint_supports"], delta=0.3)
    assert result.pvalue == 0.0
    assert "outcomes the target gives probability 0 were produced: 2" in result.message


class _Crashing(Implementation):
    """An implementation whose verify_draft crashes (the adapter's guard reports it so)."""

    name = "python:crashing"
    capabilities = frozenset({"verify_draft"})

    def verify_draft(self, *args: Any) -> Any:
        from spec_verify.errors import ImplementationError

        raise ImplementationError(self.name, "verify_draft", "raised RuntimeError: boom")


def test_a_crash_is_an_error_result_and_counts_as_rejected() -> None:
    (result,) = run_statistical_tier(_Crashing(), checks=["acceptance_rate"], delta=0.3)  # type: ignore[arg-type]
    assert result.status is Status.ERROR
    assert "boom" in result.message and result.pvalue == 0.0


class _Refusing(_Crashing):
    def verify_draft(self, *args: Any) -> Any:
        raise ValueError("draft_probs: no")


def test_refusing_valid_input_is_an_error_result() -> None:
    (result,) = run_statistical_tier(_Refusing(), checks=["acceptance_rate"], delta=0.3)  # type: ignore[arg-type]
    assert result.status is Status.ERROR
    assert "rejected valid input" in result.message


# --- negative controls: samplers wrong by exactly delta ----------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_a_sampler_wrong_by_exactly_delta_is_caught(name: str) -> None:
    """The hardest alternative at TV exactly DELTA, at the check's planned n and alpha (its
    Holm threshold when it is the only wrong check of the run). Fixed seed: deterministic."""
    plan = plan_statistical_tier(None, delta=DELTA)
    entry = next(e for e in plan.entries if e.check.name == name)
    law = entry.check.probabilities()
    q = hardest_alternative(law, DELTA, entry.n)
    assert 0.5 * math.fsum(abs(q[o] - law[o]) for o in law) == pytest.approx(DELTA)
    outcomes = list(q)
    rng = np.random.default_rng([17, entry.index])
    draws = rng.choice(len(outcomes), size=entry.n, p=[q[o] for o in outcomes])
    caught = observe([outcomes[i] for i in draws], entry.check, entry.alpha)
    assert caught.pvalue < entry.alpha, caught.summary
    # ...and the same test on the target itself does not fire.
    draws = rng.choice(len(outcomes), size=entry.n, p=[law[o] for o in outcomes])
    assert observe([outcomes[i] for i in draws], entry.check, entry.alpha).pvalue > entry.alpha


def test_hardest_alternative_splits_the_mass_in_half_when_it_can() -> None:
    law = {0: 0.25, 1: 0.25, 2: 0.3, 3: 0.2}
    q = hardest_alternative(law, 0.05, n=10_000)
    chi2 = sum((q[o] - law[o]) ** 2 / law[o] for o in law)
    assert chi2 == pytest.approx(4 * 0.05**2)
    with pytest.raises(InvalidArgument, match="delta"):
        hardest_alternative({0: 0.99, 1: 0.01}, 0.05, n=10_000)


def _off_by_delta(delta: float) -> PythonImplementation:
    """The reference, except that its first emitted token is replaced, with probability
    eps = delta / (1 - p(t)), by the target's least likely token t: the first token's law is
    then at TV exactly delta from p (for first_token.sampled_draft)."""
    base = load_implementation("reference", in_process=True).module
    module = types.ModuleType("off_by_delta")
    module.__dict__.update({k: getattr(base, k) for k in base.__all__})
    p = [0.5, 0.125, 0.125, 0.125, 0.125]
    t, eps = 4, delta / (1 - 0.125)
    coin = np.random.default_rng(99)

    def verify_draft(*args: Any, **kwargs: Any) -> tuple[list[int], int]:
        emitted, n = base.verify_draft(*args, **kwargs)
        if coin.random() < eps:
            return [t], 0
        return emitted, n

    module.verify_draft = verify_draft  # type: ignore[attr-defined]
    assert math.isclose(
        0.5 * sum(abs((1 - eps) * v + eps * (i == t) - v) for i, v in enumerate(p)), delta
    )
    return PythonImplementation("python:off_by_delta", module)


def test_an_implementation_wrong_by_exactly_delta_fails_through_the_whole_path() -> None:
    (result,) = run_statistical_tier(
        _off_by_delta(DELTA), delta=DELTA, checks=["first_token.sampled_draft"]
    )
    assert result.status is Status.FAILED, result.message


# --- the sequential test ------------------------------------------------------------------------


def test_sequential_runs_the_full_plan_on_a_correct_sampler(reference: Any) -> None:
    (result,) = run_statistical_tier(
        reference, delta=0.2, sequential=True, checks=["first_token.sampled_draft"]
    )
    assert result.status is Status.PASSED
    assert result.n == result.details["draws"] >= result.details["required_samples"]
    assert result.details["sequential"]["stopped_at"] is None
    # the reported p-value is the Bonferroni combination of the two looks
    assert result.pvalue <= 1.0


# --- calibration (slow: the numbers in docs/calibration.md come from the benchmark) -------------


def test_calibration_runs_share_a_worker_and_close_it(monkeypatch) -> None:
    """Runs on one worker have the outcomes of runs on fresh workers, and every worker the
    calibration loads is closed (they were left open, one per run). The job is the slow
    calibration's false-alarm job below (delta 0.3, own_stream.* left out): the runs it shares
    a worker for, at its sizes (every check's p-value must agree)."""
    from spec_verify.tiers import _calibration

    opened, closed = [], []
    real = _calibration.load_implementation

    def recording(spec):
        impl = real(spec)
        close = impl.close

        def closing():
            closed.append(impl)
            close()

        impl.close = closing
        opened.append(impl)
        return impl

    monkeypatch.setattr(_calibration, "load_implementation", recording)
    chains = [name for name in NAMES if name not in OWN_DELTAS]
    job = ("reference", [3, 4], 0.05, 0.3, 0.99, chains)
    shared = _calibration._runs(job)
    fresh = [o for seed in job[1] for o in _calibration._runs((job[0], [seed], *job[2:]))]
    assert shared == fresh
    assert len(opened) == 3
    assert closed == opened


@pytest.mark.slow
def test_calibration_false_alarms_and_power() -> None:
    """100 runs of the whole tier on the reference at family alpha 0.05, planned for delta 0.3
    (samples about half the size of delta 0.2's, so half the time; a correct sampler's false
    alarm rate does not depend on delta): the count of runs with a failed check is not above
    what alpha allows (one-sided exact binomial test at 1e-6: it fails at 19 or more, which a
    tier whose true family rate is 0.25 reaches with probability 0.94); and per check, 100
    samples at TV exactly 0.2 (0.3 has no law for some checks' splits) are detected at the
    declared power 0.99 (one-sided at 1e-6: it fails at 91 or fewer, probability 0.97 for a
    check whose true power is 0.85). The long calibration (1,000 runs, at the --delta it is
    given) is benchmarks/calibrate_statistics.py; docs/calibration.md has its figures.
    The false alarms leave out own_stream.* (planned for its own TV 0.04 whatever the delta:
    about 9,400 rounds a run here: 100 runs would take over ten minutes); the reference passing
    it is tests/tiers/test_own_stream.py, its power is measured below with the others."""
    runs = 100
    chains = [name for name in NAMES if name not in OWN_DELTAS]
    alarms = measure_false_alarms(runs, family_alpha=0.05, alpha=0.05, delta=0.3, processes=2,
                                  checks=chains)  # fmt: skip
    assert stats.binom.sf(alarms.failed_runs - 1, runs, 0.05) > 1e-6, alarms
    for name, count in alarms.check_rejections.items():
        assert stats.binomtest(count, runs, 0.05).pvalue > 1e-6, (name, count)
    for measured in measure_power(runs, family_alpha=0.05, delta=0.2):
        assert stats.binom.cdf(measured.detected, runs, 0.99) > 1e-6, measured


def test_quick_plans_for_a_larger_delta(reference: Any) -> None:
    (quick,) = run_statistical_tier(reference, quick=True, checks=["acceptance_rate"])
    assert quick.details["delta"] == 0.1
    (given,) = run_statistical_tier(reference, quick=True, delta=0.3, checks=["acceptance_rate"])
    assert given.details["delta"] == 0.3
