"""The verification loop the test implementations share; each varies one step of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.reference import sampling_distribution
from spec_verify.reference.sampling import sample_with

Row = NDArray[np.float64]
# step(p_i, q_i, x, rng) -> (token, accepted): draws what it needs from rng itself
Step = Callable[[Row, Row, int, Any], tuple[int, bool]]
Bonus = Callable[[Row, Any], int]


def residual(p: Row, q: Row) -> Row:
    d = np.maximum(p - q, 0.0)
    z = float(np.cumsum(d)[-1])
    return d / z if z > 0 else p


def contract_step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u_accept = rng.random()
    u_resample = rng.random()
    if u_accept * q[x] < p[x]:
        return x, True
    return sample_with(residual(p, q), u_resample), False


def contract_bonus(p: Row, rng: Any) -> int:
    return int(sample_with(p, rng.random()))


def verify(
    step: Step,
    bonus: Bonus,
    target_logits: Any,
    draft_ids: Sequence[int],
    draft_probs: Any,
    p: Any,
    history: Sequence[int],
    prompt: Sequence[int],
    rng: Any,
) -> tuple[list[int], int]:
    rows = np.asarray(target_logits, dtype=np.float64)
    V = rows.shape[1]
    kept: list[int] = []
    for i, x in enumerate(draft_ids):
        p_i = sampling_distribution(rows[i], p, list(history) + kept, list(prompt))
        if draft_probs is None:
            q_i = np.zeros(V)
            q_i[x] = 1.0
        else:
            q_i = np.asarray(draft_probs, dtype=np.float64)[i]
        token, accepted = step(p_i, q_i, int(x), rng)
        if not accepted:
            return [*kept, token], len(kept)
        kept.append(token)
    last = sampling_distribution(rows[len(draft_ids)], p, list(history) + kept, list(prompt))
    return [*kept, bonus(last, rng)], len(kept)
