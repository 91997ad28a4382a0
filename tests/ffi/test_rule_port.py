"""The Rust port's other chain rules behind the C ABI (``sv_verify_block``,
``sv_verify_sampler_match``): ``check --rule`` passes each, and each rule's planted-bug
build fails it, naming the check."""

from __future__ import annotations

import pytest

from spec_verify.adapters import load_implementation
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers._cases import case_seeds
from spec_verify.tiers._rules import check_rule_exact
from spec_verify.tiers.parity import _check_verify

RULE_BUGS = {
    "block": "bug_block_unadjusted_residual",
    "sampler_match": "bug_sampler_match_no_break",
}
N_CASES = 400  # parity cases; each planted bug differs on dozens of them (seed 0)


def _rule_checks(path, rule):
    impl = load_implementation(f"ffi:{path}")
    try:
        assert impl.use_rule(rule) is None
        parity = _check_verify(impl, case_seeds(0, N_CASES), 0, None, rule)
        exact = check_rule_exact(impl, rule, quick=True)
    finally:
        impl.close()
    return parity, exact


@pytest.mark.rust
@pytest.mark.parametrize("rule", sorted(RULE_BUGS))
def test_the_port_conforms_to_each_rule(rust_port, rule):
    parity, exact = _rule_checks(rust_port, rule)
    assert parity.status is Status.PASSED, parity.message
    assert exact.status is Status.PASSED, exact.message


@pytest.mark.rust
@pytest.mark.parametrize("rule", sorted(RULE_BUGS))
def test_each_rules_planted_bug_fails_its_rule(rust_variants, rule):
    parity, exact = _rule_checks(rust_variants[RULE_BUGS[rule]], rule)
    assert parity.status is Status.FAILED and f"the {rule} rule" in parity.message
    assert exact.status is Status.FAILED and exact.name == f"rule.{rule}"


@pytest.mark.rust
def test_the_port_exports_and_declares_the_rule_symbols(port):
    assert {"sv_verify_block", "sv_verify_sampler_match"} <= port.optional_symbols


@pytest.mark.rust
def test_a_library_without_the_symbol_is_an_error_not_a_verdict(c_libs):
    name = next(n for n in ("sampled_only", "abi_v1") if n in c_libs)
    report = run_checks(f"ffi:{c_libs[name]}", tiers=["parity"], quick=True, rule="block")
    [result] = report.results
    assert result.status is Status.ERROR and "sv_verify_block" in result.message
    assert not report.passed
