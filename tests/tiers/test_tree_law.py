"""The lossless claim for trees, ``exact/tree_law``: one round averaged over every draft tree the
rule draws, continued with the target, is the target's law, as ``Fraction``s, whatever the
multi-draft rule. SpecTr's K-SEQ (tests/impls/_kseq_tree.py) passes it and fails the
per-fixed-tree conformance check ``exact/tree``; its planted bug keeps the first token's law and
fails the law check (the negative control). The deeper leaf audit the check needs has its own
negative control: the plain star audit misses a K-SEQ breakpoint."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.exact._tree_cells import enumerate_tree_round
from spec_verify.exact._tree_law import TREE_LAW_CASES, drafted_trees, prove_tree_law
from spec_verify.profiles import Claim, claim_of
from spec_verify.reference.exact import exact_target_sequences
from spec_verify.reference.kseq import kseq_rho
from spec_verify.reference.tree_exact import first_token_law
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers.statistical import run_statistical_tier
from spec_verify.tiers.tree import check_tree_exact, check_tree_law

KSEQ = "python:tests.impls.kseq_tree"
KSEQ_BUG = "python:tests.impls.kseq_tree_bonus_root"


def _with(spec: str, run: Any) -> Any:
    impl = load_implementation(spec)
    try:
        return run(impl)
    finally:
        impl.close()


def test_tree_law_is_a_law_check_and_tree_conformance() -> None:
    assert claim_of("exact", "tree_law") is Claim.LAW
    assert claim_of("exact", "tree") is Claim.CONFORMANCE


@pytest.mark.parametrize("case", TREE_LAW_CASES, ids=lambda c: c.name)
def test_the_drafted_trees_are_a_distribution_and_the_expected_law_the_targets(case) -> None:
    trees = list(drafted_trees(case))
    assert sum(w for _, w in trees) == 1
    target, _ = case.tables()
    assert target((0,)) != target((1,))  # rows depend on the context
    law = exact_target_sequences(target, (), case.length)
    for seq in itertools.product(range(case.V), repeat=case.length):
        prob = Fraction(1)
        for i, token in enumerate(seq):
            prob *= target(seq[:i])[token]
        assert law.get(seq, Fraction(0)) == prob
    if case.rule == "with_replacement" and len(case.parents) >= 2:
        assert len(trees) == case.V ** len(case.parents)


def test_the_reference_passes(reference) -> None:
    result = check_tree_law(reference, quick=True)
    assert result is not None and result.status is Status.PASSED, result.message


def test_kseq_passes_the_law_and_fails_per_tree_conformance() -> None:
    law, per_tree = _with(KSEQ, lambda impl: (check_tree_law(impl, quick=True),
                                              check_tree_exact(impl, quick=True)))
    assert law.status is Status.PASSED, law.message
    assert per_tree.status is Status.FAILED, per_tree.message


def test_a_kseq_bug_after_the_first_token_fails_the_law() -> None:
    """Negative control: the bonus after a kept leaf from the root's row. The first token's law
    averaged over the drafts is still the target's; the law of two tokens is not."""
    case = TREE_LAW_CASES[0]
    result = _with(KSEQ_BUG, lambda impl: prove_tree_law(impl, case))
    assert result.status is Status.FAILED, result.reason
    target, _ = case.tables()
    first = first_token_law(result.law)
    assert set(first) == {t for t, v in enumerate(target(())) if v}
    assert all(abs(first[t] - target(())[t]) < 1e-9 for t in first)  # breakpoints located


