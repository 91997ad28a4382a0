"""Boundary cases (spec_verify.tiers._edge_cases): each kind sits exactly on its rule's edge, so
the reading of the rule that a port gets wrong gives another distribution on every case."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.reference import SamplingParams, sampling_distribution, verify_draft
from spec_verify.tiers import _cases as parity
from spec_verify.tiers._edge_cases import (
    BOUNDARY_EVERY,
    BOUNDARY_KINDS,
    WINDOW,
    boundary_case,
    boundary_kind,
)

SEEDS = range(60)


def cases(kind):
    return [boundary_case(np.random.default_rng([seed, 11]), kind) for seed in SEEDS]


def row_zero(case, **fields):
    p = SamplingParams(**{**case.params, **fields})
    return sampling_distribution(case.target_logits[0], p, list(case.history), list(case.prompt))


def inclusive_top_p_support(probs, top_p):
    """How many tokens a port keeps that walks while ``c <= top_p`` (the planted bug)."""
    running, kept = 0.0, 0
    for t in sorted(range(len(probs)), key=lambda t: (-probs[t], t)):
        if running > top_p or probs[t] == 0:
            break
        kept += 1
        running += probs[t]
    return kept


def test_every_run_holds_every_kind_at_fixed_positions():
    assert [boundary_kind(i) for i in range(BOUNDARY_EVERY)][: len(BOUNDARY_KINDS)] == list(
        BOUNDARY_KINDS
    )
    for seed in (0, 7, 123):
        kinds = [boundary_kind(s) for s in parity.case_seeds(seed, 100)]
        assert all(kinds.count(kind) == 2 for kind in BOUNDARY_KINDS)
        assert kinds.count(None) == 100 - 2 * len(BOUNDARY_KINDS)


def test_top_p_thresholds_are_hit_exactly():
    for case in cases("top_p_exact"):
        full = row_zero(case, top_p=1.0)
        kept = int((row_zero(case) > 0).sum())
        top = np.sort(full)[::-1]
        assert np.cumsum(top)[kept - 1] == case.params["top_p"]  # the sum reaches it exactly
        assert inclusive_top_p_support(full, case.params["top_p"]) == kept + 1


def test_min_p_thresholds_are_hit_exactly():
    for case in cases("min_p_exact"):
        full = row_zero(case, min_p=0.0)
        threshold = case.params["min_p"] * full.max()
        on_edge = full == threshold
        assert on_edge.any()
        assert (row_zero(case)[on_edge] > 0).all()  # kept: only prob < threshold is dropped


def test_top_k_cuts_inside_a_tie():
    for case in cases("top_k_tie"):
        ordered = np.sort(case.target_logits[0])[::-1]
        k = case.params["top_k"]
        assert 0 < k < case.target_logits.shape[1] and ordered[k - 1] == ordered[k]
        if case.params["temperature"]:
            assert int((row_zero(case) > 0).sum()) == k


def test_long_histories_penalise_only_before_the_window():
    for case in cases("long_history"):
        assert WINDOW < len(case.history) <= 4 * WINDOW
        windowed = case.history[-WINDOW:]
        p = SamplingParams(**case.params)
        for i in range(len(case.draft_ids) + 1):  # every row, as the distributions check sees it
            history = [*case.history, *case.draft_ids[: i + 1]]
            recent = [*windowed, *case.draft_ids[: i + 1]]
            row = case.target_logits[i]
            full = sampling_distribution(row, p, history, list(case.prompt))
            short = sampling_distribution(row, p, recent, list(case.prompt))
            assert int(np.argmax(full)) != int(np.argmax(short))


@pytest.mark.parametrize("kind", BOUNDARY_KINDS)
def test_boundary_cases_are_valid_for_the_reference(kind):
    for case in cases(kind)[:15]:
        verify_draft(
            case.target_logits, list(case.draft_ids), case.draft_probs,
            SamplingParams(**case.params), list(case.history), np.random.default_rng(0),
            list(case.prompt),
        )  # fmt: skip


def test_parity_cases_carry_their_kind_and_a_short_description():
    case = parity.verify_case(3)  # position 3: long_history
    assert case.note == "boundary case: long_history"
    text = case.describe()
    assert "more ..." in text and f"({len(case.history)} tokens)" in text
    assert len(text) < 2000
