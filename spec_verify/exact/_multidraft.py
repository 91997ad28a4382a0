"""The multi-draft chain rules proven lossless exactly (``prove --rule kseq|rrs``).

Per case (``K`` draft chains of ``L`` tokens, context-dependent rational tables, V up to 4):

- the rule's own law (``reference/multidraft_exact.py``, Fractions), averaged over every draw
  of the chains and continued by the target to ``L + 1`` tokens, equals the target's law;
- an implementation (the rule's float64 reference by default, a port, a planted bug) is
  proven the same way, its law per drawn tree by cell enumeration over its injected uniforms
  (``_tree_cells``' explorer with this rule's draw order, CONTRACT.md section 12, as the
  predicted cells; any other order is located, and every leaf is audited deeply);
- efficiency: the exact expected kept drafts per round beside the other multi-draft rules on
  the same case, one chain's token rule and block verification (``K = 1``), and the optimum of
  any lossless rule with the same chains (a coupling LP after Hu et al.; floats, an oracle).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from spec_verify.errors import InvalidArgument
from spec_verify.exact._cells import GUARD, Cell, Dist, Draw, Role, _cells_of
from spec_verify.exact._theorems import compare
from spec_verify.exact._tree_cells import (
    _UNUSED,
    TreeEnumeration,
    TreeRound,
    _TreeExplorer,
)
from spec_verify.exact._tree_law import TreeLawCase, drafted_trees
from spec_verify.results import Status

__all__ = [
    "MULTIDRAFT_IMPLEMENTATIONS",
    "MultiDraftCase",
    "MultiDraftProof",
    "chain_rounds",
    "enumerate_multidraft_round",
    "multidraft_cases",
    "multidraft_efficiency",
    "multidraft_markdown",
    "prove_multidraft",
]

Emitted = tuple[int, ...]

# rule -> (the spec of its float64 reference, the rule its chains are drawn by)
MULTIDRAFT_IMPLEMENTATIONS = {
    "kseq": ("python:spec_verify.reference.kseq_chains", "with_replacement"),
    "rrs": ("python:spec_verify.reference.rrs", "without_replacement"),
}
# (K, L, V, branching of the chains drawn without replacement, None for distinct heads):
# small enough that every draw of the chains is enumerated in seconds. multi/4 and multi/5
# branch below the first position, so recursive rejection without replacement has several
# survivors there (their shared node's children, drawn without replacement).
_DEFAULT_SHAPES: list[tuple[int, int, int, tuple[int, ...] | None]] = [
    (2, 1, 3, None), (3, 1, 3, None), (2, 2, 2, None), (2, 1, 4, None),
    (2, 2, 3, (1, 2)), (2, 3, 2, (1, 1, 2)),
]


@dataclass(frozen=True)
class MultiDraftCase:
    """``K`` chains of ``L`` drafts over ``V`` tokens, tables seeded by ``seed``.

    ``branching``: how the chains drawn without replacement (``rrs``) share prefixes: the
    root-to-leaf paths of a tree with ``branching[d]`` children per depth-``d`` node
    (``None``: ``(K, 1, ..., 1)``, distinct heads each continued by the draft). i.i.d. chains
    (``kseq``, ``rrs_with``) are ``K`` independent chains whatever it says."""

    name: str
    K: int
    L: int
    V: int
    seed: int
    branching: tuple[int, ...] | None = None

    def shape(self) -> tuple[int, ...]:
        return self.branching or (self.K, *([1] * (self.L - 1)))

    def tree_case(self, rule: str) -> TreeLawCase:
        """The drawn tree of ``rule``'s chains (``drafted_trees`` draws it; ``chain_rounds``
        lays each draw out as ``K`` chains)."""
        from spec_verify.reference._multidraft import branched_parents, chain_parents

        drafting = MULTIDRAFT_IMPLEMENTATIONS[rule][1]
        parents = (branched_parents(self.shape()) if drafting == "without_replacement"
                   else chain_parents(self.K, self.L))
        return TreeLawCase(self.name, tuple(parents), drafting, self.V, self.seed)


def chain_rounds(case: MultiDraftCase, rule: str) -> Iterator[tuple[TreeRound, Fraction]]:
    """Every draw of ``rule``'s chains on ``case`` with its probability, each as one
    ``verify_tree`` call in the chain layout (``chain_parents(K, L)``): the drawn tree's
    root-to-leaf paths, depth first, a shared prefix repeated in every chain that carries it."""
    from spec_verify.reference._multidraft import chain_parents

    parents = tuple(chain_parents(case.K, case.L))
    for rnd, weight in drafted_trees(case.tree_case(rule)):
        if rnd.parents == parents:
            yield rnd, weight
            continue
        kids = rnd.children()
        leaves = [i for i in range(rnd.n) if not kids[i]]
        nodes: list[int] = []
        for leaf in leaves:
            path = [leaf]
            while rnd.parents[path[-1]] != -1:
                path.append(rnd.parents[path[-1]])
            nodes += reversed(path)
        q_rows = rnd.q_rows or (None,) * (rnd.n + 1)
        yield TreeRound(
            (rnd.p_rows[0], *(rnd.p_rows[i + 1] for i in nodes)), parents,
            tuple(rnd.token_ids[i] for i in nodes),
            (q_rows[0], *(q_rows[i + 1] for i in nodes)), rnd.rule), weight


def multidraft_cases(n_random: int = 0, seed: int = 0) -> list[MultiDraftCase]:
    """The default cases ``multi/0..5``, then ``n_random`` seeded ones (``multi/6..``: the
    default shapes with other tables).

    Raises:
        InvalidArgument: ``n_random`` is negative.
    """
    if n_random < 0:
        raise InvalidArgument("cases", n_random, "must be >= 0")
    out = [MultiDraftCase(f"multi/{i}", K, L, V, 70 + i, b)
           for i, (K, L, V, b) in enumerate(_DEFAULT_SHAPES)]
    for j in range(n_random):
        rng = random.Random(f"{seed}/multi/{j}")
        K, L, V, b = _DEFAULT_SHAPES[rng.randrange(len(_DEFAULT_SHAPES))]
        out.append(MultiDraftCase(f"multi/{len(out)}", K, L, V, rng.randrange(1000, 10**6), b))
    return out


def _rule_of(rnd: TreeRound, rule: str) -> str:
    return "rrs" if rule == "rrs" and rnd.rule == "without_replacement" else (
        "rrs_with" if rule == "rrs" else rule)


def _chains(rnd: TreeRound) -> list[list[int]]:
    kids = rnd.children()
    out = []
    for head in kids[-1]:
        chain = [head]
        while kids[chain[-1]]:
            chain.append(kids[chain[-1]][0])
        out.append(chain)
    return out


class _Walk:
    """The rule's walk replayed over exact rows: where a draw of the round falls."""

    def __init__(self, rnd: TreeRound, rule: str) -> None:
        self.rnd, self.rule, self.chains = rnd, rule, _chains(rnd)
        self.L = len(self.chains[0])

    def position(self, depth: int, alive: Sequence[int]
                 ) -> tuple[Dist, list[int], list[Fraction], list[Fraction]]:
        from spec_verify.reference.multidraft_exact import position_plan

        node = -1 if depth == 0 else self.chains[alive[0]][depth - 1]
        p = self.rnd.p_rows[node + 1]
        if depth == self.L:
            return p, [], [], []
        q = self.rnd.q(node)
        assert q is not None
        tokens = [self.rnd.token_ids[self.chains[c][depth]] for c in alive]
        if self.rule == "rrs":  # survivors sharing a prefix share its node's children
            tokens = list(dict.fromkeys(tokens))
        accepts, r = position_plan(self.rule, p, q, tokens)
        return p, tokens, accepts, r

    def role(self, path: Sequence[Draw]) -> Role | None:
        """The role of draw ``len(path)`` in the rule's order, or None past its last draw or
        once the path left that order."""
        depth, alive, i = 0, list(range(len(self.chains))), 0
        p, tokens, accepts, r = self.position(0, alive)
        for draw in path:
            if depth == self.L or i == len(tokens) or draw.kind != "accept":
                return None  # the token was drawn (or the path is another order's)
            if draw.cell.tag == "accept":
                x = tokens[i]
                alive = [c for c in alive if self.rnd.token_ids[self.chains[c][depth]] == x]
                depth, i = depth + 1, 0
                p, tokens, accepts, r = self.position(depth, alive)
            else:
                i += 1
        if depth == self.L:
            return Role("sample", -1, "bonus", _cells_of(p, "token"))
        if i == len(tokens):
            return Role("resample", depth, f"token at position {depth}",
                        _cells_of(tuple(r), "residual"))
        a = accepts[i]
        cells = []
        if a > 0:
            cells.append(Cell(Fraction(0), a, f"keep {tokens[i]}", "accept"))
        if a < 1:
            cells.append(Cell(a, Fraction(1), f"reject {tokens[i]}", "reject"))
        return Role("accept", depth, f"eta[position {depth}, try {i}]", tuple(cells))

    def points(self) -> set[Fraction]:
        """Every cell boundary of the walk (what located breakpoints snap to)."""
        out: set[Fraction] = set()

        def walk(depth: int, alive: list[int]) -> None:
            p, tokens, accepts, r = self.position(depth, alive)
            if depth == self.L:
                out.update(c.low for c in _cells_of(p, "token"))
                return
            out.update(accepts)
            out.update(c.low for c in _cells_of(tuple(r), "residual"))
            for x, a in zip(tokens, accepts, strict=True):
                if a:
                    walk(depth + 1, [c for c in alive
                                     if self.rnd.token_ids[self.chains[c][depth]] == x])

        walk(0, list(range(len(self.chains))))
        return out


