"""SpecTr's K-SEQ over ``K`` i.i.d. draft chains (Sun et al., "SpecTr: Fast Speculative
Decoding via Optimal Transport", NeurIPS 2023): CONTRACT.md section 12.

At each position the survivors' next tokens (``K'`` i.i.d. draws from the draft row after the
kept prefix, ``_multidraft.py``) go through K-SEQ's step (``kseq.py``, section 10, with
``K'`` for ``K``): tried in chain order, ``x`` kept with ``min(1, p(x) / (rho q(x)))``; the
first kept token extends the prefix and the chains that agree with it survive; if none is kept
the position's token is drawn from the residual ``max(p - c min(q, p / rho), 0)`` and the round
ends. After all ``L`` positions, the bonus. ``verify_tree`` is this rule, so
``python:spec_verify.reference.kseq_chains`` is an implementation spec of it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ._multidraft import chain_parents, walk_chains
from .kseq import kseq_rho
from .sampling import SamplingParams, UniformSource, draw_uniform

__all__ = ["chain_parents", "kseq_residual", "verify_kseq_chains", "verify_tree"]


def kseq_residual(p: NDArray[np.float64], q: NDArray[np.float64], K: int,
                  rho: float) -> NDArray[np.float64]:
    """``max(p - c min(q, p / rho), 0)`` normalised (``p`` itself if it sums to 0: rounding)."""
    m = np.minimum(q, p / rho)
    a = float(m.sum())
    if a <= 0.0:
        return p
    r = np.maximum(p - ((1.0 - (1.0 - a) ** K) / a) * m, 0.0)
    total = float(r.sum())
    return p if total <= 0.0 else r / total


def _kseq_step(p: NDArray[np.float64], q: NDArray[np.float64], tokens: list[int],
               rng: UniformSource) -> tuple[int | None, NDArray[np.float64]]:
    rho = kseq_rho(p, q, len(tokens))
    for i, x in enumerate(tokens):
        if draw_uniform(rng) * rho * q[x] < p[x]:
            return i, p
    return None, kseq_residual(p, q, len(tokens), rho)


def verify_kseq_chains(target_logits: object, parents: Sequence[int],
                       token_ids: Sequence[int], draft_probs: object, p: SamplingParams,
                       history: Sequence[int], rng: UniformSource, prompt: Sequence[int] = (),
                       rule: str = "with_replacement",
                       **thresholds: float) -> tuple[list[int], list[int]]:
    """K-SEQ over the ``K`` chains of ``parents`` (``chain_parents(K, L)``; ``verify_tree``'s
    arguments and layout, CONTRACT.md section 6; every draft row given).

    Returns ``(emitted_ids, accepted_nodes)``: the kept prefix plus one token, and the nodes of
    the lowest-index chain that carries the kept prefix.

    Raises:
        InvalidTree: not K chains of one length; InvalidDraft: a missing or bad draft row;
        InvalidParams: greedy, no uniform source, or ``rule`` not ``with_replacement`` (K-SEQ's
        chains are drawn i.i.d.).
    """
    from .errors import InvalidParams

    if rule != "with_replacement":
        raise InvalidParams("rule", rule, "K-SEQ's chains are drawn i.i.d.: with_replacement")
    return walk_chains(target_logits, parents, token_ids, draft_probs, p, history, rng, prompt,
                       _kseq_step, rule, "K-SEQ")


verify_tree = verify_kseq_chains
