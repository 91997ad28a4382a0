"""SpecTr's K-SEQ as a tree sampler (``verify_tree``), built on ``reference/kseq.py``'s choice of
``rho``: at each node its ``K`` children (drawn i.i.d. from the node's draft row, the
``with_replacement`` rule's drafts) are tried in index order with ``min(1, p / (rho q))``; the
first kept child becomes the current node (its own children were drawn given its token, so the
same step applies below it); when none is kept the token comes from K-SEQ's residual
``(p - c min(q, p / rho)) / (1 - a)^K``; a node without children ends with the bonus.

Lossless averaged over the draft draws, but its law per fixed tree is not the contract's tree
rule's (the acceptance weights differ for ``K >= 2``). Greedy, ``without_replacement``, typical
and deterministic children are the reference's ``verify_tree``.

``bug`` plants an error that keeps the first token's law and breaks a later one:

- ``bonus_root_row``: the bonus after a kept leaf child is drawn from the root's row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec_verify import reference
from spec_verify.reference.kseq import kseq_rho
from spec_verify.reference.sampling import draw_uniform, sample_with, sampling_distribution

__all__ = ["kseq_tree"]

TreeFn = Callable[..., tuple[list[int], list[int]]]


def _children(parents: Sequence[int]) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {i: [] for i in range(-1, len(parents))}
    for i, parent in enumerate(parents):
        kids[int(parent)].append(i)
    return kids


def _kseq_residual(p: np.ndarray, q: np.ndarray, K: int, rho: float) -> np.ndarray:
    m = np.minimum(q, p / rho)
    a = float(m.sum())
    r = np.maximum(p - ((1.0 - (1.0 - a) ** K) / a) * m, 0.0) if a > 0 else p
    total = float(r.sum())
    return p if total <= 0.0 else r / total


def kseq_tree(bug: str = "") -> TreeFn:
    """A ``verify_tree`` running K-SEQ at every node (with the planted ``bug``, if any)."""

    def verify_tree(target_logits: Any, parents: Sequence[int], token_ids: Sequence[int],
                    draft_probs: Any, p: Any, history: Sequence[int], rng: Any,
                    prompt: Sequence[int] = (), rule: str = "with_replacement",
                    **thresholds: float) -> tuple[list[int], list[int]]:
        kids = _children(parents)
        deterministic = draft_probs is None or any(
            kids[node] and draft_probs[node + 1] is None for node in kids)
        if p.greedy or rule != "with_replacement" or deterministic:
            return reference.verify_tree(target_logits, parents, token_ids, draft_probs, p,
                                         history, rng, prompt, rule, **thresholds)
        # the reference validates the layout, rows and drafts (its result is not used)
        reference.verify_tree(target_logits, parents, token_ids, draft_probs,
                              reference.SamplingParams(temperature=0), history, None, prompt)
        rows = np.asarray(target_logits, dtype=np.float64)
        node, kept, nodes = -1, list[int](), list[int]()
        while True:
            dist = sampling_distribution(rows[node + 1], p, [*history, *kept], list(prompt))
            children = kids[node]
            if not children:
                if bug == "bonus_root_row" and nodes and not kids[nodes[-1]]:
                    dist = sampling_distribution(rows[0], p, [*history, *kept], list(prompt))
                return [*kept, sample_with(dist, draw_uniform(rng))], nodes
            q = np.asarray(draft_probs[node + 1], dtype=np.float64)
            rho = kseq_rho(dist, q, len(children))
            for child in children:
                x = int(token_ids[child])
                if draw_uniform(rng) * rho * q[x] < dist[x]:
                    kept.append(x)
                    nodes.append(child)
                    node = child
                    break
            else:
                r = _kseq_residual(dist, q, len(children), rho)
                return [*kept, sample_with(r, draw_uniform(rng))], nodes

    return verify_tree
