"""The statistical tier's tree checks: their laws are the target's joint (exactly), the harness
draws trees as the rule says, a correct tree sampler with its own generator passes the lossless
profile and a tree mutant behind its own generator fails it; the Rust port passes them across
the C ABI and its planted tree bug fails them. Each check's negative control at exactly delta is
``test_statistical.py::test_a_sampler_wrong_by_exactly_delta_is_caught`` (parametrised over
every check, these included)."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.profiles import Claim, claim_of
from spec_verify.reference.tree_exact import (
    depth_of,
    exact_tree_round,
    exact_tree_verify,
    extend_to,
)
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers.statistical import (
    STATISTICAL_CHECKS,
    TreeAcceptanceCheck,
    TreeCheck,
    run_statistical_tier,
)

# the law checks (the efficiency check is a TreeCheck too: it measures the same round)
TREE_CHECKS = [c for c in STATISTICAL_CHECKS
               if isinstance(c, TreeCheck) and not isinstance(c, TreeAcceptanceCheck)]
TREE_NAMES = [c.name for c in TREE_CHECKS]
ACCEPTANCE = next(c for c in STATISTICAL_CHECKS if isinstance(c, TreeAcceptanceCheck))
QUICK = 0.1  # delta of the runs below: 2,000 to 3,200 draws per check; the seed is fixed


def _joint(check: TreeCheck) -> dict[tuple[int, ...], Fraction]:
    """The target's own law of ``check.length`` tokens, straight from its table."""
    target, _ = check._tables
    law: dict[tuple[int, ...], Fraction] = {}
    for seq in itertools.product(range(check.vocab_size), repeat=check.length):
        prob = Fraction(1)
        for i in range(check.length):
            prob *= target[seq[:i]][seq[i]]
        if prob:
            law[seq] = prob
    return law


def test_the_checks_cover_branching_1_to_4_and_depth_1_to_5_and_are_law_checks() -> None:
    branching = set()
    for check in TREE_CHECKS:
        kids: dict[int, int] = {}
        for parent in check._parents:
            kids[parent] = kids.get(parent, 0) + 1
        branching |= set(kids.values())
        assert claim_of("statistical", check.name) is Claim.LAW
    assert branching == {1, 2, 3, 4}
    assert {depth_of(c.shape) for c in TREE_CHECKS} >= {1, 2, 4, 5}
    assert {c.rule for c in TREE_CHECKS} == {"with_replacement", "without_replacement"}


@pytest.mark.parametrize("check", TREE_CHECKS, ids=TREE_NAMES)
def test_each_law_is_the_targets_joint_exactly(check: TreeCheck) -> None:
    """The reference's Fraction path (the tree round averaged over the draft's draws, continued
    with the target) is the target's joint: the check tests the lossless law, not the rule's
    acceptance."""
    target, draft = check._tables
    if check.tokens is None:
        law = exact_tree_round(target.__getitem__, draft.__getitem__, (), check.shape, check.rule)
    else:
        rows = [target[prefix] for prefix in check._prefixes(check.tokens)]
        law = exact_tree_verify(rows, check._parents, check.tokens, None, check.rule)
    assert extend_to(law, target.__getitem__, (), check.length) == _joint(check)
    assert check.probabilities() == {k: float(v) for k, v in sorted(_joint(check).items())}


def test_the_harness_draws_siblings_as_the_rule_says() -> None:
    rng = np.random.default_rng(5)
    wide = next(c for c in TREE_CHECKS if c.name == "tree.b4_d1_repeats")
    repeats = sum(len(set(wide._draw_tokens(rng.random(4)))) < 4 for _ in range(2000))
    assert repeats > 1000  # with replacement from a draft favouring token 0: most rounds repeat
    without = next(c for c in TREE_CHECKS if c.rule == "without_replacement")
    for _ in range(500):
        tokens = without._draw_tokens(rng.random(len(without._parents)))
        for parent in set(without._parents):
            siblings = [t for t, p in zip(tokens, without._parents, strict=True) if p == parent]
            assert len(set(siblings)) == len(siblings)
    fixed = next(c for c in TREE_CHECKS if c.tokens is not None)
    assert fixed.tokens == (1, 1, 0, 2, 2)  # siblings repeat a token


