"""The walk the multi-draft chain rules share (CONTRACT.md section 12): ``K`` draft chains of
one length ``L``, laid out as a ``verify_tree`` tree, verified position by position among the
*survivors* (the chains whose tokens so far equal the kept prefix).

Why survivors: the chains were drawn independently, so whichever tokens a position keeps (a
decision that sees only that position's tokens and uniforms), the continuations of the chains
that agree with it are still i.i.d. from the draft row after the kept prefix. Any per-position
step that is lossless for every number of i.i.d. drafts is therefore lossless over the whole
chain, with however many survivors each position has. ``kseq_chains.py`` and ``rrs.py`` supply
the step.

Chains drawn **without replacement** are the root-to-leaf paths of a draft tree whose every
node's children were drawn without replacement (``branched_parents``: a fixed branching per
depth; distinct heads continued one token each is ``(K, 1, ..., 1)``). Survivors that share a
prefix share its node, so at each position the tries are the survivors' *distinct* tokens in
chain order (that node's children), each tried once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidDraft, InvalidParams, InvalidTree
from .sampling import (
    SamplingParams,
    UniformSource,
    draw_uniform,
    sample_with,
    sampling_distribution,
)
from .tree import _check_draft_probs, _check_rows, validate_tree

__all__ = ["Step", "branched_parents", "chain_parents", "chains_of", "walk_chains"]

Row = NDArray[np.float64]
# step(p_row, q_row, survivor tokens in chain order, rng) -> (index of the kept survivor, or
# None and the distribution the position's token is then drawn from)
Step = Callable[[Row, Row, list[int], UniformSource], tuple[int | None, Row]]


def chain_parents(K: int, L: int) -> list[int]:
    """The ``parents`` of ``K`` chains of ``L`` drafts each, chain after chain.

    >>> chain_parents(2, 2)
    [-1, 0, -1, 2]
    """
    return [-1 if i % L == 0 else i - 1 for i in range(K * L)]


def branched_parents(branching: Sequence[int]) -> list[int]:
    """The ``parents`` of a tree whose depth-``d`` nodes have ``branching[d]`` children each,
    in depth-first order (so ``branched_parents((K, 1, ..., 1)) == chain_parents(K, L)``).

    >>> branched_parents((2, 1))
    [-1, 0, -1, 2]
    >>> branched_parents((1, 2))
    [-1, 0, 0]
    """
    if not branching or any(not isinstance(b, int) or b < 1 for b in branching):
        raise InvalidTree("branching", list(branching),
                          "must be L >= 1 positive integers (children per node, per depth)")
    out: list[int] = []

    def grow(parent: int, depth: int) -> None:
        for _ in range(branching[depth]):
            node = len(out)
            out.append(parent)
            if depth + 1 < len(branching):
                grow(node, depth + 1)

    grow(-1, 0)
    return out


def chains_of(parents: Sequence[int], token_ids: Sequence[int], V: int,
              distinct_chains: bool) -> list[list[int]]:
    """The nodes of each chain (heads in index order), validating the shape.

    Raises:
        InvalidTree: the tree is not ``K >= 1`` chains of one length (a node with two children,
            chains of different lengths), or (``distinct_chains``) two chains carry the same
            tokens (root-to-leaf paths of a tree drawn without replacement differ).
    """
    shape = validate_tree(parents, token_ids, V, distinct_siblings=False)
    heads = shape.children[-1]
    if not heads:
        raise InvalidTree("parents", list(parents), "must hold K >= 1 draft chains")
    chains = []
    for head in heads:
        chain = [head]
        while shape.children[chain[-1]]:
            kids = shape.children[chain[-1]]
            if len(kids) > 1:
                raise InvalidTree("parents", list(parents),
                                  f"node {chain[-1]} has {len(kids)} children; a multi-draft "
                                  "chain rule takes K chains (one child per node)",
                                  "draw each chain on its own: parents = chain_parents(K, L)")
            chain.append(kids[0])
        chains.append(chain)
    lengths = sorted({len(c) for c in chains})
    if len(lengths) > 1:
        raise InvalidTree("parents", list(parents),
                          f"holds chains of lengths {lengths}; the K chains share one length L")
    if distinct_chains:
        seen: dict[tuple[int, ...], int] = {}
        for j, chain in enumerate(chains):
            tokens = tuple(int(token_ids[i]) for i in chain)
            if tokens in seen:
                raise InvalidTree("token_ids", list(token_ids),
                                  f"chains {seen[tokens]} and {j} both carry {list(tokens)}; "
                                  "without replacement the chains are the distinct "
                                  "root-to-leaf paths of a draft tree",
                                  'draw each node\'s children without replacement, or pass '
                                  'rule="with_replacement"')
            seen[tokens] = j
    return chains


def walk_chains(target_logits: object, parents: Sequence[int], token_ids: Sequence[int],
                draft_probs: object, p: SamplingParams, history: Sequence[int],
                rng: UniformSource, prompt: Sequence[int], step: Step, rule: str,
                name: str) -> tuple[list[int], list[int]]:
    """Validate everything, then verify position by position among the survivors.

    At depth ``d`` the rows are those of the lowest-index survivor's node (every survivor's
    prefix is the kept one, so in exact arithmetic they are one row). Returns the kept
    tokens plus one more, and the nodes of the lowest-index chain that survives to the end.
    """
    if not isinstance(p, SamplingParams) or p.greedy:
        raise InvalidParams("p", p, f"{name} is a sampled rule: a SamplingParams with "
                            "temperature > 0")
    if rng is None or not callable(getattr(rng, "random", None)):
        raise InvalidParams("rng", rng, f"{name} needs a uniform source")
    rows = _check_rows(target_logits, len(parents))
    V = rows.shape[1]
    distinct = rule == "without_replacement"
    chains = chains_of(parents, token_ids, V, distinct_chains=distinct)
    shape = validate_tree(parents, token_ids, V, distinct_siblings=False)
    # the chain layout repeats a shared prefix's node, so its "children" count chains, not the
    # distinct tokens drawn without replacement (chains_of checked those): i.i.d. row checks
    q_rows = _check_draft_probs(draft_probs, shape, V, "with_replacement")
    inner = [node for chain in chains for node in chain[:-1]]
    if any(q_rows[i + 1] is None for i in [-1, *inner]):
        raise InvalidDraft("draft_probs", draft_probs,
                           f"{name} needs every draft row (the chains are sampled drafts): "
                           "an entry is None", "pass the row each node's child was drawn from")
    hist = list(history)
    kept: list[int] = []
    alive = list(range(len(chains)))
    L = len(chains[0])
    for depth in range(L):
        parent = -1 if depth == 0 else chains[alive[0]][depth - 1]
        p_row = sampling_distribution(rows[parent + 1], p, hist + kept, list(prompt))
        q_row = q_rows[parent + 1]
        assert q_row is not None
        tokens = [shape.token_ids[chains[c][depth]] for c in alive]
        if distinct:  # survivors sharing a prefix share its node: its children, once each
            tokens = list(dict.fromkeys(tokens))
        choice, fallback = step(p_row, q_row, tokens, rng)
        if choice is None:
            return [*kept, sample_with(fallback, draw_uniform(rng))], list(chains[alive[0]][:depth])
        x = tokens[choice]
        kept.append(x)
        alive = [c for c in alive if shape.token_ids[chains[c][depth]] == x]
    last = chains[alive[0]][-1]
    bonus = sampling_distribution(rows[last + 1], p, hist + kept, list(prompt))
    return [*kept, sample_with(bonus, draw_uniform(rng))], list(chains[alive[0]])
