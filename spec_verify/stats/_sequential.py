"""A sequential goodness-of-fit test that may be stopped at any time: an e-process.

The test keeps the running likelihood ratio

    E_n = prod_{t <= n} q_t(x_t) / p(x_t)

of a Bayes mixture alternative against the exact target ``p``. The alternative ``q_t`` is the
posterior predictive of a Dirichlet(a, ..., a) prior over the support of ``p`` (a = 1/2 is the
Krichevsky–Trofimov mixture): ``q_t(x) = (c_x + a) / (t - 1 + K a)``, with ``c_x`` the count
of ``x`` among the first ``t - 1`` tokens and ``K`` the number of tokens with ``p(x) > 0``.
``E_n`` equals the Dirichlet-multinomial likelihood of the sequence divided by its likelihood
under ``p`` (the "universal inference" mixture ratio).

Validity. Under the null (each token, given the ones before, is drawn from ``p``) ``E_n`` is a
non-negative martingale with ``E_0 = 1``, because ``q_t`` is fixed before ``x_t`` is drawn and
sums to 1 over the support of ``p``. Ville's inequality gives
``P(E_n >= 1/alpha for some n) <= alpha``: rejecting the first time ``E_n`` reaches ``1/alpha``
has false-alarm rate at most ``alpha`` however the run is monitored, stopped or continued
(optional stopping is safe; no sample size has to be fixed in advance). A zero-probability
token has likelihood 0 under the null, so ``E`` becomes infinite and the test rejects at once.

Power. Against a sampler ``q != p`` drawing i.i.d., ``log E_n / n -> KL(q || p)``; the test
rejects after about ``(log(1/alpha) + (K - 1)/2 * log n) / KL(q || p)`` draws. The
``(K - 1)/2 * log n`` term is the price of not fixing the alternative: for small vocabularies
the expected stopping time is close to the fixed-n G-test's sample size, for large ones
(thousands of tokens) the fixed-n G-test (``spec_verify.stats._gof``) with a planned ``n`` is far
stronger and this test serves to stop early on gross failures.

>>> test = SequentialGofTest([0.5, 0.5], alpha=0.01)
>>> test.update_many([0, 0])
False
>>> test.e_value  # (1/2 / 1/2) * (3/4 / 1/2)
1.5
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from spec_verify.errors import InvalidArgument
from spec_verify.stats._gof import probabilities
from spec_verify.stats._validate import check_open_unit, check_real

__all__ = ["SequentialGofTest", "SequentialResult"]

_LISTED_TOKENS = 10


@dataclass(frozen=True)
class SequentialResult:
    """The state of a sequential goodness-of-fit test, as a value.

    Attributes:
        passed: the test has not rejected: ``E`` never reached ``1/alpha``. (Not rejecting
            is no proof of fit: see ``max_e_value`` and ``n``.)
        statistic: ``log max_e_value``, the largest log e-value so far (as scipy results
            name their test statistic).
        pvalue: the anytime-valid p-value ``min(1, 1 / max_e_value)``: valid at any
            stopping time; ``passed`` is ``pvalue > alpha``.
        e_value: the current e-value ``E_n``.
        alpha: the false-alarm rate; the test rejects when ``E >= 1/alpha``.
        n: number of tokens seen.
        max_e_value: the largest ``E_t`` over ``t <= n``.
        stopped_at: the ``n`` at which ``E`` first reached ``1/alpha`` (None if it never did).
        counts: count per token.
        zero_probability_tokens: observed tokens whose target probability is 0.
        message: one sentence: the verdict and its evidence.
    """

    passed: bool
    statistic: float
    pvalue: float
    e_value: float
    alpha: float
    n: int
    max_e_value: float
    stopped_at: int | None
    counts: tuple[int, ...]
    zero_probability_tokens: tuple[int, ...]
    message: str


class SequentialGofTest:
    """An e-process testing that tokens are drawn from ``expected_probs``; see the module doc.

    Args:
        expected_probs: the target distribution, as for ``g_test`` (Fractions summing to
            exactly 1, or floats summing to 1 within 1e-9).
        alpha: the false-alarm rate, in (0, 1), valid under optional stopping.
        concentration: the Dirichlet prior parameter ``a > 0`` of the mixture alternative
            (1/2, the Krichevsky–Trofimov choice, by default).

    Raises:
        InvalidDistribution: ``expected_probs`` is not a distribution.
        InvalidArgument: ``alpha`` outside (0, 1) or ``concentration`` not positive.
    """

    def __init__(
        self,
        expected_probs: Sequence[Fraction | float] | npt.NDArray[np.floating[Any]],
        alpha: float,
        *,
        concentration: float = 0.5,
    ) -> None:
        self._alpha = check_open_unit("alpha", alpha)
        a = check_real("concentration", concentration)
        if a <= 0:
            raise InvalidArgument(
                "concentration", concentration, "must be positive", "e.g. concentration=0.5"
            )
        self._a = a
        self._p = probabilities(expected_probs)
        with np.errstate(divide="ignore"):
            self._log_p = np.log(self._p)
        self._support = int(np.count_nonzero(self._p))
        self._log_threshold = -math.log(self._alpha)
        self._counts = np.zeros(len(self._p), dtype=np.int64)
        self._n = 0
        self._n_support = 0  # tokens seen with p > 0: the mixture's sample size
        self._log_e = 0.0
        self._max_log_e = 0.0
        self._stopped_at: int | None = None

    @property
    def alpha(self) -> float:
        return self._alpha

    @property
    def n(self) -> int:
        """Number of tokens seen."""
        return self._n

    @property
    def log_e_value(self) -> float:
        """``log E_n`` (``inf`` after a zero-probability token)."""
        return self._log_e

    @property
    def e_value(self) -> float:
        """The current e-value ``E_n`` (may overflow to ``inf`` on overwhelming evidence)."""
        return math.exp(self._log_e) if self._log_e < 709 else math.inf

    @property
    def rejected(self) -> bool:
        """Whether ``E_t >= 1/alpha`` at some ``t <= n``; once True it stays True."""
        return self._stopped_at is not None

    def update(self, token: int) -> bool:
        """Observe one token; return ``rejected``.

        Raises:
            InvalidArgument: ``token`` is not an integer in ``[0, V)``.
        """
        if isinstance(token, bool) or not isinstance(token, numbers.Integral):
            raise InvalidArgument("token", token, "must be an integer token id")
        x = int(token)
        if not 0 <= x < len(self._p):
            raise InvalidArgument("token", token, f"must be in [0, {len(self._p)})")
        if self._p[x] > 0:
            step = (
                math.log(self._counts[x] + self._a)
                - math.log(self._n_support + self._support * self._a)
                - float(self._log_p[x])
            )
            self._n_support += 1
        else:
            step = math.inf
        self._counts[x] += 1
        self._n += 1
        self._log_e += step
        self._max_log_e = max(self._max_log_e, self._log_e)
        if self._stopped_at is None and self._log_e >= self._log_threshold:
            self._stopped_at = self._n
        return self.rejected

    def update_many(self, tokens: Sequence[int] | npt.NDArray[np.integer[Any]]) -> bool:
        """Observe tokens in order; return ``rejected``.

        Equivalent to ``update`` on each token (the running maximum is kept, so a crossing of
        ``1/alpha`` inside the batch counts), vectorised.

        Raises:
            InvalidArgument: ``tokens`` is not a vector of integers in ``[0, V)``; then no
                token of the batch is counted.
        """
        array = np.asarray(tokens)
        if array.size == 0:
            return self.rejected
        if array.ndim != 1 or array.dtype.kind not in "iu":
            raise InvalidArgument(
                "tokens", tokens, "must be a vector of integer token ids", "e.g. [3, 0, 2]"
            )
        V = len(self._p)
        bad = (array < 0) | (array >= V)
        if bad.any():
            index = int(np.flatnonzero(bad)[0])
            raise InvalidArgument(
                "tokens", tokens, f"entry {index} is {int(array[index])}, not in [0, {V})"
            )
        x = array.astype(np.intp)
        # Occurrences of each token before position j within the batch (stable sort keeps order).
        order = np.argsort(x, kind="stable")
        sorted_x = x[order]
        starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
        group_start = np.repeat(starts, np.diff(np.r_[starts, len(x)]))
        occurrences = np.empty(len(x), dtype=np.int64)
        occurrences[order] = np.arange(len(x)) - group_start
        in_support = self._p[x] > 0
        seen_before = self._n_support + np.cumsum(in_support) - in_support
        with np.errstate(divide="ignore"):
            steps = np.where(
                in_support,
                np.log(self._counts[x] + occurrences + self._a)
                - np.log(seen_before + self._support * self._a)
                - np.where(in_support, self._log_p[x], 0.0),
                np.inf,
            )
        path = self._log_e + np.cumsum(steps)
        if self._stopped_at is None:
            crossed = np.flatnonzero(path >= self._log_threshold)
            if crossed.size:
                self._stopped_at = self._n + int(crossed[0]) + 1
        self._max_log_e = max(self._max_log_e, float(path.max()))
        self._log_e = float(path[-1])
        self._counts += np.bincount(x, minlength=V)
        self._n += len(x)
        self._n_support += int(in_support.sum())
        return self.rejected

    def result(self) -> SequentialResult:
        """The current state as a frozen value."""
        zero_tokens = tuple(int(i) for i in np.flatnonzero((self._p == 0) & (self._counts > 0)))
        max_e = math.exp(self._max_log_e) if self._max_log_e < 709 else math.inf
        threshold = f"1/alpha={1 / self._alpha:.4g}"
        if zero_tokens:
            listed = ", ".join(
                f"token {t} (observed {int(self._counts[t])} times)"
                for t in zero_tokens[:_LISTED_TOKENS]
            )
            more = len(zero_tokens) - _LISTED_TOKENS
            message = f"target probability 0 but observed: {listed}" + (
                f" and {more} more" if more > 0 else ""
            )
        elif self._stopped_at is not None:
            message = (
                f"rejected at n={self._stopped_at}: E reached {threshold} "
                f"(max E={max_e:.4g}, now E={self.e_value:.4g} at n={self._n})"
            )
        else:
            message = (
                f"not rejected after n={self._n}: max E={max_e:.4g} < {threshold} "
                "(no evidence against the target yet; not a proof of fit)"
            )
        return SequentialResult(
            passed=not self.rejected,
            statistic=self._max_log_e,
            pvalue=min(1.0, 1.0 / max_e) if max_e > 0 else 1.0,
            e_value=self.e_value,
            alpha=self._alpha,
            n=self._n,
            max_e_value=max_e,
            stopped_at=self._stopped_at,
            counts=tuple(int(c) for c in self._counts),
            zero_probability_tokens=zero_tokens,
            message=message,
        )

    def __repr__(self) -> str:
        return (
            f"<SequentialGofTest V={len(self._p)} alpha={self._alpha:g} n={self._n} "
            f"E={self.e_value:.4g} rejected={self.rejected}>"
        )
