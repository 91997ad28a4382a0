"""A custom speculative sampler for ``spec_verify.endtoend.check_sampler``.

``sampler(case, n, seed)`` runs ``n`` rounds: it drafts ``case.draft_length`` tokens, each from
the draft's row after the tokens drafted before it (``case.draft_row(prefix)``), verifies them
in order against the target's rows (``case.target_row(prefix)``: accept with probability
``min(1, p/q)``, else resample from ``(p - q)+`` and stop), adds the bonus token from the row
after the last draft when every draft was accepted, and returns each round's emitted tokens
padded with -1. It computes in the dtype it is handed (numpy arrays or torch tensors).
``sampler_biased`` has the planted bug of resampling from ``p`` after a rejection.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _as_numpy(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor: compute in float32 (numpy has no bfloat16)
        return values.detach().float().numpy()
    return np.asarray(values)


def _draw(row: Any, u: float) -> int:
    """Inverse CDF of ``row`` (renormalised in float64) at ``u``."""
    cdf = np.cumsum(_as_numpy(row).astype(np.float64))
    return min(int(np.searchsorted(cdf, u * cdf[-1], side="right")), len(cdf) - 1)


def rounds(case: Any, n: int, seed: int, *, bug: str = "") -> np.ndarray:
    """``n`` rounds; ``bug`` plants one: "resample_from_p", "bonus_from_last_draft_row"
    (the bonus drawn from the row the last draft was verified with) or "one_uniform" (the
    first position's acceptance uniform reused at every position)."""
    rng = np.random.default_rng(seed)
    k = case.draft_length
    out = np.full((n, k + 1), -1, dtype=np.int64)
    for r in range(n):
        drafts: list[int] = []
        for _ in range(k):
            drafts.append(_draw(case.draft_row(drafts), rng.random()))
        first_u = rng.random()
        for i, x in enumerate(drafts):
            p, q = _as_numpy(case.target_row(drafts[:i])), _as_numpy(case.draft_row(drafts[:i]))
            u = first_u if (bug == "one_uniform" or i == 0) else rng.random()
            if u < min(1.0, float(p[x] / q[x])):  # in the case's dtype; q[x] > 0: x was drafted
                out[r, i] = x
                continue
            leftover = p if bug == "resample_from_p" else np.maximum(p - q, 0)
            if leftover.astype(np.float64).sum() == 0:
                leftover = p  # p == q: a rejection has probability 0
            out[r, i] = _draw(leftover, rng.random())
            break
        else:
            row = drafts[:-1] if bug == "bonus_from_last_draft_row" else drafts
            out[r, k] = _draw(case.target_row(row), rng.random())
    return out


def sampler(case: Any, n: int, seed: int) -> np.ndarray:
    """A lossless speculative sampler."""
    return rounds(case, n, seed)


def sampler_biased(case: Any, n: int, seed: int) -> np.ndarray:
    """The planted bug: after a rejection, resample from p instead of (p - q)+."""
    return rounds(case, n, seed, bug="resample_from_p")
