"""The wrong sampler every hostile implementation shares: it always rejects the first draft
and emits token 0 (the greedy tier catches it at once)."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import *  # noqa: F403


def wrong_verify_draft(*args: Any, **kwargs: Any) -> tuple[list[int], int]:
    return [0], 0
