"""The statistical tier across the C ABI: rounds go in batches from the library's own PCG32
stream; the clean port passes, a port wrong in law fails naming the test, a port exact in law
but with another draw order passes, and a crashing library is an error while the run goes on."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.results import Status
from spec_verify.tiers._drive import SampledVerifier, VerifyRequest
from spec_verify.tiers.statistical import check_names, run_statistical_tier

ROWS = np.log(np.array([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]]))
Q = np.array([[0.25, 0.5, 0.25]])
VERIFY_CHECKS = ["first_token.sampled_draft", "sequence.two_drafts", "acceptance_rate"]


def _statuses(path, checks=VERIFY_CHECKS):
    results = run_statistical_tier(load_implementation(f"ffi:{path}"), checks=checks)
    return {r.name: r for r in results}


@pytest.mark.rust
def test_rounds_are_batched_from_the_librarys_own_stream_and_reproducible(port):
    impl = port
    requests = [VerifyRequest(ROWS, [i % 3], Q) for i in range(300)]

    def run(seed):
        verifier = SampledVerifier(impl, impl.params(), np.random.SeedSequence(seed))
        assert verifier.seeded
        return verifier(requests)

    first = run(4)
    assert first == run(4)
    assert first != run(5)
    assert all(len(emitted) == accepted + 1 <= 2 for emitted, accepted in first)
    assert all(0 <= t < 3 for emitted, _ in first for t in emitted)


@pytest.mark.rust
def test_a_rejected_round_raises_across_the_boundary(port):
    impl = port
    verifier = SampledVerifier(impl, impl.params(), np.random.SeedSequence(0))
    with pytest.raises(ValueError, match="draft_ids"):
        verifier([VerifyRequest(ROWS, [7], Q)])


@pytest.mark.rust
def test_the_port_passes_the_statistical_tier(rust_port):
    results = _statuses(rust_port)
    assert all(r.status is Status.PASSED for r in results.values()), results


@pytest.mark.rust
def test_a_port_wrong_in_law_fails_naming_the_test(rust_variants):
    results = _statuses(rust_variants["bug_residual_from_p"])
    assert results["first_token.sampled_draft"].status is Status.FAILED
    assert results["sequence.two_drafts"].status is Status.FAILED
    assert "not the target" in results["first_token.sampled_draft"].message


@pytest.mark.rust
def test_a_port_exact_in_law_with_another_draw_order_passes(rust_variants):
    results = _statuses(rust_variants["bug_resample_before_accept"])
    assert all(r.status is Status.PASSED for r in results.values()), results


def test_a_library_that_crashes_is_an_error_per_check_and_the_tier_finishes(c_libs):
    results = _statuses(c_libs["segfault"])
    assert set(results) == set(VERIFY_CHECKS)
    for result in results.values():
        assert result.status is Status.ERROR
        assert "SIGSEGV" in result.message


@pytest.mark.rust
def test_the_port_passes_the_tree_checks_and_its_tree_bug_fails_them(port, rust_variants):
    trees = [name for name in check_names() if name.startswith("tree.")]
    port = run_statistical_tier(port, checks=trees, delta=0.1)
    assert [r.status for r in port] == [Status.PASSED] * len(trees), [r.message for r in port]
    bug = load_implementation(f"ffi:{rust_variants['bug_tree_stale_residual']}")
    failed = {r.name for r in run_statistical_tier(bug, checks=trees, delta=0.1)
              if r.status is Status.FAILED}
    assert "tree.b4_d1_repeats" in failed, failed
