"""Planted bugs of block verification, built on the reference rule (``reference/block.py``,
CONTRACT.md section 8): the same validation, weights and draw order (``eta_1..eta_k``, then
one uniform for the added token), with one step changed as a wrong port changes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec_verify.reference._rule_args import chain_round
from spec_verify.reference.block import block_weights, residual_row, verify_block
from spec_verify.reference.sampling import sample_with

__all__ = ["verify_block_variant"]


def verify_block_variant(target_logits: Any, draft_ids: Sequence[int], draft_probs: Any,
                         p: Any, history: Sequence[int], rng: Any, prompt: Any = (), *,
                         residual_weight: bool = True, stop_weight_rule: bool = True,
                         stop_at_first_failure: bool = False) -> tuple[list[int], int]:
    """Block verification with a planted bug: ``residual_weight=False`` is the token rule's
    residual ``max(p - q, 0)`` (vllm-ascend #7807/#7808); ``stop_weight_rule=False`` keeps
    with ``w_i`` at every position; ``stop_at_first_failure`` is the contiguous-prefix reading
    (the first failed position ends the round)."""
    if residual_weight and stop_weight_rule and not stop_at_first_failure:
        return verify_block(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    rnd, greedy = chain_round(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    if greedy:
        return verify_block(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    weights = block_weights(rnd)
    # the unadjusted residual's mass enters the stop weight too, as in the port
    used = list(weights) if residual_weight else [1.0] * len(weights)
    etas = [rng.random() for _ in range(rnd.k)]
    tau = 0
    for i in range(1, rnd.k + 1):
        if not stop_weight_rule or i == rnd.k:
            h = weights[i]
        else:
            _, mass = residual_row(rnd, used, i)
            denominator = mass + 1.0 - weights[i]
            h = mass / denominator if denominator > 0 else 1.0
        if etas[i - 1] < h:
            tau = i
        elif stop_at_first_failure:
            break
    row, mass = residual_row(rnd, used, tau)
    if mass <= 0.0:
        row, mass = rnd.target(tau), 1.0
    token = int(sample_with(row / mass, rng.random()))
    return [*rnd.ids[:tau], token], tau
