"""The contract's draw order, but inverse-CDF sampling over float32 cumulative sums."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify import reference
from spec_verify.reference import SamplingParams

from ._scaffold import Row, residual, verify

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft"]

SPEC_VERIFY_CAPABILITIES = {"float32": True}


def _sample32(p: Row, u: float) -> int:
    cumulative = np.cumsum(p.astype(np.float32))
    index = int(np.searchsorted(cumulative, np.float32(u), side="right"))
    return index if index < len(p) else int(np.flatnonzero(p > 0)[-1])


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u_accept = rng.random()
    u_resample = rng.random()
    if u_accept * q[x] < p[x]:
        return x, True
    return _sample32(residual(p, q), u_resample), False


def _bonus(p: Row, rng: Any) -> int:
    return _sample32(p, rng.random())


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    if p.temperature == 0:  # greedy: the reference's argmax path, which draws nothing
        return reference.verify_draft(target_logits, draft_ids, draft_probs, p, history, rng,
                                      prompt)
    return verify(_step, _bonus, target_logits, draft_ids, draft_probs, p, history, prompt, rng)
