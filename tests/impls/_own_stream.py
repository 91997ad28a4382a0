"""``propose_and_verify`` on the implementation's own numpy stream, the way an engine runs a
round: the draft's noise and the verifier's come from one generator. ``coupled`` rebuilds
vLLM PR #47386 (fixed in #54282): the draft's noise is the verifier's, slot for slot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec_verify import reference
from spec_verify.reference import SamplingParams, sampling_distribution
from spec_verify.reference.sampling import sample_with

__all__ = ["SamplingParams", "propose_and_verify_with"]


class _Replay:
    """A uniform source replaying fixed values (the verifier's slots)."""

    def __init__(self, values: Sequence[float]) -> None:
        self.values = list(values)
        self.at = 0

    def random(self) -> float:
        self.at += 1
        return float(self.values[self.at - 1])


def propose_and_verify_with(
    coupled: bool, target_logits: Any, draft_logits: Any, p: Any, history: Any, rng: Any,
    prompt: Any = (), draft_params: Any = None,
) -> tuple[list[int], int]:
    q_params = p if draft_params is None else draft_params
    rows = np.asarray(draft_logits, dtype=np.float64)
    k = rows.shape[0]
    own = np.random.default_rng(int(rng.random() * 2**53))  # the engine's own generator
    slots = own.random(2 * k + 1)  # the verifier's uniforms, one per slot
    draft_noise = slots[:k] if coupled else own.random(k)
    drafted: list[int] = []
    q_rows = []
    for i in range(k):
        q_i = sampling_distribution(rows[i], q_params, [*history, *drafted], prompt)
        drafted.append(int(sample_with(q_i, float(draft_noise[i]))))
        q_rows.append(q_i)
    probs = np.vstack(q_rows) if k else np.zeros((0, rows.shape[-1]))
    return reference.verify_draft(target_logits, drafted, probs, p, history, _Replay(slots),
                                  prompt)
