"""A vLLM-style batched rejection sampler for ``spec_verify.endtoend.check_batched``.

``rejection_sample(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
bonus_token_ids, seed)`` verifies a batch of requests in one call (flattened drafts,
per-request draft lengths, one target row per drafted position, the bonus tokens sampled by
the caller) and returns (batch, max_k + 1) ids with -1 padding. ``rejection_sample_offset_bug``
has a planted batching bug: the target rows are read at the draft's index *within its
request* instead of its index in the flattened batch, which is right only for the first request
of a batch (so it passes every test of a request run alone, which is why ``check_batched``
runs requests inside batches too).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The kernel ``spec-verify check --impl python:examples.batched_kernel`` checks (the module has
# no ``verify_draft``: each check is one request in a batch of one; spec_verify.adapters._kernel).
SPEC_VERIFY_KERNEL = "rejection_sample"


def _numpy(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):
        return values.detach().double().numpy()
    return np.asarray(values, dtype=np.float64)


def _run(draft_ids, lengths, draft_probs, target_probs, bonus, seed, *, offset_bug):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    drafts = np.asarray(_numpy(draft_ids), dtype=np.int64)
    q_rows, p_rows = _numpy(draft_probs), _numpy(target_probs)
    bonus = np.asarray(_numpy(bonus), dtype=np.int64)
    out = np.full((len(lengths), max(lengths) + 1), -1, dtype=np.int64)
    start = 0
    for request, k in enumerate(lengths):
        for i in range(k):
            x = int(drafts[start + i])
            p, q = p_rows[i if offset_bug else start + i], q_rows[start + i]
            if rng.random() < min(1.0, p[x] / q[x]):
                out[request, i] = x
                continue
            residual = np.maximum(p - q, 0.0)
            if residual.sum() == 0:  # p == q: a rejection has probability 0; keep x
                out[request, i] = x
                break
            out[request, i] = int(rng.choice(len(p), p=residual / residual.sum()))
            break
        else:
            out[request, k] = int(bonus[request])
        start += k
    return out


def rejection_sample(draft_ids, lengths, draft_probs, target_probs, bonus, seed):  # type: ignore[no-untyped-def]
    """A lossless batched rejection sampler."""
    return _run(draft_ids, lengths, draft_probs, target_probs, bonus, seed, offset_bug=False)


def rejection_sample_offset_bug(draft_ids, lengths, draft_probs, target_probs, bonus, seed):  # type: ignore[no-untyped-def]
    """The planted batching bug (see the module doc)."""
    return _run(draft_ids, lengths, draft_probs, target_probs, bonus, seed, offset_bug=True)
