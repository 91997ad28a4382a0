"""Exact laws for the own-stream check (``statistical/own_stream.*``): the target's law of a
round with rows fixed per position, and the law the same round has when the draft's noise is
shared with the verifier (vLLM PR #47386, fixed in #54282; mutant r01's shape), computed
exactly so that the check's plan can state the TV it is sized for.

Coupled round (uniforms ``u_1, u_2, ...``): the draft draws ``x_i`` by inverse CDF of
``q_i`` at ``u_i``; the verifier then draws from the start of the same stream: position ``i``
accepts iff ``u_{2i-1} q_i(x_i) < p_i(x_i)`` and resamples its residual at ``u_{2i}``; the
bonus is ``p_k`` at ``u_{2k+1}``. Every decision compares one uniform with thresholds fixed by
the rows, so the output is constant on the product of each uniform's intervals between those
thresholds, and the law is a finite sum of interval volumes (Fractions).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

__all__ = ["coupled_law", "product_law", "total_variation"]

Row = Sequence[Fraction]


def product_law(target: Sequence[Row]) -> dict[tuple[int, ...], Fraction]:
    """The law of ``len(target)`` tokens when token ``i`` follows ``target[i]``."""
    law: dict[tuple[int, ...], Fraction] = {(): Fraction(1)}
    for row in target:
        law = {(*seq, t): w * row[t] for seq, w in law.items() for t in range(len(row)) if row[t]}
    return law


def _cdf(row: Row) -> list[Fraction]:
    return list(itertools.accumulate(row))


def _pick(row: Row, u: Fraction) -> int:
    return next(t for t, c in enumerate(_cdf(row)) if u < c)


def _residual(p: Row, q: Row) -> list[Fraction]:
    d = [max(a - b, Fraction(0)) for a, b in zip(p, q, strict=True)]
    total = sum(d, Fraction(0))
    return [x / total for x in d] if total else list(p)


def coupled_law(target: Sequence[Row], draft: Sequence[Row]) -> dict[tuple[int, ...], Fraction]:
    """The law of ``k + 1`` tokens (the round continued with ``target``'s rows) of the token
    rule whose ``k`` drafts are drawn with the verifier's own uniforms (module docstring)."""
    k = len(draft)
    residuals = [_residual(target[i], draft[i]) for i in range(k)]
    cells = []
    for j in range(2 * k + 1):
        points = {Fraction(0), Fraction(1)}
        if j < k:
            points |= set(_cdf(draft[j]))
        if j == 2 * k:
            points |= set(_cdf(target[k]))
        elif j % 2 == 0:
            i = j // 2
            points |= {min(Fraction(1), target[i][x] / q) for x, q in enumerate(draft[i]) if q}
        else:
            points |= set(_cdf(residuals[j // 2]))
        edges = sorted(points)
        cells.append([(a, b) for a, b in itertools.pairwise(edges) if b > a])
    round_law: dict[tuple[int, ...], Fraction] = {}
    for cell in itertools.product(*cells):
        volume = Fraction(1)
        for a, b in cell:
            volume *= b - a
        u = [(a + b) / 2 for a, b in cell]  # the output is constant inside the cell
        drafts = [_pick(draft[i], u[i]) for i in range(k)]
        out: list[int] = []
        for i, x in enumerate(drafts):
            if u[2 * i] * draft[i][x] < target[i][x]:
                out.append(x)
                continue
            out.append(_pick(residuals[i], u[2 * i + 1]))
            break
        else:
            out.append(_pick(target[k], u[2 * k]))
        round_law[tuple(out)] = round_law.get(tuple(out), Fraction(0)) + volume
    law: dict[tuple[int, ...], Fraction] = {}
    for seq, weight in round_law.items():
        tails = product_law(target[len(seq):])
        for tail, w in tails.items():
            law[(*seq, *tail)] = law.get((*seq, *tail), Fraction(0)) + weight * w
    return law


def total_variation(
    a: dict[tuple[int, ...], Fraction], b: dict[tuple[int, ...], Fraction]
) -> Fraction:
    """Half the L1 distance between two laws."""
    return sum((abs(a.get(s, Fraction(0)) - b.get(s, Fraction(0))) for s in a.keys() | b.keys()),
               Fraction(0)) / 2
