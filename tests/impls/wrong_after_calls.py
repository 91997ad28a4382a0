"""Right for its first ``RIGHT_FOR`` calls, then wrong: a sampled draft's first token is kept
without its test (the r07 bug, switched on by a call counter, as a buffer that fills or an
offset that wraps after so many calls would).

``RIGHT_FOR`` is chosen from the quick gate's counts at seed 0 before the statistical tier
drew extras and shuffled its checks (measured at 8eca90a with a counting module,
in-process): 4,436 ``verify_draft`` calls in the contract, greedy, exact, edges, parity and
properties tiers, then 16,874 in the statistical checks up to the end of
``sequence.law_k4``, after which only ``sequence.law_k3_deterministic`` (deterministic
drafts, which this bug leaves alone) ran: 21,310 calls, so that gate passed it. With the
seeded extras and the shuffled order, the checks of sampled drafts are no longer all done by
then (``tests/tiers/test_call_counts.py``)."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference

__all__ = ["RIGHT_FOR", "SamplingParams", "verify_draft"]

RIGHT_FOR = 21_310
_calls = [0]  # calls made so far


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    _calls[0] += 1
    ids = [int(t) for t in draft_ids]
    if _calls[0] <= RIGHT_FOR or draft_probs is None or not ids or p.temperature == 0:
        return _reference(target_logits, ids, draft_probs, p, history, rng, prompt)
    rest, n = _reference(target_logits[1:], ids[1:], draft_probs[1:], p, [*history, ids[0]],
                         rng, prompt)  # the first draft kept untested
    return [ids[0], *rest], n + 1
