"""The generation tier: its checks pass on the reference and name the problem on broken logs."""

from __future__ import annotations

import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.tiers.generation import rollback_problem, run_generation_tier

PROMPT = [1, 2, 3]


def test_a_correct_log_has_no_problem():
    # prompt, then drafts [4, 9] of which 4 is kept and 5 emitted, then pending 5 alone
    log = [(0, (1, 2, 3, 4, 9)), (4, (5,))]
    assert rollback_problem(log, PROMPT, [4, 5, 6]) is None


ROLLBACK_CASES = [
    # (log, ids, words in the message)
    ([], [4], "never called"),
    ([(1, (1, 2, 3))], [4], "does not start with the prompt"),
    ([(0, (1, 2, 3, 4, 9)), (5, (5,))], [4, 5, 6], "left in the cache"),  # no truncation
    ([(0, (1, 2, 3, 4, 9)), (3, (4,))], [4, 5, 6], "truncated too far"),
    ([(0, (1, 2, 3, 4, 9)), (4, (6,))], [4, 5, 6], "pending token"),  # the wrong token fed
]


@pytest.mark.parametrize(("log", "ids", "words"), ROLLBACK_CASES)
def test_a_broken_log_is_named(log, ids, words):
    problem = rollback_problem(log, PROMPT, ids)
    assert problem is not None and words in problem


def test_the_reference_passes_every_generation_check(reference):
    results = run_generation_tier(reference, quick=True)
    assert [r.name for r in results] == ["rollback", "stats", "eos_stop_budget", "logprobs",
                                         "drafts"]
    assert all(r.passed for r in results), [r.message for r in results if not r.passed]


@pytest.mark.parametrize(("mutant", "check"), [("s17", "rollback"), ("s21", "drafts"),
                                               ("s16", "drafts"), ("s22", "eos_stop_budget")])
def test_mutants_fail_the_check_that_targets_them(mutant, check):
    results = {r.name: r for r in run_generation_tier(load_implementation(f"mutant:{mutant}"),
                                                      quick=True)}
    assert not results[check].passed, results[check].message


def test_sampled_model_draft_rows_that_are_not_its_models_fail_the_drafts_check():
    results = {r.name: r for r in run_generation_tier(
        load_implementation("python:tests.impls.stale_draft_rows"), quick=True)}  # fmt: skip
    assert not results["drafts"].passed
    assert "not the draft model's distributions" in results["drafts"].message
    assert all(r.passed for name, r in results.items() if name != "drafts")
