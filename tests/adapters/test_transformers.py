"""transformers' ``_speculative_sampling`` as a real third-party sampler (the ``torch`` extra):
lossless with torch's own generator, the u = 0.0 acceptance found by the edge tier when the
uniforms are injected, and its ensemble rule failed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.errors import UnknownImplementation
from spec_verify.profiles import Claim, claim_of
from spec_verify.reference import SamplingParams
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers.edges import run_edge_tier
from spec_verify.tiers.statistical import run_statistical_tier
from spec_verify.uniforms import ScriptedUniforms

# Not imported at collection (every xdist worker collects this file; the workers these tests
# start import torch and transformers themselves).
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the torch extra (torch and transformers)",
)

ROWS = np.log(np.array([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]]))
Q = np.array([[0.25, 0.5, 0.25]])


def test_the_specs_and_what_they_declare() -> None:
    own = load_implementation("transformers")
    assert own.capabilities == {"verify_draft", "float32"}  # own randomness, sampled only
    injected = load_implementation("transformers:injected")
    assert "injected_uniforms" in injected.capabilities
    with pytest.raises(UnknownImplementation, match="not in \\(0, 1\\)"):
        load_implementation("transformers:ensemble=2")
    with pytest.raises(UnknownImplementation, match="unknown option"):
        load_implementation("transformers:fast")


def test_injected_uniforms_drive_it_in_transformers_draw_order() -> None:
    impl = load_implementation("transformers:injected")
    # u_accept = 0.9 > p/q = 0.5: rejected; then one uniform for the residual (token 0 only)
    source = ScriptedUniforms((0.9, 0.1))
    assert impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], source) == ([0], 0)
    assert source.drawn == 2
    source = ScriptedUniforms((0.4, 0.99))  # accepted, then the bonus from row 1
    assert impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], source) == ([1, 2], 1)


def test_the_edge_tier_finds_the_zero_uniform_acceptance() -> None:
    """transformers accepts with ``r <= p/q``: at r = 0.0 a drafted token the target rules out
    (p = 0) is accepted. torch.rand in float32 returns 0.0 with probability 2^-24 per draw, so
    at every drafted position whose draft token has p = 0 the defect fires with probability
    2^-24 (about 6e-8): real, rare, and invisible to any statistical test."""
    result, _ = run_edge_tier(load_implementation("transformers:injected"))  # uniforms first
    assert result.status is Status.FAILED
    assert "all draws 0.0" in result.message
    assert "accepted draft 3 at position 0 has target probability 0" in result.message


def test_with_its_own_generator_the_edge_tier_does_not_apply() -> None:
    result, _ = run_edge_tier(load_implementation("transformers"))  # uniforms first
    assert result.status is Status.NOT_APPLICABLE
    assert "the edge check did not apply" in result.message


@pytest.mark.slow
def test_with_torchs_own_generator_it_is_lossless() -> None:
    report = run_checks("transformers", quick=True, profile="lossless")
    assert report.passed, [r.message for r in report.failures()]
    statuses = {(r.tier, r.name): r.status for r in report.results}
    assert statuses[("greedy", "all")] is Status.NOT_APPLICABLE  # sampled only
    assert statuses[("exact", "injected_uniforms")] is Status.NOT_APPLICABLE
    assert statuses[("statistical", "first_token.sampled_draft")] is Status.PASSED


@pytest.mark.slow
def test_its_ensemble_rule_fails_the_law() -> None:
    """Two LAW checks, not the whole tier (which took 240 s under load for the same verdict):
    the first token's law and the joint law of a two-draft round."""
    impl = load_implementation("transformers:ensemble=0.5")
    try:
        results = run_statistical_tier(
            impl, quick=True, checks=["first_token.sampled_draft", "sequence.law_k2"]
        )
    finally:
        impl.close()
    assert [r.name for r in results] == ["first_token.sampled_draft", "sequence.law_k2"]
    assert any(
        r.status is Status.FAILED and claim_of(r.tier, r.name) is Claim.LAW for r in results
    ), [r.message for r in results]
