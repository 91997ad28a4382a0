"""A custom speculative sampler for ``spec_verify.endtoend.check_sampler``.

``sampler(case, n, seed)`` drafts ``case.draft_length`` tokens from ``case.draft_probs``,
verifies them against ``case.target_probs`` (accept with probability ``min(1, p/q)``, else
resample from ``(p - q)+``) and returns the first emitted token of ``n`` rounds. It computes in
the dtype it is handed (numpy arrays or torch tensors). ``sampler_biased`` has the planted bug
of resampling from ``p`` after a rejection.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _as_numpy(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor: compute in float32 (numpy has no bfloat16)
        return values.detach().float().numpy()
    return np.asarray(values)


def _first_tokens(case: Any, n: int, seed: int, *, residual: bool) -> list[int]:
    rng = np.random.default_rng(seed)
    p, q = _as_numpy(case.target_probs), _as_numpy(case.draft_probs)
    V = p.shape[0]
    q64 = q.astype(np.float64) / q.astype(np.float64).sum()
    leftover = np.maximum(p - q, 0) if residual else p
    leftover = leftover.astype(np.float64) / leftover.astype(np.float64).sum()
    p64 = p.astype(np.float64) / p.astype(np.float64).sum()
    out = []
    for _ in range(n):
        x = int(rng.choice(V, p=q64))  # only the first draft decides the first token
        ratio = p[x] / q[x]  # in the case's dtype; q[x] > 0 since x was drafted
        if rng.random() < min(1.0, float(ratio)):
            out.append(x)
        elif leftover.sum() > 0:
            out.append(int(rng.choice(V, p=leftover)))
        else:
            out.append(int(rng.choice(V, p=p64)))  # p == q: a rejection has probability 0
    return out


def sampler(case: Any, n: int, seed: int) -> list[int]:
    """A lossless speculative sampler."""
    return _first_tokens(case, n, seed, residual=True)


def sampler_biased(case: Any, n: int, seed: int) -> list[int]:
    """The planted bug: after a rejection, resample from p instead of (p - q)+."""
    return _first_tokens(case, n, seed, residual=False)
