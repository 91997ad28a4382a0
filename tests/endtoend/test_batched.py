"""check_batched: a vLLM-style batched rejection sampler, its law and batch invariance.

Declared: family alpha 1e-3 over 9 tests (5 contexts' laws, 4 two-sample tests of alone
against each batched context; Holm), power 0.99 at TV 0.2 per test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from spec_verify.endtoend import check_batched

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import batched_kernel

from tests.impls import kernel_reorders, kernel_stale_slot_q


def test_the_correct_kernel_passes_and_the_offset_bug_is_caught() -> None:
    good = check_batched(batched_kernel.rejection_sample, delta=0.2)
    assert good.passed, good.message
    assert "float32 on numpy" in good.message
    bad = check_batched(batched_kernel.rejection_sample_offset_bug, delta=0.2)
    assert not bad.passed
    # Alone and first in a batch the bug cannot show; behind other requests it does.
    assert bad.laws["alone"].passed and bad.laws["first of 4"].passed
    assert not bad.laws["middle of 8, mixed lengths"].passed


def test_a_kernel_whose_law_depends_on_the_batch_size_is_caught() -> None:
    def batch_dependent(ids, lengths, q, p, bonus, seed):  # type: ignore[no-untyped-def]
        out = batched_kernel.rejection_sample(ids, lengths, q, p, bonus, seed)
        if len(lengths) > 4:  # a "fast path" for large batches: accept every first draft
            starts = np.cumsum([0, *lengths[:-1]])
            for request, k in enumerate(lengths):
                if k:
                    out[request, 0] = ids[starts[request]]
        return out

    result = check_batched(batch_dependent, delta=0.2)
    assert not result.passed
    assert not result.invariance["middle of 8, mixed lengths"].passed


def test_torch_tensors_in_bfloat16() -> None:
    pytest.importorskip("torch")
    result = check_batched(batched_kernel.rejection_sample, dtype="bfloat16", backend="torch",
                           delta=0.2)  # fmt: skip
    assert result.passed and result.dtype == "bfloat16", result.message


@pytest.mark.parametrize(
    ("kernel", "reason"),
    [
        (lambda *a: (_ for _ in ()).throw(RuntimeError("kernel panic")), "raised RuntimeError"),
        (lambda ids, lengths, *a: np.zeros(len(lengths), dtype=np.int64), "returned shape"),
        (lambda ids, lengths, *a: np.full((len(lengths), max(lengths) + 1), 9), "in [0, 3)"),
    ],
)
def test_a_failing_kernel_is_named(kernel, reason) -> None:  # type: ignore[no-untyped-def]
    result = check_batched(kernel, delta=0.2)
    assert not result.passed and reason in result.error and "context 'alone'" in result.error


def _bonus_from_the_next_request(ids, lengths, q, p, bonus, seed):  # type: ignore[no-untyped-def]
    """A request that keeps every draft gets the bonus sampled for the next request's row
    (the first token's law is untouched: the bonus is never the first token of a request)."""
    out = batched_kernel.rejection_sample(ids, lengths, q, p, bonus, seed)
    for request, k in enumerate(lengths):
        if k and out[request, k] != -1:
            out[request, k] = int(bonus[(request + 1) % len(lengths)])
    return out


def _one_uniform_per_request(ids, lengths, q_rows, p_rows, bonus, seed):  # type: ignore[no-untyped-def]
    """One acceptance uniform for every position of a request: each position alone is right."""
    rng = np.random.default_rng(seed)
    out = np.full((len(lengths), max(lengths) + 1), -1, dtype=np.int64)
    q_rows, p_rows = np.asarray(q_rows, dtype=np.float64), np.asarray(p_rows, dtype=np.float64)
    start = 0
    for request, k in enumerate(lengths):
        u = rng.random()
        for i in range(k):
            x, p, q = int(ids[start + i]), p_rows[start + i], q_rows[start + i]
            if u < min(1.0, p[x] / q[x]):
                out[request, i] = x
                continue
            residual = np.maximum(p - q, 0.0)
            out[request, i] = int(rng.choice(len(p), p=residual / residual.sum()))
            break
        else:
            out[request, k] = int(bonus[request])
        start += k
    return out


@pytest.mark.parametrize(
    ("kernel", "caught_in", "delta"),
    [
        (_bonus_from_the_next_request, "middle of 8, mixed lengths", 0.2),
        # its joint law is at TV 0.0768 from the target (exact enumeration over the request's
        # drafts and the shared uniform), so the check is planned to detect TV 0.05
        # 42 s (its delta needs 4x the draws): slow; the other row and the fast tests of
        # check_sampler's one-uniform bug keep the joint law in the default run
        pytest.param(_one_uniform_per_request, "alone", 0.05, marks=pytest.mark.slow),
    ],
    ids=["bonus_from_the_next_request", "one_uniform_per_request"],
)
def test_a_bias_after_the_first_token_is_caught_by_the_joint_law(kernel, caught_in, delta) -> None:  # type: ignore[no-untyped-def]
    result = check_batched(kernel, delta=delta)
    assert not result.passed, result.message
    assert not result.laws[caught_in].passed, result.laws[caught_in].message


REORDERED = "reordered slots, greedy and sampled neighbours"


def test_q_rows_from_a_slots_previous_occupant_are_caught_only_when_slots_move() -> None:
    """vLLM PR #41044 / #45956: per-slot draft rows not moved with their request. With the
    request under test in a fixed slot (the first four contexts) it passes; among persistent
    neighbours in permuted slots its law and its invariance fail."""
    kernel_stale_slot_q._BUFFER.clear()
    result = check_batched(kernel_stale_slot_q.rejection_sample, delta=0.2)
    assert not result.passed, result.message
    fixed = [c for c in result.laws if c != REORDERED]
    assert all(result.laws[c].passed for c in fixed), result.message
    assert all(r.passed for c, r in result.invariance.items() if c != REORDERED)
    assert not result.laws[REORDERED].passed and not result.invariance[REORDERED].passed
    assert REORDERED in result.message


def test_a_kernel_that_reorders_its_batch_honestly_passes() -> None:
    result = check_batched(kernel_reorders.rejection_sample, delta=0.2)
    assert result.passed, result.message
    assert len(result.laws) == 5 and REORDERED in result.laws


def test_the_reordered_context_moves_slots_and_mixes_greedy_rows() -> None:
    """What the reordered context hands the kernel: six requests with draft lengths 0 to 4
    (padding included), the request under test in different slots, one-hot (greedy) rows."""
    seen: list[tuple[list[int], list[int]]] = []

    def recording(ids, lengths, q, p, bonus, seed):  # type: ignore[no-untyped-def]
        q = np.asarray(q)
        starts = np.cumsum([0, *lengths[:-1]])
        greedy = [i for i, (s, k) in enumerate(zip(starts, lengths, strict=True))
                  if k and np.all(q[s:s + k].max(axis=1) == 1.0)]  # fmt: skip
        seen.append((list(lengths), greedy))
        return batched_kernel.rejection_sample(ids, lengths, q, p, bonus, seed)

    check_batched(recording, delta=0.5)
    reordered = [layout for layout in seen if len(layout[0]) == 6]
    assert reordered and all(sorted(lengths) == [0, 1, 2, 2, 3, 4] for lengths, _ in reordered)
    assert len({tuple(lengths) for lengths, _ in reordered}) > 20  # the slots move
    assert all(len(greedy) == 2 for _, greedy in reordered)
