"""check_sampler: a custom sampler case by case, in every dtype, with planted bugs.

Declared: family alpha 1e-3 over the cases (Holm), power 0.99 at TV 0.1 per case on the joint
law of everything a round emits (continued with the target to ``draft_length + 1`` tokens).
"""

from __future__ import annotations

import functools
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
        return np.full((n, 1), case.vocab_size)

    def too_many(case, n, seed):  # type: ignore[no-untyped-def]
        return np.zeros((n, case.draft_length + 2), dtype=np.int64)

    def gap_in_padding(case, n, seed):  # type: ignore[no-untyped-def]
        return [[0, -1, 0]] * n

    for sampler, text in [
        (raises, "raised RuntimeError: NaN in the residual"),
        (short, "not"),
        (out_of_range, "outside [0,"),
        (too_many, "a round emits 1 to"),
        (gap_in_padding, "then only -1 padding"),
    ]:
        result = check_sampler(sampler)
        assert not result.passed
        assert all(c.rejected and text in c.error for c in result.cases), result.message


def test_a_zero_probability_token_fails_at_once() -> None:
    def emits_ruled_out(case, n, seed):  # type: ignore[no-untyped-def]
        tokens = own_sampler.sampler(case, n, seed)
        if case.name == "target_zeros":
            tokens[0] = [1, 0, -1, -1]  # the target gives token 0 probability 0
        return tokens

    result = check_sampler(emits_ruled_out)
    (failed,) = [c for c in result.cases if c.rejected]
    assert failed.case == "target_zeros" and failed.test is not None
    assert len(failed.test.zero_probability_tokens) == 1
    assert "sequence (1, 0, " in failed.test.message


@pytest.mark.parametrize(
    ("bug", "cases"),
    [
        # The bonus drawn from the row the last draft was verified with: the first token's law
        # is untouched, and in the context-free cases both rows are the same row.
        ("bonus_from_last_draft_row", {"context_v3_k3", "context_v4_k2"}),
        # The first acceptance uniform reused at every position: the first token is right.
        ("one_uniform", None),
    ],
)
def test_bias_after_the_first_token_fails(bug, cases) -> None:  # type: ignore[no-untyped-def]
    biased = functools.partial(own_sampler.rounds, bug=bug)
    result = check_sampler(biased)
    assert not result.passed, result.message
    rejected = {c.case for c in result.cases if c.rejected}
    assert rejected == cases if cases else rejected, result.message
    assert "sequence (" in result.message
    # The same rounds cut to their first token follow the target: only the joint law sees it.
    first = check_sampler(lambda case, n, seed: biased(case, n, seed)[:, :1])
    assert first.passed, first.message
    assert "only the first token's law was tested" in first.message


def test_first_tokens_alone_are_refused() -> None:
    result = check_sampler(lambda case, n, seed: own_sampler.sampler(case, n, seed)[:, 0])
    assert not result.passed
    assert all("not the emitted ids of" in c.error for c in result.cases), result.message


def test_rows_depend_on_the_prefix_in_the_context_cases() -> None:
    cases = {c.name: c for c in sampler_cases()}
    context = cases["context_v3_k3"]
    assert not context.context_free and context.draft_length == 3
    assert not np.allclose(context.target_row([]), context.target_row([1, 2]))
    assert context.target_row([0, 1, 2]).shape == (3,)  # the bonus row
    with pytest.raises(InvalidArgument, match="at most 2 token ids"):
        context.draft_row([0, 1, 2])
    free = cases["seed_v5"]
    assert free.context_free and free.target_row([3, 1]) is free.target_probs


@pytest.mark.parametrize(
    ("dtype", "backend", "match"),
    [("float8", "numpy", "numpy takes one of"), ("float64", "torch", "torch takes one of"),
     ("float32", "jax", "must be 'numpy' or 'torch'")],
)  # fmt: skip
def test_bad_dtype_or_backend(dtype, backend, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match=match):
        sampler_cases(dtype, backend)
