"""Holm's step-down procedure: closed forms, Bonferroni dominance, family-wise error rate."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from spec_verify.errors import InvalidArgument
from spec_verify.stats._multiple import holm, holm_thresholds, per_test_alpha

# Declared false-failure probability of the simulated assertion (binomial tail).
FALSE_FAILURE = 1e-7


@pytest.mark.parametrize(
    ("pvalues", "family_alpha", "rejected"),
    [
        # sorted 0.005 < .05/4, 0.01 < .05/3, 0.03 >= .05/2: stop.
        ([0.01, 0.04, 0.03, 0.005], 0.05, [True, False, False, True]),
        # step-down stops at the first non-rejection even if a later p is below alpha.
        ([0.001, 0.04, 0.045], 0.05, [True, False, False]),
        # everything rejects when each p clears its threshold.
        ([0.001, 0.02, 0.04], 0.05, [True, True, True]),
        # ties are ranked by position: 0.01 < .05/2 and 0.01 < .05/1.
        ([0.01, 0.01], 0.05, [True, True]),
        # strict: a p-value equal to its threshold passes (p >= threshold never rejects).
        ([0.025, 0.5], 0.05, [False, False]),
        ([0.0, 1.0], 1e-6, [True, False]),
        ([], 0.05, []),
    ],
)
def test_closed_form_cases(pvalues: list[float], family_alpha: float, rejected: list[bool]) -> None:
    assert holm(pvalues, family_alpha) == rejected


def test_thresholds_follow_the_ranks() -> None:
    assert holm_thresholds([0.01, 0.04, 0.03, 0.005], 0.05) == pytest.approx(
        [0.05 / 3, 0.05, 0.05 / 2, 0.05 / 4]
    )
    assert holm_thresholds([0.01, 0.01], 0.05) == pytest.approx([0.025, 0.05])


def test_per_test_alpha_is_bonferroni() -> None:
    assert per_test_alpha(1e-6, 4) == pytest.approx(2.5e-7)
    assert per_test_alpha(0.05, 1) == 0.05


def test_holm_rejects_whatever_bonferroni_rejects() -> None:
    rng = np.random.default_rng(3)
    more = 0
    for _ in range(500):
        m = int(rng.integers(1, 12))
        pvalues = list(rng.beta(0.3, 4.0, size=m))  # mostly small, spread out
        rejected = holm(pvalues, 0.05)
        bonferroni = [p < 0.05 / m for p in pvalues]
        assert all(r or not b for r, b in zip(rejected, bonferroni, strict=True))
        more += rejected != bonferroni
    assert more > 0  # and sometimes strictly more: Holm is uniformly more powerful


def test_family_wise_error_rate_under_the_global_null() -> None:
    # m independent uniform p-values: P(any rejection) = 1 - (1 - a/m)^m <= a.
    family_alpha, m, reps = 0.1, 10, 5000
    pvalues = np.random.default_rng(5).uniform(size=(reps, m))
    false_alarms = sum(any(holm(list(row), family_alpha)) for row in pvalues)
    exact_rate = 1 - (1 - family_alpha / m) ** m
    high = stats.binom.isf(FALSE_FAILURE, reps, exact_rate)
    low = stats.binom.ppf(FALSE_FAILURE, reps, exact_rate)
    assert low <= false_alarms <= high, (false_alarms, low, high)


INVALID: list[tuple[Any, Any, Any, str]] = [
    # (function, first, second, argument)
    (holm, [0.5, 1.5], 0.05, "pvalues"),
    (holm, [-0.1], 0.05, "pvalues"),
    (holm, [math.nan], 0.05, "pvalues"),
    (holm, ["0.1"], 0.05, "pvalues"),
    (holm, [True], 0.05, "pvalues"),
    (holm, [0.1], 0.0, "family_alpha"),
    (holm, [0.1], 1.0, "family_alpha"),
    (holm, [0.1], math.nan, "family_alpha"),
    (holm_thresholds, [2.0], 0.05, "pvalues"),
    (holm_thresholds, [0.1], -1, "family_alpha"),
    (per_test_alpha, 0.05, 0, "m"),
    (per_test_alpha, 0.05, 2.0, "m"),
    (per_test_alpha, 1.5, 2, "family_alpha"),
]


@pytest.mark.parametrize(("function", "first", "second", "argument"), INVALID)
def test_invalid_arguments_raise_naming_the_argument(
    function: Any, first: Any, second: Any, argument: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        function(first, second)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}=")
