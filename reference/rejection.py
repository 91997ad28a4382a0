"""The rejection step (M07.6): one verified position of speculative sampling.

Accept the drafted ``x`` with probability ``min(1, p(x)/q(x))``, else draw from the residual
``max(0, p - q) / Z``. Averaged over ``x ~ q`` the output is exactly ``p`` (seed section 2.2).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .sampling import sample_with

__all__ = ["residual", "speculative_step"]


def residual(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """``max(0, p - q)`` normalised by its sequential sum; ``p`` itself when that sum is 0.

    The sum is 0 only when ``p <= q`` everywhere, i.e. ``p == q`` up to rounding; then no
    rejection can happen in exact arithmetic and ``p`` is the safe fallback.
    """
    d = np.maximum(p - q, 0.0)
    z = float(np.cumsum(d)[-1])
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
    token is the residual's inverse CDF at ``u_resample``. ``q[x]`` must be positive (callers
    validate). ``u_resample`` is always consumed by the caller, used or not.

    >>> import numpy as np
    >>> p, q = np.array([.5, .25, .25]), np.array([.25, .5, .25])
    >>> speculative_step(p, q, 1, 0.7, 0.4)
    (0, False)
    >>> speculative_step(p, q, 1, 0.3, 0.9)
    (1, True)
    """
    if u_accept * q[x] < p[x]:
        return x, True
    return sample_with(residual(p, q), u_resample), False
