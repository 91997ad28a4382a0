"""The exact path: verification over ``Fraction`` probabilities, enumerated outcome by outcome.

Where the float path draws uniforms, this path weights every branch by its exact probability,
so the distribution of the emitted tokens comes out as ``Fraction``s and can be compared for
equality with the target (seed sections 2.2 and 3).

Distributions are tuples of ``Fraction`` indexed by token id. A *table model* is any callable
``prefix -> distribution`` (the next-token distribution after a tuple of tokens).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import cache

from .errors import InvalidDraft

__all__ = [
    "Dist",
    "TableModel",
    "accept_probability",
    "as_dist",
    "exact_first_token",
    "exact_round",
    "exact_speculative_sequences",
    "exact_step",
    "exact_target_sequences",
    "exact_verify",
    "expected_tokens_per_round",
    "residual",
    "step_table",
]

Dist = tuple[Fraction, ...]
TableModel = Callable[[tuple[int, ...]], Sequence[Fraction]]


def as_dist(values: Sequence[object], argument: str = "dist") -> Dist:
    """Exact probabilities from ints, Fractions or strings like ``'1/4'``; must sum to 1."""
    try:
        dist = tuple(Fraction(v) for v in values)  # type: ignore[call-overload]
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        raise InvalidDraft(
            argument, list(values), f"entries must be exact rationals ({exc})"
        ) from exc
    if not dist:
        raise InvalidDraft(argument, list(values), "must have at least one entry")
    if any(v < 0 for v in dist):
        raise InvalidDraft(argument, [str(v) for v in dist], "has a negative entry")
    if sum(dist) != 1:
        raise InvalidDraft(argument, [str(v) for v in dist], f"sums to {sum(dist)}, not 1")
    return dist


def residual(p: Dist, q: Dist) -> Dist:
    """``max(0, p - q) / Z``; ``p`` itself when ``Z = 0`` (then nothing is ever rejected)."""
    d = [max(Fraction(0), a - b) for a, b in zip(p, q, strict=False)]
    z = sum(d, Fraction(0))
    if z == 0:
        return p
    return tuple(v / z for v in d)


def accept_probability(p: Dist, q: Dist, x: int) -> Fraction:
    """``min(1, p(x) / q(x))``: the chance the token rule keeps a drafted ``x`` (``q(x) > 0``).

    The one exact statement of the acceptance probability: the exact chain and tree laws
    (here and ``tree_exact``) and the exact engine's cells (``spec_verify.exact``) all use it;
    ``reference/CONTRACT.md`` (where the acceptance rule lives) lists the copies that are
    deliberately independent of it."""
    return min(Fraction(1), p[x] / q[x])


def exact_step(p: Dist, q: Dist, x: int) -> tuple[Fraction, dict[int, Fraction]]:
    """One position with drafted ``x``: ``(P(accept), {token: P(token and rejected)})``."""
    if q[x] <= 0:
        raise InvalidDraft("q", [str(v) for v in q], f"gives the drafted token {x} probability 0")
    accept = accept_probability(p, q, x)
    rejected = {
        token: (1 - accept) * r for token, r in enumerate(residual(p, q)) if r > 0 and accept < 1
    }
    return accept, rejected


def exact_first_token(p: Dist, q: Dist) -> dict[int, Fraction]:
    """Distribution of the first emitted token over ``x ~ q`` (must equal ``p``)."""
    out: dict[int, Fraction] = defaultdict(Fraction)
    for x, qx in enumerate(q):
        if qx == 0:
            continue
        accept, rejected = exact_step(p, q, x)
        out[x] += qx * accept
        for token, prob in rejected.items():
            out[token] += qx * prob
    return {t: v for t, v in sorted(out.items()) if v}


def exact_verify(
    p_rows: Sequence[Dist], draft_ids: Sequence[int], q_rows: Sequence[Dist] | None
) -> dict[tuple[int, ...], Fraction]:
    """Distribution of ``emitted_ids`` for fixed drafts (``q_rows=None``: one-hot drafts).

    ``p_rows`` has ``m + 1`` rows, as ``verify_draft``'s target rows after the sampling
    distribution. The bonus after ``m`` keeps is a draw from ``p_rows[m]``.
    """
    m = len(draft_ids)
    if len(p_rows) != m + 1:
        raise InvalidDraft("p_rows", len(p_rows), f"must have m + 1 = {m + 1} rows")
    out: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)
    reach = Fraction(1)
    for i, x in enumerate(draft_ids):
        q = q_rows[i] if q_rows is not None else _one_hot(x, len(p_rows[i]))
        accept, rejected = exact_step(p_rows[i], q, x)
        for token, prob in rejected.items():
            out[(*draft_ids[:i], token)] += reach * prob
        reach *= accept
        if reach == 0:
            return dict(out)
    for token, prob in enumerate(p_rows[m]):
        if prob:
            out[(*draft_ids, token)] += reach * prob
    return dict(out)


def exact_round(
    target: TableModel, draft: TableModel, context: tuple[int, ...], k: int
) -> dict[tuple[int, ...], Fraction]:
    """One speculative round after ``context``: drafts ``x_i ~ draft``, then verification.

    Returns the distribution of the emitted tokens (1 to ``k + 1`` of them).
    """
    out: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)

    def drafts(prefix: tuple[int, ...], weight: Fraction) -> None:
        if len(prefix) == k:
            p_rows = [tuple(target(context + prefix[:i])) for i in range(k + 1)]
            q_rows = [tuple(draft(context + prefix[:i])) for i in range(k)]
            for emitted, prob in exact_verify(p_rows, prefix, q_rows).items():
                out[emitted] += weight * prob
            return
        for token, prob in enumerate(draft(context + prefix)):
            if prob:
                drafts((*prefix, token), weight * prob)

    drafts((), Fraction(1))
    return dict(out)


def exact_target_sequences(
    target: TableModel, context: tuple[int, ...], length: int
) -> dict[tuple[int, ...], Fraction]:
    """Distribution of the next ``length`` tokens under plain sampling from ``target``."""
    out: dict[tuple[int, ...], Fraction] = {(): Fraction(1)}
    for _ in range(length):
        grown: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)
        for seq, prob in out.items():
            for token, q in enumerate(target(context + seq)):
                if q:
                    grown[(*seq, token)] += prob * q
        out = dict(grown)
    return out


def exact_speculative_sequences(
    target: TableModel, draft: TableModel, context: tuple[int, ...], k: int, length: int
) -> dict[tuple[int, ...], Fraction]:
    """Distribution of the first ``length`` tokens of speculative generation, round by round.

    Rounds repeat until ``length`` tokens are out (a round never asks for more drafts than the
    remaining budget allows, as ``speculative_generate`` does); the result must equal
    ``exact_target_sequences`` for the same target.
    """

    @cache
    def rest(done: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], Fraction], ...]:
        if len(done) >= length:
            return (((), Fraction(1)),)
        k_round = max(0, min(k, length - len(done) - 1))
        acc: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)
        for emitted, prob in exact_round(target, draft, context + done, k_round).items():
            for tail, tail_prob in rest(done + emitted):
                acc[emitted + tail] += prob * tail_prob
        return tuple(acc.items())

    return {seq[:length]: prob for seq, prob in rest(())}


def expected_tokens_per_round(alpha: Fraction, k: int) -> Fraction:
    """``(1 - a^(k+1)) / (1 - a)`` (``k + 1`` when ``a = 1``): seed section 2.4."""
    if alpha == 1:
        return Fraction(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def step_table(p: Dist, q: Dist, x: int) -> list[tuple[str, str, str]]:
    """Seed section 3's table for one position: (step, computation, result) rows.

    One row per cell of the draws: the accept cell of ``u_accept`` and, after a rejection, one
    cell of ``u_resample`` per token of the residual, each with its exact width.
    """
    accept, _ = exact_step(p, q, x)
    d = [max(Fraction(0), a - b) for a, b in zip(p, q, strict=False)]
    z = sum(d, Fraction(0))
    r = residual(p, q)
    rows = [
        (
            "acceptance probability",
            f"min(1, p[{x}]/q[{x}]) = min(1, ({p[x]})/({q[x]}))",
            str(accept),
        ),
        (
            "residual",
            f"max(0, p - q) = [{', '.join(map(str, d))}], Z = {z}",
            f"r = [{', '.join(map(str, r))}]",
        ),
    ]
    if accept > 0:
        rows.append(("cell", f"u_accept in [0, {accept}), width {accept}", f"keep {x}"))
    lo = Fraction(0)
    for token, r_token in enumerate(r):
        if r_token and accept < 1:
            rows.append(
                (
                    "cell",
                    f"u_accept in [{accept}, 1), u_resample in [{lo}, {lo + r_token}), width "
                    f"{(1 - accept) * r_token}",
                    f"emit {token}",
                )
            )
        lo += r_token
    return rows


def _one_hot(x: int, V: int) -> Dist:
    return tuple(Fraction(int(i == x)) for i in range(V))
