"""The edge-uniform tier: what must hold for every uniform, at the uniforms that break it.

Negative controls rebuild the real bugs: ``u <= p/q`` on [0, 1) (transformers) and vLLM's
``p/q >= u`` accept a ruled-out token at u = 0.0; FlashInfer's chain kernel on (0, 1] rejects
at p = q and u = 1.0 and returns an id from an all-zero residual. The correct (0, 1] sampler
passes once it declares its interval, and fails when fed the [0, 1) values it never draws.
"""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.adapters import CAPABILITIES, load_implementation
from spec_verify.profiles import Claim, claim_of
from spec_verify.reference import SamplingParams, verify_draft
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers.edges import (
    EDGE_CASES,
    EDGE_UNIFORMS,
    EDGE_UNIFORMS_OPEN_CLOSED,
    _target,
    run_edge_tier,
)
from spec_verify.uniforms import OPEN_CLOSED, UniformInterval, uniform_interval

OPEN_CLOSED_LE = "python:tests.impls.open_closed_le"
FLASHINFER = "python:tests.impls.flashinfer_chain"
FLASHINFER_PAST_END = "python:tests.impls.flashinfer_chain_past_end"
CALLS = sum(2 * c.m + 1 for c in EDGE_CASES) * 5 + len(EDGE_CASES) * 6


def edge_results(spec: str) -> dict[str, object]:
    impl = load_implementation(spec)
    try:
        return {r.name: r for r in run_edge_tier(impl)}
    finally:
        impl.close()


def test_the_edge_values_are_uniforms_of_their_interval() -> None:
    assert all(UniformInterval.CLOSED_OPEN.contains(u) for u in EDGE_UNIFORMS)
    assert {0.0, 2.0**-53, 2.0**-24, 0.5, 1 - 2.0**-24, 1 - 2.0**-53} == set(EDGE_UNIFORMS)
    assert all(UniformInterval.OPEN_CLOSED.contains(u) for u in EDGE_UNIFORMS_OPEN_CLOSED)
    assert 1.0 in EDGE_UNIFORMS_OPEN_CLOSED and 0.0 not in EDGE_UNIFORMS_OPEN_CLOSED
    assert not UniformInterval.OPEN_CLOSED.contains(0.0)
    assert not UniformInterval.CLOSED_OPEN.contains(1.0)


def test_the_interval_is_a_declared_capability() -> None:
    assert OPEN_CLOSED in CAPABILITIES
    assert uniform_interval({"verify_draft"}) is UniformInterval.CLOSED_OPEN
    assert uniform_interval({"verify_draft", OPEN_CLOSED}) is UniformInterval.OPEN_CLOSED
    assert OPEN_CLOSED in load_implementation(OPEN_CLOSED_LE, in_process=True).capabilities
    assert claim_of("edges", "uniforms") is Claim.LAW
    assert claim_of("edges", "certain_acceptance") is Claim.EFFICIENCY


def test_every_case_rules_a_token_out() -> None:
    for case in EDGE_CASES:
        assert any((_target(case, i, case.draft_ids[:i]) == 0).any() for i in range(case.m + 1))


def test_some_rounds_have_p_equal_to_q_and_an_all_zero_residual() -> None:
    equal = 0
    for case in EDGE_CASES:
        for i in range(case.m):
            p = _target(case, i, case.draft_ids[:i])
            q = np.zeros_like(p)
            if case.draft_probs is None:
                q[case.draft_ids[i]] = 1.0
            else:
                q[:] = case.draft_probs[i]
            if np.array_equal(p, q):
                assert case.exact  # p = q holds for every port only on exact rows
                assert not np.maximum(p - q, 0.0).any()
                equal += 1
    assert equal >= 4
    assert {c.name for c in EDGE_CASES if c.exact} >= {
        "draft_equals_target", "deterministic_draft_on_a_point_mass",
        "draft_equals_target_after_top_k",
    }  # fmt: skip


def test_the_cases_are_valid_for_the_reference() -> None:
    for case in EDGE_CASES:
        q = None if case.draft_probs is None else np.array(case.draft_probs)
        verify_draft(
            np.array(case.target_logits), list(case.draft_ids), q,
            SamplingParams(**case.params), list(case.history), np.random.default_rng(0),
        )  # fmt: skip


@pytest.mark.parametrize("spec", ["reference", "mutant:s01", OPEN_CLOSED_LE])
def test_samplers_that_compare_right_for_their_interval_pass(spec: str) -> None:
    results = edge_results(spec)
    for name in ("uniforms", "certain_acceptance"):
        assert results[name].status is Status.PASSED, results[name].message
        assert results[name].n == CALLS
    interval = "(0, 1]" if spec == OPEN_CLOSED_LE else "[0, 1)"
    assert results["uniforms"].details["uniform_interval"] == interval


