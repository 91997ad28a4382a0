"""How tiers drive an implementation: ``SampledVerifier`` on a Python implementation (one
uniform source, call by call). The C ABI adapter's batched path is in tests/ffi."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.tiers._drive import SampledVerifier, VerifyRequest, implementation_rng

ROWS = np.log(np.array([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]]))
Q = np.array([[0.25, 0.5, 0.25]])


def _requests(n: int) -> list[VerifyRequest]:
    return [VerifyRequest(ROWS, [i % 3], Q) for i in range(n)]


def test_a_python_implementation_runs_call_by_call_from_its_own_stream() -> None:
    impl = load_implementation("python:spec_verify.reference")
    params = impl.params()
    verifier = SampledVerifier(impl, params, np.random.SeedSequence(5))
    assert not verifier.seeded  # LIVE rounds from one source, not the library's seeded stream
    rng = implementation_rng(impl, np.random.SeedSequence(5))
    direct = [impl.verify_draft(ROWS, r.draft_ids, Q, params, [], rng) for r in _requests(40)]
    try:
        assert verifier(_requests(40)) == [(list(e), int(a)) for e, a in direct]
    finally:
        impl.close()


def test_rounds_are_reproducible_from_the_seed_and_differ_across_seeds(reference) -> None:
    impl = reference

    def run(seed: int) -> list[tuple[list[int], int]]:
        return SampledVerifier(impl, impl.params(), np.random.SeedSequence(seed))(
            _requests(200)
        )

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_a_rejected_round_raises_as_a_direct_call_would(reference) -> None:
    impl = reference
    verifier = SampledVerifier(impl, impl.params(), np.random.SeedSequence(0))
    with pytest.raises(ValueError, match="draft_ids"):
        verifier([VerifyRequest(ROWS, [7], Q)])
