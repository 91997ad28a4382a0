"""SpecTr's K-SEQ (Sun et al., "SpecTr: Fast Speculative Decoding via Optimal Transport",
NeurIPS 2023, Algorithm K-SEQ) at one position: ``K`` drafts drawn i.i.d. from one draft row
``q``, one of them kept or a token of the residual added, then the bonus after a kept draft.
CONTRACT.md section 10 pins its draw order and its choice of ``rho``.

With ``a = sum_x min(q(x), p(x) / rho)`` and ``c = (1 - (1 - a)^K) / a``, draft ``X_i`` is kept
with probability ``min(1, p(X_i) / (rho q(X_i)))``, tried in order; if none is kept the token is
drawn from ``r(x) = (p(x) - c min(q(x), p(x) / rho)) / (1 - a)^K``. It is lossless whenever
``r >= 0``; ``rho = K`` always is, ``rho = 1`` at ``K = 1`` (the token rule).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidDraft, InvalidParams
from .sampling import SamplingParams, UniformSource, _distribution, draw_uniform, sample_with
from .verify import _check_target_logits

__all__ = ["RHO_GRID", "RHO_TOLERANCE", "kseq_rho", "verify_kseq"]

RHO_GRID = 32  # rho is the smallest 1 + j (K - 1) / RHO_GRID, j = 0..RHO_GRID, that is valid
# Validity in float64 allows this relative slack, so that an exact tie (c min(q, p/rho) = p,
# which grid points do hit) is valid as in exact arithmetic; the residual is clipped at 0.
RHO_TOLERANCE = 2.0**-40


def _valid(p: NDArray[np.float64], q: NDArray[np.float64], K: int, rho: float) -> bool:
    m = np.minimum(q, p / rho)
    a = float(m.sum())
    if a <= 0.0 or a >= 1.0:
        return True
    c = (1.0 - (1.0 - a) ** K) / a
    return bool(np.all(c * m <= p * (1.0 + RHO_TOLERANCE)))


def kseq_rho(p: NDArray[np.float64], q: NDArray[np.float64], K: int) -> float:
    """The smallest grid ``rho`` in ``[1, K]`` whose residual is non-negative (float64)."""
    for j in range(RHO_GRID + 1):
        rho = 1.0 + j * (K - 1) / RHO_GRID
        if _valid(p, q, K, rho):
            return rho
    return float(K)  # pragma: no cover - rho = K is always valid


def verify_kseq(
    target_logits: object,
    draft_ids: Sequence[int],
    draft_probs: object,
    p: SamplingParams,
    history: Sequence[int],
    rng: UniformSource,
    prompt: Sequence[int] = (),
) -> tuple[list[int], int]:
    """K-SEQ over ``K = len(draft_ids)`` i.i.d. drafts of one position.

    Args:
        target_logits: ``(K + 1, V)``: row 0 after the context, row ``1 + i`` after draft ``i``.
        draft_ids: the ``K`` drafts, each drawn from ``draft_probs``.
        draft_probs: the one draft row ``q`` (length ``V``) they were drawn from.

    Returns:
        ``([x_i, bonus], 1)`` when draft ``i`` is kept, else ``([y], 0)``.

    Draw order: ``eta_1, eta_2, ...`` until one keeps its draft (``eta_i * rho * q(x_i) <
    p(x_i)``), then one uniform for the bonus (row ``1 + i``) or the residual token.
    """
    if not isinstance(p, SamplingParams) or p.greedy:
        raise InvalidParams("p", p, "K-SEQ is a sampled rule: a SamplingParams, temperature > 0")
    K = len(draft_ids)
    rows = _check_target_logits(target_logits, K)
    V = rows.shape[1]
    q = np.asarray(draft_probs, dtype=np.float64)
    if q.shape != (V,) or not (q.min() >= 0.0) or abs(float(q.sum()) - 1.0) > 1e-6:
        raise InvalidDraft("draft_probs", draft_probs, f"must be one distribution of length {V}")
    ids = [int(x) for x in draft_ids]
    if K == 0 or any(not 0 <= x < V or q[x] <= 0.0 for x in ids):
        raise InvalidDraft("draft_ids", draft_ids, "must be K >= 1 tokens the draft row can draw")
    p0 = _distribution(rows[0], p, list(history), list(prompt))
    rho = kseq_rho(p0, q, K)
    for i, x in enumerate(ids):
        if draw_uniform(rng) * rho * q[x] < p0[x]:
            bonus = _distribution(rows[1 + i], p, [*history, x], list(prompt))
            return [x, sample_with(bonus, draw_uniform(rng))], 1
    m = np.minimum(q, p0 / rho)
    a = float(m.sum())
    r = np.maximum(p0 - ((1.0 - (1.0 - a) ** K) / a) * m, 0.0) if a > 0 else p0
    if float(r.sum()) <= 0.0:  # rounding only
        r = p0
    return [sample_with(r / r.sum(), draw_uniform(rng))], 0
