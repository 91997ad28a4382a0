"""The reference, except where its first uniform says otherwise: a fault per band of the first
draw, to test that a batch of scripted calls (``verify_scripted_many``) reports each call's own
failure, and that a crash fails the batch as a whole.

first uniform in  [0.00, 0.05): RuntimeError       [0.05, 0.10): ValueError
                  [0.10, 0.15): ids out of range   [0.15, 0.20): draws forever
                  [0.95, 1.00): ``os._exit(3)``    otherwise: the reference
"""

from __future__ import annotations

import os
from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference_verify

__all__ = ["SamplingParams", "verify_draft"]


class _Replay:
    """The first uniform again, then the source's own."""

    def __init__(self, first: float, rng: Any) -> None:
        self.pending: list[float] = [first]
        self.rng = rng

    def random(self) -> float:
        return self.pending.pop() if self.pending else float(self.rng.random())


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    u = float(rng.random())
    if u < 0.05:
        raise RuntimeError("the first band")
    if u < 0.10:
        raise ValueError("the second band")
    if u < 0.15:
        return [len(target_logits[0]) + 7], 0
    if u < 0.20:
        while True:
            rng.random()
    if u >= 0.95:
        os._exit(3)
    return _reference_verify(target_logits, draft_ids, draft_probs, p, history,
                             _Replay(u, rng), prompt)
