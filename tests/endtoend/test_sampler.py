"""check_sampler: a custom sampler case by case, in every dtype, with planted bugs.

Declared: family alpha 1e-3 over the cases (Holm), power 0.99 at TV 0.1 per case.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from spec_verify.endtoend import check_sampler, sampler_cases
from spec_verify.errors import InvalidArgument

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import own_sampler

DTYPES = [("float64", "numpy"), ("float32", "numpy"), ("float16", "numpy")]


@pytest.mark.parametrize(("dtype", "backend"), DTYPES)
def test_the_honest_sampler_passes_and_the_planted_bug_fails(dtype, backend) -> None:  # type: ignore[no-untyped-def]
    honest = check_sampler(own_sampler.sampler, dtype=dtype, backend=backend)
    assert honest.passed, honest.message
    assert honest.dtype == dtype and f"{dtype} on {backend}" in honest.message
    biased = check_sampler(own_sampler.sampler_biased, dtype=dtype, backend=backend)
    assert not biased.passed
    assert "seed_v5" in biased.message  # the case where p - q and p differ most


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_torch_tensors_in_every_dtype(dtype) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    case = sampler_cases(dtype, "torch")[0]
    assert isinstance(case.target_probs, torch.Tensor)
    assert case.target_probs.dtype == getattr(torch, dtype)
    result = check_sampler(own_sampler.sampler, dtype=dtype, backend="torch")
    assert result.passed, result.message


def test_underflow_cases_are_generated_on_purpose() -> None:
    case = {c.name: c for c in sampler_cases("float16")}["float16_underflow"]
    assert (case.draft_probs == 0).sum() >= 2  # 1e-9 rounds to 0 in float16
    exact = {c.name: c for c in sampler_cases("float64")}["float16_underflow"]
    assert (exact.draft_probs > 0).all() and exact.draft_probs.min() < 6e-8


def test_a_sampler_that_raises_or_returns_garbage_fails_its_case() -> None:
    def raises(case, n, seed):  # type: ignore[no-untyped-def]
        raise RuntimeError("NaN in the residual")

    def short(case, n, seed):  # type: ignore[no-untyped-def]
        return [0] * (n - 1)

    def out_of_range(case, n, seed):  # type: ignore[no-untyped-def]
        return np.full(n, case.vocab_size)

    for sampler, text in [
        (raises, "raised RuntimeError: NaN in the residual"),
        (short, "not"),
        (out_of_range, "outside [0,"),
    ]:
        result = check_sampler(sampler)
        assert not result.passed
        assert all(c.rejected and text in c.error for c in result.cases), result.message


def test_a_zero_probability_token_fails_at_once() -> None:
    def emits_ruled_out(case, n, seed):  # type: ignore[no-untyped-def]
        tokens = own_sampler.sampler(case, n, seed)
        if case.name == "target_zeros":
            tokens[0] = 0  # the target gives token 0 probability 0
        return tokens

    result = check_sampler(emits_ruled_out)
    (failed,) = [c for c in result.cases if c.rejected]
    assert failed.case == "target_zeros" and failed.test is not None
    assert failed.test.zero_probability_tokens == (0,)


@pytest.mark.parametrize(
    ("dtype", "backend", "match"),
    [("float8", "numpy", "numpy takes one of"), ("float64", "torch", "torch takes one of"),
     ("float32", "jax", "must be 'numpy' or 'torch'")],
)  # fmt: skip
def test_bad_dtype_or_backend(dtype, backend, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match=match):
        sampler_cases(dtype, backend)
