"""A sampler wrong only on float32-valued inputs: when every finite target logit is exactly a
float32 (what a real model's logits are, widened to float64) it skips min-p at the verified
positions. Every case with float64 logits that min-p cuts is right, so only a case with
float32-valued logits under a min-p that cuts finds it."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as _reference

__all__ = ["SamplingParams", "verify_draft"]


def _float32_valued(rows: Any) -> bool:
    values = np.asarray(rows, dtype=np.float64)
    finite = values[np.isfinite(values)]
    return bool(np.all(finite.astype(np.float32).astype(np.float64) == finite))


def verify_draft(target_logits, draft_ids, draft_probs, p, history, rng, prompt=()):  # type: ignore[no-untyped-def]
    if _float32_valued(target_logits) and p.min_p > 0 and len(draft_ids):
        p = dataclasses.replace(p, min_p=0.0)
    return _reference(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
