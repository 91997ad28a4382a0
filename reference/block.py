"""Block verification (Sun et al., "Block Verification Accelerates Speculative Decoding",
ICLR 2025; vLLM PR #46781): lossless, and optimal among chain rules in expected accepted
length. CONTRACT.md section 8 pins its draw order and tie rules.

With ``w_0 = 1`` and ``w_i = min(w_{i-1} p_i(x_i) / q_i(x_i), 1)`` along the drafts, the
residual after ``i`` kept drafts is ``r_i ∝ max(w_i p_{i+1} - q_{i+1}, 0)`` (``p_{k+1}`` itself
after all ``k``), with mass ``R_i``. The stop weight is ``h_k = w_k`` and
``h_i = R_i / (R_i + 1 - w_i)`` for ``i < k``. With ``eta_1..eta_k`` uniform, the round keeps
``tau = max{i : eta_i < h_i}`` drafts (0 if none) and adds one token drawn from ``r_tau``.

>>> from spec_verify.reference import SamplingParams
>>> rows = [[0, 1, 3], [2, 1, 0], [0, 5, 1]]
>>> verify_block(rows, [2, 1], None, SamplingParams(temperature=0), [], None)
([2, 0], 1)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ._rule_args import ChainRound, chain_round
from .sampling import SamplingParams, UniformSource, draw_uniform, sample_with
from .verify import _verify_greedy

__all__ = ["SamplingParams", "block_weights", "stop_weight", "verify_block", "verify_draft"]

Row = NDArray[np.float64]


def block_weights(rnd: ChainRound) -> list[float]:
    """``w_0 .. w_k``: ``w_i = min(w_{i-1} p_i(x_i) / q_i(x_i), 1)``, ``w_0 = 1``."""
    weights = [1.0]
    for i, x in enumerate(rnd.ids):
        weights.append(min(weights[-1] * float(rnd.target(i)[x]) / float(rnd.draft(i)[x]), 1.0))
    return weights


def residual_row(rnd: ChainRound, weights: Sequence[float], i: int) -> tuple[Row, float]:
    """``max(w_i p_{i+1} - q_{i+1}, 0)`` unnormalised and its mass (``p_{k+1}`` at ``i = k``)."""
    if i == rnd.k:
        return rnd.target(i), 1.0
    d = np.maximum(weights[i] * rnd.target(i) - rnd.draft(i), 0.0)
    return d, float(d.sum())


def stop_weight(rnd: ChainRound, weights: Sequence[float], i: int) -> float:
    """``h_i``: ``w_k`` at ``i = k``, else ``R_i / (R_i + 1 - w_i)`` (1 when both are 0)."""
    if i == rnd.k:
        return weights[i]
    _, mass = residual_row(rnd, weights, i)
    denominator = mass + 1.0 - weights[i]
    return mass / denominator if denominator > 0 else 1.0


def verify_block(
    target_logits: object,
    draft_ids: Sequence[int],
    draft_probs: object,
    p: SamplingParams,
    history: Sequence[int],
    rng: UniformSource | None,
    prompt: Sequence[int] = (),
) -> tuple[list[int], int]:
    """Block verification of ``k`` drafts; the arguments and errors of ``verify_draft``.

    Draw order: ``eta_1 .. eta_k`` (all of them, position order), then one uniform for the
    added token: ``k + 1`` draws, whatever is kept. Greedy is the contract's argmax chain and
    draws nothing.

    Returns:
        ``(emitted_ids, n_accepted)``, ``len(emitted_ids) == n_accepted + 1``.
    """
    rnd, greedy = chain_round(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    if greedy:
        return _verify_greedy(rnd.rows, rnd.ids, p, rnd.history, rnd.prompt)
    assert rng is not None  # chain_round refused a missing source
    weights = block_weights(rnd)
    etas = [draw_uniform(rng) for _ in range(rnd.k)]
    tau = 0
    for i in range(1, rnd.k + 1):
        if etas[i - 1] < stop_weight(rnd, weights, i):  # strict: eta = 0.0 never keeps h = 0
            tau = i
    row, mass = residual_row(rnd, weights, tau)
    if mass <= 0.0:  # h_tau was 1 by the 0/0 rule: the position's own target row
        row, mass = rnd.target(tau), 1.0
    token = sample_with(row / mass, draw_uniform(rng))
    return [*rnd.ids[:tau], token], tau


verify_draft = verify_block  # the contract's name: ``python:spec_verify.reference.block``
