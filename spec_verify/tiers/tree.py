"""Tree checks for implementations with the ``verify_tree`` capability (CONTRACT.md section 6).

One check joins each of three tiers (the tiers call these at their end):

- exact, ``tree_law`` (the LAW claim): one round averaged over every draft tree the rule
  draws, continued with the target, equals the target's law, as ``Fraction``s
  (``exact._tree_law``): whatever the implementation's multi-draft rule (SpecTr's K-SEQ passes);
- exact, ``tree`` (conformance): per fixed tree the implementation's law of ``emitted_ids``
  equals the contract's tree rule's, by cell enumeration (``exact._tree_cells``);
- greedy, ``tree_argmax``: at temperature 0 the emitted tokens are the argmax chain (each one the
  argmax of the row after the tokens before it; penalties see the kept path);
- parity, ``verify_tree``: the reference's ids and accepted nodes on shared logits and the same
  PCG32 stream (the draw order a port keeps), for both lossless rules, typical and greedy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import ImplementationError
from spec_verify.results import CheckResult, Status

__all__ = [
    "TREE_RULES_CHECKED",
    "check_tree_argmax",
    "check_tree_exact",
    "check_tree_law",
    "check_tree_parity",
    "random_tree_round",
    "tree_rounds",
]

Progress = Callable[[str], None]
TREE_RULES_CHECKED = ("with_replacement", "without_replacement")


def _has_trees(impl: Implementation) -> bool:
    return "verify_tree" in impl.capabilities


def _random_dist(rng: np.random.Generator, V: int, zeros: int = 0) -> tuple[Fraction, ...]:
    weights = rng.integers(1, 10, size=V)
    if zeros:
        weights[rng.choice(V, size=min(zeros, V - 1), replace=False)] = 0
    total = int(weights.sum())
    return tuple(Fraction(int(w), total) for w in weights)


def _random_parents(rng: np.random.Generator, n: int, max_children: int) -> list[int]:
    parents: list[int] = []
    for i in range(n):
        options = [o for o in (-1, *range(i)) if parents.count(o) < max_children]
        parents.append(int(rng.choice(options or [-1])))
    return parents


def random_tree_round(rng: np.random.Generator, V: int, n: int, rule: str,
                      deterministic: bool, max_children: int = 3) -> Any:
    """A random ``TreeRound``: ``n`` nodes, distinct siblings drawn from the node's draft row
    (so both rules accept it), target rows with some zeros."""
    from spec_verify.exact._tree_cells import TreeRound

    parents = _random_parents(rng, n, max_children)
    p_rows = tuple(_random_dist(rng, V, zeros=int(rng.integers(0, 3))) for _ in range(n + 1))
    q_rows = None if deterministic else tuple(_random_dist(rng, V) for _ in range(n + 1))
    kids: dict[int, list[int]] = {}
    for i, parent in enumerate(parents):
        kids.setdefault(parent, []).append(i)
    tokens = [0] * n
    for parent, children in kids.items():
        if q_rows is None:
            picks = rng.choice(V, size=len(children), replace=False)
        else:
            q = np.array([float(v) for v in q_rows[parent + 1]])
            picks = rng.choice(V, size=len(children), replace=False, p=q)
        for child, token in zip(children, picks, strict=True):
            tokens[child] = int(token)
    return TreeRound(p_rows, tuple(parents), tuple(tokens), q_rows, rule)


def tree_rounds(seed: int, count: int, max_V: int = 8, max_nodes: int = 7) -> list[Any]:
    """The hand examples of CONTRACT.md section 6, then seeded random trees (both rules,
    sampled and deterministic children)."""
    from spec_verify.exact._tree_cells import TreeRound

    F = Fraction
    p, q = (F(0), F(1, 2), F(1, 2)), (F(1, 2), F(1, 3), F(1, 6))
    rows = (p, (F(1, 3),) * 3, (F(0), F(0), F(1)))
    p2, q2 = (F(5, 16), F(1, 4), F(5, 16), F(1, 8)), (F(1, 4), F(3, 8), F(3, 16), F(3, 16))
    rounds = [
        TreeRound(rows, (-1, -1), (0, 1), (q, None, None), rule) for rule in TREE_RULES_CHECKED
    ] + [
        TreeRound((p2,) * 3, (-1, -1), (3, 1), (q2, None, None), rule)
        for rule in TREE_RULES_CHECKED
    ]
    rng = np.random.default_rng([seed, 16])
    for i in range(count):
        V = int(rng.integers(3, max_V + 1))
        n = int(rng.integers(1, max_nodes + 1))
        rule = TREE_RULES_CHECKED[i % 2]
        rounds.append(random_tree_round(rng, V, n, rule, deterministic=i % 3 == 2))
    return rounds


def check_tree_exact(impl: Any, *, seed: int = 0, quick: bool = False,
                     progress: Progress | None = None, count: int | None = None,
                     max_V: int = 8, max_nodes: int = 7) -> CheckResult | None:
    """Exact tier: per fixed tree, the implementation's law equals the reference rule's."""
    if not _has_trees(impl):
        return None
    from spec_verify.exact._theorems import compare
    from spec_verify.exact._tree_cells import contract_tree_law, enumerate_tree_round

    start = time.perf_counter()
    if "injected_uniforms" not in impl.capabilities:
        return CheckResult("exact", "tree", Status.SKIPPED,
                           f"{impl.name} does not take an injected uniform source")
    n = count if count is not None else (6 if quick else 24)
    rounds = tree_rounds(seed, n, max_V, max_nodes)
    if progress is not None:
        progress(f"exact/tree: per fixed tree, the law equals the rule's ({len(rounds)} trees)")
    calls = bound = 0
    worst: tuple[Status, str] | None = None
    order = (Status.FAILED, Status.ERROR, Status.NOT_PROVABLE)
    for number, rnd in enumerate(rounds):
        e = enumerate_tree_round(impl, rnd)
        calls += e.calls
        bound += e.lower_bound
        where = (f"tree {number} (parents {list(rnd.parents)}, tokens {list(rnd.token_ids)}, "
                 f"rule {rnd.rule}, V = {rnd.V})")
        if not e.complete:
            status = Status.ERROR if e.status == "error" else Status.NOT_PROVABLE
            found = (status, f"{where}: {e.reason} (uniforms {list(e.script)})")
        else:
            expected = contract_tree_law(rnd)
            status, key, diff = compare(e.distribution, expected, e.tolerance())
            if status is Status.PASSED:
                continue
            assert key is not None
            leaf = next((lf for lf in e.leaves if lf.emitted == key), None)
            found = (status, f"{where}: emitted {list(key)} has probability "
                     f"{e.distribution.get(key, Fraction(0))}, the rule's "
                     f"{expected.get(key, Fraction(0))} (difference {diff})"
                     + (f"; reproduce with uniforms {list(leaf.uniforms)}" if leaf else ""))
        if worst is None or order.index(found[0]) < order.index(worst[0]):
            worst = found
        if found[0] is Status.FAILED:
            break
    seconds = time.perf_counter() - start
    details = {"seed": seed, "trees": len(rounds), "calls": calls, "lower_bound": bound}
    repro = f"spec-verify prove --tree --impl {impl.name} --seed {seed}"
    if worst is None:
        return CheckResult(
            "exact", "tree", Status.PASSED,
            f"per fixed tree the law equals the rule's on {len(rounds)} trees ({calls} calls; "
            f"a sound method needs at least {bound})", n=len(rounds), details=details,
            repro=repro, seconds=seconds)
    return CheckResult("exact", "tree", worst[0], worst[1], n=len(rounds), details=details,
                       repro=repro, seconds=seconds)


def check_tree_law(impl: Any, *, seed: int = 0, quick: bool = False,
                   progress: Progress | None = None) -> CheckResult | None:
    """Exact tier: one round averaged over the draft draws follows the target's law."""
    if not _has_trees(impl):
        return None
    from spec_verify.exact._tree_law import TREE_LAW_CASES, prove_tree_law

    start = time.perf_counter()
    if "injected_uniforms" not in impl.capabilities:
        return CheckResult("exact", "tree_law", Status.SKIPPED,
                           f"{impl.name} does not take an injected uniform source (the "
                           "statistical tier's tree checks test its law)")
    cases = TREE_LAW_CASES[:1] if quick else TREE_LAW_CASES
    if progress is not None:
        progress(f"exact/tree_law: a round averaged over the drafts follows the target "
                 f"({len(cases)} tree shape{'' if len(cases) == 1 else 's'})")
    results = []
    for case in cases:
        result = prove_tree_law(impl, case)
        results.append(result)
        if result.status is not Status.PASSED:
            break
    details = {"cases": [r.to_json() for r in results]}
    calls = sum(r.calls for r in results)
    trees = sum(r.trees for r in results)
    last = results[-1]
    seconds = time.perf_counter() - start
    if last.status is Status.PASSED:
        shapes = ", ".join(f"{r.case.name} ({r.case.rule}, parents {list(r.case.parents)}"
                           + (f"; {r.reason}" if r.reason else "") + ")" for r in results)
        return CheckResult(
            "exact", "tree_law", Status.PASSED,
            f"one round averaged over every draft tree ({trees} trees; {calls} calls) and "
            f"continued with the target follows the target's law exactly: {shapes}",
            n=trees, details=details, seconds=seconds)
    where = (f"{last.case.name} ({last.case.rule}, parents {list(last.case.parents)}, "
             f"V = {last.case.V}, {last.case.length} tokens)")
    return CheckResult("exact", "tree_law", last.status,
                       f"averaged over the drafts, {where}: {last.reason}", n=trees,
                       details=details, seconds=seconds)


