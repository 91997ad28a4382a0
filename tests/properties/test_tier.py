"""The properties as a tier of ``spec-verify check``: one result per property."""

from __future__ import annotations

import types

import pytest

from spec_verify.adapters._implementations import PythonImplementation
from spec_verify.adapters._loader import load_implementation
from spec_verify.errors import InvalidArgument
from spec_verify.properties import PROPERTIES, run_property_tier
from spec_verify.results import Status

ACCEPT_ALL = "python:tests.properties.impls.accept_all"


def test_the_reference_passes_every_property(reference) -> None:
    results = run_property_tier(reference, max_examples=8, seed=1)
    assert [r.name for r in results] == list(PROPERTIES)
    for result in results:
        assert result.tier == "properties"
        assert result.status is Status.PASSED, result.message
        assert result.details["seed"] == 1


def test_the_planted_bug_fails_naming_the_property_and_the_example() -> None:
    results = run_property_tier(
        load_implementation(ACCEPT_ALL),
        max_examples=30,
        properties=["greedy_is_argmax_chain", "ids_in_range"],
    )
    by_name = {r.name: r for r in results}
    assert list(by_name) == ["ids_in_range", "greedy_is_argmax_chain"]
    assert by_name["ids_in_range"].status is Status.PASSED
    failed = by_name["greedy_is_argmax_chain"]
    assert failed.status is Status.FAILED
    assert failed.message.startswith("property greedy_is_argmax_chain violated: drafts")
    assert failed.details["example"].startswith(("Falsifying example", "Failing test case"))
    assert "case=VerifyCase(" in failed.details["example"]


@pytest.mark.slow  # 29 s: two whole property tiers
def test_the_same_seed_explores_the_same_examples() -> None:
    impl = load_implementation(ACCEPT_ALL)

    def run() -> str:
        only = ["no_zero_probability_tokens"]
        return run_property_tier(impl, max_examples=30, seed=5, properties=only)[0].message

    assert run() == run()


def test_missing_capabilities_are_skipped() -> None:
    module = types.ModuleType("verify_only")
    module.verify_draft = load_implementation("reference", in_process=True).module.verify_draft  # type: ignore[attr-defined]
    impl = PythonImplementation("python:verify_only", module)
    results = run_property_tier(impl, max_examples=3)
    skipped = {r.name for r in results if r.status is Status.SKIPPED}
    assert skipped == {
        "prompt_lookup_rules",
        "cache_holds_kept_positions",
        "greedy_speculative_equals_plain",
        "max_tokens_respected",
        "eos_and_stop_strings",
        "logprobs_equal_plain",
        "tree_result_is_a_path",
        "tree_no_zero_probability_tokens",
    }
    assert all(r.status is Status.PASSED for r in results if r.name not in skipped)


def test_unknown_property_names_are_refused(reference) -> None:
    with pytest.raises(InvalidArgument, match="unknown property names \\['nope'\\]"):
        run_property_tier(reference, properties=["nope"])
