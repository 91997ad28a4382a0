"""The reference rules over ``Fraction``s: each rule's exact round law, averaged over the
draft's draws, composed into sequences, and its exact expected accepted length.

This path shares no code with the float paths (``block.py``, ``sampler_match.py``): it
weights every branch by its exact probability instead of drawing uniforms. A *round law*
maps each ``emitted_ids`` tuple to its probability for fixed drafts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import cache

from .errors import InvalidDraft
from .exact import Dist, TableModel, exact_verify

__all__ = [
    "RULES",
    "RoundLaw",
    "exact_block",
    "exact_kseq_rho",
    "exact_kseq_round",
    "exact_rule_round",
    "exact_rule_sequences",
    "exact_sampler_match",
    "exact_traversal",
    "expected_accepted",
]

RoundLaw = dict[tuple[int, ...], Fraction]
Rule = Callable[[Sequence[Dist], Sequence[int], Sequence[Dist] | None], RoundLaw]


def _q_rows(p_rows: Sequence[Dist], draft_ids: Sequence[int],
            q_rows: Sequence[Dist] | None) -> list[Dist]:
    if len(p_rows) != len(draft_ids) + 1:
        raise InvalidDraft("p_rows", len(p_rows), f"must have k + 1 = {len(draft_ids) + 1} rows")
    if q_rows is None:
        return [tuple(Fraction(int(t == x)) for t in range(len(p_rows[i])))
                for i, x in enumerate(draft_ids)]
    for i, x in enumerate(draft_ids):
        if q_rows[i][x] <= 0:
            raise InvalidDraft("q_rows", i, f"gives the drafted token {x} probability 0")
    return list(q_rows)


def exact_block(p_rows: Sequence[Dist], draft_ids: Sequence[int],
                q_rows: Sequence[Dist] | None) -> RoundLaw:
    """Block verification's round law: ``P(tau = i) = h_i prod_{j > i} (1 - h_j)``."""
    q = _q_rows(p_rows, draft_ids, q_rows)
    k = len(draft_ids)
    w = [Fraction(1)]
    for i, x in enumerate(draft_ids):
        w.append(min(w[-1] * p_rows[i][x] / q[i][x], Fraction(1)))
    residuals: list[list[Fraction]] = []
    h: list[Fraction] = [Fraction(0)]  # h_0 unused
    for i in range(k + 1):
        if i == k:
            residuals.append(list(p_rows[k]))
            if k:
                h.append(w[k])
            break
        d = [max(w[i] * a - b, Fraction(0)) for a, b in zip(p_rows[i], q[i], strict=True)]
        mass = sum(d, Fraction(0))
        residuals.append([v / mass for v in d] if mass else list(p_rows[i]))
        if i:
            h.append(mass / (mass + 1 - w[i]) if mass + 1 - w[i] else Fraction(1))
    out: RoundLaw = defaultdict(Fraction)
    later = Fraction(1)  # prod_{j > i} (1 - h_j)
    for i in range(k, -1, -1):
        stop = later * (h[i] if i else 1)
        if stop:
            for token, r in enumerate(residuals[i]):
                if r:
                    out[(*draft_ids[:i], token)] += stop * r
        if i:
            later *= 1 - h[i]
    return dict(out)


def exact_sampler_match(p_rows: Sequence[Dist], draft_ids: Sequence[int],
                        q_rows: Sequence[Dist] | None) -> RoundLaw:
    """Sampler-match's round law: keep ``x_i`` with ``p_i(x_i)``, else emit ``t != x_i``."""
    _q_rows(p_rows, draft_ids, q_rows)
    out: RoundLaw = defaultdict(Fraction)
    reach = Fraction(1)
    for i, x in enumerate(draft_ids):
        for token, prob in enumerate(p_rows[i]):
            if prob and token != x:
                out[(*draft_ids[:i], token)] += reach * prob
        reach *= p_rows[i][x]
        if not reach:
            return dict(out)
    for token, prob in enumerate(p_rows[-1]):
        if prob:
            out[(*draft_ids, token)] += reach * prob
    return dict(out)


def exact_traversal(p_rows: Sequence[Dist], draft_ids: Sequence[int],
                    q_rows: Sequence[Dist] | None) -> RoundLaw:
    """Traversal verification's round law, walked as the rule walks: leaf first, each node
    kept with its sequence acceptance given that every deeper node was deleted."""
    q = _q_rows(p_rows, draft_ids, q_rows)
    k = len(draft_ids)
    if k == 0:
        return {(t,): v for t, v in enumerate(p_rows[0]) if v}
    w = [Fraction(1)]
    for i, x in enumerate(draft_ids):
        w.append(min(w[-1] * p_rows[i][x] / q[i][x], Fraction(1)))
    out: RoundLaw = defaultdict(Fraction)
    for t, v in enumerate(p_rows[k]):
        if v:
            out[(*draft_ids, t)] += w[k] * v
    reach = 1 - w[k]  # P(every node deeper than `depth` was deleted)
    for depth in range(k - 1, -1, -1):
        if not reach:
            break
        left = [max(w[depth] * a - b, Fraction(0)) for a, b in zip(p_rows[depth], q[depth],
                                                                 strict=True)]
        mass = sum(left, Fraction(0))
        owed = mass + 1 - w[depth]
        keep = Fraction(1) if depth == 0 or not owed else mass / owed
        row = [v / mass for v in left] if mass else list(p_rows[depth])
        for t, v in enumerate(row):
            if v:
                out[(*draft_ids[:depth], t)] += reach * keep * v
        reach *= 1 - keep
    return dict(out)


