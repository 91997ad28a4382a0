"""Implementations that misbehave as calls: raise, hang, garbage ids, the wrong count, endless
draws, ``sys.exit``, float ids, an endless iterable of ids. ``MODE`` picks one;
``tests.impls.misbehaving.load(mode)`` builds the adapter."""

from __future__ import annotations

import itertools
import sys
import types
from typing import Any

from spec_verify.adapters._implementations import PythonImplementation
from spec_verify.reference import SamplingParams

__all__ = ["MODES", "load"]

MODES = (
    "raises",
    "hangs",
    "out_of_range",
    "wrong_count",
    "draws_forever",
    "value_error",
    "exits",
    "float_ids",
    "endless_ids",
)


def _verify(mode: str) -> Any:
    def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any,
                     history: Any, rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
        rng.random()
        if mode == "raises":
            raise RuntimeError("boom")
        if mode == "hangs":
            while True:
                pass
        if mode == "out_of_range":
            return [len(target_logits[0])], 0
        if mode == "wrong_count":
            return [0, 0], 0
        if mode == "value_error":
            raise ValueError("rejects everything")
        if mode == "exits":
            sys.exit(0)
        if mode == "float_ids":
            return [0.75], 0.0  # type: ignore[list-item]
        if mode == "endless_ids":
            return itertools.repeat(0), 0  # type: ignore[return-value]
        while True:  # draws_forever
            rng.random()

    return verify_draft


def load(mode: str, timeout: float = 0.5) -> PythonImplementation:
    """An adapter over a module whose ``verify_draft`` misbehaves as ``mode`` says."""
    module = types.ModuleType(f"tests.impls.misbehaving.{mode}")
    module.verify_draft = _verify(mode)  # type: ignore[attr-defined]
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    return PythonImplementation(f"python:tests.impls.misbehaving[{mode}]", module, timeout)
