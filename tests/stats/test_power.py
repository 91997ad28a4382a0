"""Sample-size planning: closed forms, round trips, errors, and a Monte Carlo power check."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from spec_verify.errors import InvalidArgument
from spec_verify.stats._gof import g_test
from spec_verify.stats._power import (
    MAX_VOCABULARY,
    achieved_power,
    detectable_delta,
    max_vocabulary,
    noncentrality,
    required_samples,
)

# Declared false-failure probability of each simulated assertion below (one-sided binomial
# tail); with a handful of such assertions in the suite the chance of any flake is < 1e-6.
FALSE_FAILURE = 1e-7

# A target with a half/half split of its mass ({0, 1} vs {2, 3, 4}), so the hardest
# alternative p * (1 +- 2 delta) exists exactly.
TARGET = np.array([0.3, 0.2, 0.1, 0.2, 0.2])
PLUS = np.array([True, True, False, False, False])


def hardest_alternative(p: np.ndarray, plus: np.ndarray, delta: float) -> np.ndarray:
    """q = p (1 + 2 delta) on ``plus`` (mass 1/2), p (1 - 2 delta) elsewhere."""
    assert math.isclose(p[plus].sum(), 0.5)
    return np.where(plus, p * (1 + 2 * delta), p * (1 - 2 * delta))


def test_hardest_alternative_is_at_distance_delta_with_divergence_4_delta_squared() -> None:
    q = hardest_alternative(TARGET, PLUS, 0.05)
    assert math.isclose(q.sum(), 1)
    assert math.isclose(0.5 * np.abs(q - TARGET).sum(), 0.05)
    assert math.isclose(((q - TARGET) ** 2 / TARGET).sum(), 4 * 0.05**2)


def test_design_number_v5() -> None:
    # DESIGN.md: V=5, delta=0.05, alpha=1e-6, power=0.99 needs about 6,200 samples.
    n = required_samples(5, 1e-6, 0.05, 0.99)
    assert n == 6212
    assert n == math.ceil(noncentrality(5, 1e-6, 0.99) / (4 * 0.05**2))


def test_noncentrality_one_df_matches_normal_closed_form() -> None:
    # df = 1: power = P(|Z + sqrt(lam)| > z_{alpha/2}); ignoring the far tail,
    # lam = (z_{alpha/2} + z_{power})^2 = (1.959964 + 0.841621)^2 = 7.8489.
    lam = noncentrality(2, 0.05, 0.8)
    assert lam == pytest.approx(7.8489, abs=2e-3)
    assert achieved_power(2, 0.05, 1.0, 1) == pytest.approx(
        stats.ncx2.sf(stats.chi2.isf(0.05, 1), 1, 4.0)
    )


@pytest.mark.parametrize(
    ("V", "alpha", "delta", "power"),
    [(2, 0.05, 0.1, 0.8), (5, 1e-6, 0.05, 0.99), (100, 1e-4, 0.02, 0.9), (32000, 1e-6, 0.1, 0.99)],
)
def test_round_trips(V: int, alpha: float, delta: float, power: float) -> None:
    n = required_samples(V, alpha, delta, power)
    assert achieved_power(V, alpha, delta, n) >= power
    assert achieved_power(V, alpha, delta, n - 1) < power
    # n is the smallest sample size whose detectable delta is at most delta.
    assert detectable_delta(V, alpha, n, power) <= delta
    assert detectable_delta(V, alpha, n - 1, power) > delta


def test_monotone_in_each_argument() -> None:
    base = required_samples(5, 1e-6, 0.05, 0.99)
    assert required_samples(50, 1e-6, 0.05, 0.99) > base
    assert required_samples(5, 1e-8, 0.05, 0.99) > base
    assert required_samples(5, 1e-6, 0.05, 0.999) > base
    assert required_samples(5, 1e-6, 0.1, 0.99) == math.ceil(
        noncentrality(5, 1e-6, 0.99) / (4 * 0.1**2)
    )


@pytest.mark.parametrize("budget", [5210, 10**5, 10**7])
def test_max_vocabulary_is_the_largest_that_fits(budget: int) -> None:
    V = max_vocabulary(1e-6, 0.05, 0.99, budget)
    assert required_samples(V, 1e-6, 0.05, 0.99) <= budget
    assert required_samples(V + 1, 1e-6, 0.05, 0.99) > budget


def test_max_vocabulary_caps_at_the_supported_size() -> None:
    assert max_vocabulary(1e-6, 0.5, 0.99, 10**12) == MAX_VOCABULARY


def test_budget_error_says_what_fits() -> None:
    with pytest.raises(InvalidArgument) as info:
        required_samples(32000, 1e-6, 0.05, 0.99, budget=100_000)
    error = info.value
    assert error.argument == "V"
    message = str(error)
    assert "183,520" in message
    largest = max_vocabulary(1e-6, 0.05, 0.99, 100_000)
    assert f"V <= {largest:,} fits" in message
    reach = detectable_delta(32000, 1e-6, 100_000, 0.99)
    assert f"delta >= {reach:.4g} is detectable" in message
    # ... and what it says fits does fit.
    assert required_samples(largest, 1e-6, 0.05, 0.99, budget=100_000) <= 100_000


def test_max_vocabulary_error_when_nothing_fits() -> None:
    with pytest.raises(InvalidArgument, match=r"budget=100: .*V=2 .*delta >= 0\.36"):
        max_vocabulary(1e-6, 0.05, 0.99, 100)


def test_detectable_delta_refuses_hopeless_sample_sizes() -> None:
    with pytest.raises(InvalidArgument, match=r"n=10: .* use at least n=16"):
        detectable_delta(5, 1e-6, 10, 0.99)
    assert detectable_delta(5, 1e-6, 16, 0.99) <= 1


def _simulated_rejections(n: int, reps: int, seed: int) -> int:
    q = hardest_alternative(TARGET, PLUS, 0.05)
    counts = np.random.default_rng(seed).multinomial(n, q, size=reps)
    return sum(not g_test(row, TARGET, 1e-6).passed for row in counts)


def test_required_samples_gives_the_declared_power_against_a_sampler_wrong_by_delta() -> None:
    # Negative control of the statistics policy: the G-test at the planned n fails a sampler
    # at TV distance exactly delta (the hardest alternative) with probability >= 0.99.
    n, reps = required_samples(5, 1e-6, 0.05, 0.99), 1000
    rejections = _simulated_rejections(n, reps, seed=20240601)
    # If the true power is 0.99, P(rejections < floor) <= FALSE_FAILURE.
    floor = stats.binom.ppf(FALSE_FAILURE, reps, 0.99)
    assert rejections >= floor, (rejections, floor)


def test_achieved_power_predicts_simulation_where_it_is_sensitive() -> None:
    # At half the planned n the power is near 0.5, where a wrong formula shows most; the
    # interval is two-sided, each side with probability FALSE_FAILURE / 2.
    n, reps = required_samples(5, 1e-6, 0.05, 0.99) // 2, 1000
    predicted = achieved_power(5, 1e-6, 0.05, n)
    assert 0.3 < predicted < 0.7
    rejections = _simulated_rejections(n, reps, seed=20240602)
    low = stats.binom.ppf(FALSE_FAILURE / 2, reps, predicted)
    high = stats.binom.isf(FALSE_FAILURE / 2, reps, predicted)
    assert low <= rejections <= high, (rejections, low, high)
    # The power check above could fail: this n is far below its floor.
    assert rejections < stats.binom.ppf(FALSE_FAILURE, reps, 0.99)


GOOD: dict[str, Any] = {"V": 5, "alpha": 1e-6, "delta": 0.05, "power": 0.99}

INVALID = [
    # (function, overrides, argument named in the error)
    (required_samples, {"V": 1}, "V"),
    (required_samples, {"V": 5.0}, "V"),
    (required_samples, {"V": True}, "V"),
    (required_samples, {"V": MAX_VOCABULARY + 1}, "V"),
    (required_samples, {"alpha": 0.0}, "alpha"),
    (required_samples, {"alpha": 1.0}, "alpha"),
    (required_samples, {"alpha": math.nan}, "alpha"),
    (required_samples, {"alpha": "0.05"}, "alpha"),
    (required_samples, {"delta": 0.0}, "delta"),
    (required_samples, {"delta": 1.5}, "delta"),
    (required_samples, {"delta": -0.1}, "delta"),
    (required_samples, {"delta": math.inf}, "delta"),
    (required_samples, {"power": 1.0}, "power"),
    (required_samples, {"power": 0.0}, "power"),
    (required_samples, {"power": 1e-7}, "power"),  # not above alpha
    (required_samples, {"budget": 0}, "budget"),
    (required_samples, {"budget": 10.5}, "budget"),
    (required_samples, {"budget": 100}, "V"),  # over budget
    (detectable_delta, {"n": 0}, "n"),
    (detectable_delta, {"n": 100.0}, "n"),
    (detectable_delta, {"V": 0}, "V"),
    (detectable_delta, {"power": 2}, "power"),
    (achieved_power, {"n": -1}, "n"),
    (achieved_power, {"delta": 2.0}, "delta"),
    (achieved_power, {"alpha": -1e-6}, "alpha"),
    (noncentrality, {"power": 0.5, "alpha": 0.6}, "power"),
    (max_vocabulary, {"budget": 0}, "budget"),
    (max_vocabulary, {"budget": 100}, "budget"),  # nothing fits
    (max_vocabulary, {"delta": 0}, "delta"),
]


def _call(function: Any, overrides: dict[str, Any]) -> Any:
    names = {
        required_samples: ("V", "alpha", "delta", "power"),
        detectable_delta: ("V", "alpha", "n", "power"),
        achieved_power: ("V", "alpha", "delta", "n"),
        noncentrality: ("V", "alpha", "power"),
        max_vocabulary: ("alpha", "delta", "power", "budget"),
    }[function]
    values = {**GOOD, "n": 1000, "budget": 10**6, **overrides}
    args = [values[name] for name in names]
    if function is required_samples and "budget" in overrides:
        return function(*args, budget=overrides["budget"])
    return function(*args)


@pytest.mark.parametrize(("function", "overrides", "argument"), INVALID)
def test_invalid_arguments_raise_naming_the_argument(
    function: Any, overrides: dict[str, Any], argument: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        _call(function, overrides)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}=")
    assert isinstance(info.value, ValueError)


def test_numpy_integers_are_accepted() -> None:
    assert required_samples(np.int64(5), 1e-6, 0.05, 0.99) == 6212  # type: ignore[arg-type]
