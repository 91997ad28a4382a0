"""``propose_and_verify`` on its own numpy stream, draft and verifier noise independent: the
correct control of ``statistical/own_stream.*`` (own randomness, law only)."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams, request_rng, verify_draft

from ._own_stream import propose_and_verify_with

__all__ = ["SamplingParams", "propose_and_verify", "request_rng", "verify_draft"]

# verify_draft is the reference's; what is under test is the round on its own stream
SPEC_VERIFY_CAPABILITIES = {"propose_and_verify": True}


def propose_and_verify(target_logits: Any, draft_logits: Any, p: Any, history: Any, rng: Any,
                       prompt: Any = (), draft_params: Any = None) -> tuple[list[int], int]:
    return propose_and_verify_with(False, target_logits, draft_logits, p, history, rng,
                                   prompt, draft_params)