def _greedy_params(impl: Implementation, penalised: bool) -> Any:
    fields: dict[str, Any] = {"temperature": 0.0}
    if penalised:
        fields.update(presence_penalty=1.5, repetition_penalty=1.3)
    return impl.params(**fields)


def check_tree_argmax(impl: Any, *, seed: int = 0, quick: bool = False,
                      progress: Progress | None = None) -> CheckResult | None:
    """Greedy tier: each emitted token is the argmax after the tokens before it."""
    if not _has_trees(impl):
        return None
    from spec_verify.reference import SamplingParams, sampling_distribution

    start = time.perf_counter()
    rng = np.random.default_rng([seed, 161])
    cases = 60 if quick else 200
    if progress is not None:
        progress(f"greedy/tree_argmax: {cases} trees")
    for case in range(cases):
        V = int(rng.integers(2, 7))
        n = int(rng.integers(1, 9))
        parents = _random_parents(rng, n, 3)
        rows = rng.normal(size=(n + 1, V)) * 2
        tokens = [int(t) for t in rng.integers(0, V, size=n)]
        # make agreeing paths likely: a child often carries its parent's raw argmax
        for i, parent in enumerate(parents):
            if rng.random() < 0.6:
                tokens[i] = int(np.argmax(rows[parent + 1]))
        penalised = case % 2 == 1
        history = [int(t) for t in rng.integers(0, V, size=2)] if penalised else []
        oracle = SamplingParams(temperature=0, presence_penalty=1.5 if penalised else 0.0,
                                repetition_penalty=1.3 if penalised else 1.0)
        try:
            emitted, nodes = impl.verify_tree(rows, parents, tokens, None,
                                              _greedy_params(impl, penalised), history, None, [],
                                              rule="with_replacement")
        except ImplementationError as exc:
            return CheckResult("greedy", "tree_argmax", Status.ERROR, str(exc))
        except ValueError as exc:
            return CheckResult("greedy", "tree_argmax", Status.FAILED,
                               f"tree {case}: raised {type(exc).__name__}: {exc}")
        node, kept = -1, list[int]()
        for position, token in enumerate(emitted):
            best = int(np.argmax(sampling_distribution(rows[node + 1], oracle, history + kept)))
            if token != best:
                return CheckResult(
                    "greedy", "tree_argmax", Status.FAILED,
                    f"tree {case} (parents {parents}, tokens {tokens}, penalties "
                    f"{penalised}): emitted {emitted}; position {position} is {token}, the "
                    f"argmax after {kept} is {best}", details={"logits": rows.tolist()},
                    repro=f"spec-verify check --impl {impl.name} --tier greedy --seed {seed}")
            if position < len(nodes):
                node = nodes[position]
                kept.append(token)
    return CheckResult("greedy", "tree_argmax", Status.PASSED,
                       f"{cases} greedy trees emit the argmax chain", n=cases,
                       seconds=time.perf_counter() - start)


