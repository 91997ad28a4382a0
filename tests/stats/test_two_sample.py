"""The two-sample test: closed forms, pooling by combined counts, permutation p-values, power,
bad input, and (slow) its measured false-alarm rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spec_verify.errors import InvalidArgument
from spec_verify.stats import (
    TwoSampleResult,
    detectable_delta,
    required_samples,
    two_sample_detectable_delta,
    two_sample_required_samples,
    two_sample_test,
)
from spec_verify.stats._calibration import REGIMES, false_alarms, power_at_delta


def test_closed_form_two_by_two() -> None:
    # a: 30 zeros, 10 ones; b: 10 zeros, 30 ones. Expected 20 everywhere.
    a = [0] * 30 + [1] * 10
    b = [0] * 10 + [1] * 30
    result = two_sample_test(a, b, alpha=1e-3)
    G = 2 * (2 * 30 * math.log(30 / 20) + 2 * 10 * math.log(10 / 20))
    q = 1 + (80 * (1 / 40 + 1 / 40) - 1) * (80 * (1 / 40 + 1 / 40) - 1) / (6 * 80)  # Williams
    assert result.method == "chi2"
    assert result.df == 1
    assert result.statistic == pytest.approx(G / q)
    assert result.pvalue == pytest.approx(stats.chi2.sf(G / q, 1))
    assert not result.passed  # p ~ 1e-5
    assert result.total_variation() == pytest.approx(0.5)
    assert result.deviations[0].count_a in (30, 10)
    assert "the samples differ" in result.message


def test_result_reads_like_a_scipy_result() -> None:
    result = two_sample_test([0, 1, 2] * 20, [2, 1, 0] * 20, alpha=0.01)
    assert isinstance(result, TwoSampleResult)
    assert list(result.__dataclass_fields__)[:4] == ["passed", "statistic", "pvalue", "alpha"]
    assert result.passed and result.pvalue == pytest.approx(1.0)
    assert result.n_a == result.n_b == 60
    with pytest.raises(AttributeError):
        result.passed = False  # type: ignore[misc]


def test_sequences_are_categories_of_the_joint_law() -> None:
    # Same marginals, different joint law: (0,0),(1,1) against (0,1),(1,0).
    a = [(0, 0), (1, 1)] * 40
    b = [(0, 1), (1, 0)] * 40
    result = two_sample_test(a, b, alpha=1e-3)
    assert result.categories == ((0, 0), (0, 1), (1, 0), (1, 1))
    assert not result.passed
    assert two_sample_test([r[0] for r in a], [r[0] for r in b], alpha=1e-3).passed
    array_result = two_sample_test(np.array(a), np.array(b), alpha=1e-3)
    assert array_result.pvalue == pytest.approx(result.pvalue)


def test_pooling_uses_the_combined_counts_only() -> None:
    # Categories 2..25 are rare in the union (expected 0.5 each): pooled whatever sample
    # they came from; together they expect 12 >= 5, so no common category joins them.
    a = [0] * 50 + [1] * 50 + list(range(2, 14))
    b = [0] * 50 + [1] * 50 + list(range(14, 26))
    swapped = two_sample_test(b, a, alpha=0.01)
    result = two_sample_test(a, b, alpha=0.01)
    assert set(result.pooled) == set(range(2, 26))
    assert result.pooled == swapped.pooled
    assert result.pvalue == pytest.approx(swapped.pvalue)


def test_tiny_samples_get_a_permutation_p_value() -> None:
    result = two_sample_test([0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1], alpha=0.01, seed=1)
    assert result.method == "permutation"
    # Exact conditional tail: of C(12, 6) = 924 splits of 6 zeros and 6 ones, 2 are as extreme.
    assert result.pvalue == pytest.approx(2 / 924, abs=0.002)
    assert not result.passed
    assert result.n_resamples == 9999


def test_permutation_and_chi_square_agree_on_a_dense_table() -> None:
    rng = np.random.default_rng(3)
    a = rng.choice(4, size=400, p=[0.4, 0.3, 0.2, 0.1])
    b = rng.choice(4, size=400, p=[0.35, 0.3, 0.2, 0.15])
    limit = two_sample_test(a, b, alpha=0.01, method="chi2")
    exact = two_sample_test(a, b, alpha=0.01, method="permutation", n_resamples=20_000)
    assert exact.pvalue == pytest.approx(limit.pvalue, rel=0.2, abs=0.01)


def test_power_of_two_samples_is_a_g_test_with_the_effective_size() -> None:
    n = two_sample_required_samples(5, 1e-6, 0.05, 0.99)
    one_sample = required_samples(5, 1e-6, 0.05, 0.99)
    assert 2 * one_sample - 1 <= n <= 2 * one_sample  # ceil(2x) against 2 ceil(x)
    assert two_sample_detectable_delta(5, 1e-6, n, n, 0.99) <= 0.05
    assert two_sample_detectable_delta(5, 1e-3, 1000, 1000, 0.9) == pytest.approx(
        detectable_delta(5, 1e-3, 500, 0.9)
    )
    result = two_sample_test([0, 1] * 500, [1, 0] * 500, alpha=1e-3)
    assert result.detectable_delta(0.9) == pytest.approx(detectable_delta(2, 1e-3, 500, 0.9))


def test_total_variation_interval_covers_and_shrinks() -> None:
    rng = np.random.default_rng(5)
    a = rng.choice(3, size=4000, p=[0.5, 0.3, 0.2])
    b = rng.choice(3, size=4000, p=[0.4, 0.3, 0.3])  # TV 0.1
    estimate, low, high = two_sample_test(a, b, alpha=1e-3).total_variation_interval()
    assert low <= 0.1 <= high
    assert estimate == pytest.approx(0.1, abs=0.03)
    _, low_small, high_small = two_sample_test(
        a[:400], b[:400], alpha=1e-3
    ).total_variation_interval()
    assert high_small - low_small > high - low


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([], [0, 1], {}, "non-empty"),
        ([0, 1], [0.5, 1], {}, "entry 0 is 0.5"),
        ([0, 1], [(0, 1)], {}, "holds sequences but a holds ids"),
        ("ab", [0, 1], {}, "non-empty sequence"),
        ([0, 1], [0, 1], {"method": "exact"}, "must be one of"),
        ([0, 1], [0, 1], {"alpha": 0}, "alpha=0: must be in"),
        ([0, 1], [1, 0], {"method": "chi2"}, "fewer than two pooled cells"),
        ([0, 1], [1, 0], {"method": "permutation", "n_resamples": 10}, "could never fail"),
        ([0, 1], [1, 0], {"alpha": 1e-9}, "too sparse for the chi-square limit"),
        (np.array([0.5]), [0], {}, "integer ids"),
        ([(0, 1), "x"], [(0, 1)], {}, "entry 1 is 'x'"),
    ],
)
def test_invalid_arguments(a, b, kwargs, match) -> None:  # type: ignore[no-untyped-def]
    kwargs = {"alpha": 0.01, **kwargs}
    with pytest.raises(InvalidArgument, match=match):
        two_sample_test(a, b, **kwargs)


def test_planted_difference_is_caught_and_null_passes() -> None:
    # Negative control: a sampler wrong by TV 0.1, at the planned size, alpha 1e-3.
    rng = np.random.default_rng(11)
    n = two_sample_required_samples(4, 1e-3, 0.1, 0.99)
    a = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    b = rng.choice(4, size=n, p=[0.3, 0.3, 0.2, 0.2])
    c = rng.choice(4, size=n, p=[0.4, 0.3, 0.2, 0.1])
    assert not two_sample_test(a, b, alpha=1e-3).passed
    assert two_sample_test(a, c, alpha=1e-3).passed


@pytest.mark.slow
def test_false_alarm_rate_within_alpha_over_1000_null_runs() -> None:
    # Declared: each regime's rate at alpha 0.05 lies within its 99.9% Clopper-Pearson
    # interval of the truth; a sound test has rate <= 0.05, so the lower bound must be too.
    for regime in REGIMES:
        found = false_alarms(regime, 1000, 0.05, seed=1)
        low, _ = found.interval(0.999)
        assert low <= 0.05, (regime.name, found.rate)


@pytest.mark.slow
def test_power_at_delta_reaches_the_declared_power() -> None:
    found, _ = power_at_delta([0.4, 0.3, 0.15, 0.1, 0.05], 0.1, 0.01, 0.9, 400, seed=2)
    _, high = found.interval(0.999)
    assert high >= 0.9, found.rate