@pytest.mark.parametrize(
    "spec", ["python:tests.impls.accept_le", "python:tests.impls.vllm_ratio_ge"]
)
def test_accepting_with_u_at_most_the_ratio_fails_at_zero(spec: str) -> None:
    """The negative controls: ``u <= p/q`` (transformers) and ``p/q >= u`` (vLLM) accept a
    token with p = 0 when u is exactly 0.0."""
    results = edge_results(spec)
    result = results["uniforms"]
    assert result.status is Status.FAILED
    assert "all draws 0.0" in result.message
    assert "accepted draft 3 at position 0 has target probability 0" in result.message
    assert all("0.0" in failure for failure in result.details["failures"])
    assert results["certain_acceptance"].status is Status.PASSED  # a law bug, not a rejection


def test_flashinfer_strict_on_open_closed_rejects_p_equal_q_at_one() -> None:
    """u < p/q on (0, 1]: at p = q and u = 1.0 it rejects, and the all-zero residual gives
    token 0, which the target rules out in draft_equals_target."""
    results = edge_results(FLASHINFER)
    law = results["uniforms"]
    assert law.status is Status.FAILED
    assert law.message.startswith("draft_equals_target, all draws 1.0: emitted [0]: the "
                                  "resampled token 0 at position 0 has target probability 0")
    assert all("1.0" in failure for failure in law.details["failures"])
    rejected = results["certain_acceptance"]
    assert rejected.status is Status.FAILED
    assert "where p(x) = 0.25 >= q(x) = 0.25: acceptance is certain" in rejected.message
    assert any("after_top_k" in f for f in rejected.details["failures"])  # token 0 kept there
    assert "the residual max(p - q, 0) is all zero" in rejected.message


def test_flashinfer_garbage_past_the_vocabulary_is_out_of_range() -> None:
    law = edge_results(FLASHINFER_PAST_END)["uniforms"]
    assert law.status is Status.FAILED
    assert "all draws 1.0" in law.message and "returned ids out of [0, 6): [6]" in law.message


def test_flashinfer_is_invisible_at_the_values_of_the_wrong_interval() -> None:
    """Without its declaration the tier feeds [0, 1): no 1.0, no rejection at p = q. The
    (0, 1] samplers then fail at 0.0, a value they never draw: the declaration is needed."""
    report = run_checks(FLASHINFER, tiers=["edges"], capabilities={OPEN_CLOSED: False})
    statuses = {r.name: r.status for r in report.results}
    assert statuses["certain_acceptance"] is Status.PASSED
    report = run_checks(OPEN_CLOSED_LE, tiers=["edges"], capabilities={OPEN_CLOSED: False})
    (law,) = [r for r in report.results if r.name == "uniforms"]
    assert law.status is Status.FAILED and "0.0" in law.message


@pytest.mark.parametrize(("spec", "passed"), [(FLASHINFER, False), (OPEN_CLOSED_LE, True)])
def test_the_lossless_profile_judges_the_token_not_the_rejection(spec: str, passed: bool) -> None:
    report = run_checks(spec, tiers=["edges"], profile="lossless")
    assert report.passed is passed, [r.message for r in report.results]


def test_a_rejection_that_falls_back_to_p_is_lossless_and_only_loses_acceptance() -> None:
    """threshold_bug rejects where p(x) > q(x) at u near 1: certain_acceptance (efficiency)
    fails, the law check passes, and the lossless profile does not fail on it."""
    results = edge_results("python:tests.impls.threshold_bug")
    assert results["uniforms"].status is Status.PASSED
    assert results["certain_acceptance"].status is Status.FAILED
    assert "acceptance is certain, every u in [0, 1) accepts it" in (
        results["certain_acceptance"].message
    )
    assert run_checks("python:tests.impls.threshold_bug", tiers=["edges"],
                      profile="lossless").passed  # fmt: skip


def test_own_randomness_is_not_applicable_and_says_so() -> None:
    report = run_checks(
        "python:tests.impls.ignores_source", tiers=["edges"],
        capabilities={"injected_uniforms": False},
    )  # fmt: skip
    assert [r.name for r in report.results] == ["uniforms", "certain_acceptance"]
    for result in report.results:
        assert result.status is Status.NOT_APPLICABLE
        assert "the edge check did not apply" in result.message
    assert report.passed
