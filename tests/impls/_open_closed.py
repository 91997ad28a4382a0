"""Samplers whose uniforms lie in (0, 1] (``curand_uniform``'s convention, declared by the
capability ``uniforms_open_closed``): the verification loop of ``_scaffold`` with the
comparisons of that interval. An inverse CDF on (0, 1] returns the first id whose cumulative
sum reaches ``u`` (``u <= c``), so ``u = 1.0`` lands on the last id of positive probability
(after rounding, the same fallback as the contract's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._scaffold import Row

SPEC_VERIFY_CAPABILITIES = {"uniforms_open_closed": True}


def sample_open_closed(dist: Row, u: float) -> int:
    """The first id with ``u <= c[id]``; past the end (rounding), the last id with mass."""
    c = np.cumsum(dist)
    hits = np.flatnonzero(u <= c)
    return int(hits[0]) if hits.size else int(np.flatnonzero(dist > 0)[-1])


def residual_or_none(p: Row, q: Row) -> Row | None:
    """``max(p - q, 0)`` normalised, or None when it is all zero (p = q)."""
    d = np.maximum(p - q, 0.0)
    z = float(np.sum(d))
    return d / z if z > 0 else None


def bonus(p: Row, rng: Any) -> int:
    return sample_open_closed(p, rng.random())
