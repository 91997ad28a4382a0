"""An honest kernel that reorders its batch, as engines do (sampled requests first, then by
draft length, longest first), moves every per-request input with its request (drafts, draft
rows, target rows, bonus) and puts the answers back in the caller's order: its law is the
target's in every layout (``check_batched``'s control for kernel_stale_slot_q)."""

from typing import Any

import numpy as np

from tests.impls.kernel_honest import rejection_sample as _honest

SPEC_VERIFY_KERNEL = "rejection_sample"


def rejection_sample(ids: Any, lengths: Any, q: Any, p: Any, bonus: Any, seed: int) -> Any:
    ids = np.asarray(ids, dtype=np.int64)
    q, p = np.asarray(q, dtype=np.float64), np.asarray(p, dtype=np.float64)
    lengths = [int(k) for k in lengths]
    starts = np.cumsum([0, *lengths[:-1]])
    greedy = [bool(k) and bool(np.all(q[s:s + k].max(axis=1) == 1.0))
              for s, k in zip(starts, lengths, strict=True)]
    order = sorted(range(len(lengths)), key=lambda r: (greedy[r], -lengths[r]))
    rows = order
    flat = np.array([starts[r] + i for r in rows for i in range(lengths[r])], dtype=np.int64)
    V = p.shape[-1] if p.ndim == 2 else 1
    moved = _honest(ids[flat], [lengths[r] for r in rows], q[flat].reshape(-1, V),
                    p[flat].reshape(-1, V), np.asarray(bonus)[rows], seed)
    out = np.full_like(moved, -1)
    for position, r in enumerate(rows):
        out[r] = moved[position]
    return out
