"""The smallest implementation ``spec-verify check`` accepts: one function, ``verify_draft``.

Run it from any folder, by its path::

    spec-verify check --impl python:path/to/minimal_sampler.py --profile lossless --quick

It processes each logits row with the reference's ``sampling_distribution`` (temperature,
penalties, top-k/top-p/min-p), so what it implements is the verification rule itself: keep
draft ``x`` with probability ``min(1, p(x)/q(x))``, else emit a token of the residual
``(p - q)+`` and stop; when every draft is kept, emit a bonus token from the last row. The
uniforms come from ``rng.random()``, the source the harness passes in. docs/implementing.md
says what each argument means and which other names unlock more checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spec_verify.reference import sampling_distribution


def _draw(probs: np.ndarray, u: float) -> int:
    """The token at ``u`` of the inverse CDF of ``probs`` (never a zero-probability token)."""
    cdf = np.cumsum(probs)
    token = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    token = min(token, len(probs) - 1)
    while probs[token] == 0:  # u * total fell on the top edge of a run of zeros
        token -= 1
    return token


def verify_draft(
    target_logits: Any,
    draft_ids: Sequence[int],
    draft_probs: Any,
    p: Any,
    history: Sequence[int],
    rng: Any,
    prompt: Sequence[int] = (),
) -> tuple[list[int], int]:
    """``(emitted_ids, n_accepted)``: the kept drafts, then one token of the target's."""
    rows = np.asarray(target_logits, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != len(draft_ids) + 1:
        raise ValueError(f"target_logits has shape {rows.shape}; it must be (m + 1, V)")
    V = rows.shape[1]
    kept: list[int] = []
    for i, x in enumerate(draft_ids):
        target = sampling_distribution(rows[i], p, [*history, *kept], prompt)
        if p.temperature == 0:  # greedy: keep the draft while it is the argmax; no draws
            best = int(np.argmax(target))
            if best != x:
                return [*kept, best], len(kept)
            kept.append(int(x))
            continue
        draft = np.zeros(V) if draft_probs is None else np.asarray(draft_probs[i], np.float64)
        if draft_probs is None:
            draft[x] = 1.0  # a deterministic draft proposes x with probability 1
        if rng.random() < min(1.0, target[x] / draft[x]):
            kept.append(int(x))
            continue
        residual = np.maximum(target - draft, 0.0)
        return [*kept, _draw(residual, rng.random())], len(kept)
    last = sampling_distribution(rows[-1], p, [*history, *kept], prompt)
    if p.temperature == 0:
        return [*kept, int(np.argmax(last))], len(kept)
    return [*kept, _draw(last, rng.random())], len(kept)
