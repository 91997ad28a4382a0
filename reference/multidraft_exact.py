"""The multi-draft chain rules over ``Fraction``s (CONTRACT.md section 12): each rule's exact
law of ``emitted_ids`` for fixed drafts, and averaged over every draw of the ``K`` chains.

Shares no code with the float paths (``_multidraft.py``, ``kseq_chains.py``, ``rrs.py``): it
weights each branch by its exact probability instead of drawing uniforms. K-SEQ's ``rho`` is
decided exactly on the contract's grid (``rules_exact.exact_kseq_rho``), so this law is the
law of the pinned rule, not of SpecTr's continuous optimum (``kseq_rho_bounds`` brackets that).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from fractions import Fraction

from .errors import InvalidDraft, InvalidTree
from .exact import Dist, TableModel, accept_probability
from .rules_exact import RoundLaw, exact_kseq_rho

__all__ = [
    "MULTIDRAFT_RULES",
    "drafted_chains",
    "exact_kseq_chains",
    "exact_multidraft",
    "exact_multidraft_round",
    "exact_rrs",
    "kseq_rho_bounds",
    "kseq_rho_valid",
    "position_plan",
]

# rule name -> the tree rule its chains are drawn by (i.i.d., or heads without replacement)
MULTIDRAFT_RULES = {"kseq": "with_replacement", "rrs": "without_replacement",
                    "rrs_with": "with_replacement"}

_Tokens = tuple[int, ...]


def _chains(parents: Sequence[int]) -> list[list[int]]:
    kids: dict[int, list[int]] = defaultdict(list)
    for i, parent in enumerate(parents):
        kids[parent].append(i)
    chains = []
    for head in kids[-1]:
        chain = [head]
        while kids[chain[-1]]:
            if len(kids[chain[-1]]) > 1:
                raise InvalidTree("parents", list(parents), "must be K chains")
            chain.append(kids[chain[-1]][0])
        chains.append(chain)
    if not chains or len({len(c) for c in chains}) > 1:
        raise InvalidTree("parents", list(parents), "must be K >= 1 chains of one length")
    return chains


def kseq_rho_valid(p: Dist, q: Dist, K: int, rho: Fraction) -> bool:
    """Whether K-SEQ's residual ``p - c min(q, p / rho)`` is non-negative at ``rho``."""
    m = [min(b, a / rho) for a, b in zip(p, q, strict=True)]
    alpha = sum(m, Fraction(0))
    if alpha in (0, 1):
        return True
    c = (1 - (1 - alpha) ** K) / alpha
    return all(c * v <= a for v, a in zip(m, p, strict=True))


