"""Exact binomial inference for acceptance rates.

The acceptance rate of a speculative sampler (accepted / drafted) has an exact expected value
for a given target and draft (``sum_x min(p(x), q(x))`` per position). These tests use the
exact binomial distribution, valid at any sample size, with no normal approximation.

Validity: the drafted positions must be independent trials. With one common acceptance
probability (the same target and draft at every position, as in a fixed-context experiment)
the test is exact. Across changing contexts, with ``expected_rate`` the mean of the
per-position probabilities, the count is Poisson-binomial, less spread than the binomial, and
Hoeffding (1956) bounds its tails by the binomial's beyond the mean: the test stays
conservative against real deviations, but has less power than it would with equal rates.

>>> clopper_pearson(0, 10, 0.05)
(0.0, 0.30849710781876083)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scipy import stats

from spec_verify.errors import InvalidArgument
from spec_verify.stats._validate import check_int, check_open_unit, check_real

__all__ = ["BinomialResult", "acceptance_rate_test", "clopper_pearson"]


@dataclass(frozen=True)
class BinomialResult:
    """The verdict of an exact binomial test of an acceptance rate, and its evidence.

    Attributes:
        passed: ``pvalue >= alpha``.
        statistic: the observed rate ``accepted / drafted``.
        pvalue: two-sided exact binomial p-value (scipy's ``binomtest``: the probability of
            outcomes no more likely than the one observed).
        alpha: the false-alarm rate the verdict used.
        n: number of drafted tokens (trials).
        accepted: number of accepted tokens (successes).
        expected_rate: the rate the target and draft imply.
        ci_low, ci_high: exact Clopper–Pearson interval for the rate at level ``1 - alpha``.
        message: one sentence: the verdict and the numbers behind it.
    """

    passed: bool
    statistic: float
    pvalue: float
    alpha: float
    n: int
    accepted: int
    expected_rate: float
    ci_low: float
    ci_high: float
    message: str


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """The exact (Clopper–Pearson) two-sided ``1 - alpha`` interval for a binomial rate.

    Covers the true rate with probability at least ``1 - alpha`` for every rate and every
    ``n`` (it is conservative: the coverage is usually higher).

    Args:
        k: number of successes, ``0 <= k <= n``.
        n: number of trials, at least 1.
        alpha: one minus the confidence level, in (0, 1).

    Returns:
        ``(lo, hi)``: the ``alpha/2`` quantile of Beta(k, n-k+1) (0 when k = 0) and the
        ``1 - alpha/2`` quantile of Beta(k+1, n-k) (1 when k = n).

    Raises:
        InvalidArgument: ``k`` or ``n`` not integers in range, ``alpha`` outside (0, 1).
    """
    n = check_int("n", n, 1)
    k = check_int("k", k, 0)
    if k > n:
        raise InvalidArgument("k", k, f"must be at most n={n}", "k counts successes among n")
    alpha = check_open_unit("alpha", alpha)
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    # isf keeps the upper quantile accurate when alpha is tiny.
    hi = 1.0 if k == n else float(stats.beta.isf(alpha / 2, k + 1, n - k))
    return lo, hi


def acceptance_rate_test(
    accepted: int, drafted: int, expected_rate: float | Fraction, alpha: float
) -> BinomialResult:
    """Two-sided exact binomial test that ``accepted`` out of ``drafted`` fits ``expected_rate``.

    Under the null (independent trials with rate ``expected_rate``) the test fails with
    probability at most ``alpha``. With ``expected_rate`` 0 or 1 any contrary outcome fails
    with p-value 0.

    Args:
        accepted: accepted draft tokens, ``0 <= accepted <= drafted``.
        drafted: drafted tokens, at least 1.
        expected_rate: the exact acceptance probability, in [0, 1] (``Fraction`` or float).
        alpha: the false-alarm rate, in (0, 1).

    Returns:
        A ``BinomialResult`` with the Clopper–Pearson interval at level ``1 - alpha``.

    Raises:
        InvalidArgument: an argument out of range.
    """
    drafted = check_int("drafted", drafted, 1)
    accepted = check_int("accepted", accepted, 0)
    if accepted > drafted:
        raise InvalidArgument(
            "accepted", accepted, f"must be at most drafted={drafted}", "count accepted drafts"
        )
    rate = _check_rate(expected_rate)
    alpha = check_open_unit("alpha", alpha)
    pvalue = float(stats.binomtest(accepted, drafted, rate, alternative="two-sided").pvalue)
    lo, hi = clopper_pearson(accepted, drafted, alpha)
    observed = accepted / drafted
    passed = pvalue >= alpha
    verdict = ">= alpha: consistent" if passed else "< alpha: not consistent"
    message = (
        f"accepted {accepted} of {drafted} (rate {observed:.4g}, {1 - alpha:g} interval "
        f"[{lo:.4g}, {hi:.4g}]); p={pvalue:.3g} {verdict} with the expected rate {rate:.4g}"
    )
    return BinomialResult(
        passed=passed,
        statistic=observed,
        pvalue=pvalue,
        alpha=alpha,
        n=drafted,
        accepted=accepted,
        expected_rate=rate,
        ci_low=lo,
        ci_high=hi,
        message=message,
    )


def _check_rate(value: Any) -> float:
    """A probability in [0, 1]; rationals are range-checked exactly, before rounding."""
    if isinstance(value, numbers.Rational) and not isinstance(value, bool):
        exact = Fraction(int(value.numerator), int(value.denominator))
        in_range = 0 <= exact <= 1
        rate = float(exact)
    else:
        rate = check_real("expected_rate", value)
        in_range = 0 <= rate <= 1
    if not in_range:
        raise InvalidArgument(
            "expected_rate", value, "must be a probability in [0, 1]", "e.g. Fraction(3, 4)"
        )
    return rate
