"""Traversal verification on a chain (Weng et al., "Traversal Verification for Speculative
Tree Decoding", NeurIPS 2025), written from the paper's description (no public code exists):
the drafts are visited leaf to root, and the node at depth ``i`` is judged by the acceptance
of the whole sequence ``x_1..x_i`` from the root, not token by token. CONTRACT.md section 11
pins its draw order.

Along the chain the sequence acceptance is ``w_0 = 1``, ``w_i = min(w_{i-1} p_i(x_i) /
q_i(x_i), 1)``. The leaf (depth ``k``) is kept with ``w_k``; rejecting a node deletes it, and
its parent at depth ``i`` is then judged on what is left of its subtree: the residual
``max(w_i p_{i+1} - q_{i+1}, 0)`` (mass ``R_i``) against the mass ``1 - w_i`` its
acceptance still owes, so it is kept with ``R_i / (R_i + 1 - w_i)``. The root always stands.
The token after the kept node ``i`` comes from that residual (``p_{k+1}`` after the leaf).
This is the law of block verification (Sun et al., ICLR 2025) walked from the other end, so
its expected accepted length is the chain optimum (the LP of ``spec_verify/exact/_optimal.py``
agrees case by case, ``prove --rule traversal``); it draws fewer uniforms when deep nodes
pass.

>>> from spec_verify.reference import SamplingParams
>>> rows = [[0, 1, 3], [2, 1, 0], [0, 5, 1]]
>>> verify_traversal(rows, [2, 1], None, SamplingParams(temperature=0), [], None)
([2, 0], 1)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ._rule_args import ChainRound, chain_round
from .block import block_weights
from .sampling import SamplingParams, UniformSource, draw_uniform, sample_with
from .verify import _verify_greedy

__all__ = ["SamplingParams", "sequence_acceptance", "verify_draft", "verify_traversal"]

Row = NDArray[np.float64]


# ``w_0 .. w_k``, the root-to-node acceptance clipped at 1 at every step: block
# verification's weights, the same quantity
sequence_acceptance = block_weights


def _subtree_residual(rnd: ChainRound, w: float, depth: int) -> Row:
    """What the node at ``depth`` still owes once its child is deleted (unnormalised)."""
    return np.maximum(w * rnd.target(depth) - rnd.draft(depth), 0.0)


def verify_traversal(
    target_logits: object,
    draft_ids: Sequence[int],
    draft_probs: object,
    p: SamplingParams,
    history: Sequence[int],
    rng: UniformSource | None,
    prompt: Sequence[int] = (),
) -> tuple[list[int], int]:
    """Traversal verification of a chain of ``k`` drafts; ``verify_draft``'s arguments/errors.

    Draw order: ``eta_k, eta_{k-1}, ...`` (leaf first) until a node is kept (``eta < its
    acceptance``, strict), none for the root; then one uniform for the added token:
    ``k - tau + 2`` draws when ``tau >= 1`` drafts are kept, ``k + 1`` when none is. Greedy is
    the contract's argmax chain and draws nothing.

    Returns:
        ``(emitted_ids, n_accepted)``, ``len(emitted_ids) == n_accepted + 1``.
    """
    rnd, greedy = chain_round(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    if greedy:
        return _verify_greedy(rnd.rows, rnd.ids, p, rnd.history, rnd.prompt)
    assert rng is not None  # chain_round refused a missing source
    if rnd.k == 0:  # nothing drafted: one sample of the context's row
        return [sample_with(rnd.target(0), draw_uniform(rng))], 0
    w = sequence_acceptance(rnd)
    depth = rnd.k
    if draw_uniform(rng) < w[depth]:  # the leaf: the whole chain's acceptance
        return [*rnd.ids, sample_with(rnd.target(depth), draw_uniform(rng))], depth
    depth -= 1
    while depth >= 0:
        left = _subtree_residual(rnd, w[depth], depth)
        mass = float(left.sum())
        owed = mass + 1.0 - w[depth]
        # the root always stands; a node whose residual and owed mass are both 0 is kept
        if depth == 0 or owed <= 0.0 or draw_uniform(rng) < mass / owed:
            break
        depth -= 1
    if mass <= 0.0:  # rounding, or the 0/0 node: its own target row
        left, mass = rnd.target(depth), 1.0
    return [*rnd.ids[:depth], sample_with(left / mass, draw_uniform(rng))], depth


verify_draft = verify_traversal  # the contract's name: ``python:spec_verify.reference.traversal``