def kseq_rho_bounds(p: Dist, q: Dist, K: int, width: Fraction = Fraction(1, 2**20)
                    ) -> tuple[Fraction, Fraction]:
    """``(lo, hi)``, ``hi - lo <= width``, bracketing SpecTr's smallest valid ``rho`` by
    bisection in ``Fraction``s on ``[1, K]``: ``hi`` is proven valid (``kseq_rho_valid``) and
    ``lo`` is ``1`` or proven invalid. That is all it claims: validity is not proven monotone in
    ``rho`` here, so a valid ``rho`` below ``lo`` is not ruled out."""
    lo, hi = Fraction(1), Fraction(K)
    if kseq_rho_valid(p, q, K, lo):
        return lo, lo
    while hi - lo > width:
        mid = (lo + hi) / 2
        if kseq_rho_valid(p, q, K, mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def position_plan(rule: str, p: Dist, q: Dist, tokens: Sequence[int]
                  ) -> tuple[list[Fraction], list[Fraction]]:
    """One position of ``rule``: each try's acceptance given the earlier tries were rejected
    (``eta_i < a_i`` keeps survivor ``i``), and the law of the token drawn when none is kept.

    K-SEQ: ``a_i = min(1, p(x_i) / (rho q(x_i)))``, residual ``max(p - c m, 0)`` normalised;
    recursive rejection: ``a_i = min(1, r(x_i) / q_i(x_i))`` with the residual ``r`` updated after
    each rejection (and ``q_i`` renormalised without the rejected token for ``rrs``).
    """
    if rule == "kseq":
        K = len(tokens)
        rho = exact_kseq_rho(p, q, K)
        accepts = [min(Fraction(1), p[x] / (rho * q[x])) for x in tokens]
        m = [min(b, a / rho) for a, b in zip(p, q, strict=True)]
        alpha = sum(m, Fraction(0))
        c = (1 - (1 - alpha) ** K) / alpha if alpha else Fraction(0)
        left = [max(a - c * v, Fraction(0)) for a, v in zip(p, m, strict=True)]
        mass = sum(left, Fraction(0))
        return accepts, [v / mass for v in left] if mass else list(p)
    accepts = []
    r, q_j = list(p), list(q)
    for x in tokens:
        accepts.append(accept_probability(tuple(r), tuple(q_j), x) if q_j[x] else Fraction(0))
        d = [max(u - v, Fraction(0)) for u, v in zip(r, q_j, strict=True)]
        z = sum(d, Fraction(0))
        if z:
            r = [v / z for v in d]
        if rule == "rrs":
            rest = 1 - q_j[x]
            q_j = [Fraction(0) if t == x or not rest else v / rest for t, v in enumerate(q_j)]
    return accepts, r


def _tries(rule: str, tokens: tuple[int, ...]) -> tuple[int, ...]:
    """A position's tries: without replacement (``rrs``) the survivors sharing a prefix share
    its node, so its children are tried once each; i.i.d. chains try every survivor's token."""
    return tuple(dict.fromkeys(tokens)) if rule == "rrs" else tokens


def exact_multidraft(rule: str, p_rows: Sequence[Dist], parents: Sequence[int],
                     token_ids: Sequence[int], q_rows: Sequence[Dist | None]) -> RoundLaw:
    """``rule``'s law of ``emitted_ids`` for one fixed tree of ``K`` chains (``verify_tree``'s
    layout: ``p_rows[i + 1]``, ``q_rows[i + 1]`` after node ``i``; entry 0 the root's).

    Raises:
        InvalidDraft: an unknown rule, a missing draft row or a drafted token it gives 0;
        InvalidTree: not ``K`` chains of one length.
    """
    if rule not in MULTIDRAFT_RULES:
        raise InvalidDraft("rule", rule, f"must be one of {sorted(MULTIDRAFT_RULES)}")
    chains = _chains(parents)
    L = len(chains[0])
    out: RoundLaw = defaultdict(Fraction)

    def walk(depth: int, alive: list[int], kept: _Tokens, weight: Fraction) -> None:
        node = -1 if depth == 0 else chains[alive[0]][depth - 1]
        p = p_rows[node + 1]
        if depth == L:
            for t, v in enumerate(p):
                if v:
                    out[(*kept, t)] += weight * v
            return
        q = q_rows[node + 1]
        if q is None:
            raise InvalidDraft("q_rows", node + 1, "a multi-draft rule needs every draft row")
        tokens = tuple(token_ids[chains[c][depth]] for c in alive)
        tokens = _tries(rule, tokens)
        if any(q[x] <= 0 for x in tokens):
            raise InvalidDraft("q_rows", node + 1, "gives a drafted token probability 0")
        accepts, r = position_plan(rule, p, q, tokens)
        none = Fraction(1)
        for i, a in enumerate(accepts):
            prob, none = none * a, none * (1 - a)
            if prob:
                x = tokens[i]
                walk(depth + 1, [c for c in alive if token_ids[chains[c][depth]] == x],
                     (*kept, x), weight * prob)
        if none:
            for t, v in enumerate(r):
                if v:
                    out[(*kept, t)] += weight * none * v

    walk(0, list(range(len(chains))), (), Fraction(1))
    return dict(out)


def _draws(q: Dist, n: int, without: bool) -> Iterator[tuple[_Tokens, Fraction]]:
    if n == 0:
        yield (), Fraction(1)
        return
    for x, v in enumerate(q):
        if not v:
            continue
        rest: Dist = q
        if without and n > 1:
            left = 1 - v
            if not left:
                continue  # nothing left to draw the next distinct token from
            rest = tuple(Fraction(0) if t == x else w / left for t, w in enumerate(q))
        for tail, w in _draws(rest, n - 1, without):
            yield (x, *tail), v * w


def drafted_chains(rule: str, draft: TableModel, context: tuple[int, ...], K: int, L: int,
                   branching: Sequence[int] | None = None
                   ) -> Iterator[tuple[tuple[_Tokens, ...], Fraction]]:
    """Every draw of ``K`` chains of ``L`` tokens after ``context`` with its probability.

    i.i.d. (``kseq``, ``rrs_with``): each chain drawn from the draft on its own. Without
    replacement (``rrs``): the root-to-leaf paths, depth first, of a tree whose depth-``d``
    nodes have ``branching[d]`` children drawn without replacement from the draft row after
    their path (``branching`` defaults to ``(K, 1, ..., 1)``: distinct heads, each continued by
    the draft; its product must be ``K``).

    Raises:
        InvalidTree: ``branching`` is not ``L`` positive integers with product ``K``.
    """
    without = MULTIDRAFT_RULES[rule] == "without_replacement"
    shape = _branching(K, L, branching) if without else (K, *([1] * (L - 1)))

    def subtree(prefix: _Tokens, depth: int) -> Iterator[tuple[list[_Tokens], Fraction]]:
        """The paths below ``prefix`` (its ``shape[depth]`` children and theirs)."""
        if depth == L:
            yield [()], Fraction(1)
            return
        for picks, w in _draws(tuple(draft(context + prefix)), shape[depth], without):
            yield from _grow(prefix, depth, picks, 0, [], w)

    def _grow(prefix: _Tokens, depth: int, picks: _Tokens, j: int, done: list[_Tokens],
              weight: Fraction) -> Iterator[tuple[list[_Tokens], Fraction]]:
        if j == len(picks):
            yield done, weight
            return
        for tails, w in subtree((*prefix, picks[j]), depth + 1):
            yield from _grow(prefix, depth, picks, j + 1,
                             [*done, *((picks[j], *t) for t in tails)], weight * w)

    if without:
        for paths, weight in subtree((), 0):
            yield tuple(paths), weight
        return
    # i.i.d. chains: K independent draws of one chain each
    singles = [(paths[0], w) for paths, w in _single_chains(draft, context, L)]

    def grow(j: int, done: tuple[_Tokens, ...], weight: Fraction
             ) -> Iterator[tuple[tuple[_Tokens, ...], Fraction]]:
        if j == K:
            yield done, weight
            return
        for chain, w in singles:
            yield from grow(j + 1, (*done, chain), weight * w)

    yield from grow(0, (), Fraction(1))


def _single_chains(draft: TableModel, context: tuple[int, ...], L: int
                   ) -> Iterator[tuple[list[_Tokens], Fraction]]:
    def tails(prefix: _Tokens, n: int) -> Iterator[tuple[_Tokens, Fraction]]:
        if n == 0:
            yield (), Fraction(1)
            return
        for x, v in enumerate(draft(context + prefix)):
            if v:
                for rest, w in tails((*prefix, x), n - 1):
                    yield (x, *rest), v * w

    for chain, w in tails((), L):
        yield [chain], w


def _branching(K: int, L: int, branching: Sequence[int] | None) -> tuple[int, ...]:
    if branching is None:
        return (K, *([1] * (L - 1)))
    shape = tuple(branching)
    product = 1
    for b in shape:
        product *= b if isinstance(b, int) and b >= 1 else 0
    if len(shape) != L or product != K:
        raise InvalidTree("branching", list(shape),
                          f"must be L = {L} positive integers with product K = {K}")
    return shape


def exact_multidraft_round(rule: str, target: TableModel, draft: TableModel,
                           context: tuple[int, ...], K: int, L: int,
                           branching: Sequence[int] | None = None) -> RoundLaw:
    """One round of ``rule`` over ``K`` chains of ``L`` drafts after ``context``, averaged over
    the chains' draws (``drafted_chains``, ``branching`` for ``rrs``)."""
    from ._multidraft import chain_parents

    parents = chain_parents(K, L)
    out: RoundLaw = defaultdict(Fraction)
    for chains, weight in drafted_chains(rule, draft, context, K, L, branching):
        tokens = [t for chain in chains for t in chain]
        paths = [() if i < 0 else _path(parents, tokens, i) for i in range(-1, K * L)]
        p_rows = [tuple(target(context + path)) for path in paths]
        q_rows = [tuple(draft(context + path)) for path in paths]
        for emitted, prob in exact_multidraft(rule, p_rows, parents, tokens, q_rows).items():
            out[emitted] += weight * prob
    return dict(out)


def _path(parents: Sequence[int], tokens: Sequence[int], node: int) -> _Tokens:
    out: list[int] = []
    while node != -1:
        out.append(tokens[node])
        node = parents[node]
    return tuple(reversed(out))


def exact_kseq_chains(p_rows: Sequence[Dist], parents: Sequence[int],
                      token_ids: Sequence[int], q_rows: Sequence[Dist | None]) -> RoundLaw:
    """K-SEQ over chains for one fixed tree (``exact_multidraft("kseq", ...)``)."""
    return exact_multidraft("kseq", p_rows, parents, token_ids, q_rows)


def exact_rrs(p_rows: Sequence[Dist], parents: Sequence[int], token_ids: Sequence[int],
              q_rows: Sequence[Dist | None], rule: str = "without_replacement") -> RoundLaw:
    """Recursive rejection sampling over chains for one fixed tree (``rule`` is how the heads
    were drawn, as ``rrs.verify_rrs`` takes it)."""
    return exact_multidraft("rrs" if rule == "without_replacement" else "rrs_with", p_rows,
                            parents, token_ids, q_rows)
