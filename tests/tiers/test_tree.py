"""The tree checks of the exact, greedy and parity tiers (``tiers/tree.py``), with planted-wrong
implementations and the tree mutants as negative controls."""

from __future__ import annotations

import pytest

from spec_verify.adapters import load_implementation
from spec_verify.errors import ImplementationError
from spec_verify.results import Status
from spec_verify.tiers.tree import check_tree_argmax, check_tree_exact, check_tree_parity


class _Crashing:
    name = "crashing"
    capabilities = frozenset({"verify_tree", "injected_uniforms"})

    def verify_tree(self, *args, **kwargs):
        raise ImplementationError("crashing", "verify_tree", "segfaulted (planted)")


class _Greedy:
    """Keeps every root child's first token whatever the target: lossy and wrong."""

    name = "keeps-first-child"
    capabilities = frozenset({"verify_tree", "injected_uniforms"})

    def verify_tree(self, target_logits, parents, token_ids, draft_probs, p, history, rng,
                    prompt=(), rule="with_replacement"):
        rng.random()
        return [token_ids[0], 0], [0]


def test_crash_is_an_error_and_a_wrong_rule_a_failure():
    assert check_tree_exact(_Crashing(), quick=True).status is Status.ERROR
    assert check_tree_exact(_Greedy(), quick=True).status is Status.FAILED


def test_tree_checks_pass_on_the_reference(reference):
    for check in (check_tree_exact, check_tree_argmax, check_tree_parity):
        result = check(reference, quick=True)
        assert result is not None and result.status is Status.PASSED, result.message


@pytest.mark.parametrize(("mutant", "check"), [
    ("t01", check_tree_exact), ("t04", check_tree_exact), ("t12", check_tree_exact),
    ("t09", check_tree_argmax), ("t10", check_tree_argmax),
    ("t08", check_tree_parity), ("t11", check_tree_parity),
])
def test_tree_checks_reject_the_mutants(mutant, check):
    result = check(load_implementation(f"mutant:{mutant}"), quick=True)
    assert result is not None and result.status is Status.FAILED, result.message


def test_tree_checks_skip_implementations_without_trees():
    chain_only = type("ChainOnly", (), {"name": "c", "capabilities": frozenset({"verify_draft"})})
    assert check_tree_exact(chain_only()) is None
    assert check_tree_argmax(chain_only()) is None
    assert check_tree_parity(chain_only()) is None


