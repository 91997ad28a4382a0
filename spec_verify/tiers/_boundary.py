"""Boundary ties: the reference's decisions that an ulp of ``exp`` could flip.

CONTRACT.md (section 2.5 and 3) lets ``exp`` be any double-precision exp within an ulp of the
exact value, so a port's probabilities may differ from the reference's by a few ulps. A
decision compares a uniform, or a running sum, with such a probability; it can only come out
differently when the two sides of the comparison lie within ``BOUNDARY_TOLERANCE`` of each
other. This module replays the reference's decisions on one parity case and names the first
such comparison, if any: the parity tier then reports a port that decides otherwise there as a
boundary tie (counted and listed), never as a pass or a failure silently.

Everything here uses the reference's own public functions; greedy cases compare logits only
(no ``exp``) and have no boundary ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from spec_verify.reference import SamplingParams, sampling_distribution
from spec_verify.reference.sampling import lane_sum

__all__ = ["BOUNDARY_TOLERANCE", "decision_tie", "filter_tie"]

# 64 ulps of 1.0 (2^-46, about 1.4e-14): absolute for cumulative sums in [0, 1] (scaled by 1/Z
# on the residual, whose sums are divided by Z), relative for a single probability. PCG32
# uniforms lie on a grid of 2^-32, so one lands this close to a boundary essentially only when
# the boundary is itself a grid point (dyadic probabilities, e.g. 0.5 from two equal logits).
BOUNDARY_TOLERANCE = 2.0**-46


def _near(a: float, b: float, scale: float = 1.0) -> bool:
    """Within the tolerance but not equal: at exact equality the contract's own ``<`` or
    ``>=`` decides (a port that adds exact values gets the same floats, so ``u <= c`` for
    ``u < c`` stays a failure), only an inexact neighbour is an ulp's doing."""
    return 0.0 < abs(a - b) <= BOUNDARY_TOLERANCE * scale


def filter_tie(
    logits: NDArray[np.float64],
    params: SamplingParams,
    history: Sequence[int],
    prompt: Sequence[int],
) -> str:
    """Why top-p or min-p on this row sits at a boundary ('' if it does not).

    Top-p: the running sum at the cut within the tolerance of ``top_p``, or the last kept and
    the first dropped token within it of each other (an ulp could swap them). Min-p: a kept
    probability within the tolerance (relative) of ``min_p * max``.
    """
    if params.greedy or (params.top_p >= 1.0 and params.min_p <= 0.0):
        return ""
    base = sampling_distribution(logits, replace(params, top_p=1.0, min_p=0.0), history, prompt)
    keep = base > 0
    if params.top_p < 1.0:
        order = np.lexsort((np.arange(base.shape[0]), -base))
        running = np.cumsum(base[order])
        kept = 1 + int(np.searchsorted(running[:-1], params.top_p, side="left"))
        for j in (kept - 2, kept - 1):  # the sums just below and at the cut
            if 0 <= j < running.shape[0] - 1 and _near(float(running[j]), params.top_p):
                return f"top-p: the running sum {running[j]!r} is at top_p={params.top_p}"
        if kept < order.shape[0]:
            last, first_out = float(base[order[kept - 1]]), float(base[order[kept]])
            if first_out > 0 and _near(last, first_out, last):  # an ulp could swap them
                return f"top-p: the last kept ({last!r}) and first dropped ({first_out!r}) tie"
        top_p_keep = np.zeros_like(keep)
        top_p_keep[order[:kept]] = True
        keep &= top_p_keep
    if params.min_p > 0.0:
        threshold = params.min_p * float(np.max(base[keep]))
        gap = np.abs(base - threshold)
        close = keep & (gap > 0) & (gap <= BOUNDARY_TOLERANCE * threshold)
        if close.any():
            token = int(np.argmax(close))
            return f"min-p: token {token}'s probability {base[token]!r} is at {threshold!r}"
    return ""


def _cdf_tie(dist: NDArray[np.float64], u: float, scale: float) -> bool:
    """Whether ``u`` lies within ``scale`` tolerances of a cumulative sum next to its pick."""
    c = np.cumsum(dist)
    t = int(np.searchsorted(c, u, side="right"))
    sides = [c[t - 1]] if t >= 1 else []
    if t < c.shape[0]:
        sides.append(c[t])
    return any(_near(float(s), u, scale) for s in sides)


def decision_tie(
    target_logits: NDArray[np.float64],
    draft_ids: Sequence[int],
    draft_probs: NDArray[np.float64] | None,
    params: SamplingParams,
    history: Sequence[int],
    prompt: Sequence[int],
    uniforms: Sequence[float],
    n_accepted: int,
) -> tuple[int, str] | None:
    """The first decision of the reference's (sampled) run at a boundary tie: its row and
    why, or None.

    ``n_accepted`` is the reference's result: rows ``0..n_accepted`` were reached (a rejection
    at row ``n_accepted``, or the bonus row ``m`` after ``m`` keeps). A port may decide
    otherwise from that row on, not before it.
    """
    if params.greedy:
        return None
    m = len(draft_ids)
    kept: list[int] = []
    for i in range(min(n_accepted, m - 1) + 1 if m else 0):
        seen = [*history, *kept]
        reason = filter_tie(target_logits[i], params, seen, prompt)
        if not reason:
            p = sampling_distribution(target_logits[i], params, seen, prompt)
            x = draft_ids[i]
            if draft_probs is not None:
                q = draft_probs[i]
            else:
                q = np.zeros(target_logits.shape[1])
                q[x] = 1.0
            rejected = i == n_accepted
            reason = _position_tie(p, q, x, uniforms[2 * i], uniforms[2 * i + 1], rejected)
        if reason:
            return i, reason
        kept.append(draft_ids[i])
    if n_accepted < m:
        return None
    seen = [*history, *kept]
    reason = filter_tie(target_logits[m], params, seen, prompt)
    if not reason:
        p = sampling_distribution(target_logits[m], params, seen, prompt)
        if _cdf_tie(p, uniforms[2 * m], 1.0):
            reason = f"the bonus uniform {uniforms[2 * m]!r} is at a cumulative sum"
    return (m, reason) if reason else None


def _position_tie(
    p: NDArray[np.float64],
    q: NDArray[np.float64],
    x: int,
    u_accept: float,
    u_resample: float,
    rejected: bool,
) -> str:
    """The accept test at a tie, or (after a rejection) the residual's draw at one."""
    if _near(u_accept * float(q[x]), float(p[x]), float(p[x])):
        return f"u_accept * q(x) = {u_accept * q[x]!r} is at p(x) = {p[x]!r}"
    if not rejected:
        return ""
    d = np.maximum(p - q, 0.0)
    z = lane_sum(d)
    if z <= BOUNDARY_TOLERANCE:
        return f"the residual's sum {z!r} is at 0 (where p replaces it)"
    if _cdf_tie(d / z, u_resample, 2.0 / z):
        return f"u_resample = {u_resample!r} is at a cumulative sum of the residual"
    return ""
