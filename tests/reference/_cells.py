"""A small cell enumerator for the reference's own tests (the harness has the general one).

It drives ``verify_draft`` in the contract's draw order with scripted uniforms: a float in the
middle of every cell of ``[0, 1)`` that a draw can fall in, weighted by the cell's exact width.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

Dist = tuple[Fraction, ...]


def logits_of(rows: Sequence[Dist]) -> np.ndarray:
    """Logits whose temperature-1 distribution is each row (log p, -inf for zeros)."""
    with np.errstate(divide="ignore"):
        return np.log(np.array([[float(v) for v in row] for row in rows]))


def cells(dist: Dist) -> list[tuple[int, Fraction, Fraction]]:
    """(token, lo, hi) for every token with positive probability: its inverse-CDF cell."""
    out, lo = [], Fraction(0)
    for token, prob in enumerate(dist):
        if prob:
            out.append((token, lo, lo + prob))
        lo += prob
    return out


def residual(p: Dist, q: Dist) -> Dist:
    d = [max(Fraction(0), a - b) for a, b in zip(p, q)]
    z = sum(d)
    return tuple(v / z for v in d) if z else p


def mid(lo: Fraction, hi: Fraction) -> float:
    return float((lo + hi) / 2)


VerifyCall = Callable[[list[float]], tuple[list[int], int]]


def enumerate_verify(
    call: VerifyCall, p_rows: Sequence[Dist], q_rows: Sequence[Dist], draft_ids: Sequence[int]
) -> dict[tuple[int, ...], Fraction]:
    """Exact distribution of ``emitted_ids`` as ``call`` produces it, cell by cell.

    ``call(uniforms)`` runs the implementation with those uniforms and must consume all of
    them (the contract's draw order: u_accept, u_resample per position, one for the bonus).
    """
    out: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)
    m = len(draft_ids)

    def run(uniforms: list[float], weight: Fraction) -> None:
        emitted, _ = call(uniforms)
        out[tuple(emitted)] += weight

    def position(i: int, uniforms: list[float], weight: Fraction) -> None:
        if i == m:
            for _, lo, hi in cells(p_rows[m]):
                run([*uniforms, mid(lo, hi)], weight * (hi - lo))
            return
        p, q, x = p_rows[i], q_rows[i], draft_ids[i]
        t = min(Fraction(1), p[x] / q[x])
        if t > 0:
            position(i + 1, [*uniforms, mid(Fraction(0), t), 0.5], weight * t)
        if t < 1:
            for _, lo, hi in cells(residual(p, q)):
                run([*uniforms, mid(t, Fraction(1)), mid(lo, hi)], weight * (1 - t) * (hi - lo))

    position(0, [], Fraction(1))
    return dict(out)


def one_hot(x: int, V: int) -> Dist:
    return tuple(Fraction(int(i == x)) for i in range(V))


def random_dist(rng: np.random.Generator, V: int, zeros: int = 0, denominator: int = 64) -> Dist:
    """A random rational distribution with ``zeros`` zero entries (denominator-exact)."""
    weights = rng.integers(1, 8, size=V).astype(int)
    if zeros:
        weights[rng.choice(V, size=zeros, replace=False)] = 0
    total = int(weights.sum())
    return tuple(Fraction(int(w), total) for w in weights)