def _kseq_law(rnd: Any) -> dict[tuple[int, ...], Fraction]:
    """K-SEQ's exact law on the tree (-1, -1, 0) by hand: K = 2 at the root, the token rule
    below node 0, the bonus after node 1 (rho as the float rule picks it)."""
    P, Q, x = rnd.p_rows, rnd.q_rows, rnd.token_ids

    def step(p: Any, q: Any, drafts: list[int]) -> tuple[list[Fraction], list[Fraction]]:
        K = len(drafts)
        rho = Fraction(kseq_rho(np.array([float(v) for v in p]),
                                np.array([float(v) for v in q]), K))
        m = [min(b, a / rho) for a, b in zip(p, q, strict=True)]
        a = sum(m, Fraction(0))
        c = (1 - (1 - a) ** K) / a
        keeps, rejected = [], Fraction(1)
        for d in drafts:
            keep = min(Fraction(1), p[d] / (rho * q[d]))
            keeps.append(rejected * keep)
            rejected *= 1 - keep
        return keeps, [rejected * (v - c * w) / (1 - a) ** K for v, w in zip(p, m, strict=True)]

    law: dict[tuple[int, ...], Fraction] = {}

    def add(seq: tuple[int, ...], prob: Fraction) -> None:
        if prob:
            law[seq] = law.get(seq, Fraction(0)) + prob

    keeps, residual = step(P[0], Q[0], [x[0], x[1]])
    for t, v in enumerate(residual):
        add((t,), v)
    below, residual0 = step(P[1], Q[1], [x[2]])
    for t, v in enumerate(residual0):
        add((x[0], t), keeps[0] * v)
    for t, v in enumerate(P[3]):
        add((x[0], x[2], t), keeps[0] * below[0] * v)
    for t, v in enumerate(P[2]):
        add((x[1], t), keeps[1] * v)
    return law


def test_the_deeper_audit_finds_a_breakpoint_the_star_audit_misses() -> None:
    """On the tree (2, 2, 0) K-SEQ's two sides of its first breakpoint emit (2, 2) at the leaf's
    later uniforms: the plain audit takes one cell (negative control); the deeper one finds
    K-SEQ's exact law."""
    rnd = next(r for r, _ in drafted_trees(TREE_LAW_CASES[1]) if r.token_ids == (2, 2, 0))
    expected = _kseq_law(rnd)
    plain, deep = _with(KSEQ, lambda impl: (enumerate_tree_round(impl, rnd),
                                            enumerate_tree_round(impl, rnd, deep_audit=True)))
    assert plain.complete and plain.distribution == {(2, 2): Fraction(1)} != expected
    assert deep.complete
    assert max(abs(deep.distribution.get(k, 0) - v) for k, v in expected.items()) < 1e-9
    assert set(deep.distribution) == set(expected)


def _tree_check(spec: str) -> Status:
    name = "tree.b4_d1_repeats"  # four siblings at one position: K-SEQ's K = 4
    return _with(spec, lambda impl: run_statistical_tier(impl, checks=[name], quick=True)[0]
                 .status)


@pytest.mark.slow
def test_own_randomness_kseq_passes_the_four_sibling_law_and_its_bug_fails() -> None:
    """The statistical tier's tree law check (the tier's alpha, power 0.99 against TV 0.1) on
    K-SEQ driven by its own generator; the planted bug (a kept leaf's bonus) fails it."""
    assert _tree_check("python:tests.impls.kseq_tree_own") is Status.PASSED
    assert _tree_check("python:tests.impls.kseq_tree_own_bonus_root") is Status.FAILED


@pytest.mark.slow
def test_kseq_passes_the_lossless_exact_gate_and_its_bug_fails_it_by_a_law_check() -> None:
    """The lossless profile's exact tier (the statistical tier's tree checks: above)."""
    report = run_checks(KSEQ, tiers=["exact"], quick=True, profile="lossless")
    assert report.passed, [r.message for r in report.failures()]
    results = {(r.tier, r.name): r.status for r in report.results}
    assert results["exact", "tree_law"] is Status.PASSED
    assert results["exact", "tree"] is Status.NOT_APPLICABLE
    bug = run_checks(KSEQ_BUG, tiers=["exact"], quick=True, profile="lossless")
    failing = {(r.tier, r.name) for r in bug.failures()}
    assert failing == {("exact", "tree_law")}
    assert claim_of("exact", "tree_law") is Claim.LAW
