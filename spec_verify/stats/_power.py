"""Sample sizes for goodness-of-fit checks: computed from alpha, delta and power, never guessed.

The statistical tier declares, for every check, its false-alarm rate ``alpha`` and the smallest
deviation ``delta`` (total-variation distance from the target) that it detects with probability
``power``. This module turns any three of (V, alpha, delta, n, power) into the fourth.

Why the formula holds. For a target ``p`` over ``V`` cells and a sampler ``q``, the G statistic
(and Pearson's) on ``n`` draws is approximately noncentral chi-square with ``V - 1`` degrees of
freedom and noncentrality ``n * chi2(q || p)``, where ``chi2(q || p) = sum (q - p)**2 / p``.
By Cauchy-Schwarz, ``(sum |q - p|)**2 <= chi2(q || p) * sum p``, so every ``q`` at total
variation ``delta`` has ``chi2(q || p) >= 4 * delta**2``, with equality for the hardest
alternative ``q = p * (1 +- 2 * delta)`` (plus on half of p's mass, minus on the other half).
So ``n = lambda / (4 * delta**2)`` samples, with ``lambda`` the noncentrality at which the
level-alpha test rejects with probability ``power``, detect *every* sampler at distance
``delta`` or more, whatever ``V`` and ``p`` are.

Limits: the noncentral chi-square is a large-sample approximation (the tests check it by
simulation against the hardest alternative); pooling sparse cells can merge deviations of
opposite sign, so the guarantee is for the cells as tested (plan ``n`` so that ``n * p`` is at
least 5 in the cells whose deviations matter, or account for the pooled partition).

>>> required_samples(5, 1e-6, 0.05, 0.99)
6212
"""

from __future__ import annotations

import math
from typing import Any

from scipy import optimize, stats

from spec_verify.errors import InvalidArgument
from spec_verify.stats._validate import check_int, check_open_unit, check_real

__all__ = [
    "MAX_VOCABULARY",
    "achieved_power",
    "detectable_delta",
    "max_vocabulary",
    "noncentrality",
    "required_samples",
]

# Beyond about 10**9 degrees of freedom scipy's noncentral chi-square stops converging; no real
# vocabulary comes near it.
MAX_VOCABULARY = 10**9


def required_samples(
    V: int, alpha: float, delta: float, power: float, *, budget: int | None = None
) -> int:
    """The number of draws a level-``alpha`` G-test needs to detect TV distance ``delta``.

    Args:
        V: number of cells (tokens) of the target distribution, ``2 <= V <= MAX_VOCABULARY``.
        alpha: false-alarm rate of the test, in (0, 1).
        delta: smallest total-variation distance to detect, in (0, 1].
        power: probability of detecting a sampler at distance ``delta``, in (alpha, 1).
        budget: optional largest affordable number of draws.

    Returns:
        ``ceil(lambda / (4 * delta**2))`` where ``lambda = noncentrality(V, alpha, power)``.

    Raises:
        InvalidArgument: an argument is out of range, or the sample size exceeds ``budget``
            (the message then says the largest V that fits and the delta reachable).
    """
    V, alpha, delta, power = _check_plan(V, alpha, delta, power)
    n = _samples(V, alpha, delta, power)
    if budget is not None:
        budget = check_int("budget", budget, 1)
        if n > budget:
            raise InvalidArgument("V", V, *_over_budget(V, alpha, delta, power, n=n, budget=budget))
    return n


def detectable_delta(V: int, alpha: float, n: int, power: float) -> float:
    """The smallest TV distance that ``n`` draws detect with probability ``power``.

    Args:
        V: number of cells, ``2 <= V <= MAX_VOCABULARY``.
        alpha: false-alarm rate, in (0, 1).
        n: number of draws, at least 1.
        power: detection probability, in (alpha, 1).

    Returns:
        ``sqrt(lambda / (4 * n))``, in (0, 1].

    Raises:
        InvalidArgument: an argument is out of range, or ``n`` is too small to detect even
            ``delta = 1`` (the message says how many draws would).
    """
    V = _check_vocabulary(V)
    alpha = check_open_unit("alpha", alpha)
    n = check_int("n", n, 1)
    power = _check_power(power, alpha)
    lam = _noncentrality(V, alpha, power)
    delta = math.sqrt(lam / (4 * n))
    if delta > 1:
        raise InvalidArgument(
            "n",
            n,
            f"{n} draws cannot detect any deviation (delta <= 1) with power {power} "
            f"at alpha={alpha}, V={V}",
            f"use at least n={_samples(V, alpha, 1.0, power)}",
        )
    return delta


def achieved_power(V: int, alpha: float, delta: float, n: int) -> float:
    """The probability that ``n`` draws detect a sampler at TV distance ``delta``.

    This is the power against the hardest alternative; every other sampler at the same
    distance is detected at least as often (up to the large-sample approximation).

    Raises:
        InvalidArgument: an argument is out of range.
    """
    V = _check_vocabulary(V)
    alpha = check_open_unit("alpha", alpha)
    delta = _check_delta(delta)
    n = check_int("n", n, 1)
    df = V - 1
    critical = stats.chi2.isf(alpha, df)
    return float(stats.ncx2.sf(critical, df, 4 * n * delta * delta))


