"""``check --rule kseq|rrs``: conformance to a multi-draft rule over ``K`` chains
(CONTRACT.md section 12), for an implementation with ``verify_tree``.

- ``parity/rule.NAME``: random chains (K up to 4, L up to 4, V up to 8; RRS's drawn without
  replacement at every depth with a random branching, or i.i.d.), the rule module's emitted ids
  and accepted nodes on the same PCG32 stream, chain set for chain set;
- ``exact/rule.NAME``: for every draw of the chains of ``prove --rule``'s cases
  (``exact._multidraft.multidraft_cases``), the implementation's law by cell enumeration over its
  uniforms equals the rule's ``Fraction`` law (``multidraft_exact.exact_multidraft``).

The contract's tree rule (``parity/verify_tree``, ``exact/tree``) is not asked of these rules
(``tiers._rules.token_only_reason``); the law checks (``exact/tree_law``) are.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from spec_verify.errors import ImplementationError
from spec_verify.results import CheckResult, Progress, Status

__all__ = ["MULTIDRAFT_CHECK_RULES", "check_multidraft_exact", "check_multidraft_parity"]

# rule -> (the reference module, the drafting rules its chains come in)
MULTIDRAFT_CHECK_RULES = {
    "kseq": ("kseq_chains", ("with_replacement",)),
    "rrs": ("rrs", ("without_replacement", "with_replacement")),
}


def _module(rule: str) -> Any:
    import importlib

    return importlib.import_module(f"spec_verify.reference.{MULTIDRAFT_CHECK_RULES[rule][0]}")


def _no_tree(check: str, impl: Any, rule: str) -> CheckResult | None:
    if "verify_tree" in impl.capabilities:
        return None
    tier, name = check.split("/")
    return CheckResult(tier, name, Status.ERROR,
                       f"{impl.name} has no verify_tree: --rule {rule} verifies K draft chains "
                       "in verify_tree's layout (CONTRACT.md section 12); export verify_tree, "
                       "or check with --rule token|block|sampler_match")


def _random_round(rng: np.random.Generator, drafting: str
                  ) -> tuple[list[int], list[int], np.ndarray, list[Any]]:
    """``(parents, tokens, logits, draft rows)`` of one random chain set."""
    from spec_verify.reference._multidraft import branched_parents, chain_parents

    V = int(rng.integers(2, 9))
    L = int(rng.integers(1, 5))
    if drafting == "without_replacement":
        branching = [int(rng.integers(1, min(V, 3) + 1)) for _ in range(L)]
        while int(np.prod(branching)) > 6:
            branching[int(rng.integers(L))] = 1
        tree = branched_parents(branching)
    else:
        K = int(rng.integers(1, 5))
        tree = chain_parents(K, L)
    # draw the tree (node children without replacement when asked), then lay it out as chains
    n = len(tree)
    kids: dict[int, list[int]] = {i: [] for i in range(-1, n)}
    for i, parent in enumerate(tree):
        kids[parent].append(i)
    tokens = [0] * n
    paths: dict[int, tuple[int, ...]] = {-1: ()}
    after: dict[tuple[int, ...], np.ndarray] = {}

    def q_of(path: tuple[int, ...]) -> np.ndarray:
        if path not in after:
            after[path] = rng.dirichlet(np.ones(V) * 0.7)
        return after[path]

    for node in range(-1, n):
        children = kids[node]
        if not children:
            continue
        q = q_of(paths[node])
        picks = rng.choice(V, size=len(children), replace=drafting != "without_replacement",
                           p=q)
        for child, token in zip(children, picks, strict=True):
            tokens[child] = int(token)
            paths[child] = (*paths[node], int(token))
    leaves = [i for i in range(n) if not kids[i]]
    order: list[int] = []
    for leaf in leaves:
        path = [leaf]
        while tree[path[-1]] != -1:
            path.append(tree[path[-1]])
        order += reversed(path)
    K = len(leaves)
    parents = chain_parents(K, len(order) // K)
    chain_tokens = [tokens[i] for i in order]
    logits_of: dict[tuple[int, ...], np.ndarray] = {}

    def logits(path: tuple[int, ...]) -> np.ndarray:
        if path not in logits_of:
            logits_of[path] = rng.normal(size=V) * 1.5
        return logits_of[path]

    node_paths = [()] + [paths[i] for i in order]
    rows = np.vstack([logits(p) for p in node_paths])
    # a leaf's entry is unused: None; every inner entry is its node's row
    q_rows: list[Any] = [None if (i > 0 and (i - 1) % (len(order) // K) == len(order) // K - 1)
              else q_of(p) for i, p in enumerate(node_paths)]
    return parents, chain_tokens, rows, q_rows


def check_multidraft_parity(impl: Any, rule: str, *, seed: int = 0, quick: bool = False,
                            progress: Progress | None = None) -> CheckResult:
    """``parity/rule.NAME``: the rule module's ids and nodes on the same stream."""
    from spec_verify import reference as ref

    name = f"rule.{rule}"
    missing = _no_tree(f"parity/{name}", impl, rule)
    if missing is not None:
        return missing
    start = time.perf_counter()
    module = _module(rule)
    draftings = MULTIDRAFT_CHECK_RULES[rule][1]
    rng = np.random.default_rng([seed, 1212])
    cases = 300 if quick else 1500
    if progress is not None:
        progress(f"parity/{name}: {cases} chain sets")
    for case in range(cases):
        drafting = draftings[case % len(draftings)]
        parents, tokens, rows, q_rows = _random_round(rng, drafting)
        stream = int(rng.integers(0, 2**63))
        want = module.verify_tree(rows, parents, tokens, q_rows, ref.SamplingParams(), [],
                                  ref.request_rng(stream), rule=drafting)
        where = (f"chain set {case} (rule {drafting}, parents {parents}, tokens {tokens}, "
                 f"stream {stream})")
        try:
            got = impl.verify_tree(rows, parents, tokens, q_rows, impl.params(temperature=1.0),
                                   [], ref.request_rng(stream), [], rule=drafting)
        except ImplementationError as exc:
            return CheckResult("parity", name, Status.ERROR, f"{where}: {exc}", n=case)
        except ValueError as exc:
            return CheckResult("parity", name, Status.FAILED,
                               f"{where}: raised {type(exc).__name__}: {exc}", n=case + 1)
        if (list(got[0]), list(got[1])) != (list(want[0]), list(want[1])):
            return CheckResult(
                "parity", name, Status.FAILED,
                f"{where}: got ids {list(got[0])} nodes {list(got[1])}, the {rule} rule "
                f"(CONTRACT.md section 12) {list(want[0])} nodes {list(want[1])}",
                n=case + 1, seconds=time.perf_counter() - start,
                repro=f"spec-verify check --impl {impl.name} --rule {rule} --tier parity "
                      f"--seed {seed}")
    return CheckResult("parity", name, Status.PASSED,
                       f"{cases} chain sets ({', '.join(draftings)}; K up to 6, L up to 4, V "
                       f"up to 8) match the {rule} rule id for id and node for node",
                       n=cases, seconds=time.perf_counter() - start)


