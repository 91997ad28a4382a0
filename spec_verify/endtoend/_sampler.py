"""A custom sampler against the target law, case by case: ``check_sampler(sampler)``.

For a researcher's sampler that is neither a contract module nor a whole ``generate()``: any
function ``sampler(case, n, seed)`` that, for one case (the target's and the draft's
distributions over the vocabulary), drafts from the draft distribution itself, verifies, and
returns the first emitted token of ``n`` independent rounds. Whatever the acceptance rule, a
lossless sampler's first token follows the target: each case is a ``g_test`` against it, Holm
across the cases, with the sample size from the power plan.

The distributions are handed over in the dtype the sampler computes in (``float64``,
``float32``, ``float16``, or torch's ``bfloat16`` / ``float16`` / ``float32`` tensors with
``backend="torch"``), and the law tested is the target *as rounded to that dtype*
(renormalised in float64): rounding is the sampler's input, not its fault. Cases where
probabilities underflow in float16 (entries below 6e-8, the smallest float16 subnormal) are
generated on purpose: a ratio ``p/q`` with ``q`` rounded to 0 must not become NaN or garbage.
The dtype is named in every case's result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from spec_verify.errors import InvalidArgument
from spec_verify.stats._gof import GofResult, g_test
from spec_verify.stats._multiple import holm, holm_thresholds
from spec_verify.stats._power import required_samples
from spec_verify.stats._validate import check_open_unit

__all__ = [
    "SamplerCase",
    "SamplerCaseResult",
    "SamplerCheckResult",
    "check_sampler",
    "sampler_cases",
]

_NUMPY_DTYPES = ("float64", "float32", "float16")
_TORCH_DTYPES = ("float32", "float16", "bfloat16")
Sampler = Callable[["SamplerCase", int, int], Any]


@dataclass(frozen=True)
class SamplerCase:
    """One case: ``target_probs`` (V,) and ``draft_probs`` (V,) in ``dtype`` (numpy arrays, or
    torch tensors with ``backend == "torch"``), ``draft_length`` tokens to draft per round."""

    name: str
    description: str
    target_probs: Any
    draft_probs: Any
    draft_length: int
    dtype: str
    backend: str

    @property
    def vocab_size(self) -> int:
        return int(self.target_probs.shape[0])


@dataclass(frozen=True)
class SamplerCaseResult:
    """One case's verdict: ``test`` (a G-test of the first emitted token, or None when the
    sampler failed), whether Holm rejected it, its threshold, and an ``error`` naming what the
    sampler did wrong (raised, wrong shape, ids out of range)."""

    case: str
    dtype: str
    n: int
    test: GofResult | None
    rejected: bool
    threshold: float
    error: str = ""


@dataclass(frozen=True)
class SamplerCheckResult:
    """The verdict over all cases (Holm at ``family_alpha``); ``passed`` needs every case to
    have run and none to be rejected."""

    passed: bool
    pvalue: float
    family_alpha: float
    delta: float
    power: float
    dtype: str
    cases: tuple[SamplerCaseResult, ...]
    message: str


def sampler_cases(dtype: str = "float64", backend: str = "numpy") -> list[SamplerCase]:
    """The cases, with distributions in ``dtype`` on ``backend`` ("numpy" or "torch").

    Raises:
        InvalidArgument: an unknown dtype or backend, or torch asked for but not installed.
    """
    convert = _converter(dtype, backend)
    rows = [
        ("seed_v5", "the seed's V = 5 case, two drafted tokens",
         [0.4, 0.3, 0.15, 0.1, 0.05], [0.1, 0.2, 0.3, 0.2, 0.2], 2),
        ("disjoint_supports", "the draft never proposes a token the target can emit",
         [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.6, 0.4], 1),
        ("target_zeros", "tokens the target rules out are the draft's favourites",
         [0.0, 0.7, 0.3, 0.0, 0.0], [0.4, 0.1, 0.1, 0.2, 0.2], 3),
        ("float16_underflow", "draft entries of 1e-9 (0 in float16) where the target has mass",
         [0.3, 0.3, 0.2, 0.2 - 2e-9, 1e-9, 1e-9], [1e-9, 1e-9, 0.5, 0.5 - 4e-9, 1e-9, 1e-9], 2),
        ("tiny_both", "target and draft both below 6e-8 on half the vocabulary",
         [0.5, 0.5 - 3e-8, 1e-8, 1e-8, 1e-8], [0.6, 0.4 - 3e-8, 1e-8, 1e-8, 1e-8], 2),
    ]  # fmt: skip
    return [
        SamplerCase(name, text, convert(p), convert(q), k, dtype, backend)
        for name, text, p, q, k in rows
    ]


def check_sampler(
    sampler: Sampler,
    *,
    dtype: str = "float64",
    backend: str = "numpy",
    family_alpha: float = 1e-3,
    delta: float = 0.1,
    power: float = 0.99,
    seed: int = 0,
) -> SamplerCheckResult:
    """Test ``sampler(case, n, seed) -> n first emitted tokens`` on every case.

    Args:
        sampler: called once per case with the case, the number of rounds ``n`` and a seed;
            returns ``n`` token ids (a list, numpy array or torch tensor; shape (n,) or
            (n, m), the first column then).
        dtype, backend: how the distributions are handed over (see the module doc).
        family_alpha: family-wise false-alarm rate (Holm across the cases).
        delta, power: each case detects a sampler at TV ``delta`` from the target with
            probability ``power`` (``n`` from ``required_samples`` at the case's Holm share).
        seed: case ``i`` gets ``seed + i``.

    Returns:
        A ``SamplerCheckResult``; a sampler that raises or returns garbage fails its case
        (named in ``message``), it does not raise here.
    """
    family_alpha = check_open_unit("family_alpha", family_alpha)
    cases = sampler_cases(dtype, backend)
    per_case = family_alpha / len(cases)
    results: list[tuple[SamplerCase, int, GofResult | None, str]] = []
    for index, case in enumerate(cases):
        law = _law(case)
        n = required_samples(max(int(np.count_nonzero(law)), 2), per_case, delta, power)
        try:
            tokens = _tokens(sampler(case, n, seed + index), n, case.vocab_size)
        except _BadOutput as error:
            results.append((case, n, None, str(error)))
            continue
        except Exception as error:  # the sampler under test may raise anything
            results.append((case, n, None, f"raised {type(error).__name__}: {error}"))
            continue
        counts = np.bincount(tokens, minlength=case.vocab_size)
        results.append((case, n, g_test(counts, law, alpha=per_case), ""))
    pvalues = [0.0 if test is None else test.pvalue for _, _, test, _ in results]
    rejected = holm(pvalues, family_alpha)
    thresholds = holm_thresholds(pvalues, family_alpha)
    case_results = tuple(
        SamplerCaseResult(case.name, dtype, n, test, reject, threshold, error)
        for (case, n, test, error), reject, threshold in zip(
            results, rejected, thresholds, strict=True
        )
    )
    passed = not any(rejected)
    failed = [c for c in case_results if c.rejected]
    if passed:
        message = (
            f"every case follows the target ({len(cases)} cases, {dtype} on {backend}, "
            f"family alpha {family_alpha:g}; TV {delta:g} detected with power {power:g})"
        )
    else:
        parts = [f"{c.case}: {c.error or (c.test.message if c.test else '')}" for c in failed]
        message = f"not the target law ({dtype} on {backend}): " + "; ".join(parts)
    return SamplerCheckResult(
        passed=passed,
        pvalue=min(1.0, len(pvalues) * min(pvalues)),
        family_alpha=family_alpha,
        delta=delta,
        power=power,
        dtype=dtype,
        cases=case_results,
        message=message,
    )


class _BadOutput(Exception):
    pass


def _law(case: SamplerCase) -> npt.NDArray[np.float64]:
    """The target as handed over (rounded to the dtype), renormalised in float64."""
    values = case.target_probs
    if case.backend == "torch":
        values = values.double().numpy()
    law = np.asarray(values, dtype=np.float64)
    return law / math.fsum(law)


def _tokens(output: Any, n: int, V: int) -> npt.NDArray[np.int64]:
    raw = output.tolist() if hasattr(output, "tolist") else output
    array = np.asarray(raw)
    if array.ndim == 2 and array.shape[0] == n:
        array = array[:, 0]
    if array.shape != (n,) or array.dtype.kind not in "iu":
        raise _BadOutput(
            f"returned shape {array.shape} of {array.dtype}, not {n} integer token ids"
        )
    bad = (array < 0) | (array >= V)
    if bad.any():
        raise _BadOutput(f"returned token id {int(array[np.argmax(bad)])}, outside [0, {V})")
    return array.astype(np.int64)


def _converter(dtype: str, backend: str) -> Callable[[list[float]], Any]:
    if backend == "numpy":
        if dtype not in _NUMPY_DTYPES:
            raise InvalidArgument("dtype", dtype, f"numpy takes one of {_NUMPY_DTYPES}")
        return lambda values: np.asarray(values, dtype=np.float64).astype(dtype)
    if backend == "torch":
        if dtype not in _TORCH_DTYPES:
            raise InvalidArgument("dtype", dtype, f"torch takes one of {_TORCH_DTYPES}")
        try:
            import torch
        except ImportError as error:
            raise InvalidArgument(
                "backend", backend, "needs torch", "pip install 'spec-verify[torch]'"
            ) from error
        torch_dtype = getattr(torch, dtype)
        return lambda values: torch.tensor(values, dtype=torch.float64).to(torch_dtype)
    raise InvalidArgument("backend", backend, "must be 'numpy' or 'torch'")
