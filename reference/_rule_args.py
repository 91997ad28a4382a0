"""Argument checks every chain rule shares with ``verify_draft`` (same errors, same order).

The reference rules (``block.py``, ``sampler_match.py``) take the contract's arguments and
raise its errors: a port of any rule is held to one input contract.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidDraft, InvalidParams
from .sampling import SamplingParams, UniformSource, _distribution, validate_ids
from .verify import _check_draft_probs, _check_overflow, _check_target_logits, _one_hot

__all__ = ["ChainRound", "chain_round"]

Row = NDArray[np.float64]


class ChainRound:
    """One validated call: the target's ``k + 1`` rows and the draft's ``k`` (one-hot if None).

    Rows are built lazily (``target(i)``), as ``verify_draft`` builds them, with the penalties
    seeing ``history`` plus the drafts before position ``i``.
    """

    def __init__(self, rows: Row, ids: list[int], q: Row | None, p: SamplingParams,
                 history: list[int], prompt: list[int]) -> None:
        self.rows, self.ids, self.q, self.p = rows, ids, q, p
        self.history, self.prompt = history, prompt
        self.k = len(ids)
        self.V = int(rows.shape[1])
        self._targets: dict[int, Row] = {}

    def target(self, i: int) -> Row:
        """The target's sampling distribution at position ``i`` (after ``ids[:i]``)."""
        if i not in self._targets:
            self._targets[i] = _distribution(self.rows[i], self.p,
                                             self.history + self.ids[:i], self.prompt)
        return self._targets[i]

    def draft(self, i: int) -> Row:
        """The draft's distribution at position ``i`` (one-hot for a deterministic draft)."""
        return self.q[i] if self.q is not None else _one_hot(self.ids[i], self.V)


def chain_round(
    target_logits: object, draft_ids: Sequence[int], draft_probs: object, p: SamplingParams,
    history: Sequence[int], rng: UniformSource | None, prompt: Sequence[int],
) -> tuple[ChainRound, bool]:
    """Validate every argument before the first draw; returns the round and whether greedy.

    Raises:
        InvalidLogits, InvalidDraft, InvalidParams: as ``verify_draft``.
    """
    if not isinstance(p, SamplingParams):
        raise InvalidParams("p", p, "must be a SamplingParams")
    if isinstance(draft_ids, (str, bytes)) or not isinstance(draft_ids, Sequence | np.ndarray):
        raise InvalidDraft("draft_ids", draft_ids, "must be a sequence of token ids")
    m = len(draft_ids)
    rows = _check_target_logits(target_logits, m)
    V = rows.shape[1]
    ids = validate_ids("draft_ids", draft_ids, V)
    hist = validate_ids("history", history, V)
    prom = validate_ids("prompt", prompt, V)
    if p.greedy:
        return ChainRound(rows, ids, None, p, hist, prom), True
    if rng is None or not callable(getattr(rng, "random", None)):
        raise InvalidParams("rng", rng, "sampled verification needs a uniform source")
    q = None if draft_probs is None else _check_draft_probs(draft_probs, ids, V)
    _check_overflow(rows, ids, p, hist, prom)
    return ChainRound(rows, ids, q, p, hist, prom), False
