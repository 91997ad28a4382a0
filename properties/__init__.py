"""Hypothesis strategies and property checks that take any implementation.

``spec_verify.properties.strategies`` generates inputs (logit rows, sampling parameters,
drafts, draft rows, histories, prompt-lookup contexts, whole cases); ``.checks`` holds the
property checks, each ``check_<property>(impl, case)`` raising ``PropertyViolation`` (an
``AssertionError`` naming the property). Run them all, with the statistical tier, against any
implementation:

    pytest --pyargs spec_verify.properties --spec-impl=SPEC
"""

from ._tier import run_property_tier
from .checks import (
    GENERATION_PROPERTIES,
    PROPERTIES,
    TREE_PROPERTIES,
    VERIFY_PROPERTIES,
    PropertyViolation,
    check_cache_holds_kept_positions,
    check_emitted_is_accepted_plus_one,
    check_eos_and_stop_strings,
    check_greedy_is_argmax_chain,
    check_greedy_speculative_equals_plain,
    check_ids_in_range,
    check_logprobs_equal_plain,
    check_max_tokens_respected,
    check_no_zero_probability_tokens,
    check_prompt_lookup_rules,
    check_same_stream_same_output,
    check_tree_no_zero_probability_tokens,
    check_tree_result_is_a_path,
    check_uniform_draw_count,
)
from .strategies import (
    GenerationCase,
    TreeCase,
    VerifyCase,
    boundary_verify_cases,
    draft_rows,
    drafts,
    generation_cases,
    histories,
    logit_rows,
    lookup_contexts,
    sampling_params,
    tree_cases,
    verify_cases,
    vocab_sizes,
)

__all__ = [
    "GENERATION_PROPERTIES",
    "PROPERTIES",
    "TREE_PROPERTIES",
    "VERIFY_PROPERTIES",
    "GenerationCase",
    "PropertyViolation",
    "TreeCase",
    "VerifyCase",
    "boundary_verify_cases",
    "check_cache_holds_kept_positions",
    "check_emitted_is_accepted_plus_one",
    "check_eos_and_stop_strings",
    "check_greedy_is_argmax_chain",
    "check_greedy_speculative_equals_plain",
    "check_ids_in_range",
    "check_logprobs_equal_plain",
    "check_max_tokens_respected",
    "check_no_zero_probability_tokens",
    "check_prompt_lookup_rules",
    "check_same_stream_same_output",
    "check_tree_no_zero_probability_tokens",
    "check_tree_result_is_a_path",
    "check_uniform_draw_count",
    "draft_rows",
    "drafts",
    "generation_cases",
    "histories",
    "logit_rows",
    "lookup_contexts",
    "run_property_tier",
    "sampling_params",
    "tree_cases",
    "verify_cases",
    "vocab_sizes",
]
