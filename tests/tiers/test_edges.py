"""The edge-uniform tier: what must hold for every uniform, at the uniforms that break it."""

from __future__ import annotations

import pytest

from spec_verify.adapters import load_implementation
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers.edges import EDGE_CASES, EDGE_UNIFORMS, run_edge_tier


def test_the_edge_values_are_uniforms_and_include_zero() -> None:
    assert all(0.0 <= u < 1.0 for u in EDGE_UNIFORMS)
    assert {0.0, 2.0**-53, 2.0**-24, 0.5, 1 - 2.0**-24, 1 - 2.0**-53} == set(EDGE_UNIFORMS)


def test_every_case_rules_a_token_out() -> None:
    from spec_verify.tiers.edges import _target

    for case in EDGE_CASES:
        assert any((_target(case, i, case.draft_ids[:i]) == 0).any() for i in range(case.m + 1))


@pytest.mark.parametrize("spec", ["reference", "mutant:s01"])
def test_samplers_that_compare_strictly_pass(spec: str) -> None:
    (result,) = run_edge_tier(load_implementation(spec))
    assert result.status is Status.PASSED, result.message
    assert result.n == sum(2 * c.m + 1 for c in EDGE_CASES) * 5 + len(EDGE_CASES) * 6


def test_accepting_with_u_at_most_the_ratio_fails_at_zero() -> None:
    """The negative control: ``u <= p/q`` accepts a token with p = 0 when u is exactly 0.0."""
    (result,) = run_edge_tier(load_implementation("python:tests.impls.accept_le"))
    assert result.status is Status.FAILED
    assert "all draws 0.0" in result.message
    assert "accepted draft 3 at position 0 has target probability 0" in result.message
    assert all("0.0" in failure for failure in result.details["failures"])


def test_own_randomness_is_not_applicable_and_says_so() -> None:
    report = run_checks(
        "python:tests.impls.ignores_source", tiers=["edges"],
        capabilities={"injected_uniforms": False},
    )  # fmt: skip
    (result,) = report.results
    assert result.status is Status.NOT_APPLICABLE
    assert "the edge check did not apply" in result.message
    assert report.passed
