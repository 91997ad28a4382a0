"""The built-in properties, as tests against the implementation under test.

Run with ``pytest --pyargs spec_verify.properties --spec-impl=SPEC``; each test is named after
its property, and a failure says which property broke and on which example (Hypothesis shrinks
it and prints how to reproduce it). Tests whose capability the implementation lacks are skipped.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spec_verify.properties import checks
from spec_verify.properties import strategies as sv

pytestmark = pytest.mark.spec_property

# Examples cost: a generation property runs several generations per example.
_CHEAP = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
_COSTLY = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=max(5, settings().max_examples // 4),
)


@pytest.mark.spec_capability("verify_draft")
@_CHEAP
@given(case=sv.verify_cases())
def test_emitted_is_accepted_plus_one(spec_impl: Any, case: sv.VerifyCase) -> None:
    checks.check_emitted_is_accepted_plus_one(spec_impl, case)


@pytest.mark.spec_capability("verify_draft")
@_CHEAP
@given(case=sv.verify_cases())
def test_ids_in_range(spec_impl: Any, case: sv.VerifyCase) -> None:
    checks.check_ids_in_range(spec_impl, case)


@pytest.mark.spec_capability("verify_draft")
@_CHEAP
@given(case=sv.verify_cases())
def test_no_zero_probability_tokens(spec_impl: Any, case: sv.VerifyCase) -> None:
    checks.check_no_zero_probability_tokens(spec_impl, case)


@pytest.mark.spec_capability("verify_draft")
@_CHEAP
@given(case=sv.verify_cases(greedy=True))
def test_greedy_is_argmax_chain(spec_impl: Any, case: sv.VerifyCase) -> None:
    checks.check_greedy_is_argmax_chain(spec_impl, case)


@pytest.mark.spec_capability("injected_uniforms")
@_CHEAP
@given(case=sv.verify_cases())
def test_uniform_draw_count(spec_impl: Any, case: sv.VerifyCase) -> None:
    checks.check_uniform_draw_count(spec_impl, case)


@pytest.mark.spec_capability("injected_uniforms")
@_CHEAP
@given(case=sv.verify_cases(greedy=False))
def test_same_stream_same_output(spec_impl: Any, case: sv.VerifyCase) -> None:
    checks.check_same_stream_same_output(spec_impl, case)


@pytest.mark.spec_capability("prompt_lookup")
@_CHEAP
@given(
    ctx=sv.lookup_contexts(),
    k=st.integers(0, 6),
    sizes=st.tuples(st.integers(1, 4), st.integers(0, 3)),
)
def test_prompt_lookup_rules(
    spec_impl: Any, ctx: list[int], k: int, sizes: tuple[int, int]
) -> None:
    min_ngram, extra = sizes
    checks.check_prompt_lookup_rules(spec_impl, ctx, k, min_ngram + extra, min_ngram)


@pytest.mark.spec_capability("generation")
@_COSTLY
@given(case=sv.generation_cases())
def test_cache_holds_kept_positions(spec_impl: Any, case: sv.GenerationCase) -> None:
    checks.check_cache_holds_kept_positions(spec_impl, case)


@pytest.mark.spec_capability("generation")
@_COSTLY
@given(case=sv.generation_cases(greedy=True))
def test_greedy_speculative_equals_plain(spec_impl: Any, case: sv.GenerationCase) -> None:
    checks.check_greedy_speculative_equals_plain(spec_impl, case)


@pytest.mark.spec_capability("generation")
@_COSTLY
@given(case=sv.generation_cases())
def test_max_tokens_respected(spec_impl: Any, case: sv.GenerationCase) -> None:
    checks.check_max_tokens_respected(spec_impl, case)


@pytest.mark.spec_capability("generation")
@_COSTLY
@given(case=sv.generation_cases())
def test_eos_and_stop_strings(spec_impl: Any, case: sv.GenerationCase) -> None:
    checks.check_eos_and_stop_strings(spec_impl, case)


@pytest.mark.spec_capability("generation")
@_COSTLY
@given(case=sv.generation_cases())
def test_logprobs_equal_plain(spec_impl: Any, case: sv.GenerationCase) -> None:
    checks.check_logprobs_equal_plain(spec_impl, case)


@pytest.mark.spec_capability("verify_tree")
@_CHEAP
@given(case=sv.tree_cases())
def test_tree_result_is_a_path(spec_impl: Any, case: sv.TreeCase) -> None:
    checks.check_tree_result_is_a_path(spec_impl, case)


@pytest.mark.spec_capability("verify_tree")
@_CHEAP
@given(case=sv.tree_cases())
def test_tree_no_zero_probability_tokens(spec_impl: Any, case: sv.TreeCase) -> None:
    checks.check_tree_no_zero_probability_tokens(spec_impl, case)
