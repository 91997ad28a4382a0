"""``check --rule kseq|rrs`` (spec_verify/tiers/_multidraft_rules.py): the K-chain rules'
references pass parity and the exact per-chains law, every planted bug of theirs fails both,
and the contract's tree rule is not asked of them."""

from __future__ import annotations

import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.mutants.rules import MULTIDRAFT_OF_MUTANT, load_rule_mutant
from spec_verify.results import Status
from spec_verify.tiers._multidraft_rules import check_multidraft_exact, check_multidraft_parity
from spec_verify.tiers._rules import CHECK_RULES, check_rule_exact, token_only_reason

MODULES = {"kseq": "python:spec_verify.reference.kseq_chains",
           "rrs": "python:spec_verify.reference.rrs"}


def test_the_rules_are_check_rules() -> None:
    from spec_verify.cli import build_parser

    assert {"kseq", "rrs"} <= set(CHECK_RULES)
    args = build_parser().parse_args(["check", "--impl", MODULES["rrs"], "--rule", "rrs"])
    assert args.rule == "rrs"


@pytest.mark.parametrize("rule", sorted(MODULES))
def test_the_reference_of_each_rule_passes_both_checks(rule) -> None:
    impl = load_implementation(MODULES[rule], in_process=True)
    parity = check_multidraft_parity(impl, rule, quick=True)
    assert parity.status is Status.PASSED and parity.name == f"rule.{rule}", parity.message
    exact = check_rule_exact(impl, rule, quick=True)  # routed to check_multidraft_exact
    assert exact.status is Status.PASSED and exact.tier == "exact", exact.message


@pytest.mark.parametrize("mutant", sorted(MULTIDRAFT_OF_MUTANT))
def test_every_planted_bug_fails_both_checks(mutant) -> None:
    rule = MULTIDRAFT_OF_MUTANT[mutant][1]
    impl = load_rule_mutant(f"mutant:{mutant}")
    parity = check_multidraft_parity(impl, rule, quick=True)
    assert parity.status is Status.FAILED and "the " + rule + " rule" in parity.message
    exact = check_multidraft_exact(impl, rule, quick=True, repro="r")
    assert exact.status is Status.FAILED and exact.repro == "r", exact.message
    assert "implementation: {" in exact.message


def test_another_multidraft_rule_is_not_conformant() -> None:
    """K-SEQ's module under --rule rrs: refused chains drawn without replacement (FAILED)."""
    impl = load_implementation(MODULES["kseq"], in_process=True)
    assert check_multidraft_parity(impl, "rrs", quick=True).status is Status.FAILED


def test_a_module_without_verify_tree_is_an_error_naming_it() -> None:
    impl = load_implementation("python:spec_verify.reference.block", in_process=True)
    for check in (check_multidraft_parity, check_multidraft_exact):
        result = check(impl, "kseq", quick=True)
        assert result.status is Status.ERROR and "no verify_tree" in result.message


def test_the_contract_tree_rule_is_not_asked() -> None:
    for tier, name in (("exact", "tree"), ("parity", "verify_tree"), ("parity", "verify_draft")):
        assert "section 12" in (token_only_reason(tier, name, "kseq") or "")
        assert token_only_reason(tier, name, "block") is None
    assert token_only_reason("exact", "tree_law", "rrs") is None  # the law is asked


def test_the_parity_tier_under_a_multidraft_rule() -> None:
    from spec_verify.tiers.parity import run_parity_tier

    impl = load_implementation(MODULES["rrs"], in_process=True)
    names = [r.name for r in run_parity_tier(impl, quick=True, rule="rrs")]
    assert "rule.rrs" in names and "verify_tree" not in names
