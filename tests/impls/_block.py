"""Block verification (Sun et al., "Block Verification Accelerates Speculative Decoding",
ICLR 2025), written here from the paper as a rule other than the contract's: lossless, and
accepting more than token verification. ``verify_block`` takes the variations the planted
bugs need.

With ``w_0 = 1`` and, along the drafts, ``w_i = min(w_{i-1} p_i(x_i) / q_i(x_i), 1)``, the
residual after i kept drafts is ``r_i ∝ max(w_i p_{i+1} - q_{i+1}, 0)`` (the plain ``p`` after
all drafts). Going back from the last draft, stop at the first i with ``eta_i < h_i``, where
``h_k = w_k`` and ``h_i = R_i / (R_i + 1 - w_i)`` with ``R_i`` the residual's mass; emit the
first i drafts and a token from ``r_i``. Draw order: one ``eta`` per draft (i = k..1), then
one uniform for the emitted token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec_verify.reference import sampling_distribution
from spec_verify.reference import verify_draft as reference_verify
from spec_verify.reference.sampling import sample_with

from ._scaffold import Row


def rows_of(target_logits: Any, draft_ids: Sequence[int], draft_probs: Any, p: Any,
            history: Sequence[int], prompt: Sequence[int]) -> tuple[list[Row], list[Row]]:
    """The target's row at every position (k + 1) and the draft's (k; one-hot without probs)."""
    logits = np.asarray(target_logits, dtype=np.float64)
    V = logits.shape[1]
    ids = [int(x) for x in draft_ids]
    targets = [sampling_distribution(logits[i], p, [*history, *ids[:i]], list(prompt))
               for i in range(len(ids) + 1)]
    if draft_probs is None:
        drafts = [np.eye(V)[x] for x in ids]
    else:
        drafts = [np.asarray(draft_probs, dtype=np.float64)[i] for i in range(len(ids))]
    return targets, drafts


def verify_block(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = (), *, residual_weight: bool = True,
                 stop_weight: bool = True, stop_at_first_failure: bool = False,
                 ) -> tuple[list[int], int]:
    ids = [int(x) for x in draft_ids]
    if p.temperature == 0.0:  # greedy: the argmax chain, the contract's greedy path
        return reference_verify(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    targets, drafts = rows_of(target_logits, ids, draft_probs, p, history, prompt)
    k = len(ids)
    weights = [1.0]
    for i in range(k):
        q_x = drafts[i][ids[i]]
        weights.append(min(weights[-1] * targets[i][ids[i]] / q_x, 1.0) if q_x > 0 else 0.0)

    def residual(i: int) -> tuple[Row, float]:
        if i == k:
            return targets[k], 1.0
        w = weights[i] if residual_weight else 1.0
        d = np.maximum(w * targets[i] - drafts[i], 0.0)
        return d, float(d.sum())

    stop = 0
    for i in range(k, 0, -1):
        eta = rng.random()
        _, mass = residual(i)
        if i == k or not stop_weight:  # the bug: the token rule's w_i at every position
            h = weights[i]
        else:
            h = mass / (mass + 1.0 - weights[i]) if mass + 1.0 - weights[i] > 0 else 1.0
        if eta < h:  # strict: eta = 0.0 never keeps a draft of weight 0
            stop = i
            break
        if stop_at_first_failure:  # the contiguous-prefix misreading: one failure ends it
            break
    row, mass = residual(stop)
    if mass <= 0:  # no residual mass (p == q here): the position's own target row
        row, mass = targets[stop], 1.0
    token = int(sample_with(row / mass, rng.random()))
    return [*ids[:stop], token], stop
