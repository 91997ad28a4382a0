"""A tree-only module (``verify_tree``, no ``verify_draft``) is loaded, not refused: the tiers with
tree checks run them, the checks that need ``verify_draft`` skip with a reason; a planted tree
bug in such a module fails a law check (the negative control)."""

from __future__ import annotations

import pytest

from spec_verify.adapters import load_implementation
from spec_verify.results import Status
from spec_verify.runner import run_checks


def test_a_tree_only_module_loads_with_trees_and_injected_uniforms() -> None:
    impl = load_implementation("python:tests.impls.tree_only")
    try:
        assert {"verify_tree", "injected_uniforms", "greedy"} <= impl.capabilities
        assert "verify_draft" not in impl.capabilities
    finally:
        impl.close()


def test_the_tree_tiers_run_and_the_chain_checks_skip_with_a_reason() -> None:
    report = run_checks("python:tests.impls.tree_only", tiers=["exact", "greedy"], quick=True,
                        profile="lossless")
    assert report.passed, [r.message for r in report.failures()]
    results = {(r.tier, r.name): r for r in report.results}
    assert results["exact", "tree_law"].status is Status.PASSED
    assert results["greedy", "tree_argmax"].status is Status.PASSED
    for key in (("exact", "theorems"), ("greedy", "argmax_chain")):
        assert results[key].status is Status.SKIPPED
        assert "no verify_draft (tree-only)" in results[key].message


@pytest.mark.slow  # the bug's fast control: test_tree_law.py
def test_a_tree_only_module_with_a_planted_bug_fails_the_tree_law() -> None:
    report = run_checks("python:tests.impls.tree_only_kseq_bug", tiers=["exact"], quick=True,
                        profile="lossless")
    assert not report.passed
    assert {(r.tier, r.name) for r in report.failures()} == {("exact", "tree_law")}
