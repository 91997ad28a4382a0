"""Direct tests of the thin ctypes layer (``spec_verify.adapters._ffi.Library``), in process.

Only well-behaved libraries are loaded in this process (the Rust port and the stub libraries
that fail at load or write out of bounds); crashing ones go through the worker (test_adapter).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from spec_verify.adapters._ffi import (
    ABI_VERSION,
    CallbackFailed,
    Library,
    SvSamplingParams,
    params_struct,
)
from spec_verify.errors import ImplementationError, UnknownImplementation
from spec_verify.reference import (
    InvalidDraft,
    InvalidLogits,
    InvalidParams,
    InvalidPrompt,
    SamplingParams,
    request_rng,
    sampling_distribution,
    verify_draft,
)

ROWS = np.log([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]])
Q = np.array([[0.25, 0.5, 0.25]])


def _raw(**fields: float) -> SvSamplingParams:
    """A struct that bypasses SamplingParams' validation (to reach the library's)."""
    values = {
        "temperature": 1.0,
        "top_k": 0,
        "top_p": 1.0,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
    }
    values.update(fields)
    return SvSamplingParams(**values)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("not_a_library", "not a loadable shared library"),
        ("abi_v1", "ABI version 1"),
        ("missing_symbols", "sv_verify_draft, sv_prompt_lookup"),
    ],
)
def test_loading_refuses_what_is_not_an_abi_v1_library(c_libs, name, words):
    with pytest.raises(UnknownImplementation, match=words) as info:
        Library(c_libs[name])
    assert info.value.argument == "impl"


def test_missing_file(tmp_path):
    with pytest.raises(UnknownImplementation, match="no such file"):
        Library(tmp_path / "nothing.so")


def test_canary_catches_a_write_past_the_buffer(c_libs):
    lib = Library(c_libs["overflow"])
    with pytest.raises(ImplementationError, match="wrote past the end of out_ids") as info:
        lib.verify_draft(ROWS, [1], None, params_struct(SamplingParams(temperature=0)))
    assert "declared length is 2" in info.value.reason


def test_ids_out_of_range_are_the_ports_fault(c_libs):
    lib = Library(c_libs["bad_ids"])
    with pytest.raises(ImplementationError, match=r"ids out of \[0, 3\): \[3\]"):
        lib.verify_draft(ROWS, [1], None, params_struct(SamplingParams(temperature=0)))


@pytest.mark.rust
class TestRustPort:
    @pytest.fixture
    def lib(self, rust_port):
        return Library(rust_port)

    def test_version_and_pcg32_vector(self, lib):
        assert lib.abi_version == ABI_VERSION
        assert [hex(v) for v in lib.pcg32_u32(42, 54, 6)] == [
            "0xa15c02b7", "0x7b47f409", "0xba1d3330", "0x83d2f293", "0xbfa4784b", "0xcbed606e",
        ]  # fmt: skip
        rng = request_rng(7)
        assert lib.pcg32_uniforms(7, 54, 5).tolist() == [rng.random() for _ in range(5)]

    def test_verify_draft_with_a_callback_matches_the_reference(self, lib):
        p = SamplingParams()
        drawn = []
        stream = request_rng(3)

        def uniform() -> float:
            drawn.append(stream.random())
            return drawn[-1]

        got = lib.verify_draft(ROWS, [1], Q, params_struct(p), uniform=uniform)
        assert got == verify_draft(ROWS, [1], Q, p, [], request_rng(3))
        assert len(drawn) == (3 if got[1] == 1 else 2)
        assert lib.verify_draft(ROWS, [1], Q, params_struct(p), pcg_seed=3) == got

    def test_sampling_distribution_matches(self, lib):
        p = SamplingParams(temperature=0.7, top_k=2, repetition_penalty=1.3)
        row = np.array([0.3, -1.0, 2.0, 2.0])
        want = sampling_distribution(row, p, [2], [0])
        assert lib.sampling_distribution(row, params_struct(p), [2], [0]).tolist() == want.tolist()

    @pytest.mark.parametrize(
        ("kwargs", "error", "argument"),
        [
            ({"target_logits": np.array([[0, math.nan, 0], [0, 0, 0]])}, InvalidLogits,
             "target_logits"),
            ({"draft_ids": [3]}, InvalidParams, "draft_ids"),
            ({"history": [0, 9]}, InvalidParams, "history"),
            ({"prompt": [-1]}, InvalidPrompt, "prompt"),
            ({"draft_probs": np.array([[0.5, 0.0, 0.5]])}, InvalidDraft, "draft_probs"),
            ({"draft_probs": np.array([[0.5, 0.2, 0.1]])}, InvalidDraft, "draft_probs"),
            ({"params": _raw(temperature=-1.0)}, InvalidParams, "temperature"),
            ({"params": _raw(top_p=0.0)}, InvalidParams, "top_p"),
            ({"params": _raw(repetition_penalty=math.inf)}, InvalidParams, "repetition_penalty"),
        ],
    )  # fmt: skip
    def test_status_codes_become_the_references_errors(self, lib, kwargs, error, argument):
        call = {"target_logits": ROWS, "draft_ids": [1], "draft_probs": Q,
                "params": params_struct(SamplingParams()), "pcg_seed": 1}  # fmt: skip
        call.update(kwargs)
        with pytest.raises(error) as info:
            lib.verify_draft(**call)
        assert info.value.argument == argument
        assert isinstance(info.value, ValueError)
        assert "from the library" in str(info.value)

    def test_a_raising_callback_is_carried_back(self, lib):
        def uniform() -> float:
            raise KeyError("planted")

        with pytest.raises(CallbackFailed) as info:
            lib.verify_draft(ROWS, [1], Q, params_struct(SamplingParams()), uniform=uniform)
        assert isinstance(info.value.__cause__, KeyError)

    def test_a_uniform_outside_the_unit_interval_is_the_callers_error(self, lib):
        with pytest.raises(InvalidParams, match="rng"):
            lib.verify_draft(ROWS, [1], Q, params_struct(SamplingParams()), uniform=lambda: 1.5)

    def test_prompt_lookup_and_its_errors(self, lib):
        assert lib.prompt_lookup([1, 2, 3, 9, 1, 2], 3) == [3, 9, 1]
        assert lib.prompt_lookup([], 3) == []
        with pytest.raises(InvalidParams, match="min_ngram"):
            lib.prompt_lookup([1, 2], 1, 3, 0)

    def test_sample_and_step(self, lib):
        assert lib.sample(np.array([0.5, 0.0, 0.5]), 0.6) == 2
        assert lib.speculative_step(
            np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.5, 0.25]), 1, 0.7, 0.4
        ) == (0, False)
        with pytest.raises(InvalidDraft, match="q"):
            lib.speculative_step(np.array([0.5, 0.5]), np.array([1.0, 0.0]), 1, 0.5, 0.5)
