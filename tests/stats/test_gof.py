"""The G-test: closed forms, pooling by expected counts, zero-probability tokens, calibration."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from spec_verify.errors import InvalidArgument, InvalidDistribution
from spec_verify.stats._gof import GofResult, g_test, pool_cells, probabilities

# Declared false-failure probability of each simulated assertion (binomial tail), < 1e-6 in all.
FALSE_FAILURE = 1e-7


def test_closed_form_two_cells() -> None:
    # G = 2 (30 ln(30/20) + 10 ln(10/20)) on 1 df.
    result = g_test([30, 10], [Fraction(1, 2), Fraction(1, 2)], alpha=0.01)
    G = 2 * (30 * math.log(1.5) + 10 * math.log(0.5))
    assert result.statistic == pytest.approx(G)
    assert result.pvalue == pytest.approx(stats.chi2.sf(G, 1))
    assert result.df == 1
    assert result.n == 40
    assert result.passed is (result.pvalue >= 0.01)
    assert result.passed is False  # p = 0.0012
    assert result.deviations[0].token == 0
    assert result.deviations[0].residual == pytest.approx(10 / math.sqrt(20))
    assert "token 0 observed 30 times, expected 20.0" in result.message


def test_result_is_a_frozen_value_with_verdict_first() -> None:
    result = g_test([5, 5], [0.5, 0.5], alpha=0.01)
    assert isinstance(result, GofResult)
    names = list(result.__dataclass_fields__)
    assert names[:6] == ["passed", "statistic", "pvalue", "alpha", "n", "df"]
    with pytest.raises(AttributeError):
        result.passed = False  # type: ignore[misc]
    assert result.passed
    assert result.statistic == 0.0
    assert result.total_variation() == 0.0


def test_total_variation_of_the_sample() -> None:
    result = g_test([30, 10], [0.5, 0.5], alpha=0.01)
    assert result.total_variation() == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("probs", "n", "pooled", "df"),
    [
        # expected (20, 12, 4, 2, 2): the three sparse cells pool to 8.
        ([0.5, 0.3, 0.1, 0.05, 0.05], 40, (2, 3, 4), 2),
        # expected (54, 3, 3): the two sparse cells pool to 6.
        ([0.9, 0.05, 0.05], 60, (1, 2), 1),
        # expected (30, 27, 3): the lone sparse cell takes the next smallest (27).
        ([0.5, 0.45, 0.05], 60, (1, 2), 1),
        # nothing sparse
        ([0.5, 0.5], 10, (), 1),
    ],
)
def test_pooling_is_by_expected_counts(
    probs: list[float], n: int, pooled: tuple[int, ...], df: int
) -> None:
    # Whatever the observations, the partition is the same: it depends on n * p only.
    rng = np.random.default_rng(7)
    for _ in range(5):
        counts = rng.multinomial(n, np.full(len(probs), 1 / len(probs)))
        result = g_test(counts, probs, alpha=0.01)
        assert result.pooled == pooled
        assert result.df == df


def test_pooled_statistic_is_computed_on_the_pooled_cells() -> None:
    probs = [0.5, 0.3, 0.1, 0.05, 0.05]
    observed = [18, 14, 0, 0, 8]  # the pooled cell holds 8, expected 8
    result = g_test(observed, probs, alpha=0.01)
    cells_o, cells_e = np.array([18, 14, 8]), np.array([20, 12, 8])
    G = 2 * np.sum(cells_o * np.log(cells_o / cells_e))
    assert result.statistic == pytest.approx(G)
    assert result.observed == tuple(observed)
    assert result.expected == pytest.approx((20, 12, 4, 2, 2))


def test_pool_cells_orders_deterministically() -> None:
    # Ties in expected count are broken by token id.
    cells = pool_cells(np.array([2.0, 10.0, 2.0, 2.0, 10.0]), [0, 1, 2, 3, 4])
    assert cells == [[1], [4], [0, 2, 3]]


def test_zero_probability_token_is_an_immediate_failure() -> None:
    probs = [Fraction(1, 2), Fraction(0), Fraction(1, 2), Fraction(0)]
    result = g_test([500, 0, 500, 2], probs, alpha=1e-6)
    assert result.passed is False
    assert result.pvalue == 0.0
    assert result.statistic == math.inf
    assert result.zero_probability_tokens == (3,)
    assert result.message == "token 3 has target probability 0 but was observed 2 times"
    assert result.deviations[0].token == 3


def test_zero_probability_tokens_are_all_named() -> None:
    result = g_test([1, 3, 0, 2], [1.0, 0.0, 0.0, 0.0], alpha=1e-6)
    assert result.zero_probability_tokens == (1, 3)
    assert "token 1 has target probability 0 but was observed 3 times" in result.message
    assert "token 3 has target probability 0 but was observed 2 times" in result.message


def test_unobserved_zero_probability_tokens_take_no_part() -> None:
    with_zeros = g_test([30, 0, 10, 0], [0.5, 0.0, 0.5, 0.0], alpha=0.01)
    without = g_test([30, 10], [0.5, 0.5], alpha=0.01)
    assert with_zeros.df == without.df == 1
    assert with_zeros.statistic == pytest.approx(without.statistic)


def test_point_mass_target() -> None:
    result = g_test([0, 12, 0], [0, 1, 0], alpha=1e-6)
    assert result.passed
    assert result.df == 0
    assert not g_test([1, 12, 0], [0, 1, 0], alpha=1e-6).passed


def test_too_few_samples_says_how_many_would_do() -> None:
    with pytest.raises(InvalidArgument, match="draw at least 10 samples") as info:
        g_test([1, 1, 1], [0.5, 0.25, 0.25], alpha=0.01)
    assert info.value.argument == "observed_counts"
    assert g_test([5, 3, 2], [0.5, 0.25, 0.25], alpha=0.01).df == 1


def test_fraction_and_float_targets_agree() -> None:
    exact = g_test([40, 35, 25], [Fraction(2, 5), Fraction(7, 20), Fraction(1, 4)], 0.01)
    approx = g_test([40, 35, 25], [0.4, 0.35, 0.25], 0.01)
    assert exact.statistic == pytest.approx(approx.statistic)
    assert exact.pvalue == pytest.approx(approx.pvalue)


def test_float_sum_tolerance() -> None:
    assert probabilities([0.5, 0.5 + 1e-12]).sum() == pytest.approx(1.0)
    with pytest.raises(InvalidDistribution, match="sum to 1"):
        probabilities([0.5, 0.5 + 1e-6])
    with pytest.raises(InvalidDistribution, match="exactly 1"):
        probabilities([Fraction(1, 2), Fraction(1, 2) + Fraction(1, 10**30)])


@pytest.mark.parametrize(
    "probs",
    [
        np.array([0.3, 0.2, 0.1, 0.2, 0.2]),  # no pooling at n = 200
        0.5 ** np.r_[np.arange(1, 30), 29],  # 30 tokens, most of them pooled at n = 200
    ],
    ids=["dense", "sparse"],
)
def test_false_alarm_rate_at_loose_alpha(probs: np.ndarray) -> None:
    # Under the target the G-test fails with probability about alpha (measured 0.050-0.057 at
    # alpha = 0.05 for these cases). The band [0.6, 1.4] * alpha, widened by binomial tails
    # of probability FALSE_FAILURE each, fails if the statistic, the df or the pooling is off.
    alpha, reps = 0.05, 4000
    counts = np.random.default_rng(11).multinomial(200, probs, size=reps)
    failures = sum(not g_test(row, probs, alpha).passed for row in counts)
    low = stats.binom.ppf(FALSE_FAILURE, reps, 0.6 * alpha)
    high = stats.binom.isf(FALSE_FAILURE, reps, 1.4 * alpha)
    assert low <= failures <= high, (failures, low, high)


DISTRIBUTION_ERRORS: list[Any] = [
    [],
    [[0.5, 0.5]],
    [0.5, -0.1, 0.6],
    [0.5, math.nan],
    [0.5, math.inf],
    [0.5, "0.5"],
    [0.5, None],
    [True, False],
    [0.5, 0.6],
    [Fraction(1, 3), Fraction(1, 3)],
]


@pytest.mark.parametrize("probs", DISTRIBUTION_ERRORS)
def test_invalid_distributions(probs: Any) -> None:
    with pytest.raises(InvalidDistribution) as info:
        g_test([1] * max(len(probs), 1), probs, alpha=0.01)
    assert info.value.argument == "expected_probs"
    assert str(info.value).startswith("expected_probs=")


ARGUMENT_ERRORS: list[tuple[Any, Any, Any, str]] = [
    # (observed_counts, expected_probs, alpha, argument)
    ([5, 5, 5], [0.5, 0.5], 0.01, "observed_counts"),
    ([5, -1], [0.5, 0.5], 0.01, "observed_counts"),
    ([5.0, 5.0], [0.5, 0.5], 0.01, "observed_counts"),
    ([[5, 5]], [0.5, 0.5], 0.01, "observed_counts"),
    ([True, False], [0.5, 0.5], 0.01, "observed_counts"),
    ([0, 0], [0.5, 0.5], 0.01, "observed_counts"),
    ([5, 5], [0.5, 0.5], 0.0, "alpha"),
    ([5, 5], [0.5, 0.5], 1.0, "alpha"),
    ([5, 5], [0.5, 0.5], math.nan, "alpha"),
    ([5, 5], [0.5, 0.5], "0.01", "alpha"),
]


@pytest.mark.parametrize(("observed", "probs", "alpha", "argument"), ARGUMENT_ERRORS)
def test_invalid_arguments_raise_naming_the_argument(
    observed: Any, probs: Any, alpha: Any, argument: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        g_test(observed, probs, alpha)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}=")