def check_tree_parity(impl: Any, *, seed: int = 0, quick: bool = False,
                      progress: Progress | None = None) -> CheckResult | None:
    """Parity tier: the reference's ids and accepted nodes on the same logits and stream."""
    if not _has_trees(impl) or "injected_uniforms" not in impl.capabilities:
        return None
    from spec_verify import reference as ref

    start = time.perf_counter()
    rng = np.random.default_rng([seed, 162])
    cases = 400 if quick else 2000
    if progress is not None:
        progress(f"parity/verify_tree: {cases} trees")
    rules = ("with_replacement", "without_replacement", "typical", "greedy")
    for case in range(cases):
        rule = rules[case % 4]
        V = int(rng.integers(2, 9))
        n = int(rng.integers(1, 11))
        parents = _random_parents(rng, n, 4)
        rows = rng.normal(size=(n + 1, V)) * 1.5
        q_rows: list[Any] | None = None
        tokens = [0] * n
        kids: dict[int, list[int]] = {}
        for i, parent in enumerate(parents):
            kids.setdefault(parent, []).append(i)
        sampled = rule in TREE_RULES_CHECKED and case % 3 != 0
        if sampled:
            q_rows = [rng.dirichlet(np.ones(V)) for _ in range(n + 1)]
        for parent, children in kids.items():
            p_draw = q_rows[parent + 1] if q_rows is not None else None
            replace = rule != "without_replacement" or len(children) > V
            picks = rng.choice(V, size=len(children), replace=replace, p=p_draw)
            for child, token in zip(children, picks, strict=True):
                tokens[child] = int(token)
        if rule == "without_replacement" and any(
                len({tokens[c] for c in ch}) < len(ch) for ch in kids.values()):
            rule = "with_replacement"
        fields: dict[str, Any] = {"temperature": 0.0 if rule == "greedy" else 1.0}
        stream = int(rng.integers(0, 2**63))
        call_rule = "with_replacement" if rule == "greedy" else rule
        expected = ref.verify_tree(rows, parents, tokens, q_rows, ref.SamplingParams(**fields),
                                   [], ref.request_rng(stream), rule=call_rule)
        try:
            got = impl.verify_tree(rows, parents, tokens, q_rows, _make(impl, fields), [],
                                   ref.request_rng(stream), [], rule=call_rule)
        except ImplementationError as exc:
            return CheckResult("parity", "verify_tree", Status.ERROR, str(exc))
        except ValueError as exc:
            return CheckResult("parity", "verify_tree", Status.FAILED,
                               f"tree {case}: raised {type(exc).__name__}: {exc}")
        if (list(got[0]), list(got[1])) != (list(expected[0]), list(expected[1])):
            return CheckResult(
                "parity", "verify_tree", Status.FAILED,
                f"tree {case} (rule {rule}, parents {parents}, tokens {tokens}, stream "
                f"{stream}): got ids {list(got[0])} nodes {list(got[1])}, the reference "
                f"{list(expected[0])} nodes {list(expected[1])}",
                repro=f"spec-verify check --impl {impl.name} --tier parity --seed {seed}")
    return CheckResult("parity", "verify_tree", Status.PASSED,
                       f"{cases} trees (both lossless rules, typical, greedy) match the "
                       "reference id for id and node for node", n=cases,
                       seconds=time.perf_counter() - start)


def _make(impl: Implementation, fields: dict[str, Any]) -> Any:
    return impl.params(**fields)
