"""Recursive rejection sampling over ``K`` draft chains (CONTRACT.md section 12): the
multi-draft rule of SpecInfer (Miao et al., 2024) and Chen et al. (multi-candidate speculative
decoding), position by position among the surviving chains (``_multidraft.py``).

At each position the survivors' next tokens are tried in chain order against a residual
``r`` (first the target's row ``p``): ``x`` kept iff ``eta * q_j(x) < r(x)``; after a
rejection ``r = max(r - q_j, 0) / Z`` and, for chains drawn **without replacement**
(``rule="without_replacement"``, below), the draft is renormalised
without the rejected token (``q_{j+1} = q_j`` with ``q_j(x) = 0``); ``with_replacement`` (i.i.d.
chains) keeps ``q``. If none is kept the position's token is drawn from ``r`` and the round
ends.

Without replacement the chains are the root-to-leaf paths of a draft tree whose every node's
children were drawn without replacement from its draft row, at every depth
(``branched_parents``' shapes: ``(K, 1, ..., 1)`` is distinct heads, each continued by the
draft; ``(2, 2)`` is two heads with two distinct continuations each): survivors that share a
prefix share its node, so the tries at a position are the survivors' distinct tokens (that
node's children), each once. Its law per fixed drafts is then the tree rule
``without_replacement``'s (section 6) on that tree. ``verify_tree`` is this rule, so
``python:spec_verify.reference.rrs`` is an implementation spec of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ._multidraft import Step, branched_parents, chain_parents, walk_chains
from .errors import InvalidParams
from .rejection import residual
from .sampling import SamplingParams, UniformSource, draw_uniform

__all__ = ["RRS_RULES", "branched_parents", "chain_parents", "verify_rrs", "verify_tree"]

RRS_RULES = ("without_replacement", "with_replacement")


def _without(q: NDArray[np.float64], x: int) -> NDArray[np.float64]:
    """``q`` without ``x``, renormalised by its sequential sum (section 6's ``q_{j+1}``)."""
    out = q.copy()
    out[x] = 0.0
    total = float(np.cumsum(out)[-1])
    return out / total if total > 0 else out


def _rrs_step(renormalise: bool) -> Step:
    def step(p: NDArray[np.float64], q: NDArray[np.float64], tokens: list[int],
             rng: UniformSource) -> tuple[int | None, NDArray[np.float64]]:
        r, q_j = p, q
        for i, x in enumerate(tokens):
            if draw_uniform(rng) * q_j[x] < r[x]:
                return i, p
            r = residual(r, q_j)
            if renormalise:
                q_j = _without(q_j, x)
        return None, r

    return step


def verify_rrs(target_logits: object, parents: Sequence[int], token_ids: Sequence[int],
               draft_probs: object, p: SamplingParams, history: Sequence[int],
               rng: UniformSource, prompt: Sequence[int] = (),
               rule: str = "without_replacement",
               **thresholds: float) -> tuple[list[int], list[int]]:
    """Recursive rejection sampling over the ``K`` chains of ``parents``
    (``chain_parents(K, L)``; ``verify_tree``'s arguments, every draft row given).

    Raises:
        InvalidTree: not K chains of one length, or (without replacement) two chains with the
        same tokens; InvalidDraft: a missing or bad draft row; InvalidParams: greedy, no uniform
        source, ``rule`` not one of ``RRS_RULES``.
    """
    if rule not in RRS_RULES:
        raise InvalidParams("rule", rule, f"must be one of {', '.join(RRS_RULES)}")
    step = _rrs_step(renormalise=rule == "without_replacement")
    return walk_chains(target_logits, parents, token_ids, draft_probs, p, history, rng, prompt,
                       step, rule, "recursive rejection sampling")


verify_tree = verify_rrs
