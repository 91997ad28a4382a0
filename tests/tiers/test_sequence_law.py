"""The lossless question for chains is the law of everything a round emits (the
``sequence.law_*`` checks), not the first token's and not the token rule's tuple law.

Block verification (reference/block.py; its planted bugs in tests/impls/_block.py) is
lossless and accepts more than the token rule: it passes every law check and fails only the
token rule's tuple law, an efficiency check.
Each planted bug below keeps the first token's law (``first_token.sampled_draft`` passes on
it) and moves the joint law of a round, which a law check catches: these are the negative
controls of the chain law checks.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from spec_verify.adapters import load_implementation
from spec_verify.profiles import Claim, claim_of
from spec_verify.reference.exact import exact_target_sequences
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers.statistical import (
    STATISTICAL_CHECKS,
    ChainLawCheck,
    run_statistical_tier,
)

LAW_CHECKS = [c.name for c in STATISTICAL_CHECKS if isinstance(c, ChainLawCheck)]
FIRST = "first_token.sampled_draft"


def _statuses(spec: str, names: list[str]) -> dict[str, Status]:
    impl = load_implementation(spec)
    try:
        return {r.name: r.status for r in run_statistical_tier(impl, checks=names, quick=True)}
    finally:
        impl.close()


def test_the_chain_law_checks_are_law_checks_with_two_to_four_drafts() -> None:
    checks = [c for c in STATISTICAL_CHECKS if isinstance(c, ChainLawCheck)]
    assert sorted(c.m for c in checks) == [2, 3, 4]
    assert any(c.deterministic for c in checks)
    assert all(claim_of("statistical", c.name) is Claim.LAW for c in checks)


@pytest.mark.parametrize("check", [c for c in STATISTICAL_CHECKS if isinstance(c, ChainLawCheck)],
                         ids=lambda c: c.name)
def test_the_expected_law_is_the_targets_joint_law_built_independently(check) -> None:
    """Rebuilt here from the tables by the chain rule, not by the tier's code path."""
    target, _ = check._tables
    law = exact_target_sequences(target.__getitem__, (), check.m + 1)
    assert sum(law.values()) == 1
    by_hand: dict[tuple[int, ...], Fraction] = {}
    for seq in law:
        prob = Fraction(1)
        for i, token in enumerate(seq):
            prob *= target[seq[:i]][token]
        by_hand[seq] = prob
    assert {s: float(v) for s, v in by_hand.items() if v} == check.probabilities()


def test_the_reference_passes_the_chain_law_checks(reference) -> None:
    results = run_statistical_tier(reference, checks=LAW_CHECKS, quick=True)
    assert [r.status for r in results] == [Status.PASSED] * len(LAW_CHECKS), [
        r.message for r in results
    ]


def test_block_verification_passes_every_law_check_and_fails_only_the_token_rules_tuple() -> None:
    found = _statuses("python:tests.impls.block_verify", [FIRST, "sequence.two_drafts",
                                                          *LAW_CHECKS])
    assert found.pop("sequence.two_drafts") is Status.FAILED  # it accepts more: efficiency
    assert set(found.values()) == {Status.PASSED}, found


@pytest.mark.parametrize(
    ("module", "caught_by"),
    [
        ("block_unadjusted_residual", "sequence.law_k2"),  # vllm-ascend #7807/#7808
        ("block_wrong_stop", "sequence.law_k2"),
        ("block_prefix_stop", "sequence.law_k2"),  # the forward scan cut at its first failure
        ("bonus_wrong_row", "sequence.law_k2"),
        ("reused_uniform", "sequence.law_k4"),
    ],
)
def test_a_bias_after_the_first_token_fails_a_law_check(module: str, caught_by: str) -> None:
    found = _statuses(f"python:tests.impls.{module}", [FIRST, caught_by])
    assert found == {FIRST: Status.PASSED, caught_by: Status.FAILED}


@pytest.mark.slow  # 43 s; the fast test above runs every statistical law check on it
def test_block_verification_passes_the_lossless_gate() -> None:
    report = run_checks("python:tests.impls.block_verify", profile="lossless", quick=True)
    assert report.passed, [f"{r.tier}/{r.name}: {r.message}" for r in report.failures()]
    by_name = {(r.tier, r.name): r for r in report.results}
    # the token rule's round length and tuple law are efficiency: reported, never failing
    assert by_name[("exact", "expected_length")].status is Status.FAILED
    assert by_name[("statistical", "sequence.two_drafts")].status is Status.FAILED
    for name in LAW_CHECKS:
        assert by_name[("statistical", name)].status is Status.PASSED


@pytest.mark.slow  # 39 s; the fast law-check test above fails the same bugs check by check
def test_a_block_verifier_with_a_wrong_residual_fails_the_lossless_gate_by_a_law_check() -> None:
    report = run_checks("python:tests.impls.block_unadjusted_residual", profile="lossless",
                        quick=True)
    assert not report.passed
    failed = {(r.tier, r.name) for r in report.failures()}
    assert all(claim_of(tier, name) is Claim.LAW for tier, name in failed)
    assert ("statistical", "sequence.law_k2") in failed
