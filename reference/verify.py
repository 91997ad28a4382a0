"""``verify_draft``: keep a prefix of the draft and add one token of the target's own.

Draw order (seed section 2.5, pinned in CONTRACT.md): per verified position ``u_accept`` then
``u_resample``, always both; the bonus is one ``sample``; greedy draws nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidDraft, InvalidLogits, InvalidParams
from .rejection import step
from .sampling import (
    SamplingParams,
    UniformSource,
    _distribution,
    _greedy_token,
    _scaled,
    draw_uniform,
    sample_with,
    validate_ids,
)

__all__ = ["DRAFT_ROW_TOLERANCE", "verify_draft"]

DRAFT_ROW_TOLERANCE = 1e-6  # a draft row must sum to 1 within this


def _check_target_logits(target_logits: object, m: int) -> NDArray[np.float64]:
    """Every row, before the first draw: shape, no NaN, no +inf, a finite entry per row."""
    rows = np.asarray(target_logits, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != m + 1 or rows.shape[1] < 1:
        raise InvalidLogits(
            "target_logits",
            target_logits,
            f"has shape {rows.shape}; it must be (m + 1, V) = ({m + 1}, V) for m = {m} drafts",
            "pass the last m + 1 rows of the target's pass",
        )
    highest = np.max(rows, axis=1)  # NaN if a row has one: one pass finds NaN, +inf, -inf rows
    if not (highest < np.inf).all():
        if np.isnan(highest).any():
            where = [tuple(int(i) for i in ij) for ij in np.argwhere(np.isnan(rows))[:3]]
            raise InvalidLogits("target_logits", rows, f"has NaN at (row, id) {where}")
        where = [tuple(int(i) for i in ij) for ij in np.argwhere(np.isposinf(rows))[:3]]
        raise InvalidLogits(
            "target_logits", rows, f"has +inf at (row, id) {where}; logits must be finite or -inf"
        )
    if not (highest > -np.inf).all():
        raise InvalidLogits(
            "target_logits",
            rows,
            f"row {int(np.argmin(highest > -np.inf))} has no finite entry: every token would "
            "be banned",
        )
    return rows


def _check_draft_probs(draft_probs: object, ids: list[int], V: int) -> NDArray[np.float64]:
    m = len(ids)
    q = np.asarray(draft_probs, dtype=np.float64)
    if q.ndim != 2 or q.shape != (m, V):
        raise InvalidDraft(
            "draft_probs",
            draft_probs,
            f"has shape {q.shape}; it must be (m, V) = ({m}, {V})",
            "one draft distribution per drafted token, or None for a deterministic draft",
        )
    if m == 0:
        return q
    if not (q.min() >= 0.0 and q.max() < np.inf):  # NaN fails both comparisons
        raise InvalidDraft("draft_probs", q, "must be finite and non-negative")
    totals = np.sum(q, axis=1)
    off = np.flatnonzero(np.abs(totals - 1.0) > DRAFT_ROW_TOLERANCE)
    zero = np.flatnonzero(q[np.arange(m), ids] <= 0.0)
    bad = [*off.tolist(), *zero.tolist()]
    if not bad:
        return q
    i = min(bad)  # the first bad row; its sum is checked before its drafted token
    if i in off.tolist():
        raise InvalidDraft(
            "draft_probs", q, f"row {i} sums to {float(totals[i])!r}; each row must sum to 1"
        )
    raise InvalidDraft(
        "draft_probs",
        q,
        f"row {i} gives the drafted token {ids[i]} probability 0; a draft can only propose "
        "tokens it could draw",
        "pass the distribution the token was sampled from",
    )


def verify_draft(
    target_logits: object,
    draft_ids: Sequence[int],
    draft_probs: object,
    p: SamplingParams,
    history: Sequence[int],
    rng: UniformSource | None,
    prompt: Sequence[int] = (),
) -> tuple[list[int], int]:
    """Verify ``m`` drafted tokens against the target's ``m + 1`` rows.

    Args:
        target_logits: ``(m + 1, V)`` logits: after the context, after ``x_1``, ..., ``x_m``.
        draft_ids: the drafted tokens ``x_1..x_m``.
        draft_probs: ``(m, V)`` draft distributions the tokens were drawn from, or ``None``
            for a deterministic draft (one-hot ``q``). Ignored when greedy.
        p: sampling parameters; ``temperature == 0`` is greedy verification.
        history: tokens generated before this round (penalties also see kept drafts).
        rng: the uniform source; unused (may be None) when greedy.
        prompt: the prompt (the repetition penalty sees it).

    Returns:
        ``(emitted_ids, n_accepted)`` with ``len(emitted_ids) == n_accepted + 1``.

    Raises:
        InvalidLogits, InvalidDraft, InvalidParams: bad shapes, ids, rows, parameters.

    >>> import math
    >>> rows = [[0, 1, 3], [2, 1, 0], [0, 5, 1]]
    >>> verify_draft(rows, [2, 1], None, SamplingParams(temperature=0), [], None)
    ([2, 0], 1)
    """
    if not isinstance(p, SamplingParams):
        raise InvalidParams("p", p, "must be a SamplingParams")
    if isinstance(draft_ids, (str, bytes)) or not isinstance(draft_ids, Sequence | np.ndarray):
        raise InvalidDraft("draft_ids", draft_ids, "must be a sequence of token ids")
    m = len(draft_ids)
    rows = _check_target_logits(target_logits, m)
    V = rows.shape[1]
    ids = validate_ids("draft_ids", draft_ids, V)
    history = validate_ids("history", history, V)
    prompt = validate_ids("prompt", prompt, V)
    if p.greedy:
        return _verify_greedy(rows, ids, p, history, prompt)
    if rng is None or not callable(getattr(rng, "random", None)):
        raise InvalidParams("rng", rng, "sampled verification needs a uniform source")
    q = None if draft_probs is None else _check_draft_probs(draft_probs, ids, V)
    _check_overflow(rows, ids, p, history, prompt)
    # Everything is validated; each row's distribution is built only when reached (lazy).
    kept: list[int] = []
    for i, x in enumerate(ids):
        p_i = _distribution(rows[i], p, history + kept, prompt)
        q_i = q[i] if q is not None else _one_hot(x, V)
        u_accept = draw_uniform(rng)
        u_resample = draw_uniform(rng)
        token, accepted = step(p_i, q_i, x, u_accept, u_resample)
        if not accepted:
            return [*kept, token], len(kept)
        kept.append(token)
    bonus = sample_with(_distribution(rows[m], p, history + kept, prompt), draw_uniform(rng))
    return [*kept, bonus], m


def _check_overflow(
    rows: NDArray[np.float64],
    ids: list[int],
    p: SamplingParams,
    history: list[int],
    prompt: list[int],
) -> None:
    """Every row's overflow under the penalties and the temperature, before the first draw.

    Row ``i`` is only ever computed with ``history + ids[:i]``, so its overflow is known up
    front (CONTRACT.md section 3). Without penalties and with a temperature >= 1 nothing can
    overflow; with a temperature below 1 alone, a row whose largest finite magnitude divides
    without overflow cannot either. Any other row gets the exact check of its computation.
    """
    penalties = (p.repetition_penalty != 1.0 and bool(history or prompt or ids)) or (
        (p.presence_penalty != 0.0 or p.frequency_penalty != 0.0) and bool(history or ids)
    )
    if not penalties and p.temperature >= 1.0:
        return
    bound = None
    if not penalties:
        highest = np.max(rows, axis=1)
        lowest = np.min(rows, axis=1, where=rows > -np.inf, initial=np.inf)
        with np.errstate(over="ignore"):
            bound = np.maximum(np.abs(highest), np.abs(lowest)) / p.temperature
    for i in range(rows.shape[0]):
        if bound is None or not np.isfinite(bound[i]):
            _scaled(rows[i], p, history + ids[:i], prompt)


def _verify_greedy(
    rows: NDArray[np.float64],
    ids: list[int],
    p: SamplingParams,
    history: list[int],
    prompt: list[int],
) -> tuple[list[int], int]:
    kept: list[int] = []
    for i, x in enumerate(ids):
        best = _greedy_token(rows[i], p, history + kept, prompt)
        if x != best:
            return [*kept, best], len(kept)
        kept.append(x)
    best = _greedy_token(rows[len(ids)], p, history + kept, prompt)
    return [*kept, best], len(ids)


def _one_hot(x: int, V: int) -> NDArray[np.float64]:
    q = np.zeros(V)
    q[x] = 1.0
    return q
