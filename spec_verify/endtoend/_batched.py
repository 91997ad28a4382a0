"""Batched rejection samplers, vLLM style: the target law and batch invariance.

The shape (what engines such as vLLM call a rejection sampler): one call verifies a batch of
requests at once,

    kernel(draft_token_ids, num_draft_tokens, draft_probs, target_probs, bonus_token_ids, seed)
        -> output_token_ids

with ``draft_token_ids`` the drafts of every request flattened (total,), ``num_draft_tokens``
the per-request draft lengths (batch,), ``draft_probs`` (total, V) or None (a deterministic
draft), ``target_probs`` (total, V) one target row per drafted position, ``bonus_token_ids``
(batch,) sampled by the caller from the target's next row, ``seed`` for the kernel's own
generator; it returns (batch, max_k + 1) token ids, -1 for padding. Arrays are numpy, or torch
tensors with ``backend="torch"``; probabilities are in ``dtype``.

``check_batched(kernel)`` runs the request under test (the seed's V = 5 case, two drafts drawn
by the harness from q) alone and inside batches with other requests of random draft lengths,
including requests with no drafts (padding). Its first emitted token must follow the target in
every batch context (G-tests), and its law must not depend on the context (a two-sample test
of alone against batched): Holm across all of them at ``family_alpha``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec_verify.endtoend._sampler import _converter
from spec_verify.stats._gof import GofResult, g_test
from spec_verify.stats._multiple import holm
from spec_verify.stats._power import required_samples
from spec_verify.stats._two_sample import (
    TwoSampleResult,
    two_sample_required_samples,
    two_sample_test,
)
from spec_verify.stats._validate import check_open_unit

__all__ = ["BatchedCheckResult", "check_batched"]

Kernel = Callable[..., Any]
_P = (0.4, 0.3, 0.15, 0.1, 0.05)
_Q = (0.1, 0.2, 0.3, 0.2, 0.2)
_CONTEXTS = ("alone", "first of 4", "last of 4, padded", "middle of 8, mixed lengths")


@dataclass(frozen=True)
class BatchedCheckResult:
    """The verdict: every context's G-test against the target and the batch-invariance
    two-sample tests (alone against each batched context), Holm at ``family_alpha``."""

    passed: bool
    family_alpha: float
    dtype: str
    backend: str
    n: int
    laws: dict[str, GofResult]
    invariance: dict[str, TwoSampleResult]
    error: str
    message: str


def check_batched(
    kernel: Kernel,
    *,
    dtype: str = "float32",
    backend: str = "numpy",
    family_alpha: float = 1e-3,
    delta: float = 0.1,
    power: float = 0.99,
    seed: int = 0,
) -> BatchedCheckResult:
    """Check a batched rejection sampler; see the module doc for the kernel's shape.

    Args:
        kernel: the batched sampler.
        dtype, backend: how the probabilities are handed over (as ``check_sampler``).
        family_alpha, delta, power: the declared false-alarm rate over all tests, and the TV
            each test detects with probability ``power`` (the sample size per context follows).
        seed: root seed of the harness's draws and of the kernel's seeds.

    Returns:
        A ``BatchedCheckResult``; a kernel that raises or returns garbage fails (``error``).
    """
    family_alpha = check_open_unit("family_alpha", family_alpha)
    tests = 2 * len(_CONTEXTS) - 1
    alpha = family_alpha / tests
    n = max(
        required_samples(len(_P), alpha, delta, power),
        two_sample_required_samples(len(_P), alpha, delta, power),
    )
    convert = _converter(dtype, backend)
    rng = np.random.default_rng(seed)
    firsts: dict[str, list[int]] = {}
    try:
        for context in _CONTEXTS:
            firsts[context] = _draw(kernel, context, n, rng, convert, backend)
    except _KernelFailure as error:
        return BatchedCheckResult(False, family_alpha, dtype, backend, n, {}, {}, str(error),
                                  f"the kernel failed ({dtype} on {backend}): {error}")  # fmt: skip
    rounded = convert(list(_P))  # the target as the kernel sees it, renormalised in float64
    law = np.array(rounded.double().tolist() if backend == "torch" else rounded.tolist())
    law = law / law.sum()
    laws = {
        c: g_test(np.bincount(firsts[c], minlength=len(_P)), law, alpha=alpha) for c in _CONTEXTS
    }
    invariance = {
        c: two_sample_test(firsts["alone"], firsts[c], alpha=alpha, seed=seed)
        for c in _CONTEXTS[1:]
    }
    names = [f"law {c}" for c in laws] + [f"alone vs {c}" for c in invariance]
    pvalues = [r.pvalue for r in laws.values()] + [r.pvalue for r in invariance.values()]
    rejected = holm(pvalues, family_alpha)
    passed = not any(rejected)
    failed = [name for name, r in zip(names, rejected, strict=True) if r]
    message = (
        f"lossless and batch-invariant in {len(_CONTEXTS)} batch contexts ({dtype} on "
        f"{backend}, n={n} per context, family alpha {family_alpha:g})"
        if passed
        else f"rejected ({dtype} on {backend}): {', '.join(failed)}"
    )
    return BatchedCheckResult(
        passed, family_alpha, dtype, backend, n, laws, invariance, "", message
    )


class _KernelFailure(Exception):
    pass


def _others(context: str, rng: np.random.Generator) -> tuple[list[int], int]:
    """Draft lengths of the other requests and the position of the request under test."""
    if context == "alone":
        return [], 0
    if context == "first of 4":
        return [int(k) for k in rng.integers(1, 4, 3)], 0
    if context == "last of 4, padded":
        return [0, int(rng.integers(1, 4)), 0], 3
    return [int(k) for k in rng.integers(0, 5, 7)], 3


def _draw(
    kernel: Kernel,
    context: str,
    n: int,
    rng: np.random.Generator,
    convert: Callable[[list[float]], Any],
    backend: str,
) -> list[int]:
    """The first token of the request under test in ``n`` kernel calls, one batch each (the
    request under test once per batch, so "alone" is a batch of one)."""
    V = len(_P)
    out: list[int] = []
    while len(out) < n:
        lengths: list[int] = []
        drafts: list[int] = []
        q_rows: list[list[float]] = []
        p_rows: list[list[float]] = []
        bonus: list[int] = []
        under_test: list[int] = []
        others, position = _others(context, rng)
        for index in range(len(others) + 1):
            if index == position:
                under_test.append(len(lengths))
                k, p, q = 2, list(_P), list(_Q)
            else:
                k = others[index if index < position else index - 1]
                p = list(rng.dirichlet(np.ones(V)))
                q = list(rng.dirichlet(np.ones(V)))
            lengths.append(k)
            for _ in range(k):
                drafts.append(int(rng.choice(V, p=np.array(q) / sum(q))))
                q_rows.append(q)
                p_rows.append(p)
            bonus.append(int(rng.choice(V, p=np.array(p) / sum(p))))
        call_seed = int(rng.integers(0, 2**63))
        flat = [v for row in q_rows for v in row]
        target = [v for row in p_rows for v in row]
        args = (
            _ids(drafts, backend),
            list(lengths),
            _rows(convert(flat), len(q_rows), V),
            _rows(convert(target), len(p_rows), V),
            _ids(bonus, backend),
            call_seed,
        )
        try:
            result = kernel(*args)
        except Exception as error:  # the kernel under test may raise anything
            raise _KernelFailure(
                f"raised {type(error).__name__}: {error} (batch of {len(lengths)} "
                f"requests in context {context!r}, seed {call_seed})"
            ) from error
        matrix = np.asarray(result.tolist() if hasattr(result, "tolist") else result)
        expected = (len(lengths), max(lengths) + 1)
        if matrix.shape != expected or matrix.dtype.kind not in "iu":
            raise _KernelFailure(
                f"returned shape {matrix.shape} of {matrix.dtype}, not integer ids of shape "
                f"{expected} (batch, max_k + 1) in context {context!r}"
            )
        for row in under_test:
            token = int(matrix[row, 0])
            if not 0 <= token < V:
                raise _KernelFailure(
                    f"emitted {token} as the first token of a request with 2 drafts "
                    f"(outside [0, {V})) in context {context!r}, seed {call_seed}"
                )
            out.append(token)
    return out[:n]


def _ids(values: list[int], backend: str) -> Any:
    if backend == "torch":
        import torch

        return torch.tensor(values, dtype=torch.int64)
    return np.asarray(values, dtype=np.int64)


def _rows(values: Any, count: int, V: int) -> Any:
    return values.reshape(count, V)