class _MultiDraftExplorer(_TreeExplorer):
    """The tree explorer with the multi-draft rule's roles for its predicted cells."""

    def __init__(self, impl: Any, rnd: TreeRound, rule: str, guard: Fraction,
                 max_calls: int, hints: Iterable[Fraction]) -> None:
        self.walk = _Walk(rnd, rule)
        super().__init__(impl, rnd, guard, max_calls, [*hints, *self.walk.points()],
                         deep_audit=True)

    def candidates(self, path: tuple[Draw, ...]) -> list[Role]:
        role = self.walk.role(path)
        return [_UNUSED] if role is None else [role, _UNUSED]


def enumerate_multidraft_round(impl: Any, rnd: TreeRound, rule: str, *,
                               guard: Fraction = GUARD, max_calls: int = 400_000
                               ) -> TreeEnumeration:
    """The exact law of ``impl``'s ``emitted_ids`` on one fixed tree of chains, by cells
    (never raises for the implementation's misbehaviour: status ``error``/``not_provable``)."""
    from spec_verify.exact._cells import explore_with_restarts

    explorer = _MultiDraftExplorer(impl, rnd, _rule_of(rnd, rule), Fraction(guard),
                                   max_calls, ())
    status, reason, script, distribution = explore_with_restarts(explorer)
    return TreeEnumeration(
        round=rnd, status=status, distribution=dict(sorted(distribution.items())),
        leaves=tuple(explorer.leaves), calls=explorer.calls, boundaries=explorer.boundaries,
        located=tuple(explorer.located),
        notes=tuple(explorer.notes) + tuple(explorer.findings), reason=reason, script=script,
        audit_calls=explorer.audit_calls,
    )


