"""Exact binomial inference: Clopper-Pearson closed forms and coverage, the acceptance test."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from scipy import stats

from spec_verify.errors import InvalidArgument
from spec_verify.stats._binomial import BinomialResult, acceptance_rate_test, clopper_pearson


@pytest.mark.parametrize(("n", "alpha"), [(1, 0.05), (10, 0.05), (100, 1e-6)])
def test_clopper_pearson_closed_forms_at_the_ends(n: int, alpha: float) -> None:
    # k = 0: hi solves (1 - hi)^n = alpha/2; k = n: lo solves lo^n = alpha/2.
    assert clopper_pearson(0, n, alpha) == pytest.approx((0.0, 1 - (alpha / 2) ** (1 / n)))
    assert clopper_pearson(n, n, alpha) == pytest.approx(((alpha / 2) ** (1 / n), 1.0))


@pytest.mark.parametrize(("k", "n"), [(1, 10), (3, 10), (50, 100), (999, 1000)])
def test_clopper_pearson_matches_scipy(k: int, n: int) -> None:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson(k, n, 0.05) == pytest.approx((ci.low, ci.high), rel=1e-9)


@pytest.mark.parametrize("rate", [0.01, 0.2, 0.5, 0.73, 0.999])
def test_clopper_pearson_coverage_is_at_least_the_level(rate: float) -> None:
    # Exact coverage by enumerating every outcome k (no simulation).
    n, alpha = 60, 0.05
    coverage = math.fsum(
        stats.binom.pmf(k, n, rate)
        for k in range(n + 1)
        if clopper_pearson(k, n, alpha)[0] <= rate <= clopper_pearson(k, n, alpha)[1]
    )
    assert coverage >= 1 - alpha


@pytest.mark.parametrize("rate", [Fraction(1, 10), Fraction(1, 2), Fraction(3, 4)])
def test_acceptance_test_false_alarm_rate_is_at_most_alpha(rate: Fraction) -> None:
    # Exact: sum of P(k) over the outcomes that fail.
    n, alpha = 80, 0.01
    false_alarm = math.fsum(
        stats.binom.pmf(k, n, float(rate))
        for k in range(n + 1)
        if not acceptance_rate_test(k, n, rate, alpha).passed
    )
    assert 0 < false_alarm <= alpha


def test_acceptance_test_result() -> None:
    result = acceptance_rate_test(70, 100, Fraction(3, 4), alpha=1e-6)
    assert isinstance(result, BinomialResult)
    assert list(result.__dataclass_fields__)[:5] == ["passed", "statistic", "pvalue", "alpha", "n"]
    assert result.passed
    assert result.statistic == 0.7
    assert result.n == 100
    assert result.accepted == 70
    assert result.expected_rate == 0.75
    assert result.pvalue == pytest.approx(stats.binomtest(70, 100, 0.75).pvalue)
    assert (result.ci_low, result.ci_high) == clopper_pearson(70, 100, 1e-6)
    assert "accepted 70 of 100" in result.message


def test_acceptance_test_detects_a_wrong_rate() -> None:
    result = acceptance_rate_test(600, 1000, 0.75, alpha=1e-6)
    assert not result.passed
    assert result.pvalue < 1e-6
    assert result.ci_high < 0.75
    assert "not consistent" in result.message


def test_degenerate_expected_rates() -> None:
    assert acceptance_rate_test(0, 50, 0, alpha=1e-6).passed
    assert acceptance_rate_test(50, 50, Fraction(1), alpha=1e-6).passed
    assert acceptance_rate_test(1, 50, 0.0, alpha=1e-6).pvalue == 0.0
    assert not acceptance_rate_test(49, 50, 1.0, alpha=1e-6).passed


INVALID: list[tuple[Any, tuple[Any, ...], str]] = [
    (clopper_pearson, (-1, 10, 0.05), "k"),
    (clopper_pearson, (11, 10, 0.05), "k"),
    (clopper_pearson, (1.0, 10, 0.05), "k"),
    (clopper_pearson, (0, 0, 0.05), "n"),
    (clopper_pearson, (0, 10.0, 0.05), "n"),
    (clopper_pearson, (1, 10, 0.0), "alpha"),
    (clopper_pearson, (1, 10, 1.0), "alpha"),
    (acceptance_rate_test, (5, 0, 0.5, 0.01), "drafted"),
    (acceptance_rate_test, (11, 10, 0.5, 0.01), "accepted"),
    (acceptance_rate_test, (-1, 10, 0.5, 0.01), "accepted"),
    (acceptance_rate_test, (True, 10, 0.5, 0.01), "accepted"),
    (acceptance_rate_test, (5, 10, 1.5, 0.01), "expected_rate"),
    (acceptance_rate_test, (5, 10, -0.5, 0.01), "expected_rate"),
    (acceptance_rate_test, (5, 10, Fraction(1) + Fraction(1, 10**30), 0.01), "expected_rate"),
    (acceptance_rate_test, (5, 10, math.nan, 0.01), "expected_rate"),
    (acceptance_rate_test, (5, 10, "0.5", 0.01), "expected_rate"),
    (acceptance_rate_test, (5, 10, 0.5, 0.0), "alpha"),
    (acceptance_rate_test, (5, 10, 0.5, 2.0), "alpha"),
]


@pytest.mark.parametrize(("function", "args", "argument"), INVALID)
def test_invalid_arguments_raise_naming_the_argument(
    function: Any, args: tuple[Any, ...], argument: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        function(*args)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}=")
