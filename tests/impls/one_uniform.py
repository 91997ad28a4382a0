"""Exact in distribution, one uniform per position: accept if ``u < a``, else resample with
``(u - a) / (1 - a)`` (its breakpoints are not the contract's cells)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams

from ._scaffold import Row, contract_bonus, residual, verify

__all__ = ["SamplingParams", "verify_draft"]


def _step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
    u = rng.random()
    a = min(1.0, float(p[x] / q[x]))
    if u < a:
        return x, True
    cumulative = a + (1.0 - a) * np.cumsum(residual(p, q))
    index = int(np.searchsorted(cumulative, u, side="right"))
    return min(index, len(p) - 1), False


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_step, contract_bonus, target_logits, draft_ids, draft_probs, p, history,
                  prompt, rng)


