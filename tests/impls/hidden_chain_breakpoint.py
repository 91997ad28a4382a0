"""A chain sampler with a breakpoint hidden inside a cell: when the last draft was kept by a
``u_accept`` in the top quarter of its keep cell ``[0, a)``, the bonus is drawn from a stale
row (two fifths of token 0's mass moved to token 1). The stale row was chosen so that the
midpoint of each of the true bonus row's cells still lands on that cell's token, for rows such
as ``(1/2, 1/4, 1/4)``: at the leaf's own later values both sides of the breakpoint ``3a/4``
emit the same ids, so the plain leaf audit (each draw moved to its cell's edges, the others at
the leaf's values) passes it; the deep audit (the later draws at other points of their cells)
finds it. The bias is after the first token: the law of the second token moves."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference.sampling import sample_with

from ._scaffold import Row, residual, verify

__all__ = ["SamplingParams", "verify_draft"]


def _stale(p: Row) -> Row:
    out = p.copy()
    if len(out) > 1:
        moved = 0.4 * out[0]
        out[0] -= moved
        out[1] += moved
    return out


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    late = [False]  # whether the last kept draft was kept late in its keep cell

    def step(p_i: Row, q_i: Row, x: int, source: Any) -> tuple[int, bool]:
        u_accept = source.random()
        u_resample = source.random()
        a = min(1.0, float(p_i[x] / q_i[x]))
        if u_accept < a:
            late[0] = u_accept >= 0.75 * a
            return x, True
        return sample_with(residual(p_i, q_i), u_resample), False

    def bonus(last: Row, source: Any) -> int:
        return int(sample_with(_stale(last) if late[0] else last, source.random()))

    return verify(step, bonus, target_logits, draft_ids, draft_probs, p, history, prompt, rng)
