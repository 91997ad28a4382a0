"""The strategies generate what they promise: valid inputs, with the edge cases present."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from spec_verify.properties import strategies as sv
from spec_verify.reference import (
    CharTokenizer,
    PromptLookupDraft,
    SamplingParams,
    verify_draft,
)

QUICK = settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
FIND = settings(
    deadline=None,
    max_examples=2000,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@QUICK
@given(row=sv.logit_rows())
def test_logit_rows_are_valid_rows(row: np.ndarray) -> None:
    assert row.ndim == 1 and row.shape[0] >= 2 and row.dtype == np.float64
    assert not np.isnan(row).any() and not np.isposinf(row).any()
    assert np.isfinite(row).any()


@pytest.mark.parametrize(
    ("feature", "predicate"),
    [
        ("a tie at the maximum", lambda r: (r[np.isfinite(r)] == r.max()).sum() >= 2),
        ("-inf", lambda r: np.isneginf(r).any()),
        ("a huge magnitude", lambda r: np.abs(r[np.isfinite(r)]).max() >= 1e29),
        ("a tiny magnitude", lambda r: (np.abs(r[np.isfinite(r) & (r != 0)]) < 1e-200).any()),
        ("V over 8192", lambda r: r.shape[0] > 8192),
        ("V = 2", lambda r: r.shape[0] == 2),
    ],
)
def test_logit_rows_have_the_edge_cases(feature: str, predicate: Any) -> None:
    find(sv.logit_rows(), predicate, settings=FIND)


@QUICK
@given(fields=sv.sampling_params())
def test_sampling_params_are_valid_contract_fields(fields: dict[str, Any]) -> None:
    SamplingParams(**fields)


@pytest.mark.parametrize(
    "predicate",
    [
        lambda f: f["temperature"] == 0,
        lambda f: f["temperature"] > 0,
        lambda f: f["top_k"] == 1,
        lambda f: f["top_p"] == 1e-9,
        lambda f: 0.999 < f["top_p"] < 1,
        lambda f: f["min_p"] == 1.0,
        lambda f: f["repetition_penalty"] != 1 and f["presence_penalty"] != 0,
        lambda f: f["frequency_penalty"] != 0,
    ],
)
def test_sampling_params_reach_their_edges(predicate: Any) -> None:
    find(sv.sampling_params(), predicate, settings=FIND)


@QUICK
@given(data=st.data(), V=st.integers(2, 40))
def test_draft_rows_are_distributions(data: st.DataObject, V: int) -> None:
    target = np.full(V, 1.0 / V)
    q = data.draw(sv.draft_rows(V, target))
    assert q.shape == (V,) and (q >= 0).all()
    assert abs(q.sum() - 1) < 1e-12


def _target_with_zeros() -> np.ndarray:
    return np.array([0.5, 0.0, 0.5, 0.0, 0.0])


@pytest.mark.parametrize(
    ("kind", "predicate"),
    [
        ("q = p", lambda q: np.array_equal(q, _target_with_zeros())),
        ("disjoint supports", lambda q: not (q * _target_with_zeros()).any()),
        ("zeros", lambda q: 0 < (q == 0).sum() < len(q) - 1),
        ("one-hot", lambda q: (q == 1).sum() == 1),
    ],
)
def test_draft_rows_have_the_edge_cases(kind: str, predicate: Any) -> None:
    find(sv.draft_rows(5, _target_with_zeros()), predicate, settings=FIND)


@QUICK
@given(case=sv.verify_cases())
def test_verify_cases_are_valid_calls(case: sv.VerifyCase) -> None:
    """The reference accepts every generated case (no contract error)."""
    rng = np.random.default_rng(case.seed)
    emitted, n = verify_draft(
        case.target_logits,
        list(case.draft_ids),
        case.draft_probs,
        SamplingParams(**case.params),
        list(case.history),
        rng,
        list(case.prompt),
    )
    assert len(emitted) == n + 1
    if case.draft_probs is not None:
        assert case.draft_probs.shape == (case.m, case.vocab_size)
        assert all(case.draft_probs[i][x] > 0 for i, x in enumerate(case.draft_ids))


@QUICK
@given(ctx=sv.lookup_contexts())
def test_lookup_contexts_have_planted_repeats(ctx: list[int]) -> None:
    assert len(ctx) >= 2
    assert len(set(ctx)) < len(ctx)  # the planted copy repeats at least one token


def test_lookup_contexts_often_give_a_draft() -> None:
    find(
        sv.lookup_contexts(),
        lambda c: len(PromptLookupDraft().propose(c, 3, None)[0]) == 3,
        settings=FIND,
    )


@QUICK
@given(case=sv.generation_cases())
def test_generation_cases_are_valid(case: sv.GenerationCase) -> None:
    V = 8 if case.target == "bag" else CharTokenizer().vocab_size
    assert case.prompt and all(0 < t < V for t in case.prompt)
    assert 1 <= case.max_tokens <= 12 and 0 <= case.k <= 5
    SamplingParams(**case.params)


@QUICK
@given(data=st.data(), V=st.integers(2, 30))
def test_histories_and_drafts_are_ids_in_range(data: st.DataObject, V: int) -> None:
    for strategy in (sv.histories(V), sv.drafts(V)):
        assert all(0 <= t < V for t in data.draw(strategy))


@QUICK
@given(case=sv.boundary_verify_cases())
def test_boundary_verify_cases_are_valid_calls(case: sv.VerifyCase) -> None:
    emitted, n = verify_draft(
        case.target_logits, list(case.draft_ids), case.draft_probs,
        SamplingParams(**case.params), list(case.history), np.random.default_rng(case.seed),
        list(case.prompt),
    )  # fmt: skip
    assert len(emitted) == n + 1


def test_verify_cases_include_the_boundary_cases() -> None:
    long = find(sv.verify_cases(), lambda c: len(c.history) > 1024, settings=FIND)
    assert len(long.history) <= 4096
    greedy = find(sv.verify_cases(greedy=True), lambda c: len(c.history) > 1024, settings=FIND)
    assert greedy.greedy


def test_the_greedy_chain_property_catches_a_recent_window_penalty() -> None:
    """Negative control: a sampler whose penalties see the last 1,024 history tokens only
    breaks greedy_is_argmax_chain on every greedy long-history boundary case."""
    from spec_verify.adapters._implementations import PythonImplementation
    from spec_verify.properties import PropertyViolation, checks
    from spec_verify.reference import verify_draft as reference_verify_draft

    def windowed(target_logits, draft_ids, draft_probs, p, history, rng, prompt=()):
        return reference_verify_draft(
            target_logits, draft_ids, draft_probs, p, list(history)[-1024:], rng, prompt
        )

    from spec_verify.tiers._edge_cases import boundary_case

    module = types.ModuleType("windowed")
    module.verify_draft = windowed  # type: ignore[attr-defined]
    impl = PythonImplementation("python:windowed", module)
    reference = PythonImplementation("python:reference", _reference_module())
    for seed in range(10):
        edge = boundary_case(np.random.default_rng(seed), "long_history")
        case = sv.VerifyCase(
            edge.target_logits, edge.draft_ids, None, {**edge.params, "temperature": 0.0},
            edge.history, edge.prompt,
        )  # fmt: skip
        checks.check_greedy_is_argmax_chain(reference, case)
        with pytest.raises(PropertyViolation, match="greedy_is_argmax_chain"):
            checks.check_greedy_is_argmax_chain(impl, case)


def _reference_module() -> types.ModuleType:
    from spec_verify import reference

    return reference
