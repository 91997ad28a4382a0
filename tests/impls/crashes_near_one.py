"""The reference, except that it dies (``os._exit(3)``) when its first uniform is at least
0.999: a crash the exact engine meets inside a batch of probes (the right edge of a cell)."""

from __future__ import annotations

import os
from typing import Any

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference_verify
from spec_verify.uniforms import ScriptedUniforms

__all__ = ["SamplingParams", "verify_draft"]


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    if isinstance(rng, ScriptedUniforms) and rng.script and rng.script[0] >= 0.999:
        os._exit(3)
    return _reference_verify(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