@dataclass(frozen=True)
class MultiDraftProof:
    """One case of ``prove --rule kseq|rrs``: the rule's law, the implementation's, and the
    exact expected kept drafts (``accepted``: rule name -> E[kept]; ``optimum``: the LPs',
    ``iid`` and ``without``, see ``multidraft_efficiency``)."""

    rule: str
    case: MultiDraftCase
    status: Status
    rule_lossless: bool
    message: str
    trees: int
    calls: int
    accepted: dict[str, Fraction]
    optimum: dict[str, float | None]
    seconds: float
    witness: Emitted | None = None
    repro: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case.name, "K": self.case.K, "L": self.case.L, "V": self.case.V,
                "rule_lossless": self.rule_lossless, "status": self.status.value,
                "message": self.message, "trees": self.trees, "calls": self.calls,
                "accepted": {k: str(v) for k, v in self.accepted.items()},
                "optimum": dict(self.optimum),
                "witness": None if self.witness is None else list(self.witness),
                "repro": self.repro, "seconds": round(self.seconds, 3)}


def _check_rule(rule: str) -> None:
    if rule not in MULTIDRAFT_IMPLEMENTATIONS:
        raise InvalidArgument("--rule", rule,
                              f"must be one of {', '.join(MULTIDRAFT_IMPLEMENTATIONS)}")


