"""The two-sample test: were two samples drawn from the same law, with no law given?

Use it when no exact target is at hand: speculative ``generate()`` against plain sampling from
the target, a port against the reference, two builds of one kernel. The samples are category
ids (tokens) or token sequences (each sequence is one category: the joint law).

The statistic is the likelihood-ratio G statistic of homogeneity on the 2 x K table of counts
(``scipy.stats.chi2_contingency(..., lambda_="log-likelihood")``). Under the null the
conditional law of the table given the combined counts is multivariate hypergeometric whatever
the common law is; that is what makes the test exact in both of its modes:

- ``"chi2"``: categories whose expected count (``min(n_a, n_b) * total / N``) is below 5 are
  pooled, by the *combined* counts only (they are the conditioning statistic, so the pooling
  cannot look at which sample a draw came from), then G with Williams' correction is referred
  to its chi-square limit with ``cells - 1`` degrees of freedom (Cochran's rule keeps that
  limit close, as for ``g_test``; the correction removes most of G's excess false alarms when
  many cells hold 5 to 10 expected draws).
- ``"permutation"``: the p-value is a Monte Carlo estimate of the conditional tail,
  ``(1 + #{G* >= G}) / (1 + B)`` over ``B`` tables drawn from the multivariate hypergeometric
  law (a label permutation, drawn without shuffling the data). It is valid at every sample
  size (``P(p <= alpha) <= alpha`` exactly), and it is what ``"auto"`` uses when the data are
  too few to leave two pooled cells with expected count 5.

Power. With ``n_a`` and ``n_b`` draws the G statistic is approximately noncentral chi-square
with noncentrality ``n_eff * sum (a - b)**2 / m`` where ``n_eff = n_a n_b / (n_a + n_b)`` and
``m`` the mixture; by Cauchy-Schwarz that is at least ``n_eff * 4 * delta**2`` for two laws at
total variation ``delta``. So a two-sample test is a ``g_test`` with ``n_eff`` draws: with equal
sizes, each sample needs twice the ``required_samples`` of a test against a known law
(``two_sample_required_samples``). The calibration in docs/calibration.md measures the
false-alarm rate over 2,000 null runs per regime.

>>> two_sample_test([0, 1] * 50, [0, 1] * 50, alpha=1e-3).passed
True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from spec_verify.errors import InvalidArgument
from spec_verify.stats._gof import MIN_EXPECTED, pool_cells
from spec_verify.stats._power import (
    _check_plan,
    _check_power,
    _check_vocabulary,
    _noncentrality,
)
from spec_verify.stats._validate import check_int, check_open_unit

__all__ = [
    "TwoSampleDeviation",
    "TwoSampleResult",
    "two_sample_detectable_delta",
    "two_sample_required_samples",
    "two_sample_test",
]

_METHODS = ("auto", "chi2", "permutation")
_DEFAULT_RESAMPLES = 9_999
# A Monte Carlo p-value is at least 1 / (B + 1); below this many multiples of 1/alpha the
# permutation test has little power left, so "auto" refuses instead of silently never failing.
_RESAMPLES_PER_ALPHA = 20
_MAX_RESAMPLES = 2_000_000
_TOP_DEVIATIONS = 5


@dataclass(frozen=True)
class TwoSampleDeviation:
    """One category's difference between the samples: its counts, and the difference of its
    frequencies ``freq_a - freq_b``, with ``residual`` the Pearson residual of sample a's count
    against its expected count under the null."""

    category: Hashable
    count_a: int
    count_b: int
    difference: float
    residual: float


@dataclass(frozen=True)
class TwoSampleResult:
    """The verdict of a two-sample test and its evidence.

    Attributes:
        passed: ``pvalue >= alpha``.
        statistic: the G statistic of homogeneity on the cells as tested (``"chi2"``: divided
            by Williams' correction factor; ``"permutation"``: as it is).
        pvalue: from the chi-square limit (``method == "chi2"``) or the Monte Carlo
            conditional tail (``"permutation"``).
        alpha: the false-alarm rate the verdict used.
        n_a, n_b: the sample sizes.
        df: degrees of freedom: cells tested minus 1.
        method: ``"chi2"`` or ``"permutation"``: how the p-value was computed.
        n_resamples: Monte Carlo tables drawn (0 for ``"chi2"``).
        categories: every category seen, sorted (token ids, or tuples of them).
        counts_a, counts_b: counts per category, in the order of ``categories``.
        pooled: the categories merged into the one pooled cell (``"chi2"`` only).
        deviations: the largest differences, by absolute residual.
        message: one sentence: the verdict and where the evidence is.
    """

    passed: bool
    statistic: float
    pvalue: float
    alpha: float
    n_a: int
    n_b: int
    df: int
    method: str
    n_resamples: int
    categories: tuple[Hashable, ...]
    counts_a: tuple[int, ...]
    counts_b: tuple[int, ...]
    pooled: tuple[Hashable, ...]
    deviations: tuple[TwoSampleDeviation, ...]
    message: str

    @property
    def n_effective(self) -> float:
        """``n_a n_b / (n_a + n_b)``: the one-sample size with the same power."""
        return self.n_a * self.n_b / (self.n_a + self.n_b)

    def total_variation(self) -> float:
        """The total-variation distance between the two empirical laws (all categories).

        A plug-in estimate: biased upward when categories are sparse (two samples of one law
        differ by chance), so compare it with ``detectable_delta``.
        """
        return 0.5 * math.fsum(
            abs(a / self.n_a - b / self.n_b)
            for a, b in zip(self.counts_a, self.counts_b, strict=True)
        )

    def total_variation_interval(self, level: float = 0.95) -> tuple[float, float, float]:
        """``(estimate, low, high)``: the TV between the two laws as seen through the tested
        cells (the pooled cell counts as one), with a conservative interval at ``level``.

        The interval adds to the plug-in estimate each sample's L1 deviation bound of
        Weissman et al. (2003), ``P(|p_hat - p|_1 >= e) <= 2**K exp(-n e**2 / 2)`` over ``K``
        cells, at ``(1 - level) / 2`` each. It covers the TV of the cells as tested, which is
        at most the TV of the laws (pooling merges categories).
        """
        level = check_open_unit("level", level)
        cells = [[c] for c in self.categories if c not in set(self.pooled)]
        if self.pooled:
            cells.append(list(self.pooled))
        position = {c: i for i, c in enumerate(self.categories)}
        a = [sum(self.counts_a[position[c]] for c in cell) / self.n_a for cell in cells]
        b = [sum(self.counts_b[position[c]] for c in cell) / self.n_b for cell in cells]
        estimate = 0.5 * math.fsum(abs(x - y) for x, y in zip(a, b, strict=True))
        K = len(cells)
        spread = math.log(2 / (1 - level)) + K * math.log(2)
        margin = 0.5 * (math.sqrt(2 * spread / self.n_a) + math.sqrt(2 * spread / self.n_b))
        return estimate, max(0.0, estimate - margin), min(1.0, estimate + margin)

    def detectable_delta(self, power: float = 0.99) -> float:
        """The TV distance this test detected with probability ``power`` (over its cells)."""
        return two_sample_detectable_delta(
            max(self.df + 1, 2), self.alpha, self.n_a, self.n_b, power
        )


def two_sample_test(
    a: Sequence[Any] | npt.NDArray[Any],
    b: Sequence[Any] | npt.NDArray[Any],
    *,
    alpha: float,
    method: str = "auto",
    n_resamples: int | None = None,
    seed: int | np.random.Generator = 0,
) -> TwoSampleResult:
    """Test whether samples ``a`` and ``b`` come from one law, none given.

    Args:
        a, b: the samples: integer category ids (a vector), or token sequences (a 2-D integer
            array, or a sequence of integer sequences; each distinct sequence is a category,
            so the joint law is tested). Both of the same kind.
        alpha: the false-alarm rate, in (0, 1).
        method: ``"auto"`` (chi-square limit on the pooled table when it has at least two
            cells, else permutation), ``"chi2"`` or ``"permutation"``.
        n_resamples: Monte Carlo tables for ``"permutation"``; by default
            ``max(9999, 20 / alpha)`` (at most 2,000,000).
        seed: seed or ``numpy.random.Generator`` of the Monte Carlo draws (the chi-square mode
            draws nothing).

    Returns:
        A ``TwoSampleResult``; ``passed`` when ``pvalue >= alpha``.

    Raises:
        InvalidArgument: a sample is empty or not integer ids / sequences, the samples are of
            different kinds, ``method`` is unknown, ``"chi2"`` asked for a table too sparse to
            leave two cells, or ``alpha`` is too small for an affordable permutation test (the
            message says how many draws the chi-square mode needs).

    >>> r = two_sample_test([0] * 40 + [1] * 10, [0] * 10 + [1] * 40, alpha=1e-3)
    >>> (r.passed, r.method, r.df)
    (False, 'chi2', 1)
    """
    alpha = check_open_unit("alpha", alpha)
    if method not in _METHODS:
        raise InvalidArgument("method", method, f"must be one of {_METHODS}")
    keys_a, kind_a = _categories("a", a)
    keys_b, kind_b = _categories("b", b)
    if kind_a != kind_b:
        raise InvalidArgument(
            "b",
            b,
            f"holds {kind_b} but a holds {kind_a}",
            "pass two samples of the same kind (ids with ids, sequences with sequences)",
        )
    categories = tuple(sorted(set(keys_a) | set(keys_b), key=_sort_key))
    index = {c: i for i, c in enumerate(categories)}
    counts_a = np.bincount([index[k] for k in keys_a], minlength=len(categories))
    counts_b = np.bincount([index[k] for k in keys_b], minlength=len(categories))
    n_a, n_b = len(keys_a), len(keys_b)
    totals = counts_a + counts_b
    # The smaller sample's expected counts: a cell is sparse when either row's is below 5.
    expected_small = min(n_a, n_b) * totals / (n_a + n_b)
    cells = pool_cells(expected_small.astype(np.float64), range(len(categories)))
    if method == "auto":
        method = "chi2" if len(cells) >= 2 else "permutation"
    if method == "chi2":
        if len(cells) < 2:
            raise InvalidArgument(
                "a",
                f"<{n_a} draws>",
                f"with n_a={n_a} and n_b={n_b} fewer than two pooled cells have expected "
                f"count >= {MIN_EXPECTED:g}, so the chi-square limit has no degrees of freedom",
                "draw more samples or use method='permutation'",
            )
        table = np.array(
            [[counts_a[c].sum() for c in cells], [counts_b[c].sum() for c in cells]], dtype=float
        )
        g, _, df, _ = stats.chi2_contingency(table, correction=False, lambda_="log-likelihood")
        df = int(df)
        statistic = float(g) / _williams(table)
        pvalue = float(stats.chi2.sf(statistic, df))
        resamples = 0
        pooled = next((tuple(categories[i] for i in sorted(c)) for c in cells if len(c) > 1), ())
    else:
        resamples = _resamples(n_resamples, alpha, n_a, n_b)
        statistic, pvalue = _permutation(counts_a, totals, n_a, n_b, resamples, seed)
        df = max(int(np.count_nonzero(totals)) - 1, 0)
        pooled = ()
    deviations = _deviations(categories, counts_a, counts_b, n_a, n_b)
    passed = pvalue >= alpha
    how = f"{df} df" if method == "chi2" else f"{resamples} permutations"
    summary = f"G={statistic:.4g} ({how}), p={pvalue:.3g}"
    if passed:
        message = f"{summary} >= alpha={alpha:g}: no difference found (n_a={n_a}, n_b={n_b})"
    else:
        worst = deviations[0]
        message = (
            f"{summary} < alpha={alpha:g}: the samples differ (n_a={n_a}, n_b={n_b}); largest "
            f"difference: {worst.category!r} seen {worst.count_a} times in a, "
            f"{worst.count_b} in b"
        )
    return TwoSampleResult(
        passed=passed,
        statistic=statistic,
        pvalue=pvalue,
        alpha=alpha,
        n_a=n_a,
        n_b=n_b,
        df=df,
        method=method,
        n_resamples=resamples,
        categories=categories,
        counts_a=tuple(int(c) for c in counts_a),
        counts_b=tuple(int(c) for c in counts_b),
        pooled=pooled,
        deviations=deviations,
        message=message,
    )


def two_sample_required_samples(V: int, alpha: float, delta: float, power: float) -> int:
    """Draws *per sample* (equal sizes) that detect two laws at TV ``delta`` apart.

    Twice the one-sample size: ``ceil(2 * lambda / (4 * delta**2))``, ``lambda`` the
    noncentrality of ``noncentrality(V, alpha, power)`` (see the module doc).

    >>> two_sample_required_samples(5, 1e-6, 0.05, 0.99)
    12424

    Raises:
        InvalidArgument: an argument is out of range.
    """
    V, alpha, delta, power = _check_plan(V, alpha, delta, power)
    return math.ceil(2 * _noncentrality(V, alpha, power) / (4 * delta * delta))


def two_sample_detectable_delta(V: int, alpha: float, n_a: int, n_b: int, power: float) -> float:
    """The smallest TV distance that samples of sizes ``n_a`` and ``n_b`` detect with
    probability ``power``: ``sqrt(lambda / (4 * n_eff))``, ``n_eff = n_a n_b / (n_a + n_b)``.

    Raises:
        InvalidArgument: an argument is out of range, or the samples cannot detect even
            ``delta = 1`` (the message says how many draws per sample would).
    """
    V = _check_vocabulary(V)
    alpha = check_open_unit("alpha", alpha)
    n_a = check_int("n_a", n_a, 1)
    n_b = check_int("n_b", n_b, 1)
    power = _check_power(power, alpha)
    lam = _noncentrality(V, alpha, power)
    delta = math.sqrt(lam / (4 * (n_a * n_b / (n_a + n_b))))
    if delta > 1:
        raise InvalidArgument(
            "n_a",
            n_a,
            f"samples of {n_a} and {n_b} draws cannot detect any deviation (delta <= 1) with "
            f"power {power} at alpha={alpha}, V={V}",
            f"draw at least {two_sample_required_samples(V, alpha, 1.0, power)} per sample",
        )
    return delta


def _categories(name: str, sample: Any) -> tuple[list[Hashable], str]:
    """The sample as a list of hashable categories, and its kind ("ids" or "sequences")."""
    if isinstance(sample, np.ndarray):
        if sample.ndim not in (1, 2) or sample.size == 0:
            raise InvalidArgument(
                name, sample, "must be a non-empty vector of ids or a 2-D array of sequences"
            )
        if sample.dtype.kind not in "iu":
            raise InvalidArgument(
                name, sample, f"must hold integer ids, not {sample.dtype}", "cast to int"
            )
        if sample.ndim == 1:
            return [int(x) for x in sample.tolist()], "ids"
        return [tuple(row) for row in sample.tolist()], "sequences"
    if isinstance(sample, (str, bytes)) or not isinstance(sample, Sequence) or not sample:
        raise InvalidArgument(
            name,
            sample,
            "must be a non-empty sequence of integer ids or of token sequences",
            "e.g. [3, 0, 2] or [(3, 0), (2, 2)]",
        )
    first = sample[0]
    if _is_int(first):
        for position, value in enumerate(sample):
            if not _is_int(value):
                raise InvalidArgument(
                    name, sample, f"entry {position} is {value!r}, not an integer id"
                )
        return [int(x) for x in sample], "ids"
    keys: list[Hashable] = []
    for position, value in enumerate(sample):
        row = value.tolist() if isinstance(value, np.ndarray) else value
        if (
            isinstance(row, (str, bytes))
            or not isinstance(row, Sequence)
            or not all(_is_int(t) for t in row)
        ):
            raise InvalidArgument(
                name,
                sample,
                f"entry {position} is {value!r}, not a sequence of integer token ids",
            )
        keys.append(tuple(int(t) for t in row))
    return keys, "sequences"


def _is_int(value: Any) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool)


def _sort_key(category: Hashable) -> tuple[int, Any]:
    # Ids sort as numbers; sequences by length then lexicographically.
    if isinstance(category, tuple):
        return (len(category), category)
    return (0, category)


def _resamples(n_resamples: int | None, alpha: float, n_a: int, n_b: int) -> int:
    if n_resamples is not None:
        resamples = check_int("n_resamples", n_resamples, 1)
        if (resamples + 1) * alpha < 1:
            raise InvalidArgument(
                "n_resamples",
                n_resamples,
                f"a permutation p-value is at least 1/(n_resamples + 1), which is above "
                f"alpha={alpha:g}: the test could never fail",
                f"use n_resamples >= {math.ceil(_RESAMPLES_PER_ALPHA / alpha)}",
            )
        return resamples
    needed = max(_DEFAULT_RESAMPLES, math.ceil(_RESAMPLES_PER_ALPHA / alpha))
    if needed > _MAX_RESAMPLES:
        raise InvalidArgument(
            "alpha",
            alpha,
            f"with n_a={n_a} and n_b={n_b} the table is too sparse for the chi-square limit, "
            f"and a permutation test at this alpha needs {needed:,} resamples "
            f"(more than {_MAX_RESAMPLES:,})",
            "draw more samples (so that two pooled cells have expected count >= 5) or raise alpha",
        )
    return needed


def _williams(table: npt.NDArray[np.float64]) -> float:
    """Williams' (1976) correction factor q for the G statistic of an r x c table.

    ``G / q`` follows its chi-square limit more closely when many cells have small expected
    counts (measured: the false-alarm rate of a 216-cell joint law at alpha 0.05 fell from
    0.067 to 0.053 over 1,000 null runs).
    """
    N = float(table.sum())
    r, c = (int(k) for k in table.shape)
    rows, columns = table.sum(axis=1), table.sum(axis=0)
    q: float = 1 + (N * float((1 / rows).sum()) - 1) * (N * float((1 / columns).sum()) - 1) / (
        6 * N * (r - 1) * (c - 1)
    )
    return q


def _g_statistics(
    counts_a: npt.NDArray[np.int64],
    totals: npt.NDArray[np.int64],
    n_a: int,
    n_b: int,
) -> npt.NDArray[np.float64]:
    """G = 2 sum O ln(O / E) over both rows, for each row of ``counts_a`` (shape (B, K))."""
    N = n_a + n_b
    counts_b = totals - counts_a
    expected_a = totals * (n_a / N)
    expected_b = totals * (n_b / N)
    with np.errstate(divide="ignore", invalid="ignore"):
        term_a = np.where(counts_a > 0, counts_a * np.log(counts_a / expected_a), 0.0)
        term_b = np.where(counts_b > 0, counts_b * np.log(counts_b / expected_b), 0.0)
    result: npt.NDArray[np.float64] = 2 * (term_a.sum(axis=-1) + term_b.sum(axis=-1))
    return result


def _permutation(
    counts_a: npt.NDArray[np.int64],
    totals: npt.NDArray[np.int64],
    n_a: int,
    n_b: int,
    resamples: int,
    seed: int | np.random.Generator,
) -> tuple[float, float]:
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    support = totals > 0
    counts_a, totals = counts_a[support], totals[support]
    observed = float(_g_statistics(counts_a, totals, n_a, n_b))
    # Ties in G are exact ties of tables; the tolerance keeps float noise from breaking them.
    threshold = observed - 1e-9 * max(1.0, abs(observed))
    exceed = 0
    chunk = max(1, min(resamples, 2_000_000 // max(len(totals), 1)))
    done = 0
    while done < resamples:
        size = min(chunk, resamples - done)
        tables = rng.multivariate_hypergeometric(totals, n_a, size=size)
        exceed += int(np.count_nonzero(_g_statistics(tables, totals, n_a, n_b) >= threshold))
        done += size
    return observed, (1 + exceed) / (1 + resamples)


def _deviations(
    categories: tuple[Hashable, ...],
    counts_a: npt.NDArray[np.int64],
    counts_b: npt.NDArray[np.int64],
    n_a: int,
    n_b: int,
) -> tuple[TwoSampleDeviation, ...]:
    N = n_a + n_b
    totals = counts_a + counts_b
    expected_a = totals * (n_a / N)
    # Pearson residual of row a against its conditional expectation, scaled by the
    # hypergeometric variance so that both rows' views agree.
    variance = expected_a * (n_b / N) * (N - totals) / max(N - 1, 1)
    rows = []
    for i, category in enumerate(categories):
        a, b = int(counts_a[i]), int(counts_b[i])
        residual = (a - expected_a[i]) / math.sqrt(variance[i]) if variance[i] > 0 else 0.0
        rows.append(
            TwoSampleDeviation(
                category=category,
                count_a=a,
                count_b=b,
                difference=a / n_a - b / n_b,
                residual=float(residual),
            )
        )
    rows.sort(key=lambda d: (-abs(d.residual), _sort_key(d.category)))
    return tuple(rows[:_TOP_DEVIATIONS])
