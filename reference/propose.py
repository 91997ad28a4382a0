"""``propose_and_verify``: draw the draft tokens from the given draft rows, then verify them.

The round an engine runs on its own stream (CONTRACT.md section 14): the draft's ``k`` tokens
are sampled here, each from its row after the draft's processors (``draft_params``; penalties
see the tokens drafted before it), with the same uniform source the verification then draws
from, each uniform used once. The harness checks only the law of what it emits (its
randomness is the implementation's own), so the draw order below is this reference's choice,
not the contract's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import InvalidLogits, InvalidParams
from .sampling import SamplingParams, UniformSource, sample, sampling_distribution, validate_ids
from .verify import verify_draft

__all__ = ["propose_and_verify"]


def propose_and_verify(
    target_logits: object,
    draft_logits: object,
    p: SamplingParams,
    history: Sequence[int],
    rng: UniformSource | None,
    prompt: Sequence[int] = (),
    draft_params: SamplingParams | None = None,
) -> tuple[list[int], int]:
    """Sample ``k`` drafts from ``draft_logits`` and verify them against ``target_logits``.

    Args:
        target_logits: ``(k + 1, V)`` target logits, row ``i`` after the ``i``-th draft.
        draft_logits: ``(k, V)`` draft logits, row ``i`` the draft's after ``x_1..x_i``.
        p: the target's sampling parameters (``verify_draft``'s).
        history, prompt: as for ``verify_draft``; the draft's penalties see
            ``history + x_1..x_{i-1}`` too.
        rng: the uniform source of every draw (drafts first, then verification).
        draft_params: the draft's processors (``None``: ``p``'s). A greedy draft
            (temperature 0) proposes its argmax and is verified as deterministic.

    Returns:
        ``(emitted_ids, n_accepted)``, as ``verify_draft``.

    >>> from spec_verify.reference import Pcg32
    >>> rows = [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]
    >>> ids, n = propose_and_verify(rows, rows[:2], SamplingParams(), [], Pcg32(1, 2))
    >>> len(ids) == n + 1
    True
    """
    if not isinstance(p, SamplingParams):
        raise InvalidParams("p", p, "must be a SamplingParams")
    q_params = p if draft_params is None else draft_params
    if not isinstance(q_params, SamplingParams):
        raise InvalidParams("draft_params", draft_params, "must be a SamplingParams or None")
    rows = np.asarray(draft_logits, dtype=np.float64)
    if rows.ndim != 2:
        raise InvalidLogits("draft_logits", draft_logits, f"has shape {rows.shape}; it must "
                            "be (k, V)", "one draft row per drafted token")
    k = rows.shape[0]
    target = np.asarray(target_logits, dtype=np.float64)
    if target.ndim != 2 or target.shape != (k + 1, rows.shape[1]):
        raise InvalidLogits("target_logits", target_logits, f"has shape {target.shape}; it "
                            f"must be (k + 1, V) = ({k + 1}, {rows.shape[1]})",
                            "one target row more than the draft's")
    history = validate_ids("history", history, rows.shape[1])
    prompt = validate_ids("prompt", prompt, rows.shape[1])
    sampled = not (p.greedy and q_params.greedy)
    if sampled and (rng is None or not callable(getattr(rng, "random", None))):
        raise InvalidParams("rng", rng, "a sampled draft or verification needs a uniform source")
    drafted: list[int] = []
    q_rows = []
    for i in range(k):
        q_i = sampling_distribution(rows[i], q_params, [*history, *drafted], prompt)
        drafted.append(sample(q_i, None if q_params.greedy else rng))
        q_rows.append(q_i)
    draft_probs = None if q_params.greedy or k == 0 else np.vstack(q_rows)
    return verify_draft(target, drafted, draft_probs, p, history, rng, prompt)
