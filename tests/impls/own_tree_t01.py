"""``own_tree`` with tree mutant t01's walk (the residual not updated after a sibling is
rejected): driven by its own generator, so only the statistical tier can catch it, and the
lossless profile must fail it (``tests/tiers/test_statistical_trees.py``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from spec_verify.adapters import load_implementation
from spec_verify.reference import SamplingParams

from .own_tree import SPEC_VERIFY_CAPABILITIES, own_randomness, verify_draft

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft", "verify_tree"]

# in this process (a python: module already runs in a worker of its own)
_MUTANT: Any = load_implementation("mutant:t01", in_process=True).module


def _mutant_walk(target_logits: Any, parents: Any, token_ids: Any, draft_probs: Any,
                 p: SamplingParams, *args: Any, **kwargs: Any) -> tuple[list[int], list[int]]:
    """The mutant's ``verify_tree`` (its module has its own ``SamplingParams`` class)."""
    params = _MUTANT.SamplingParams(**dataclasses.asdict(p))
    result: tuple[list[int], list[int]] = _MUTANT.verify_tree(
        target_logits, parents, token_ids, draft_probs, params, *args, **kwargs)
    return result


verify_tree = own_randomness(_mutant_walk)