def check_multidraft_exact(impl: Any, rule: str, *, quick: bool = False,
                           progress: Progress | None = None, repro: str = "") -> CheckResult:
    """``exact/rule.NAME``: per drawn chain set of the ``prove --rule`` cases, the
    implementation's law is the rule's, exactly."""
    from spec_verify.exact._multidraft import (
        _own_law,
        _show,
        chain_rounds,
        enumerate_multidraft_round,
        multidraft_cases,
    )

    name = f"rule.{rule}"
    missing = _no_tree(f"exact/{name}", impl, rule)
    if missing is not None:
        return missing
    start = time.perf_counter()
    cases = multidraft_cases()
    if quick:  # kseq: 9 chain sets; rrs: heads only, and chains sharing a prefix (24)
        cases = [cases[0]] if rule == "kseq" else [cases[0], cases[4]]
    rounds = [(case.name, rnd) for case in cases for rnd, _ in chain_rounds(case, rule)]
    unproven = None
    for done, (case_name, rnd) in enumerate(rounds):
        if progress:
            progress(f"exact: {name} chain set {done + 1}/{len(rounds)}")
        where = f"{case_name}, chains {list(rnd.token_ids)} ({rnd.rule})"
        found = enumerate_multidraft_round(impl, rnd, rule)
        if found.status == "error":
            return CheckResult("exact", name, Status.ERROR,
                               f"{where}: the implementation failed: {found.reason}",
                               n=done, repro=repro, seconds=time.perf_counter() - start)
        if not found.complete:
            unproven = unproven or f"{where}: not provable ({found.reason})"
            continue
        got = {k: v for k, v in found.distribution.items() if v}
        want = {k: v for k, v in _own_law(rnd, rule).items() if v}
        if got != want:
            return CheckResult(
                "exact", name, Status.FAILED,
                f"{where}: the round law differs from the {rule} rule's (CONTRACT.md section "
                f"12):\n  {rule}: {_show(want)}\n  implementation: {_show(got)}",
                n=done + 1, repro=repro, seconds=time.perf_counter() - start,
                details={"case": case_name, "token_ids": list(rnd.token_ids)})
    seconds = time.perf_counter() - start
    if unproven is not None:
        return CheckResult("exact", name, Status.NOT_PROVABLE, unproven, n=len(rounds),
                           repro=repro, seconds=seconds)
    return CheckResult(
        "exact", name, Status.PASSED,
        f"{len(rounds)} chain sets (every draw of the prove --rule {rule} cases "
        f"{', '.join(c.name for c in cases)}): the {rule} rule's law for each, exactly",
        n=len(rounds), seconds=seconds)
