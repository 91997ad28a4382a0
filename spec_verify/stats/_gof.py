"""The G-test of goodness of fit against an exact target distribution.

Why the G-test: at the small alphas a gate uses (1e-6 per family), Pearson's chi-square
statistic has a heavy right tail under the null and its real false-alarm rate was measured
5-120 times the nominal one; the likelihood-ratio statistic G follows its chi-square limit far
more closely.

Validity: G is approximately chi-square with ``cells - 1`` degrees of freedom when every cell's
*expected* count is at least 5. Sparse cells are therefore pooled, by the expected counts only
(pooling by observed counts would let the data choose the test and break its false-alarm rate).
A token whose target probability is 0 must never be seen: one observation is an immediate
failure, with p-value 0, whatever the sample size.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from spec_verify.errors import InvalidArgument, InvalidDistribution
from spec_verify.stats._validate import check_open_unit

__all__ = ["MIN_EXPECTED", "Deviation", "GofResult", "g_test"]

# Cochran's rule: the chi-square limit is trusted when every expected count is at least 5.
MIN_EXPECTED = 5.0
# Floats from a softmax over a large vocabulary sum to 1 within about V * 2**-53.
_SUM_TOLERANCE = 1e-9
_TOP_DEVIATIONS = 5
_LISTED_TOKENS = 10


@dataclass(frozen=True)
class Deviation:
    """One cell's departure from the target: ``residual = (observed - expected) / sqrt(expected)``
    (Pearson's residual; ``inf`` for a zero-probability token that was observed)."""

    token: int
    observed: int
    expected: float
    residual: float


@dataclass(frozen=True)
class GofResult:
    """The verdict of a G-test and its evidence.

    Attributes:
        passed: ``pvalue >= alpha``.
        statistic: the G statistic on the pooled cells (``inf`` when a zero-probability token
            was observed).
        pvalue: from the chi-square limit with ``df`` degrees of freedom (0 on a
            zero-probability token).
        alpha: the false-alarm rate the verdict used.
        n: number of observations.
        df: degrees of freedom: pooled cells minus 1 (for an immediate failure, the number of
            positive-probability tokens minus 1).
        observed: count per original token.
        expected: expected count ``n * p`` per original token.
        pooled: the tokens merged into the one pooled cell, ascending (empty if none).
        deviations: the largest departures, by absolute residual.
        zero_probability_tokens: observed tokens whose target probability is 0.
        message: one sentence: the verdict and where the evidence is.
    """

    passed: bool
    statistic: float
    pvalue: float
    alpha: float
    n: int
    df: int
    observed: tuple[int, ...]
    expected: tuple[float, ...]
    pooled: tuple[int, ...]
    deviations: tuple[Deviation, ...]
    zero_probability_tokens: tuple[int, ...]
    message: str

    def total_variation(self) -> float:
        """The total-variation distance between the observed frequencies and the target."""
        return (
            0.5
            * math.fsum(abs(o - e) for o, e in zip(self.observed, self.expected, strict=True))
            / self.n
        )


def g_test(
    observed_counts: Sequence[int] | npt.NDArray[np.integer[Any]],
    expected_probs: Sequence[Fraction | float] | npt.NDArray[np.floating[Any]],
    alpha: float,
    *,
    cell_name: Callable[[int], str] | None = None,
) -> GofResult:
    """Test whether counts were drawn from ``expected_probs`` with the G-test.

    Cells with expected count ``n * p < 5`` are merged, in the order of increasing expected
    count (ties by token id), into one pooled cell, which takes further cells in that order
    until its own expected count reaches 5. Zero-probability tokens that were not observed
    take no part in the test.

    Args:
        observed_counts: count per token, non-negative integers, e.g.
            ``np.bincount(tokens, minlength=V)``.
        expected_probs: the target distribution, one entry per token: ``Fraction`` (must sum
            to exactly 1) or floats (must sum to 1 within 1e-9).
        alpha: the false-alarm rate, in (0, 1): under the target the test fails with
            probability about ``alpha``.
        cell_name: how messages name a cell (default ``"token 3"``); a joint law of several
            tokens names its cells as sequences, e.g. ``"sequence (0, 2, 1)"``.

    Returns:
        A ``GofResult``; ``passed`` when ``pvalue >= alpha``.

    Raises:
        InvalidDistribution: ``expected_probs`` is negative, not finite or does not sum to 1.
        InvalidArgument: ``observed_counts`` is not a vector of non-negative integers of the
            same length, is all zero, or is too small to leave two cells with expected
            count >= 5 (the message says how many draws would).

    >>> g_test([50, 50], [Fraction(1, 2), Fraction(1, 2)], alpha=1e-6).passed
    True
    >>> g_test([9, 1], [Fraction(1), Fraction(0)], alpha=1e-6).message
    'token 1 has target probability 0 but was observed 1 times'
    """
    alpha = check_open_unit("alpha", alpha)
    name = cell_name or _token_name
    p = probabilities(expected_probs)
    counts = _counts(observed_counts, len(p))
    n = int(counts.sum())
    expected = n * p
    observed = tuple(int(c) for c in counts)
    expected_t = tuple(float(e) for e in expected)

    zero_tokens = tuple(int(i) for i in np.flatnonzero((p == 0) & (counts > 0)))
    if zero_tokens:
        return GofResult(
            passed=False,
            statistic=math.inf,
            pvalue=0.0,
            alpha=alpha,
            n=n,
            df=int(np.count_nonzero(p)) - 1,
            observed=observed,
            expected=expected_t,
            pooled=(),
            deviations=_deviations(counts, expected),
            zero_probability_tokens=zero_tokens,
            message=_zero_message(zero_tokens, counts, name),
        )

    support = [int(i) for i in np.flatnonzero(p)]
    if len(support) == 1:
        # A point mass: seeing only its token is the whole test, and it was passed above.
        return GofResult(
            passed=True,
            statistic=0.0,
            pvalue=1.0,
            alpha=alpha,
            n=n,
            df=0,
            observed=observed,
            expected=expected_t,
            pooled=(),
            deviations=_deviations(counts, expected),
            zero_probability_tokens=(),
            message=f"all {n} observations are {name(support[0])}, the target's only outcome",
        )

    cells = pool_cells(expected, support)
    if len(cells) < 2:
        raise InvalidArgument(
            "observed_counts",
            observed,
            f"n={n} observations leave fewer than two cells with expected count >= "
            f"{MIN_EXPECTED:g}, so the G-test has no degrees of freedom",
            f"draw at least {_min_samples(p, support, n)} samples",
        )
    cell_observed = np.array([counts[c].sum() for c in cells], dtype=float)
    cell_expected = np.array([expected[c].sum() for c in cells], dtype=float)
    statistic, pvalue = stats.power_divergence(
        cell_observed, cell_expected, lambda_="log-likelihood"
    )
    statistic, pvalue = float(statistic), float(pvalue)
    df = len(cells) - 1
    pooled = next((tuple(sorted(cell)) for cell in cells if len(cell) > 1), ())
    deviations = _deviations(counts, expected)
    passed = pvalue >= alpha
    summary = f"G={statistic:.4g} on {df} df, p={pvalue:.3g}"
    if passed:
        message = f"{summary} >= alpha={alpha:g}: consistent with the target (n={n})"
    else:
        worst = deviations[0]
        message = (
            f"{summary} < alpha={alpha:g}: not the target (n={n}); largest deviation: "
            f"{name(worst.token)} observed {worst.observed} times, expected "
            f"{worst.expected:.1f}"
        )
    return GofResult(
        passed=passed,
        statistic=statistic,
        pvalue=pvalue,
        alpha=alpha,
        n=n,
        df=df,
        observed=observed,
        expected=expected_t,
        pooled=pooled,
        deviations=deviations,
        zero_probability_tokens=(),
        message=message,
    )


def pool_cells(expected: npt.NDArray[np.float64], support: Sequence[int]) -> list[list[int]]:
    """Group tokens into test cells by their expected counts alone.

    Returns the cells, each a list of token ids: the tokens with expected count >= 5 alone,
    in increasing expected order, then (last) the pooled cell if any token was sparse. The
    pooled cell takes the sparse tokens and, while its expected count is below 5, the next
    tokens in the order of increasing expected count (ties by id).
    """
    order = sorted(support, key=lambda i: (float(expected[i]), i))
    pooled = [i for i in order if expected[i] < MIN_EXPECTED]
    rest = [i for i in order if expected[i] >= MIN_EXPECTED]
    while pooled and float(expected[pooled].sum()) < MIN_EXPECTED and rest:
        pooled.append(rest.pop(0))
    cells = [[i] for i in rest]
    if pooled:
        cells.append(pooled)
    return cells


def probabilities(
    expected_probs: Sequence[Fraction | float] | npt.NDArray[np.floating[Any]],
    argument: str = "expected_probs",
) -> npt.NDArray[np.float64]:
    """Validate a target distribution and return it as float64, renormalised to sum 1.

    Rationals (``Fraction``, ``int``) must sum to exactly 1 when every entry is rational;
    otherwise the sum must be within 1e-9 of 1. Zero entries stay exactly zero.

    Raises:
        InvalidDistribution: fewer than one entry, an entry that is not a finite non-negative
            real, or a sum other than 1.
    """
    array = np.asarray(expected_probs, dtype=object)
    if array.ndim != 1 or array.size == 0:
        raise InvalidDistribution(
            argument, expected_probs, "must be a non-empty vector of probabilities"
        )
    values = list(array)
    exact = True
    for token, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidDistribution(
                argument, expected_probs, f"entry {token} is {value!r}, not a real number"
            )
        if not isinstance(value, numbers.Rational):
            exact = False
            if not math.isfinite(float(value)):
                raise InvalidDistribution(
                    argument, expected_probs, f"entry {token} is {value!r}, not finite"
                )
        if value < 0:
            raise InvalidDistribution(
                argument, expected_probs, f"entry {token} is {value!r}, negative"
            )
    if exact:
        total_exact = sum((Fraction(v) for v in values), Fraction(0))
        if total_exact != 1:
            raise InvalidDistribution(
                argument,
                expected_probs,
                f"Fractions must sum to exactly 1, not {total_exact}",
                "divide each entry by the sum",
            )
    p = np.array([float(v) for v in values], dtype=np.float64)
    total = math.fsum(p)
    if not exact and abs(total - 1) > _SUM_TOLERANCE:
        raise InvalidDistribution(
            argument,
            expected_probs,
            f"must sum to 1 within {_SUM_TOLERANCE:g}, not {total!r}",
            "divide each entry by the sum, or pass Fractions",
        )
    result: npt.NDArray[np.float64] = p / total
    return result


def _counts(observed_counts: Any, V: int) -> npt.NDArray[np.int64]:
    array = np.asarray(observed_counts)
    if array.ndim != 1:
        raise InvalidArgument(
            "observed_counts", observed_counts, "must be a vector of counts, one per token"
        )
    if array.dtype.kind not in "iu" and not (
        array.dtype.kind == "O"
        and all(isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in array)
    ):
        raise InvalidArgument(
            "observed_counts",
            observed_counts,
            f"must hold integer counts, not {array.dtype}",
            "count tokens with np.bincount(tokens, minlength=V)",
        )
    if len(array) != V:
        raise InvalidArgument(
            "observed_counts",
            observed_counts,
            f"has {len(array)} cells but expected_probs has {V}",
            "pass one count per token of the target",
        )
    counts = array.astype(np.int64)
    if (counts < 0).any():
        token = int(np.flatnonzero(counts < 0)[0])
        raise InvalidArgument(
            "observed_counts", observed_counts, f"token {token} has a negative count"
        )
    if counts.sum() == 0:
        raise InvalidArgument(
            "observed_counts", observed_counts, "holds no observations", "draw samples first"
        )
    return counts


def _deviations(
    counts: npt.NDArray[np.int64], expected: npt.NDArray[np.float64]
) -> tuple[Deviation, ...]:
    rows = []
    for token in range(len(counts)):
        o, e = int(counts[token]), float(expected[token])
        if e > 0:
            residual = (o - e) / math.sqrt(e)
        elif o > 0:
            residual = math.inf
        else:
            continue
        rows.append(Deviation(token=token, observed=o, expected=e, residual=residual))
    rows.sort(key=lambda d: (-abs(d.residual), d.token))
    return tuple(rows[:_TOP_DEVIATIONS])


def _token_name(index: int) -> str:
    return f"token {index}"


def _zero_message(
    tokens: tuple[int, ...], counts: npt.NDArray[np.int64], name: Callable[[int], str]
) -> str:
    parts = [
        f"{name(t)} has target probability 0 but was observed {int(counts[t])} times"
        for t in tokens[:_LISTED_TOKENS]
    ]
    if len(tokens) > _LISTED_TOKENS:
        parts.append(f"and {len(tokens) - _LISTED_TOKENS} more zero-probability tokens")
    return "; ".join(parts)


def _min_samples(p: npt.NDArray[np.float64], support: Sequence[int], n: int) -> int:
    """The smallest sample size whose expected counts leave at least two test cells."""

    def enough(m: int) -> bool:
        return len(pool_cells(m * p, support)) >= 2

    low = n  # not enough
    high = math.ceil(MIN_EXPECTED / float(p[list(support)].min()))  # no cell is sparse
    while not enough(high):  # guards against float rounding at the bound
        high += 1
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high
