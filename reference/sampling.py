"""Sampling (L8.1): the sampling distribution, inverse-CDF sampling, token log-probabilities.

The order of the filters, their tie rules and the history each penalty sees are pinned in
``CONTRACT.md`` section 2; this module is its executable form. Sums are sequential in ascending
id order (``np.cumsum``), so a port that adds left to right gets the same floats.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidLogits, InvalidParams, InvalidPrompt

__all__ = [
    "SamplingParams",
    "UniformSource",
    "argmax_lowest",
    "check_scaled_logits",
    "draw_uniform",
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
    out = row.copy()
    if p.repetition_penalty != 1.0:
        seen = sorted(set(prompt) | set(history))
        for token in seen:
            value = out[token]
            out[token] = value / p.repetition_penalty if value > 0 else value * p.repetition_penalty
    if p.presence_penalty != 0.0 or p.frequency_penalty != 0.0:
        for token, count in sorted(Counter(history).items()):
            out[token] -= p.presence_penalty + p.frequency_penalty * count
    return out


def _check_finite_after(
    before: NDArray[np.float64], after: NDArray[np.float64], step: str, fix: str
) -> None:
    """Raise if a finite logit became +-inf in ``step`` (float64 overflow; CONTRACT.md 2)."""
    overflow = np.isfinite(before) & ~np.isfinite(after)
    if overflow.any():
        token = int(np.flatnonzero(overflow)[0])
        raise InvalidLogits(
            "logits",
            before,
            f"the logit {float(before[token])!r} at id {token} overflows float64 {step}",
            fix,
        )


def _scaled(
    row: NDArray[np.float64], p: SamplingParams, history: Sequence[int], prompt: Sequence[int]
) -> NDArray[np.float64]:
    """Steps 1 and 3: penalised logits, divided by the temperature unless greedy.

    A finite logit that overflows to +-inf in either step is an error (CONTRACT.md section 2):
    +inf would make the softmax NaN and -inf would silently ban a token.
    """
    with np.errstate(over="ignore"):  # an overflow is detected below and raised, not warned
        penalised = _penalised(row, p, history, prompt)
    _check_finite_after(
        row,
        penalised,
        f"under the penalties (repetition_penalty={p.repetition_penalty!r}, "
        f"presence_penalty={p.presence_penalty!r}, frequency_penalty={p.frequency_penalty!r})",
        "use penalties that keep the logits finite",
    )
    if p.greedy:
        return penalised
    with np.errstate(over="ignore"):
        scaled = penalised / p.temperature
    _check_finite_after(
        penalised,
        scaled,
        f"when divided by temperature={p.temperature!r}",
        "use temperature 0 for greedy, or a temperature >= max |logit| / 1.7976931348623157e308",
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


def _exp(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Elementwise exp through the C library (``math.exp``), 0 for -inf.

    numpy's SIMD exp differs from libm's by an ulp on some CPUs, so the reference's floats
    would depend on the machine; libm's exp is what a C or Rust port calls too.
    """
    return np.array([math.exp(v) if v != -math.inf else 0.0 for v in values.tolist()])


def _sequential_sum(values: NDArray[np.float64]) -> float:
    return float(np.cumsum(values)[-1])


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
    row = _scaled(row, p, history, prompt)
    if p.greedy:
        one_hot = np.zeros(V)
        one_hot[argmax_lowest(row)] = 1.0
        return one_hot
    if 0 < p.top_k < V:
        order = sorted(range(V), key=lambda t: (-row[t], t))
        banned = order[p.top_k :]
        row[banned] = -np.inf
    finite = np.isfinite(row)
    if not finite.any():  # unreachable: the row has a finite entry that _scaled kept finite
        raise InvalidLogits("logits", logits, "no token survives the filters")
    e = _exp(row - np.max(row[finite]))
    probs = e / _sequential_sum(e)
    keep = probs > 0
    if p.top_p < 1.0:
        order = sorted(range(V), key=lambda t: (-probs[t], t))
        running = 0.0
        top_p_keep = np.zeros(V, dtype=bool)
        for token in order:
            if running >= p.top_p:
                break
            top_p_keep[token] = True
            running += probs[token]
        keep &= top_p_keep
    if p.min_p > 0.0:
        keep &= probs >= p.min_p * np.max(probs[keep])
    if not keep[probs > 0].all():
        probs = np.where(keep, probs, 0.0)
        probs = probs / _sequential_sum(probs)
    return probs


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


def sample_with(probs: NDArray[np.float64], u: float) -> int:
    """Inverse CDF with a given uniform ``u`` (no validation: internal hot path)."""
    cumulative = np.cumsum(probs)
    index = int(np.searchsorted(cumulative, u, side="right"))
    if index >= probs.shape[0]:  # rounding left u above the last partial sum
        index = int(np.flatnonzero(probs > 0)[-1])
    return index


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
