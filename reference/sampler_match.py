"""Sampler-match verification (MLX-LM and other engines): keep draft ``x_i`` iff it equals
the target's own sample at position ``i``, drawn with that position's uniform; on the first
mismatch emit the target's sample and stop; all kept: the bonus from the last row. Lossless
(every emitted token is the target's own sample), accepting ``p_i(x_i)`` where the token rule
accepts ``min(1, p_i(x_i) / q_i(x_i))``. CONTRACT.md section 9 pins its draw order.

>>> from spec_verify.reference import SamplingParams
>>> rows = [[0, 1, 3], [2, 1, 0], [0, 5, 1]]
>>> verify_sampler_match(rows, [2, 1], None, SamplingParams(temperature=0), [], None)
([2, 0], 1)
"""

from __future__ import annotations

from collections.abc import Sequence

from ._rule_args import chain_round
from .sampling import SamplingParams, UniformSource, draw_uniform, sample_with
from .verify import _verify_greedy

__all__ = ["SamplingParams", "verify_draft", "verify_sampler_match"]


def verify_sampler_match(
    target_logits: object,
    draft_ids: Sequence[int],
    draft_probs: object,
    p: SamplingParams,
    history: Sequence[int],
    rng: UniformSource | None,
    prompt: Sequence[int] = (),
) -> tuple[list[int], int]:
    """Sampler-match verification; the arguments and errors of ``verify_draft``.

    Draw order: one uniform per reached position (the target's sample there, inverse CDF),
    and one for the bonus when every draft is kept: ``n_accepted + 1`` draws. ``draft_probs``
    is validated but does not change the decisions. Greedy draws nothing.
    """
    rnd, greedy = chain_round(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
    if greedy:
        return _verify_greedy(rnd.rows, rnd.ids, p, rnd.history, rnd.prompt)
    assert rng is not None  # chain_round refused a missing source
    kept: list[int] = []
    for i, x in enumerate(rnd.ids):
        token = sample_with(rnd.target(i), draw_uniform(rng))
        if token != x:
            return [*kept, token], len(kept)
        kept.append(token)
    return [*kept, sample_with(rnd.target(rnd.k), draw_uniform(rng))], rnd.k


verify_draft = verify_sampler_match  # the contract's name
