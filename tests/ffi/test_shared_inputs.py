"""The FFI worker's large inputs by shared memory (``FfiImplementation.shared_above``): the
same answers as the copying path, and a library that writes into its const inputs is still
the library's failure, with the harness's arrays untouched."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spec_verify.adapters._ffi_adapter import SHARED_ABOVE, FfiImplementation
from spec_verify.errors import ImplementationError
from spec_verify.reference import SamplingParams, request_rng

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd")

_V = 64_000  # a row of 512 kB, above SHARED_ABOVE


@pytest.fixture(scope="module")
def clean_port(rust_port: Path) -> Path:
    """The session's clean build (tests/ffi/conftest.py), from the repository's crate: an
    installed package ships no Cargo.toml."""
    return rust_port


def _impls(lib: Path) -> tuple[FfiImplementation, FfiImplementation]:
    shared, copying = FfiImplementation(lib), FfiImplementation(lib)
    copying.shared_above = None
    return shared, copying


def _case(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    draft = rng.normal(0.0, 2.0, size=(4, _V))
    target = np.vstack([draft + rng.normal(0.0, 0.7, size=(4, _V)), rng.normal(size=(1, _V))])
    target[0, :10] = -np.inf
    q = np.exp(draft - draft.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    ids = [int(rng.choice(_V, p=row)) for row in q]
    return {"target": target, "q": q, "ids": ids, "seed": seed}


def test_shared_and_copied_inputs_give_the_same_answers(clean_port: Path) -> None:
    assert 8 * _V >= SHARED_ABOVE
    shared, copying = _impls(clean_port)
    try:
        for params in (SamplingParams(), SamplingParams(temperature=0.7, top_p=0.9),
                       SamplingParams(temperature=0.0)):
            cases = [_case(seed) for seed in range(6)]
            answers = []
            for impl in (shared, copying):
                answers.append([impl.verify_draft(c["target"], c["ids"], c["q"], params, [3, 4],
                                                  request_rng(c["seed"])) for c in cases])
                answers.append([int(np.argmax(impl.sampling_distribution(c["target"][4], params)))
                                for c in cases])
                calls = [impl.verify_call(c["target"], c["ids"], c["q"], params, [], [],
                                          ("seed", c["seed"])) for c in cases]
                answers.append([(o.outcome, o.value) for o in impl.batch(calls)])
            assert answers[:3] == answers[3:], params
            for c in cases:
                assert np.isneginf(c["target"][0, :10]).all()  # the harness's own arrays
            dist_s = shared.sampling_distribution(cases[0]["target"][1], params)
            dist_c = copying.sampling_distribution(cases[0]["target"][1], params)
            assert dist_s.tobytes() == dist_c.tobytes()
    finally:
        shared.close()
        copying.close()


def test_a_library_writing_its_const_inputs_fails_on_both_paths(
    hostile_c_libs: dict[str, Path],
) -> None:
    """``writes_inputs`` zeroes target_logits: copied, the worker's comparison names it;
    shared, its store faults in the read-only mapping: a crash of the library either way, and
    the harness's rows keep their values."""
    shared, copying = _impls(hostile_c_libs["writes_inputs"])
    case = _case(1)
    before = case["target"].copy()
    try:
        with pytest.raises(ImplementationError, match="modified its input target_logits"):
            copying.verify_draft(case["target"], case["ids"], case["q"], SamplingParams(), [],
                                 request_rng(1))
        with pytest.raises(ImplementationError, match="SIGSEGV"):
            shared.verify_draft(case["target"], case["ids"], case["q"], SamplingParams(), [],
                                request_rng(1))
        assert case["target"].tobytes() == before.tobytes()
    finally:
        shared.close()
        copying.close()