def multidraft_efficiency(case: MultiDraftCase
                          ) -> tuple[dict[str, Fraction], dict[str, float | None]]:
    """Exact E[kept] per round: K-SEQ, recursive rejection without and with replacement, the
    tree rule ``with_replacement`` (SpecInfer, the kept node's chain only) on the same ``K``
    chains, and one chain's token rule and block verification; and the optimum of any lossless
    rule with the same chains (``_optimal.optimal_chains_accepted``, an LP in floats): ``iid``
    for i.i.d. chains (K-SEQ's, ``rrs_with``'s, ``tree_with``'s), ``without`` for heads drawn
    without replacement (``rrs``'s)."""
    from spec_verify.exact._optimal import optimal_chains_accepted
    from spec_verify.reference.multidraft_exact import exact_multidraft_round
    from spec_verify.reference.rules_exact import expected_accepted

    target, draft = case.tree_case("kseq").tables()

    def mean(law: dict[Emitted, Fraction]) -> Fraction:
        return sum(((len(e) - 1) * v for e, v in law.items()), Fraction(0))

    out = {name: mean(exact_multidraft_round(name, target, draft, (), case.K, case.L,
                                             case.branching))
           for name in ("kseq", "rrs", "rrs_with")}
    out["tree_with"] = _tree_rule_mean(case)
    for name in ("token", "block"):
        out[name] = expected_accepted(name, target, draft, (), case.L)
    optima = {"iid": optimal_chains_accepted(target, draft, (), case.K, case.L),
              "without": optimal_chains_accepted(target, draft, (), case.K, case.L, True,
                                                 case.branching)}
    return out, optima


def _tree_rule_mean(case: MultiDraftCase) -> Fraction:
    from spec_verify.reference.tree_exact import exact_tree_verify

    total = Fraction(0)
    for rnd, weight in drafted_trees(case.tree_case("kseq")):
        law = exact_tree_verify(rnd.p_rows, rnd.parents, rnd.token_ids, rnd.q_rows,
                                "with_replacement")
        total += weight * sum(((len(e) - 1) * v for e, v in law.items()), Fraction(0))
    return total


def prove_multidraft(rule: str, impl: Any, cases: list[MultiDraftCase],
                     optimum: bool = True) -> list[MultiDraftProof]:
    """Prove ``rule`` (its Fraction law) and ``impl`` (by cell enumeration, per drawn tree) on
    ``cases``; ``status`` is the implementation's verdict, FAILED when the rule itself is not
    lossless there.

    Raises:
        InvalidArgument: ``rule`` is not a multi-draft chain rule.
    """
    from spec_verify.reference.exact import exact_target_sequences
    from spec_verify.reference.multidraft_exact import exact_multidraft_round
    from spec_verify.reference.tree_exact import extend_to

    _check_rule(rule)
    out = []
    for case in cases:
        start = time.perf_counter()
        tree_case = case.tree_case(rule)
        target, draft = tree_case.tables()
        length = case.L + 1
        expected = exact_target_sequences(target, (), length)
        own = exact_multidraft_round(rule, target, draft, (), case.K, case.L, case.branching)
        continued = extend_to(own, target, (), length)
        lossless = {s: v for s, v in continued.items() if v} == expected
        status, message, trees, calls, witness, repro = _prove_impl(impl, rule, case,
                                                                    expected)
        if not lossless:
            status = Status.FAILED
        accepted, best = multidraft_efficiency(case) if optimum else ({}, {})
        out.append(MultiDraftProof(rule, case, status, lossless, message, trees, calls,
                                   accepted, best, time.perf_counter() - start, witness, repro))
    return out


