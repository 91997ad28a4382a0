"""``check --rule NAME``: parity and exact conformance to block verification and sampler-match.

Each rule's correct Python implementation (its reference module) passes its rule's checks and
fails the token rule's; every rule mutant fails the check that names its rule; the token
rule's own mechanics are not asked under another rule. Measured on 2 cores: about 8 s.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.mutants.rules import RULE_OF_MUTANT, load_rule_mutant
from spec_verify.profiles import Claim, Profile, claim_of, not_applicable_reason
from spec_verify.results import CheckResult, Status
from spec_verify.runner import repro_command, result_blocks
from spec_verify.tiers._cases import verify_case
from spec_verify.tiers._rules import CHECK_RULES, check_rule, check_rule_exact, rule_outcome
from spec_verify.tiers.parity import run_parity_tier

MODULES = {
    "block": "python:spec_verify.reference.block",
    "sampler_match": "python:spec_verify.reference.sampler_match",
}
N_CASES = 300  # parity cases per run: b01, b03 and m01 differ on 15 to 180 of them (seed 0)


def _parity(impl, rule: str) -> CheckResult:
    [verify, *_] = run_parity_tier(impl, n_cases=N_CASES, rule=rule)
    assert verify.name == "verify_draft"
    return verify


@pytest.mark.parametrize("rule", sorted(MODULES))
def test_the_rule_module_conforms_to_its_rule(rule):
    impl = load_implementation(MODULES[rule], in_process=True)
    assert _parity(impl, rule).status is Status.PASSED
    exact = check_rule_exact(impl, rule, quick=True)
    assert exact.status is Status.PASSED, exact.message
    assert exact.name == f"rule.{rule}" and exact.n > 10


@pytest.mark.parametrize("rule", sorted(MODULES))
def test_the_token_rule_does_not_conform_to_another_rule(rule):
    """The negative control of both checks: the contract's reference is not block
    verification nor sampler-match, and says which law it has instead."""
    impl = load_implementation("reference", in_process=True)
    parity = _parity(impl, rule)
    assert parity.status is Status.FAILED
    assert f"differ from the {rule} rule" in parity.message
    assert f"--rule {rule}" in parity.repro
    exact = check_rule_exact(impl, rule, quick=True)
    assert exact.status is Status.FAILED
    assert f"the {rule} rule's (CONTRACT.md section" in exact.message


@pytest.mark.parametrize("rule", sorted(MODULES))
def test_a_rule_module_is_non_conformant_to_the_token_rule_never_lossy(rule):
    impl = load_implementation(MODULES[rule], in_process=True)
    parity = _parity(impl, "token")
    assert parity.status is Status.FAILED
    assert claim_of(parity.tier, parity.name) is Claim.CONFORMANCE


# check --rule covers CHECK_RULES; traversal's mutants are proven WRONG by prove --rule only
@pytest.mark.parametrize("mutant", sorted(m for m, r in RULE_OF_MUTANT.items()
                                          if r in CHECK_RULES))
def test_every_rule_mutant_fails_the_exact_check_of_its_rule(mutant):
    rule = RULE_OF_MUTANT[mutant]
    impl = load_rule_mutant(f"mutant:{mutant}")
    exact = check_rule_exact(impl, rule, quick=True, repro="r")
    assert exact.status is Status.FAILED, exact.message
    assert exact.name == f"rule.{rule}" and exact.repro == "r"
    assert "implementation: {" in exact.message


@pytest.mark.parametrize("mutant", ["b01", "b03", "m01"])
def test_rule_mutants_fail_parity_with_their_rule(mutant):
    """b02 (cumprod clipped once) differs only where a ratio above 1 comes before one below:
    rare in parity's cases, certain in the exact check's (previous test)."""
    rule = RULE_OF_MUTANT[mutant]
    assert _parity(load_rule_mutant(f"mutant:{mutant}"), rule).status is Status.FAILED


def test_rule_outcome_draws_the_rules_count():
    case = next(c for c in map(verify_case, range(200)) if not c.greedy and c.m >= 2)
    block = rule_outcome(case, "block")
    assert block.is_ok and block.drawn == case.m + 1  # eta_1..eta_m and the added token
    match = rule_outcome(case, "sampler_match")
    assert match.is_ok and match.drawn == match.value[1] + 1


def test_token_mechanics_are_not_asked_under_another_rule():
    caps = frozenset({"verify_draft", "injected_uniforms", "greedy"})
    for name, tier in [("uniform_draw_count", "properties"), ("expected_length", "exact")]:
        assert not_applicable_reason(tier, name, Profile.CONFORMANCE, caps) is None
        why = not_applicable_reason(tier, name, Profile.CONFORMANCE, caps, "block")
        assert why is not None and "--rule block" in why
    # law checks are asked whatever the rule
    assert not_applicable_reason("exact", "k_positions", Profile.CONFORMANCE, caps,
                                 "block") is None
    assert claim_of("exact", "rule.block") is Claim.CONFORMANCE
    efficiency = CheckResult("statistical", "tree.acceptance_b2_d2", Status.FAILED, "")
    assert result_blocks(efficiency, Profile.CONFORMANCE, False)
    assert not result_blocks(efficiency, Profile.CONFORMANCE, False, "block")


def test_rule_names_and_repro():
    from spec_verify.cli._check import _RULES

    assert _RULES == CHECK_RULES
    with pytest.raises(ValueError, match="unknown rule"):
        check_rule("blocks")
    assert repro_command("x", ["parity"], rule="block").endswith("--rule block")
    assert "--rule" not in repro_command("x", ["parity"])


def test_cli_refuses_an_unknown_rule():
    done = subprocess.run([sys.executable, "-m", "spec_verify", "check", "--rule", "nope"],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--rule" in done.stderr and "block" in done.stderr


def test_cli_checks_a_rule_mutant_against_its_rule(tmp_path):
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "spec_verify", "check", "--impl", "mutant:b02", "--rule", "block",
         "--tier", "exact", "--quick", "--no-progress", "--json", str(report)],
        check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL exact/rule.block" in done.stdout
    assert '"rule": "block"' in report.read_text()
