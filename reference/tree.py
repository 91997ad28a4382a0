"""``verify_tree``: verify a tree of drafts (several drafts per position) in one target pass.

Engines draft trees, not chains: SpecInfer's multi-step speculative sampling, Medusa's and
EAGLE's token trees, several sampled drafts per position. This module is the executable form of
``CONTRACT.md`` section 6 (the tree's layout, the rules, the draw order, the errors).

The tree. Draft node ``i`` (``0 <= i < n``) carries ``token_ids[i]`` and hangs below
``parents[i]``: ``-1`` is the root (the context), otherwise an earlier node (parents come before
their children, which also rules out cycles). ``target_logits`` has ``n + 1`` rows: row 0 after
the context, row ``i + 1`` after the path to node ``i``. ``draft_probs`` is ``None`` (every draft
deterministic) or ``n + 1`` entries, entry 0 for the root and ``i + 1`` for node ``i``: the draft
distribution that node's children were drawn from, or ``None`` (deterministic children).

The lossless rules (exact for any fixed tree with deterministic children, and on average over
the drafts when the children were drawn as the rule says):

- ``with_replacement`` (SpecInfer): the children were drawn i.i.d. from ``q``. Walk them in index
  order with a residual ``r`` (first ``p``): keep child ``x`` iff ``u_accept * q(x) < r(x)``;
  otherwise ``r = max(0, r - q) / Z``. After every child is rejected, emit ``sample(r)``.
- ``without_replacement`` (recursive rejection sampling): the children were drawn from ``q``
  without replacement. The same walk, but after each rejection the draft is renormalised without
  the rejected token (``q(x) = 0``, ``q = q / sum q``) and the residual is taken against the
  draft the rejected child was drawn from. Siblings must be distinct.
- greedy (``temperature == 0``, any lossless rule): the longest path whose every token is its
  parent's argmax (ties to the lowest node index), then the argmax after it. No draw.

The lossy rule ``typical`` (Medusa's typical acceptance): the longest path whose every token ``x``
has ``p(x) > min(epsilon, delta * exp(-H(p)))`` at its parent (ties to the lowest node index),
then one token sampled from ``p`` after it. It is biased; ``spec-verify prove`` measures how much.

Draw order (sampled lossless rules): at the current node, per child in index order *always*
``u_accept`` then ``u_resample``; the first kept child becomes the current node; the last child's
``u_resample`` picks the residual's token when every child is rejected (the others' are drawn
and unused, so a path-shaped tree draws exactly what ``verify_draft`` draws on the same chain);
a node without children ends with one ``sample`` of its row (the bonus).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidDraft, InvalidLogits, InvalidParams, InvalidTree
from .rejection import residual
from .sampling import (
    SamplingParams,
    UniformSource,
    argmax_lowest,
    sample,
    sample_with,
    sampling_distribution,
    validate_ids,
)

__all__ = [
    "LOSSLESS_TREE_RULES",
    "TREE_RULES",
    "TreeRule",
    "TreeShape",
    "children_of",
    "typical_threshold",
    "validate_tree",
    "verify_tree",
]

TreeRule = Literal["with_replacement", "without_replacement", "typical"]
TREE_RULES: tuple[str, ...] = ("with_replacement", "without_replacement", "typical")
LOSSLESS_TREE_RULES: tuple[str, ...] = ("with_replacement", "without_replacement")
DRAFT_ROW_TOLERANCE = 1e-6
TYPICAL_EPSILON = 0.09  # Medusa's posterior_threshold
TYPICAL_DELTA = 0.3  # Medusa's posterior_alpha


class TreeShape:
    """A validated tree: ``parents``, ``token_ids`` and each node's children in index order.

    Node ``-1`` is the root; ``children[-1]`` are the root's children (stored at key ``-1``).
    """

    __slots__ = ("children", "n", "parents", "token_ids")

    def __init__(self, parents: list[int], token_ids: list[int]) -> None:
        self.parents = parents
        self.token_ids = token_ids
        self.n = len(parents)
        self.children: dict[int, list[int]] = {-1: []}
        for i in range(self.n):
            self.children[i] = []
        for i, parent in enumerate(parents):
            self.children[parent].append(i)

    def path_tokens(self, node: int) -> list[int]:
        """The tokens from the root down to ``node`` (empty for the root)."""
        out: list[int] = []
        while node != -1:
            out.append(self.token_ids[node])
            node = self.parents[node]
        return out[::-1]


def children_of(parents: Sequence[int]) -> dict[int, list[int]]:
    """``{node: [children in index order]}`` with ``-1`` the root (no validation).

    >>> children_of([-1, -1, 0, 0, 2])
    {-1: [0, 1], 0: [2, 3], 1: [], 2: [4], 3: [], 4: []}
    """
    out: dict[int, list[int]] = {-1: []}
    for i in range(len(parents)):
        out[i] = []
    for i, parent in enumerate(parents):
        out[int(parent)].append(i)
    return out


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def validate_tree(
    parents: object, token_ids: object, V: int, *, distinct_siblings: bool = False
) -> TreeShape:
    """Check the tree's layout; every error names the node.

    Raises:
        InvalidTree: not a sequence; lengths differ; a parent that is not ``-1`` or an earlier
            node (its own parent or a later one: a cycle, or a parent after its child; out of
            range: an orphan); a token id out of ``[0, V)``; with ``distinct_siblings``, two
            children of one node with the same token.

    >>> validate_tree([-1, 0, 0], [2, 1, 0], 3).children
    {-1: [0], 0: [1, 2], 1: [], 2: []}
    >>> try:
    ...     validate_tree([-1, 2, 0], [2, 1, 0], 3)
    ... except InvalidTree as error:
    ...     print(error.rule)
    node 1 has parent 2, which comes after it; parents must come before their children (a topological order)
    """  # noqa: E501 - a doctest's output is one line
    for name, value in (("parents", parents), ("token_ids", token_ids)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
            raise InvalidTree(name, value, "must be a sequence of integers, one per draft node")
    assert isinstance(parents, Sequence | np.ndarray)
    assert isinstance(token_ids, Sequence | np.ndarray)
    n = len(parents)
    if len(token_ids) != n:
        raise InvalidTree(
            "token_ids", list(token_ids), f"has {len(token_ids)} entries; parents has {n}",
            "one token per draft node",
        )
    parent_list: list[int] = []
    for i, given in enumerate(parents):
        if not _is_int(given):
            raise InvalidTree("parents", list(parents), f"node {i} has parent {given!r}; "
                              "parents are integers (-1 for the root)")
        parent = int(given)
        if parent == i:
            raise InvalidTree("parents", list(parents), f"node {i} is its own parent (a cycle)",
                              "a node hangs below -1 (the root) or an earlier node")
        if parent > i and parent < n:
            cycle = _cycle_through(list(parents), i)
            if cycle:
                raise InvalidTree(
                    "parents", list(parents),
                    f"node {i} is on a cycle ({' -> '.join(map(str, cycle))}); a tree has none",
                    "give each node its parent's index, the root's children -1",
                )
            raise InvalidTree(
                "parents", list(parents),
                f"node {i} has parent {parent}, which comes after it; parents must come before "
                "their children (a topological order)",
                "renumber the nodes so each parent has a smaller index",
            )
        if not -1 <= parent < n:
            raise InvalidTree(
                "parents", list(parents),
                f"node {i} is an orphan: its parent {parent} is not a node (nodes are 0..{n - 1},"
                " -1 is the root)",
            )
        parent_list.append(parent)
    ids: list[int] = []
    for i, token in enumerate(token_ids):
        if not _is_int(token) or not 0 <= int(token) < V:
            raise InvalidTree("token_ids", list(token_ids),
                              f"node {i} has token {token!r}; ids are integers in [0, {V})")
        ids.append(int(token))
    shape = TreeShape(parent_list, ids)
    if distinct_siblings:
        for node, kids in shape.children.items():
            seen: dict[int, int] = {}
            for child in kids:
                if ids[child] in seen:
                    raise InvalidTree(
                        "token_ids", ids,
                        f"nodes {seen[ids[child]]} and {child} (children of "
                        f"{_node_name(node)}) both carry token {ids[child]}; drafts drawn "
                        "without replacement are distinct",
                        "use rule='with_replacement', or draw the siblings without replacement",
                    )
                seen[ids[child]] = child
    return shape


def _cycle_through(parents: list[int], start: int) -> list[int]:
    seen: list[int] = []
    node = start
    while 0 <= node < len(parents) and node not in seen:
        seen.append(node)
        node = int(parents[node])
    if node in seen:
        return [*seen[seen.index(node):], node]
    return []


def _node_name(node: int) -> str:
    return "the root" if node == -1 else f"node {node}"


def _check_rows(target_logits: object, n: int) -> NDArray[np.float64]:
    rows = np.asarray(target_logits, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != n + 1 or rows.shape[1] < 1:
        raise InvalidLogits(
            "target_logits", target_logits,
            f"has shape {rows.shape}; it must be (n + 1, V) = ({n + 1}, V) for n = {n} draft "
            "nodes", "row 0 after the context, row i + 1 after the path to node i",
        )
    if np.isnan(rows).any():
        row, token = (int(v) for v in np.argwhere(np.isnan(rows))[0])
        raise InvalidLogits("target_logits", rows,
                            f"row {row} ({_node_name(row - 1)}) has NaN at id {token}")
    return rows


def _check_draft_probs(
    draft_probs: object, shape: TreeShape, V: int, rule: str
) -> list[NDArray[np.float64] | None]:
    n = shape.n
    if draft_probs is None:
        return [None] * (n + 1)
    if isinstance(draft_probs, np.ndarray) and draft_probs.ndim == 2:
        entries: list[object] = list(draft_probs)
    elif isinstance(draft_probs, Sequence) and not isinstance(draft_probs, (str, bytes)):
        entries = list(draft_probs)
    else:
        raise InvalidDraft("draft_probs", draft_probs,
                           "must be None or n + 1 entries (one per node, root first)")
    if len(entries) != n + 1:
        raise InvalidDraft(
            "draft_probs", f"{len(entries)} entries",
            f"must have n + 1 = {n + 1} entries: entry 0 for the root's children, i + 1 for "
            "node i's", "None for a node whose children are deterministic",
        )
    out: list[NDArray[np.float64] | None] = []
    for index, entry in enumerate(entries):
        node = index - 1
        kids = shape.children[node]
        if entry is None or not kids:
            out.append(None)  # a leaf's row is never used
            continue
        row = np.asarray(entry, dtype=np.float64)
        where = f"entry {index} ({_node_name(node)})"
        if row.shape != (V,):
            raise InvalidDraft("draft_probs", f"entry {index} of shape {row.shape}",
                               f"{where} must have V = {V} entries")
        if not np.isfinite(row).all() or (row < 0).any():
            raise InvalidDraft("draft_probs", row, f"{where} must be finite and non-negative")
        total = float(np.sum(row))
        if abs(total - 1.0) > DRAFT_ROW_TOLERANCE:
            raise InvalidDraft("draft_probs", row,
                               f"{where} sums to {total!r}; a distribution sums to 1")
        for child in kids:
            if row[shape.token_ids[child]] <= 0.0:
                raise InvalidDraft(
                    "draft_probs", row,
                    f"{where} gives node {child}'s token {shape.token_ids[child]} probability 0; "
                    "a draft can only propose tokens it could draw",
                )
        if rule == "without_replacement" and len(kids) > int(np.count_nonzero(row)):
            raise InvalidDraft("draft_probs", row,
                               f"{where} has {int(np.count_nonzero(row))} tokens with q > 0 for "
                               f"{len(kids)} children drawn without replacement")
        out.append(row)
    return out


def typical_threshold(p: NDArray[np.float64], epsilon: float, delta: float) -> float:
    """Medusa's typical-acceptance threshold ``min(epsilon, delta * exp(-H(p)))``.

    ``H`` in nats, summed left to right over ascending ids with libm's ``log`` (``math.log``,
    Rust's ``f64::ln``), so a port computes the same float.
    """
    entropy = 0.0
    for value in p.tolist():
        if value > 0.0:
            entropy -= value * math.log(value)
    return min(epsilon, delta * math.exp(-entropy))


def verify_tree(
    target_logits: object,
    parents: Sequence[int],
    token_ids: Sequence[int],
    draft_probs: object,
    p: SamplingParams,
    history: Sequence[int],
    rng: UniformSource | None,
    prompt: Sequence[int] = (),
    rule: str = "with_replacement",
    epsilon: float = TYPICAL_EPSILON,
    delta: float = TYPICAL_DELTA,
) -> tuple[list[int], list[int]]:
    """Verify a draft tree against the target's rows for its root and every node.

    Args:
        target_logits: ``(n + 1, V)``: row 0 after the context, row ``i + 1`` after node ``i``.
        parents: per draft node, ``-1`` (the root) or the index of an earlier node.
        token_ids: per draft node, its token.
        draft_probs: ``None`` or ``n + 1`` entries (root first): the distribution each node's
            children were drawn from, or ``None`` for deterministic children (one-hot ``q``).
        p: sampling parameters; ``temperature == 0`` verifies greedily (lossless rules).
        history, prompt: as for ``verify_draft`` (penalties see the kept path too).
        rng: the uniform source; unused (may be None) when greedy.
        rule: ``with_replacement``, ``without_replacement`` or ``typical`` (lossy).
        epsilon, delta: the typical rule's thresholds.

    Returns:
        ``(emitted_ids, accepted_nodes)``: the kept path's node indices from the root down, and
        its tokens plus one more (``len(emitted_ids) == len(accepted_nodes) + 1``).

    Raises:
        InvalidTree, InvalidLogits, InvalidDraft, InvalidParams: bad layout, rows, drafts,
        parameters; each names the node.

    A root with drafts 2 and 1, node 0 (token 2) with one child (token 0):

    >>> rows = [[0, 1, 3], [2, 1, 0], [0, 5, 1], [0, 0, 9]]
    >>> verify_tree(rows, [-1, -1, 0], [2, 1, 0], None, SamplingParams(temperature=0), [], None)
    ([2, 0, 2], [0, 2])
    """
    if not isinstance(p, SamplingParams):
        raise InvalidParams("p", p, "must be a SamplingParams")
    if rule not in TREE_RULES:
        raise InvalidParams("rule", rule, f"must be one of {', '.join(TREE_RULES)}")
    if isinstance(parents, (str, bytes)) or not isinstance(parents, Sequence | np.ndarray):
        raise InvalidTree("parents", parents, "must be a sequence of integers, one per node")
    given = np.asarray(target_logits, dtype=np.float64)
    if given.ndim == 2 and given.shape[1] >= 1:  # the layout first: its errors name the node
        validate_tree(parents, token_ids, given.shape[1])
    rows = _check_rows(given, len(parents))
    V = rows.shape[1]
    shape = validate_tree(parents, token_ids, V,
                          distinct_siblings=rule == "without_replacement" and not p.greedy)
    history = validate_ids("history", history, V)
    prompt = validate_ids("prompt", prompt, V)
    if rule == "typical":
        for name, value in (("epsilon", epsilon), ("delta", delta)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InvalidParams(name, value, "must be a finite number >= 0")

    def dist(node: int, path: list[int]) -> NDArray[np.float64]:
        return sampling_distribution(rows[node + 1], p, history + path, prompt)

    if p.greedy or rule == "typical":
        if not p.greedy and (rng is None or not callable(getattr(rng, "random", None))):
            raise InvalidParams("rng", rng, "the typical rule samples its last token")

        def passes(node: int, path: list[int], child: int) -> bool:
            row = dist(node, path)
            x = shape.token_ids[child]
            if p.greedy:
                return x == argmax_lowest(row)
            return bool(row[x] > typical_threshold(row, epsilon, delta))

        best = _longest_path(shape, passes)
        path = [shape.token_ids[i] for i in best]
        last = dist(best[-1] if best else -1, path)
        return [*path, sample(last, None if p.greedy else rng)], best
    if rng is None or not callable(getattr(rng, "random", None)):
        raise InvalidParams("rng", rng, "sampled verification needs a uniform source")
    q_rows = _check_draft_probs(draft_probs, shape, V, rule)
    node = -1
    kept: list[int] = []
    nodes: list[int] = []
    while True:
        r = dist(node, kept)
        kids = shape.children[node]
        if not kids:
            return [*kept, sample(r, rng)], nodes
        q = q_rows[node + 1]
        moved = False
        for j, child in enumerate(kids):
            x = shape.token_ids[child]
            q_j = q if q is not None else _one_hot(x, V)
            u_accept = rng.random()
            u_resample = rng.random()
            if u_accept * q_j[x] < r[x]:
                kept.append(x)
                nodes.append(child)
                node = child
                moved = True
                break
            r = residual(r, q_j)
            if j == len(kids) - 1:
                return [*kept, sample_with(r, u_resample)], nodes
            if rule == "without_replacement" and q is not None:
                q = _without(q, x)
        assert moved


def _without(q: NDArray[np.float64], x: int) -> NDArray[np.float64]:
    """The draft renormalised without ``x`` (sequential sum, like every sum of the contract)."""
    out = q.copy()
    out[x] = 0.0
    total = float(np.cumsum(out)[-1])
    return out / total if total > 0 else out


def _longest_path(shape: TreeShape, test: Callable[[int, list[int], int], bool]) -> list[int]:
    """The longest path from the root whose every node passes ``test(parent, path tokens,
    child)``; ties go to the path that branches to the lower node index first."""

    def best(node: int, path: list[int]) -> list[int]:
        found: list[int] = []
        for child in shape.children[node]:
            if test(node, path, child):
                below = [child, *best(child, [*path, shape.token_ids[child]])]
                if len(below) > len(found):
                    found = below
        return found

    return best(-1, [])


def _one_hot(x: int, V: int) -> NDArray[np.float64]:
    q = np.zeros(V)
    q[x] = 1.0
    return q