RULES: dict[str, Rule] = {
    "block": exact_block,
    "sampler_match": exact_sampler_match,
    "token": exact_verify,
    "traversal": exact_traversal,
}


def _rule(name: str) -> Rule:
    if name not in RULES:
        raise InvalidDraft("rule", name, f"must be one of {sorted(RULES)}")
    return RULES[name]


def exact_rule_round(rule: str, target: TableModel, draft: TableModel,
                     context: tuple[int, ...], k: int) -> RoundLaw:
    """One round of ``rule`` after ``context`` averaged over the drafts ``x_i ~ draft``."""
    verify = _rule(rule)
    out: RoundLaw = defaultdict(Fraction)

    def grow(prefix: tuple[int, ...], weight: Fraction) -> None:
        if len(prefix) == k:
            p_rows = [tuple(target(context + prefix[:i])) for i in range(k + 1)]
            q_rows = [tuple(draft(context + prefix[:i])) for i in range(k)]
            for emitted, prob in verify(p_rows, prefix, q_rows).items():
                out[emitted] += weight * prob
            return
        for token, prob in enumerate(draft(context + prefix)):
            if prob:
                grow((*prefix, token), weight * prob)

    grow((), Fraction(1))
    return dict(out)


def exact_rule_sequences(rule: str, target: TableModel, draft: TableModel,
                         context: tuple[int, ...], k: int, length: int) -> RoundLaw:
    """The first ``length`` tokens of generation by rounds of ``rule`` (a round never drafts
    past the budget); lossless iff this equals ``exact_target_sequences``."""

    @cache
    def rest(done: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], Fraction], ...]:
        if len(done) >= length:
            return (((), Fraction(1)),)
        k_round = max(0, min(k, length - len(done) - 1))
        acc: RoundLaw = defaultdict(Fraction)
        for emitted, prob in exact_rule_round(rule, target, draft, context + done,
                                              k_round).items():
            for tail, tail_prob in rest(done + emitted):
                acc[emitted + tail] += prob * tail_prob
        return tuple(acc.items())

    out: RoundLaw = defaultdict(Fraction)
    for seq, prob in rest(()):
        out[seq[:length]] += prob
    return dict(out)


def expected_accepted(rule: str, target: TableModel, draft: TableModel,
                      context: tuple[int, ...], k: int) -> Fraction:
    """The exact expected number of drafts one round keeps (``len(emitted) - 1``)."""
    law = exact_rule_round(rule, target, draft, context, k)
    return sum(((len(e) - 1) * v for e, v in law.items()), Fraction(0))




def exact_kseq_rho(p: Dist, q: Dist, K: int, grid: int = 32) -> Fraction:
    """K-SEQ's ``rho`` (CONTRACT.md section 10): the smallest ``1 + j (K - 1) / grid`` whose
    residual ``p - c min(q, p / rho)`` is non-negative, exactly."""
    for j in range(grid + 1):
        rho = 1 + Fraction(j * (K - 1), grid)
        m = [min(b, a / rho) for a, b in zip(p, q, strict=True)]
        alpha = sum(m, Fraction(0))
        if alpha in (0, 1):
            return rho
        c = (1 - (1 - alpha) ** K) / alpha
        if all(c * v <= a for v, a in zip(m, p, strict=True)):
            return rho
    return Fraction(K)  # pragma: no cover - rho = K is always valid


def exact_kseq_round(target: TableModel, q: Dist, context: tuple[int, ...],
                     K: int) -> RoundLaw:
    """K-SEQ's law of ``emitted_ids`` over ``K`` i.i.d. drafts from ``q`` after ``context``:
    ``(x, bonus)`` or ``(y,)``. Lossless iff it equals the target's two-token law (on the
    ``(x, bonus)`` outcomes and, with the target continuing, on ``(y,)``)."""
    p = tuple(target(context))
    rho = exact_kseq_rho(p, q, K)
    m = [min(b, a / rho) for a, b in zip(p, q, strict=True)]
    alpha = sum(m, Fraction(0))
    out: RoundLaw = defaultdict(Fraction)
    kept = [v * (1 - (1 - alpha) ** K) / alpha if alpha else Fraction(0) for v in m]
    for x, prob in enumerate(kept):
        if prob:
            for t, b in enumerate(target((*context, x))):
                if b:
                    out[(x, t)] += prob * b
    none = (1 - alpha) ** K
    if none:
        for y, (a, v) in enumerate(zip(p, kept, strict=True)):
            if a - v:
                out[(y,)] += a - v
    return dict(out)
