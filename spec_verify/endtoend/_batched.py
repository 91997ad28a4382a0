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

``check_batched(kernel)`` runs the request under test (two drafts drawn by the harness from a
draft table, over a target whose row depends on the tokens before it, V = 3) alone and inside
batches with other requests of random draft lengths, including requests with no drafts
(padding). Everything it emits, continued with the target's own draws to three tokens, must
follow the target's joint law of three tokens in every batch context (G-tests over the 27
sequences: a bonus taken from another row, a uniform reused across positions or rows read at
the wrong offset move it even where the first token's law is right), and that law must not
depend on the context (a two-sample test of alone against batched): Holm across all of them at
``family_alpha``.

Engines keep a persistent batch and reorder it between steps (finished requests condensed
away, decodes sorted before prefills), and per-slot buffers that are not moved with their
request misalign rows (vLLM PR #41044 and #45956: draft probabilities read from the slot's
previous occupant). The last context runs the request under test among five persistent
neighbours (draft lengths 0 to 4, two of them greedy rows: one-hot target and draft rows),
each with its own fixed rows, in slots permuted at random on every call; so a kernel that
carries anything from a slot's previous occupant verifies the request with another
request's rows, which moves its law, while a kernel that reorders honestly passes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec_verify.endtoend._sampler import (
    _converter,
    _joint_law,
    _sequence_index,
    _sequence_name,
)
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
_V = 3
_K = 2  # drafts of the request under test
_LENGTH = _K + 1  # tokens compared: everything a round can emit
_REORDERED = "reordered slots, greedy and sampled neighbours"
_CONTEXTS = (
    "alone", "first of 4", "last of 4, padded", "middle of 8, mixed lengths", _REORDERED,
)
# The reordered context's persistent neighbours: draft lengths (0 is a padded request) and
# which of them are greedy rows (one-hot target and draft rows, as an engine hands a
# temperature-0 request to the same kernel).
_NEIGHBOUR_LENGTHS = (0, 1, 3, 4, 2)
_NEIGHBOUR_GREEDY = (False, True, False, True, False)


def _tables() -> tuple[dict[tuple[int, ...], list[float]], dict[tuple[int, ...], list[float]]]:
    """The request under test: the target's row after every prefix of up to two tokens and
    the draft's after every prefix of up to one (fixed rationals, every entry positive)."""
    rng = np.random.default_rng(41)
    target: dict[tuple[int, ...], list[float]] = {}
    draft: dict[tuple[int, ...], list[float]] = {}
    prefixes: list[tuple[int, ...]] = [()]
    for depth in range(_LENGTH):
        for prefix in prefixes:
            weights = rng.integers(1, 6, size=_V)
            target[prefix] = [float(w) / float(weights.sum()) for w in weights]
            if depth < _K:
                weights = rng.integers(1, 6, size=_V)
                draft[prefix] = [float(w) / float(weights.sum()) for w in weights]
        prefixes = [(*prefix, t) for prefix in prefixes for t in range(_V)]
    return target, draft