def noncentrality(V: int, alpha: float, power: float) -> float:
    """The noncentrality ``lambda`` at which the level-``alpha`` chi-square test with ``V - 1``
    degrees of freedom rejects with probability ``power``.

    Raises:
        InvalidArgument: an argument is out of range.
    """
    V = _check_vocabulary(V)
    alpha = check_open_unit("alpha", alpha)
    power = _check_power(power, alpha)
    return _noncentrality(V, alpha, power)


def max_vocabulary(alpha: float, delta: float, power: float, budget: int) -> int:
    """The largest V whose required sample size fits in ``budget`` draws.

    Returns:
        The largest ``V <= MAX_VOCABULARY`` with ``required_samples(V, ...) <= budget``.

    Raises:
        InvalidArgument: an argument is out of range, or not even ``V = 2`` fits (the message
            says the delta that ``budget`` draws reach at ``V = 2``).
    """
    _, alpha, delta, power = _check_plan(2, alpha, delta, power)
    budget = check_int("budget", budget, 1)
    found = _max_vocabulary(alpha, delta, power, budget)
    if found is None:
        n = _samples(2, alpha, delta, power)
        rule, fix = _over_budget(2, alpha, delta, power, n=n, budget=budget)
        raise InvalidArgument("budget", budget, rule, fix)
    return found


def _samples(V: int, alpha: float, delta: float, power: float) -> int:
    return math.ceil(_noncentrality(V, alpha, power) / (4 * delta * delta))


def _noncentrality(V: int, alpha: float, power: float) -> float:
    df = V - 1
    critical = stats.chi2.isf(alpha, df)

    def shortfall(lam: float) -> float:
        return float(stats.ncx2.sf(critical, df, lam)) - power

    # shortfall(0) = alpha - power < 0 and shortfall grows to 1 - power > 0.
    high = max(1.0, float(critical))
    while shortfall(high) < 0:
        high *= 2
    root: float = optimize.brentq(shortfall, 0.0, high, xtol=1e-10, rtol=1e-12)
    return root


def _max_vocabulary(alpha: float, delta: float, power: float, budget: int) -> int | None:
    # required_samples grows with V (more degrees of freedom at the same noncentrality
    # lose power), so bisect on "fits".
    def fits(V: int) -> bool:
        return _samples(V, alpha, delta, power) <= budget

    if not fits(2):
        return None
    low, high = 2, 4
    while high < MAX_VOCABULARY and fits(high):
        low, high = high, high * 2
    if high >= MAX_VOCABULARY:
        if fits(MAX_VOCABULARY):
            return MAX_VOCABULARY
        high = MAX_VOCABULARY
    while high - low > 1:  # fits(low) and not fits(high)
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def _over_budget(
    V: int, alpha: float, delta: float, power: float, *, n: int, budget: int
) -> tuple[str, str]:
    rule = (
        f"detecting delta={delta} with power {power} at alpha={alpha} over V={V} cells "
        f"needs n={n:,} draws, more than budget={budget:,}"
    )
    reach = math.sqrt(_noncentrality(V, alpha, power) / (4 * budget))
    options = []
    largest = _max_vocabulary(alpha, delta, power, budget)
    if largest is not None:
        options.append(f"V <= {largest:,} fits")
    if reach <= 1:
        options.append(f"delta >= {reach:.4g} is detectable at V={V}")
    fix = f"with {budget:,} draws: " + (
        ", or ".join(options) if options else f"nothing fits; V=2 needs n={n:,}"
    )
    return rule, fix


def _check_plan(V: Any, alpha: Any, delta: Any, power: Any) -> tuple[int, float, float, float]:
    V = _check_vocabulary(V)
    alpha = check_open_unit("alpha", alpha)
    delta = _check_delta(delta)
    power = _check_power(power, alpha)
    return V, alpha, delta, power


def _check_vocabulary(V: Any) -> int:
    checked: int = check_int("V", V, 2)
    if checked > MAX_VOCABULARY:
        raise InvalidArgument(
            "V", V, f"must be at most {MAX_VOCABULARY:,}", "no real vocabulary is larger"
        )
    return checked


def _check_delta(delta: Any) -> float:
    checked: float = check_real("delta", delta)
    if not 0 < checked <= 1:
        raise InvalidArgument(
            "delta", delta, "must be a total-variation distance in (0, 1]", "e.g. delta=0.05"
        )
    if checked < _SMALLEST_DELTA:  # 4 delta^2 underflows: n ~ 1/(4 delta^2) is no float
        raise InvalidArgument(
            "delta", delta, f"must be at least {_SMALLEST_DELTA:g}: below it 4*delta^2 "
            "underflows and no sample size is representable", "e.g. delta=0.05"
        )
    return checked


_SMALLEST_DELTA = 1e-150


def _check_power(power: Any, alpha: float) -> float:
    checked: float = check_open_unit("power", power)
    if checked <= alpha:
        raise InvalidArgument(
            "power",
            power,
            f"must exceed alpha={alpha} (rejecting at random already has power alpha)",
            "e.g. power=0.99",
        )
    return checked