def _trees(spec: str, names: list[str] = TREE_NAMES) -> list[Any]:
    """The tree checks at delta 0.1, the implementation in this process (one call per tree
    round: a worker would cost a round trip each)."""
    return run_statistical_tier(load_implementation(spec, in_process=True), checks=names,
                                delta=QUICK)


# ---- efficiency: how much a round accepts --------------------------------------------------


def test_the_acceptance_law_is_the_rules_averaged_over_every_drafted_tree() -> None:
    """An independent path to the same law: every drafted tree (children i.i.d. from their
    parent's draft row) weighted by its probability, each verified exactly."""
    check = ACCEPTANCE
    assert claim_of("statistical", check.name) is Claim.EFFICIENCY
    target, draft = check._tables
    parents = check._parents
    law: dict[int, Fraction] = {}
    for tokens in itertools.product(range(check.vocab_size), repeat=len(parents)):
        paths = check._prefixes(tokens)
        weight = Fraction(1)
        for node, parent in enumerate(parents):
            weight *= draft[paths[parent + 1]][tokens[node]]
        if not weight:
            continue
        rows = [target[path] for path in paths]
        q_rows = [draft.get(path) for path in paths]
        for emitted, prob in exact_tree_verify(rows, parents, tokens, q_rows,
                                               check.rule).items():
            law[len(emitted) - 1] = law.get(len(emitted) - 1, Fraction(0)) + weight * prob
    assert sum(law.values()) == 1
    assert check.probabilities() == {k: float(v) for k, v in sorted(law.items()) if v}


def test_a_lossless_sampler_that_accepts_nothing_fails_only_the_efficiency_check() -> None:
    names = [*TREE_NAMES, ACCEPTANCE.name]
    assert all(r.status is Status.PASSED for r in _trees("reference", names))
    results = {r.name: r for r in _trees("python:tests.impls.own_tree_never_accepts", names)}
    assert results[ACCEPTANCE.name].status is Status.FAILED
    assert all(results[name].status is Status.PASSED for name in TREE_NAMES), results


def test_a_tree_mutant_fails_the_checks_the_reference_passes() -> None:
    passed = _trees("reference")
    assert [r.status for r in passed] == [Status.PASSED] * len(TREE_NAMES), passed
    failed = _trees("mutant:t02")
    by_name = {r.name: r for r in failed}
    # t02: the draft not renormalised after a draw without replacement
    assert by_name["tree.b2_d4_without_replacement"].status is Status.FAILED
    assert by_name["tree.b2_d4_without_replacement"].message.startswith("not the target (p=")


# ---- own randomness under the lossless profile -----------------------------------------------


def test_own_randomness_the_tree_checks_pass_a_correct_sampler_and_fail_a_mutant() -> None:
    assert all(r.status is Status.PASSED for r in _trees("python:tests.impls.own_tree"))
    failed = {r.name for r in _trees("python:tests.impls.own_tree_t01")
              if r.status is Status.FAILED}
    assert "tree.b4_d1_repeats" in failed


def _lossless(module: str) -> Any:
    return run_checks(f"python:tests.impls.{module}", quick=True, profile="lossless")


@pytest.mark.slow
def test_a_correct_tree_sampler_with_its_own_generator_passes_the_lossless_profile() -> None:
    report = _lossless("own_tree")
    assert report.passed, [r.message for r in report.failures()]
    results = {(r.tier, r.name): r for r in report.results}
    for name in TREE_NAMES:
        assert results["statistical", name].status is Status.PASSED
    assert results["exact", "injected_uniforms"].status is Status.NOT_APPLICABLE


@pytest.mark.slow
def test_a_tree_mutant_with_its_own_generator_fails_the_lossless_profile() -> None:
    report = _lossless("own_tree_t01")
    assert not report.passed
    failing = {(r.tier, r.name) for r in report.failures()}
    assert ("statistical", "tree.b4_d1_repeats") in failing
    assert all(tier == "statistical" and name in TREE_NAMES for tier, name in failing), failing