def _prove_impl(impl: Any, rule: str, case: MultiDraftCase, expected: dict[Emitted, Fraction]
                ) -> tuple[Status, str, int, int, Emitted | None, str]:
    from spec_verify.exact._cells import format_fraction
    from spec_verify.reference.tree_exact import extend_to

    target, _ = case.tree_case(rule).tables()
    law: dict[Emitted, Fraction] = {}
    slack, trees, calls = Fraction(0), 0, 0
    witnesses: list[tuple[TreeRound, dict[Emitted, Fraction]]] = []
    for rnd, weight in chain_rounds(case, rule):
        e = enumerate_multidraft_round(impl, rnd, rule)
        trees += 1
        calls += e.calls
        if not e.complete:
            status = Status.ERROR if e.status == "error" else Status.NOT_PROVABLE
            return (status, f"{case.name}: chains {list(rnd.token_ids)}: {e.reason} (uniforms "
                    f"{list(e.script)})", trees, calls, None, "")
        for emitted, prob in e.distribution.items():
            law[emitted] = law.get(emitted, Fraction(0)) + weight * prob
        slack += weight * max(e.tolerance(), 2 * GUARD)
        witnesses.append((rnd, e.distribution))
    continued = extend_to(law, target, (), case.L + 1)
    tolerance = slack * max(1, len(law))
    status, key, diff = compare(continued, expected, tolerance)
    if status is Status.PASSED:
        return status, f"{case.name}: exact ({trees} drawn trees, {calls} calls)", trees, \
            calls, None, ""
    if status is Status.NOT_PROVABLE:  # within the located breakpoints' guard band
        return (Status.PASSED, f"{case.name}: equal within {float(tolerance):.1e} per outcome "
                f"({trees} drawn trees, {calls} calls; breakpoints located to the guard band)",
                trees, calls, None, "")
    assert key is not None
    rnd, dist = _witness_tree(witnesses, rule, key)
    repro = (f"chains {list(rnd.token_ids)} (parents {list(rnd.parents)}): the implementation "
             f"emits {_show(dist)} where the rule's law is {_show(_own_law(rnd, rule))}")
    message = (f"{case.name}: {list(key)} has probability "
               f"{format_fraction(continued.get(key, Fraction(0)))} averaged over the drafts, "
               f"the target's {format_fraction(expected.get(key, Fraction(0)))} (difference "
               f"{format_fraction(diff)}); reproduce with {repro}")
    return Status.FAILED, message, trees, calls, key, repro


def _own_law(rnd: TreeRound, rule: str) -> dict[Emitted, Fraction]:
    from spec_verify.reference.multidraft_exact import exact_multidraft

    return exact_multidraft(_rule_of(rnd, rule), rnd.p_rows, rnd.parents, rnd.token_ids,
                            rnd.q_rows or ())


def _witness_tree(witnesses: list[tuple[TreeRound, dict[Emitted, Fraction]]], rule: str,
                  key: Emitted) -> tuple[TreeRound, dict[Emitted, Fraction]]:
    """A drawn tree where the implementation's law departs from the rule's, preferring one
    that emits a prefix of the witness ``key``."""
    bad = [(rnd, d) for rnd, d in witnesses if d != _own_law(rnd, rule)]
    for rnd, d in bad:
        if any(key[:len(e)] == e for e in d):
            return rnd, d
    return bad[0] if bad else witnesses[0]


def _show(law: dict[Emitted, Fraction]) -> str:
    from spec_verify.exact._cells import format_fraction

    return "{" + ", ".join(f"{list(k)}: {format_fraction(v)}" for k, v in sorted(law.items())
                           ) + "}"


def multidraft_markdown(cases: list[MultiDraftCase] | None = None) -> str:
    """docs/rules.md's multi-draft efficiency table, computed (6 decimals)."""
    names = ["kseq", "rrs", "rrs_with", "tree_with", "token", "block"]
    lines = ["| case | K | L | V | rrs branching | " + " | ".join(names)
             + " | optimum i.i.d. (LP) | optimum without (LP) |",
             "|---" * (len(names) + 7) + "|"]
    for case in multidraft_cases() if cases is None else cases:
        accepted, best = multidraft_efficiency(case)
        cells = [case.name, str(case.K), str(case.L), str(case.V),
                 "(" + ", ".join(map(str, case.shape())) + ")",
                 *(f"{float(accepted[n]):.6f}" for n in names),
                 *("-" if best[k] is None else f"{best[k]:.6f}" for k in ("iid", "without"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
