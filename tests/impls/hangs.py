"""Draws one uniform, then never returns: a hang served from a worker process, which the
harness stops by killing it (no alarm in the test's own process)."""

from typing import Any

from spec_verify.reference import SamplingParams

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    rng.random()
    while True:
        pass
