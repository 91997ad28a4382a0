"""The rejection step (M07.6): one verified position of speculative sampling.

Accept the drafted ``x`` with probability ``min(1, p(x)/q(x))``, else draw from the residual
``max(0, p - q) / Z``. Averaged over ``x ~ q`` the output is exactly ``p`` (seed section 2.2).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidDraft, InvalidParams
from .sampling import lane_sum, sample_with

__all__ = ["residual", "speculative_step", "step"]


def residual(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """``max(0, p - q)`` normalised by its lane sum; ``p`` itself when that sum is 0.

    The sum is 0 only when ``p <= q`` everywhere, i.e. ``p == q`` up to rounding; then no
    rejection can happen in exact arithmetic and ``p`` is the safe fallback.
    """
    d = np.subtract(p, q)
    np.maximum(d, 0.0, out=d)
    z = lane_sum(d)
    if z > 0.0:
        return d / z
    return p


def speculative_step(
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    x: int,
    u_accept: float,
    u_resample: float,
) -> tuple[int, bool]:
    """One position: ``(token, accepted)``.

    Accept iff ``u_accept * q[x] < p[x]`` (``u < p(x)/q(x)`` without dividing), otherwise the
    token is the residual's inverse CDF at ``u_resample``. ``u_resample`` is always consumed by
    the caller, used or not.

    Raises:
        InvalidDraft: ``p``/``q`` not distributions of one length, ``x`` out of range,
        ``q[x] = 0``; InvalidParams: a uniform outside [0, 1).

    >>> import numpy as np
    >>> p, q = np.array([.5, .25, .25]), np.array([.25, .5, .25])
    >>> speculative_step(p, q, 1, 0.7, 0.4)
    (0, False)
    >>> speculative_step(p, q, 1, 0.3, 0.9)
    (1, True)
    """
    p = _distribution("p", p)
    q = _distribution("q", q)
    if p.shape != q.shape:
        raise InvalidDraft("q", q, f"has length {q.shape[0]}; it must match p's {p.shape[0]}")
    if not isinstance(x, (int, np.integer)) or not 0 <= x < p.shape[0]:
        raise InvalidDraft("x", x, f"must be a token id in [0, {p.shape[0]})")
    if q[x] <= 0:
        raise InvalidDraft("q", q, f"gives the drafted token {x} probability 0")
    for name, u in (("u_accept", u_accept), ("u_resample", u_resample)):
        if not 0.0 <= u < 1.0:
            raise InvalidParams(name, u, "must be a uniform in [0, 1)")
    return step(p, q, int(x), u_accept, u_resample)


def step(
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    x: int,
    u_accept: float,
    u_resample: float,
) -> tuple[int, bool]:
    """``speculative_step`` without validation (``verify_draft`` validated its rows already)."""
    if u_accept * q[x] < p[x]:
        return x, True
    return sample_with(residual(p, q), u_resample), False


def _distribution(name: str, values: object) -> NDArray[np.float64]:
    row = np.asarray(values, dtype=np.float64)
    if row.ndim != 1 or row.shape[0] < 1 or not np.isfinite(row).all() or (row < 0).any():
        raise InvalidDraft(name, values, "must be a 1-D vector of finite non-negative numbers")
    if abs(float(np.sum(row)) - 1.0) > 1e-6:
        raise InvalidDraft(name, values, f"sums to {float(np.sum(row))!r}; it must sum to 1")
    return row
