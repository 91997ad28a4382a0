"""A tree sampler exact in distribution but driven by its own generator: one uniform from the
injected source seeds a numpy ``Generator`` and the reference's tree walk draws every decision
from that (``verify_draft`` is ``own_generator``'s). It declares ``injected_uniforms: False``:
the exact tier and parity do not apply, and the statistical tier's tree checks decide. The
lossless profile must pass it (``tests/tiers/test_statistical_trees.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spec_verify import reference
from spec_verify.reference import SamplingParams

from .own_generator import verify_draft

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft", "verify_tree"]

SPEC_VERIFY_CAPABILITIES = {"injected_uniforms": False}


def own_randomness(walk: Callable[..., tuple[list[int], list[int]]]) -> Callable[..., Any]:
    """``walk`` (a ``verify_tree``) fed from a generator seeded by one injected uniform."""

    def verify_tree(target_logits: Any, parents: Sequence[int], token_ids: Sequence[int],
                    draft_probs: Any, p: Any, history: Sequence[int], rng: Any,
                    prompt: Sequence[int] = (), rule: str = "with_replacement",
                    **thresholds: float) -> tuple[list[int], list[int]]:
        own = rng if p.temperature == 0 else np.random.default_rng(int(rng.random() * 2**53))
        return walk(target_logits, parents, token_ids, draft_probs, p, history, own, prompt,
                    rule, **thresholds)

    return verify_tree


verify_tree = own_randomness(reference.verify_tree)
