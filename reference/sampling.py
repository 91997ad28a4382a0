"""Sampling (L8.1): the sampling distribution, inverse-CDF sampling, token log-probabilities.

The order of the filters, their tie rules and the history each penalty sees are pinned in
``CONTRACT.md`` section 2; this module is its executable form. The softmax's sum is the
contract's lane sum and the inverse CDF's running sum is sequential in ascending id order, so a
port that adds in the same order gets the same floats; ``exp`` is numpy's, within an ulp of a
port's (CONTRACT.md 2.5). Everything is vectorised over the
vocabulary: penalties over the history's distinct ids, top-k by a partition (ties at the cut
to the lowest ids), top-p by a stable sort of only as many of the largest as its walk needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidLogits, InvalidParams, InvalidPrompt

__all__ = [
    "LANES",
    "SamplingParams",
    "UniformSource",
    "argmax_lowest",
    "check_scaled_logits",
    "draw_uniform",
    "lane_sum",
    "sample",
    "sampling_distribution",
    "token_logprobs",
    "validate_ids",
]


class UniformSource(Protocol):
    """Anything with ``random() -> float`` in [0, 1) (random.Random, numpy Generator, Pcg32)."""

    def random(self) -> float: ...


@dataclass(frozen=True)
class SamplingParams:
    """Request parameters; the seed calls an instance ``p``.

    ``top_k = 0`` is off; ``temperature = 0`` is greedy (argmax, ties to the lowest id).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    max_tokens: int = 16
    stop: tuple[str, ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        _check_real("temperature", self.temperature, self.temperature >= 0, ">= 0")
        if not _is_int(self.top_k) or self.top_k < 0:
            raise InvalidParams("top_k", self.top_k, "must be an integer >= 0 (0 turns it off)")
        _check_real("top_p", self.top_p, 0 < self.top_p <= 1, "in (0, 1]", "1.0 turns it off")
        _check_real("min_p", self.min_p, 0 <= self.min_p <= 1, "in [0, 1]", "0.0 turns it off")
        _check_real(
            "repetition_penalty",
            self.repetition_penalty,
            self.repetition_penalty > 0,
            "> 0",
            "1.0 turns it off",
        )
        _check_real("presence_penalty", self.presence_penalty, True, "finite")
        _check_real("frequency_penalty", self.frequency_penalty, True, "finite")
        if not _is_int(self.max_tokens) or self.max_tokens < 1:
            raise InvalidParams("max_tokens", self.max_tokens, "must be an integer >= 1")
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise InvalidParams(
                "stop", self.stop, "must be a tuple of non-empty strings", "wrap one in (...,)"
            )
        if not _is_int(self.seed) or not 0 <= self.seed < 2**64:
            raise InvalidParams("seed", self.seed, "must be an integer in [0, 2**64)")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_real(name: str, value: object, ok: bool, rule: str, fix: str = "") -> None:
    if not isinstance(value, (int, float, np.floating)) or isinstance(value, bool):
        raise InvalidParams(name, value, "must be a real number")
    if not math.isfinite(float(value)) or not ok:
        raise InvalidParams(name, value, f"must be finite and {rule}", fix)


def validate_ids(argument: str, ids: Sequence[int], vocab_size: int) -> list[int]:
    """Ids as a list of ints, each in [0, vocab_size); raises naming ``argument``."""
    out: list[int] = []
    for i, token in enumerate(ids):
        if not _is_int(token) or not 0 <= int(token) < vocab_size:
            error = InvalidPrompt if argument == "prompt" else InvalidParams
            raise error(
                argument,
                list(ids),
                f"entry {i} is {token!r}; ids must be integers in [0, {vocab_size})",
            )
        out.append(int(token))
    return out


def _logits_row(logits: object, argument: str = "logits") -> NDArray[np.float64]:
    row = np.asarray(logits, dtype=np.float64)
    if row.ndim != 1 or row.shape[0] < 1:
        raise InvalidLogits(
            argument, logits, f"must be a 1-D row of V >= 1 logits, got {row.shape}"
        )
    if np.isnan(row).any():
        raise InvalidLogits(
            argument, row, f"has NaN at ids {np.flatnonzero(np.isnan(row)).tolist()}"
        )
    if np.isposinf(row).any():
        raise InvalidLogits(argument, row, "has +inf; logits must be finite or -inf")
    if not np.isfinite(row).any():
        raise InvalidLogits(argument, row, "has no finite entry: every token would be banned")
    return row


def argmax_lowest(values: NDArray[np.float64]) -> int:
    """Index of the maximum, ties to the lowest id (numpy's argmax already does this)."""
    return int(np.argmax(values))


def _penalised(
    row: NDArray[np.float64], p: SamplingParams, history: Sequence[int], prompt: Sequence[int]
) -> NDArray[np.float64]:
    """The logits after the penalties (CONTRACT.md 2.1), vectorised over the history; ``row``
    itself (not a copy) when no penalty applies, so callers never write into the result.

    Each token's value goes through the same float operations as a port's per-token loop
    (one division or multiplication by ``r``; one subtraction of ``presence + frequency *
    count``), so the result is bit for bit a port's.
    """
    repetition = p.repetition_penalty != 1.0 and (len(prompt) or len(history))
    additive = (p.presence_penalty != 0.0 or p.frequency_penalty != 0.0) and len(history)
    if not (repetition or additive):
        return row
    out = row.copy()
    if repetition:
        seen = np.unique(np.fromiter((*prompt, *history), dtype=np.int64))
        values = out[seen]
        r = p.repetition_penalty
        out[seen] = np.where(values > 0, values / r, values * r)
    if additive:
        tokens, counts = np.unique(np.fromiter(history, dtype=np.int64), return_counts=True)
        out[tokens] -= p.presence_penalty + p.frequency_penalty * counts.astype(np.float64)
    return out


def _check_finite_after(
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    step: str,
    fix: str,
    ids: NDArray[np.int64] | None = None,
    row: NDArray[np.float64] | None = None,
) -> None:
    """Raise if a finite logit became +-inf in ``step`` (float64 overflow; CONTRACT.md 2).

    ``before`` and ``after`` are the row's values at ``ids`` (all ids if None); ``row`` is the
    whole row, shown in the error."""
    overflow = np.isfinite(before) & ~np.isfinite(after)
    if overflow.any():
        first = int(np.flatnonzero(overflow)[0])
        token = first if ids is None else int(ids[first])
        raise InvalidLogits(
            "logits",
            before if row is None else row,
            f"the logit {float(before[first])!r} at id {token} overflows float64 {step}",
            fix,
        )


def _touched(history: Sequence[int], prompt: Sequence[int]) -> NDArray[np.int64]:
    return np.unique(np.fromiter((*prompt, *history), dtype=np.int64))


def _scaled(
    row: NDArray[np.float64], p: SamplingParams, history: Sequence[int], prompt: Sequence[int]
) -> NDArray[np.float64]:
    """Steps 1 and 3: penalised logits, divided by the temperature unless greedy (``row``
    itself when neither changes anything: callers never write into the result).

    A finite logit that overflows to +-inf in either step is an error (CONTRACT.md section 2):
    +inf would make the softmax NaN and -inf would silently ban a token. Only the history's
    ids can overflow under the penalties, and only a temperature below 1 can overflow a logit,
    so the checks cost a pass over the row only then.
    """
    with np.errstate(over="ignore"):  # an overflow is detected below and raised, not warned
        penalised = _penalised(row, p, history, prompt)
    if penalised is not row:
        touched = _touched(history, prompt)
        _check_finite_after(
            row[touched],
            penalised[touched],
            f"under the penalties (repetition_penalty={p.repetition_penalty!r}, "
            f"presence_penalty={p.presence_penalty!r}, "
            f"frequency_penalty={p.frequency_penalty!r})",
            "use penalties that keep the logits finite",
            touched,
            row,
        )
    if p.greedy or p.temperature == 1.0:
        return penalised
    with np.errstate(over="ignore"):
        scaled = penalised / p.temperature
    if p.temperature < 1.0:  # dividing by a temperature >= 1 cannot overflow
        _check_finite_after(
            penalised,
            scaled,
            f"when divided by temperature={p.temperature!r}",
            "use temperature 0 for greedy, or a temperature >= max |logit| / "
            "1.7976931348623157e308",
        )
    return scaled


def check_scaled_logits(
    logits: object,
    p: SamplingParams,
    history: Sequence[int],
    prompt: Sequence[int],
    argument: str = "logits",
) -> None:
    """Everything ``sampling_distribution`` can reject in a row, without computing it.

    ``verify_draft`` calls this on every row before drawing its first uniform (CONTRACT.md
    section 3): a row that would fail later must fail before any draw. Ids must be valid.
    """
    _scaled(_logits_row(logits, argument), p, history, prompt)


def _exp(
    values: NDArray[np.float64], out: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """Elementwise exp: numpy's own (``np.exp``), vectorised.

    CONTRACT.md 2.5 allows any ``exp`` within one ulp of the exact value (glibc's, Rust's
    ``f64::exp``, numpy's SIMD one), so a port's probabilities may differ from these by a few
    ulps: parity compares distributions within a stated number of ulps and decisions exactly
    except when a uniform lies within that tolerance of a boundary (a boundary tie, reported).
    Measured here (5 rows of 32,000, 2 cores): a ``math.exp`` loop 48 rows/s, ``np.exp``
    4,465, a portable exp in numpy array operations 74; ``np.exp`` differs from glibc's on
    4.6% of arguments, by at most 1 ulp.
    """
    with np.errstate(over="ignore", under="ignore"):
        result: NDArray[np.float64] = np.exp(values, out=out)
        return result


LANES = 1024  # the lane sum's lanes (CONTRACT.md 2.5)


def lane_sum(values: NDArray[np.float64]) -> float:
    """The contract's lane sum (softmax ``S``, renormalisation, the residual's ``Z``).

    Lane ``l`` adds the values at ids ``l, l + 1024, l + 2048, ...`` in ascending order, then
    the 1,024 lane totals are added in lane order; for ``V <= 1024`` that is the sequential
    sum. Unlike one long sequential sum (``np.cumsum``: a dependency chain, 12-25x slower
    than this at V = 128,000) it runs as one vectorised pass, and a port's SIMD loop computes
    the same floats. ``np.add.reduce`` over axis 0 adds the rows of the ``(V / 1024, 1024)``
    view one after another, each lane in order (``tests/reference/test_vectorised.py`` checks
    it against the definition).
    """
    V = values.shape[0]
    if V <= LANES:
        return float(np.cumsum(values)[-1])
    full = V - V % LANES
    lanes = np.add.reduce(values[:full].reshape(-1, LANES), axis=0)
    lanes[: V - full] += values[full:]
    return float(np.cumsum(lanes)[-1])


def _top_k_keep(values: NDArray[np.float64], k: int) -> NDArray[np.bool_]:
    """Exactly ``k`` ids: the ``k`` largest values, ties at the cut to the lowest ids.

    The same set as the first ``k`` of a stable sort by ``(-value, id)``, found in linear
    time: every id above the ``k``-th largest value, then the lowest ids equal to it.
    """
    V = values.shape[0]
    cut = np.partition(values, V - k)[V - k]
    keep: NDArray[np.bool_] = values > cut
    missing = k - int(np.count_nonzero(keep))
    keep[np.flatnonzero(values == cut)[:missing]] = True
    return keep


def _top_p_keep(probs: NDArray[np.float64], top_p: float) -> NDArray[np.bool_]:
    """The shortest prefix of the order ``(-prob, id)`` whose sequential sum reaches
    ``top_p`` (at least one token), walking only as far as needed.

    The walk needs the order only until the running sum reaches ``top_p``: the ``n`` largest
    (ties to the lowest ids) are stably sorted, ``n`` doubling until they suffice, so a
    peaked distribution costs a few linear passes instead of a full sort.
    """
    V = probs.shape[0]
    n = min(V, 256)
    while True:
        head = _top_k_keep(probs, n) if n < V else np.ones(V, dtype=bool)
        ids = np.flatnonzero(head)  # ascending ids: a stable sort keeps them for ties
        order = ids[np.argsort(-probs[ids], kind="stable")]
        running = np.cumsum(probs[order])  # running[j] = the sum after adding order[j]
        # token order[j] is kept while the sum before it (running[j - 1], 0 for j = 0) < top_p
        kept = 1 + int(np.searchsorted(running[:-1], top_p, side="left"))
        if kept < order.shape[0] or n == V:
            keep = np.zeros(V, dtype=bool)
            keep[order[:kept]] = True
            return keep
        n = min(V, 4 * n)


def _greedy_token(
    row: NDArray[np.float64], p: SamplingParams, history: Sequence[int], prompt: Sequence[int]
) -> int:
    """Greedy's token: the argmax of the penalised logits, ties to the lowest id."""
    return argmax_lowest(_scaled(row, p, history, prompt))


def _distribution(
    row: NDArray[np.float64], p: SamplingParams, history: Sequence[int], prompt: Sequence[int]
) -> NDArray[np.float64]:
    """``sampling_distribution`` on inputs already validated (row, ids, parameters).

    A handful of passes over the row: the penalties touch only the history's ids; the
    temperature divides (skipped at 1, where it changes nothing); the softmax subtracts, exps
    and divides in place.
    """
    V = row.shape[0]
    row = _scaled(row, p, history, prompt)  # may be the caller's row: never written
    if p.greedy:
        one_hot = np.zeros(V)
        one_hot[argmax_lowest(row)] = 1.0
        return one_hot
    if 0 < p.top_k < V:
        row = np.where(_top_k_keep(row, p.top_k), row, -np.inf)
    top = float(np.max(row))  # finite: the row has a finite entry, and nothing overflowed
    e = np.subtract(row, top)
    _exp(e, out=e)  # -inf gives exactly 0
    probs = np.divide(e, lane_sum(e), out=e)
    if p.top_p >= 1.0 and p.min_p <= 0.0:
        return probs
    positive = probs > 0
    keep = positive
    if p.top_p < 1.0:
        keep = keep & _top_p_keep(probs, p.top_p)
    if p.min_p > 0.0:  # judges step 5's softmax, as top-p does (CONTRACT.md 2.7)
        keep = keep & (probs >= p.min_p * np.max(probs, where=keep, initial=0.0))
    if not np.array_equal(keep, positive):  # renormalise once, only if a positive was dropped
        probs = np.where(keep, probs, 0.0)
        probs = probs / lane_sum(probs)
    return probs


def sampling_distribution(
    logits: object,
    p: SamplingParams,
    history: Sequence[int] = (),
    prompt: Sequence[int] = (),
) -> NDArray[np.float64]:
    """The target's sampling distribution for one row of logits (float64, sums to 1).

    Args:
        logits: one row of V logits (finite or -inf; no NaN, no +inf).
        p: sampling parameters.
        history: generated tokens so far (including drafts kept this round): what presence and
            frequency penalties see; the repetition penalty sees ``prompt + history``.
        prompt: the prompt's tokens.

    Raises:
        InvalidLogits, InvalidParams: bad row, bad parameters, ids out of range.

    >>> sampling_distribution([0.0, 1.0, 1.0], SamplingParams(temperature=0)).tolist()
    [0.0, 1.0, 0.0]
    """
    if not isinstance(p, SamplingParams):
        raise InvalidParams("p", p, "must be a SamplingParams")
    row = _logits_row(logits)
    V = row.shape[0]
    history = validate_ids("history", history, V)
    prompt = validate_ids("prompt", prompt, V)
    return _distribution(row, p, history, prompt)


def sample(dist: object, rng: UniformSource | None) -> int:
    """Inverse-CDF sampling over ascending ids with one uniform; ``rng=None`` is greedy.

    Returns the first id whose cumulative probability exceeds the uniform; a zero-probability
    id is never returned. Greedy (``rng=None``) is the argmax, ties to the lowest id, no draw.

    >>> class U:
    ...     def random(self): return 0.6
    >>> sample([0.5, 0.0, 0.5], U())
    2
    """
    probs = np.asarray(dist, dtype=np.float64)
    if probs.ndim != 1 or probs.shape[0] < 1 or not np.isfinite(probs).all() or (probs < 0).any():
        raise InvalidLogits("dist", dist, "must be a 1-D vector of finite non-negative numbers")
    if not probs.any():
        raise InvalidLogits("dist", dist, "has no positive entry")
    if rng is None:
        return argmax_lowest(probs)
    return sample_with(probs, draw_uniform(rng))


def draw_uniform(rng: UniformSource) -> float:
    """The next uniform of ``rng``, checked: outside [0, 1) (or not a number) is an error.

    Every draw of the reference goes through here (CONTRACT.md section 1): a source returning
    1.0, a negative number or NaN is rejected, never clamped.

    Raises:
        InvalidParams: naming ``rng`` and the value it returned.
    """
    u = rng.random()
    number = isinstance(u, (int, float, np.integer, np.floating)) and not isinstance(u, bool)
    if not number or not 0.0 <= u < 1.0:
        raise InvalidParams(
            "rng",
            u,
            "random() returned this; a uniform source must return a float in [0, 1)",
            "0.0 is allowed and 1.0 is not: scale a 32-bit integer by 2**-32 (CONTRACT.md 1)",
        )
    return float(u)


_CDF_BLOCK = 8192  # inverse CDF: cumulative sums a block at a time, stopping at the pick


def sample_with(probs: NDArray[np.float64], u: float) -> int:
    """Inverse CDF with a given uniform ``u`` (no validation: internal hot path).

    The sequential cumulative sum is built a block at a time and stops at the block holding
    the pick; each block continues the running sum exactly (its first entry is the carry plus
    its first probability, as in one long sum).
    """
    V = probs.shape[0]
    carry = 0.0
    for start in range(0, V, _CDF_BLOCK):
        block = probs[start : start + _CDF_BLOCK].copy()
        block[0] += carry
        cumulative = np.cumsum(block, out=block)
        index = int(np.searchsorted(cumulative, u, side="right"))
        if index < block.shape[0]:
            return start + index
        carry = float(cumulative[-1])
    return int(np.flatnonzero(probs > 0)[-1])  # rounding left u above the last partial sum


def token_logprobs(logits: object, ids: Sequence[int]) -> list[float]:
    """Log-softmax of the raw logits (temperature 1, no filters) at ``ids``, one per row.

    ``logits`` is ``(len(ids), V)``; row i is scored at ``ids[i]``.
    """
    rows = np.asarray(logits, dtype=np.float64)
    if rows.ndim == 1:
        rows = rows[None, :]
    if rows.ndim != 2 or rows.shape[0] != len(ids):
        raise InvalidLogits(
            "logits", logits, f"must have one row per id: {len(ids)} rows, got {rows.shape}"
        )
    ids = validate_ids("ids", ids, rows.shape[1])
    out = []
    for row, token in zip(rows, ids, strict=False):
        checked = _logits_row(row)
        top = np.max(checked)
        log_z = top + math.log(float(np.sum(np.exp(checked - top))))
        out.append(float(checked[token] - log_z))
    return out
