"""Samplers of ``check_sampler(shape="propose_and_verify")``: ``n`` rounds of the token rule on
their own numpy generator, the drafts drawn from the draft rows. ``honest`` draws the drafts'
noise apart from the verifier's; ``coupled`` rebuilds vLLM PR #47386 (fixed in #54282): the
draft's ``i``-th token is drawn with the verifier's ``i``-th uniform (the slots of
``spec_verify.tiers._own_stream.coupled_law``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["coupled", "honest"]


def _pick(rows: npt.NDArray[np.float64], u: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Inverse CDF of each round's row (``rows`` (n, V)) at its uniform."""
    cdf = np.cumsum(rows, axis=1)
    picked = (u[:, None] * cdf[:, -1:] >= cdf).sum(axis=1)
    return np.minimum(picked, rows.shape[1] - 1)


def _rounds(coupled_noise: bool, target: Any, draft: Any, n: int, seed: int) -> Any:
    p = np.asarray(target, dtype=np.float64)
    q = np.asarray(draft, dtype=np.float64)
    p, q = p / p.sum(axis=1, keepdims=True), q / q.sum(axis=1, keepdims=True)
    k = q.shape[0]
    own = np.random.default_rng(seed)
    slots = own.random((n, 2 * k + 1))  # the verifier's uniforms
    noise = slots[:, :k] if coupled_noise else own.random((n, k))
    out = np.full((n, k + 1), -1, dtype=np.int64)
    open_ = np.ones(n, dtype=bool)
    for i in range(k):
        x = _pick(np.broadcast_to(q[i], (n, q.shape[1])), noise[:, i])
        accept = slots[:, 2 * i] * q[i][x] < p[i][x]
        residual = np.maximum(p[i] - q[i], 0.0)
        residual = residual if residual.sum() > 0 else p[i]
        fix = _pick(np.broadcast_to(residual, (n, q.shape[1])), slots[:, 2 * i + 1])
        out[open_, i] = np.where(accept, x, fix)[open_]
        open_ &= accept
    bonus = _pick(np.broadcast_to(p[k], (n, p.shape[1])), slots[:, 2 * k])
    out[open_, k] = bonus[open_]
    return out


def honest(target: Any, draft: Any, n: int, seed: int) -> Any:
    return _rounds(False, target, draft, n, seed)


def coupled(target: Any, draft: Any, n: int, seed: int) -> Any:
    return _rounds(True, target, draft, n, seed)
