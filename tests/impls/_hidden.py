"""The reference with a planted hidden rule: the shared part of ``adv_*``.

Each ``adv_*`` implementation returns the reference's output, except when every draft is kept,
the bonus is the last token ``T = V - 1`` and its ``rule`` holds on the uniforms drawn: then it
emits ``T - 1`` instead. The bonus cell of ``T`` is the last one, so the leaf that shows it is
never the first below its node, and the rule looks at draws whose cells the exploration has
already left: only an audit at that leaf can see it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spec_verify.reference import verify_draft as _reference

Rule = Callable[[list[float]], bool]


class _Recorder:
    """Passes the uniforms through and keeps them for the rule."""

    def __init__(self, rng: Any) -> None:
        self.rng = rng
        self.draws: list[float] = []

    def random(self) -> float:
        u = float(self.rng.random())
        self.draws.append(u)
        return u


def hiding_verify_draft(rule: Rule, min_drafts: int) -> Callable[..., tuple[list[int], int]]:
    """A ``verify_draft`` hiding ``rule`` (applied once ``min_drafts`` or more are drafted)."""

    def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any,
                     history: Any, rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
        recorder = _Recorder(rng)
        emitted, n_accepted = _reference(target_logits, draft_ids, draft_probs, p, history,
                                         recorder, prompt)
        out = [int(t) for t in emitted]
        last = len(target_logits[0]) - 1
        m = len(draft_ids)
        if m >= min_drafts and n_accepted == m and out[-1] == last and rule(recorder.draws):
            out[-1] = last - 1
        return out, int(n_accepted)

    return verify_draft
