"""Shrinking a failing parity case: fewer drafts, a smaller vocabulary, default parameters and
simpler logits, as long as it keeps failing (greedy, to a fixpoint, under a time budget)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from spec_verify.tiers._cases import PARAM_DEFAULTS, ParityCase, reference_outcome

__all__ = ["shrink"]


def _candidates(case: ParityCase) -> Iterator[ParityCase]:
    """Simpler variants of ``case``, roughly most-simplifying first."""
    for m in range(case.m):  # fewer drafts: keep rows 0..m (row m is the bonus row)
        yield replace(
            case,
            draft_ids=case.draft_ids[:m],
            target_logits=case.target_logits[: m + 1].copy(),
            draft_probs=None if case.draft_probs is None else case.draft_probs[:m].copy(),
            uniforms=case.uniforms[: 2 * m + 1],
        )
    V = case.V
    size = V // 2
    while size >= 1:
        for start in range(0, V, size):
            smaller = _drop_tokens(case, set(range(start, min(V, start + size))))
            if smaller is not None:
                yield smaller
        size //= 2
    for name, default in PARAM_DEFAULTS.items():
        if name != "temperature" and case.params.get(name, default) != default:
            yield replace(case, params={**case.params, name: default})
    if not case.greedy and case.params.get("temperature") != 1.0:
        yield replace(case, params={**case.params, "temperature": 1.0})
    if case.history:
        yield replace(case, history=())
        yield replace(case, history=case.history[: len(case.history) // 2])
    if case.prompt:
        yield replace(case, prompt=())
        yield replace(case, prompt=case.prompt[: len(case.prompt) // 2])
    if case.draft_probs is not None:
        yield replace(case, draft_probs=None)
    for decimals in (0, 1):
        rounded = np.round(case.target_logits, decimals)
        if not np.array_equal(rounded, case.target_logits):
            yield replace(case, target_logits=rounded)
    if case.own_stream:
        yield replace(case, own_stream=False)


def _drop_tokens(case: ParityCase, dropped: set[int]) -> ParityCase | None:
    V = case.V
    if len(dropped) >= V or any(x in dropped for x in case.draft_ids):
        return None
    keep = [t for t in range(V) if t not in dropped]
    new_id = {t: i for i, t in enumerate(keep)}
    rows = case.target_logits[:, keep]
    if not np.isfinite(rows).any(axis=1).all():
        return None
    probs = None
    if case.draft_probs is not None:
        probs = case.draft_probs[:, keep]
        sums = probs.sum(axis=1, keepdims=True)
        if (sums <= 0).any():
            return None
        probs = probs / sums
    return replace(
        case,
        target_logits=rows.copy(),
        draft_ids=tuple(new_id[x] for x in case.draft_ids),
        draft_probs=probs,
        history=tuple(new_id[t] for t in case.history if t in new_id),
        prompt=tuple(new_id[t] for t in case.prompt if t in new_id),
    )


def shrink(
    case: ParityCase,
    fails: Callable[[ParityCase], bool],
    *,
    budget_seconds: float = 20.0,
    max_tries: int = 3000,
) -> ParityCase:
    """The smallest variant of a failing ``case`` that still fails (greedy, to a fixpoint).

    ``fails(candidate)`` must be True for ``case``; a candidate on which the reference itself
    raises is never taken (it would be another failure).
    """
    deadline = time.monotonic() + budget_seconds
    tries = 0
    improved = True
    while improved and time.monotonic() < deadline and tries < max_tries:
        improved = False
        for candidate in _candidates(case):
            tries += 1
            if tries > max_tries or time.monotonic() > deadline:
                break
            if candidate.size() >= case.size():
                continue
            if not reference_outcome(candidate).is_ok:
                continue
            if fails(candidate):
                case = candidate
                improved = True
                break
    return case