_TARGET, _DRAFT = _tables()


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
    cells = _V**_LENGTH
    n = max(
        required_samples(cells, alpha, delta, power),
        two_sample_required_samples(cells, alpha, delta, power),
    )
    convert = _converter(dtype, backend)
    rows = {prefix: _as_seen(convert, row, backend) for prefix, row in _TARGET.items()}
    rng = np.random.default_rng(seed)
    outcomes: dict[str, list[int]] = {}
    try:
        for context in _CONTEXTS:
            outcomes[context] = _draw(kernel, context, n, rng, convert, backend, rows)
    except _KernelFailure as error:
        return BatchedCheckResult(False, family_alpha, dtype, backend, n, {}, {}, str(error),
                                  f"the kernel failed ({dtype} on {backend}): {error}")  # fmt: skip
    law = _joint_law(rows, _V, _LENGTH)
    sequence_name = functools.partial(_sequence_name, _V, _LENGTH)
    laws = {
        c: g_test(
            np.bincount(outcomes[c], minlength=cells), law, alpha=alpha, cell_name=sequence_name
        )
        for c in _CONTEXTS
    }
    invariance = {
        c: two_sample_test(outcomes["alone"], outcomes[c], alpha=alpha, seed=seed)
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


def _as_seen(convert: Callable[[list[float]], Any], row: list[float], backend: str) -> list[float]:
    """A target row as the kernel sees it (rounded to the dtype), renormalised in float64."""
    rounded = convert(row)
    values = np.array(rounded.double().tolist() if backend == "torch" else rounded.tolist())
    return [float(v) for v in values / values.sum()]


def _draw(
    kernel: Kernel,
    context: str,
    n: int,
    rng: np.random.Generator,
    convert: Callable[[list[float]], Any],
    backend: str,
    rows: dict[tuple[int, ...], list[float]],
) -> list[int]:
    """The outcome of the request under test in ``n`` kernel calls, one batch each (the
    request under test once per batch, so "alone" is a batch of one): everything it emitted,
    continued with the target's draws (``rows``) to ``_LENGTH`` tokens, as a sequence index."""
    out: list[int] = []
    neighbours = _neighbours(rng) if context == _REORDERED else []
    while len(out) < n:
        if neighbours:
            batch = _reordered_batch(neighbours, rng)
            out.extend(_call(kernel, batch, context, rng, convert, backend, rows))
            continue
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
                path: tuple[int, ...] = ()
                for _ in range(_K):
                    q = _DRAFT[path]
                    x = int(rng.choice(_V, p=np.array(q) / sum(q)))
                    drafts.append(x)
                    q_rows.append(q)
                    p_rows.append(_TARGET[path])
                    path = (*path, x)
                lengths.append(_K)
                p_next = _TARGET[path]
                bonus.append(int(rng.choice(_V, p=np.array(p_next) / sum(p_next))))
                continue
            k = others[index if index < position else index - 1]
            p = list(rng.dirichlet(np.ones(_V)))
            q = list(rng.dirichlet(np.ones(_V)))
            lengths.append(k)
            for _ in range(k):
                drafts.append(int(rng.choice(_V, p=np.array(q) / sum(q))))
                q_rows.append(q)
                p_rows.append(p)
            bonus.append(int(rng.choice(_V, p=np.array(p) / sum(p))))
        out.extend(_call(kernel, _Batch(lengths, drafts, q_rows, p_rows, bonus, under_test),
                         context, rng, convert, backend, rows))
    return out[:n]


@dataclass(frozen=True)
class _Batch:
    """One kernel call's inputs (flattened rows in slot order) and the slots under test."""

    lengths: list[int]
    drafts: list[int]
    q_rows: list[list[float]]
    p_rows: list[list[float]]
    bonus: list[int]
    under_test: list[int]


@dataclass(frozen=True)
class _Neighbour:
    """A persistent request of the reordered context: its own target and draft rows per
    position, fixed for the whole check (greedy: one-hot rows)."""

    p_rows: list[list[float]]  # k + 1 rows: one per drafted position, then the bonus row
    q_rows: list[list[float]]  # k rows (sampled); greedy rows are one-hot on the draft
    greedy: bool


def _neighbours(rng: np.random.Generator) -> list[_Neighbour]:
    out = []
    for k, greedy in zip(_NEIGHBOUR_LENGTHS, _NEIGHBOUR_GREEDY, strict=True):
        p_rows = [list(rng.dirichlet(np.ones(_V))) for _ in range(k + 1)]
        if greedy:
            p_rows = [list(np.eye(_V)[int(np.argmax(row))]) for row in p_rows]
        q_rows = [list(rng.dirichlet(np.ones(_V))) for _ in range(k)]
        out.append(_Neighbour(p_rows, q_rows, greedy))
    return out


def _reordered_batch(neighbours: list[_Neighbour], rng: np.random.Generator) -> _Batch:
    """The request under test and its neighbours in slots permuted at random."""
    batch = _Batch([], [], [], [], [], [])
    order = rng.permutation(len(neighbours) + 1)
    for who in (int(i) for i in order):
        if who == len(neighbours):
            batch.under_test.append(len(batch.lengths))
            path: tuple[int, ...] = ()
            for _ in range(_K):
                q = _DRAFT[path]
                x = int(rng.choice(_V, p=np.array(q) / sum(q)))
                batch.drafts.append(x)
                batch.q_rows.append(q)
                batch.p_rows.append(_TARGET[path])
                path = (*path, x)
            batch.lengths.append(_K)
            p_next = _TARGET[path]
            batch.bonus.append(int(rng.choice(_V, p=np.array(p_next) / sum(p_next))))
            continue
        neighbour = neighbours[who]
        k = len(neighbour.q_rows)
        batch.lengths.append(k)
        for i in range(k):
            if neighbour.greedy:  # the argmax half the time, else any token: one-hot q
                best = int(np.argmax(neighbour.p_rows[i]))
                x = best if rng.random() < 0.5 else int(rng.integers(_V))
                batch.q_rows.append(list(np.eye(_V)[x]))
            else:
                q = neighbour.q_rows[i]
                x = int(rng.choice(_V, p=np.array(q) / sum(q)))
                batch.q_rows.append(q)
            batch.drafts.append(x)
            batch.p_rows.append(neighbour.p_rows[i])
        last = np.array(neighbour.p_rows[k])
        batch.bonus.append(int(rng.choice(_V, p=last / last.sum())))
    return batch


def _call(
    kernel: Kernel,
    batch: _Batch,
    context: str,
    rng: np.random.Generator,
    convert: Callable[[list[float]], Any],
    backend: str,
    rows: dict[tuple[int, ...], list[float]],
) -> list[int]:
    """One kernel call: the outcomes of the slots under test as sequence indices."""
    call_seed = int(rng.integers(0, 2**63))
    flat = [v for row in batch.q_rows for v in row]
    target = [v for row in batch.p_rows for v in row]
    args = (
        _ids(batch.drafts, backend),
        list(batch.lengths),
        _rows(convert(flat), len(batch.q_rows), _V),
        _rows(convert(target), len(batch.p_rows), _V),
        _ids(batch.bonus, backend),
        call_seed,
    )
    try:
        result = kernel(*args)
    except Exception as error:  # the kernel under test may raise anything
        raise _KernelFailure(
            f"raised {type(error).__name__}: {error} (batch of {len(batch.lengths)} "
            f"requests in context {context!r}, seed {call_seed})"
        ) from error
    matrix = np.asarray(result.tolist() if hasattr(result, "tolist") else result)
    expected = (len(batch.lengths), max(batch.lengths) + 1)
    if matrix.shape != expected or matrix.dtype.kind not in "iu":
        raise _KernelFailure(
            f"returned shape {matrix.shape} of {matrix.dtype}, not integer ids of shape "
            f"{expected} (batch, max_k + 1) in context {context!r}"
        )
    out: list[int] = []
    for row in batch.under_test:
        emitted = _emitted(matrix[row, : _K + 1], context, call_seed)
        tail = rng.random(_LENGTH)
        while len(emitted) < _LENGTH:
            cdf = np.cumsum(rows[emitted])
            token = int(np.searchsorted(cdf, tail[len(emitted)] * cdf[-1], side="right"))
            emitted = (*emitted, min(token, _V - 1))
        out.append(_sequence_index(emitted, _V))
    return out


def _emitted(row: Any, context: str, seed: int) -> tuple[int, ...]:
    """The ids a request emitted: a prefix of real ids (at least one), then -1 padding."""
    ids = [int(t) for t in row]
    count = next((i for i, t in enumerate(ids) if t == -1), len(ids))
    bad = [t for t in ids[:count] if not 0 <= t < _V] or [t for t in ids[count:] if t != -1]
    if count == 0 or bad:
        what = "no token" if count == 0 else f"{bad[0]}"
        raise _KernelFailure(
            f"emitted {what} for a request with {_K} drafts (ids must be in [0, {_V}), "
            f"then -1 padding: got {ids}) in context {context!r}, seed {seed}"
        )
    return tuple(ids[:count])


def _ids(values: list[int], backend: str) -> Any:
    if backend == "torch":
        import torch

        return torch.tensor(values, dtype=torch.int64)
    return np.asarray(values, dtype=np.int64)


def _rows(values: Any, count: int, V: int) -> Any:
    return values.reshape(count, V)
