"""The exact engine on trees: the cell enumerator per fixed tree, the tree checks of the exact,
greedy and parity tiers (with planted-wrong implementations as negative controls), the proofs
of the rules over the draft draws, and typical acceptance's exact bias."""

from __future__ import annotations

import doctest
from fractions import Fraction

import numpy as np
import pytest

from spec_verify.adapters import check_tree_result, load_implementation
from spec_verify.errors import ImplementationError, InvalidArgument, InvalidDistribution
from spec_verify.exact import _tree_cells, _tree_proofs
from spec_verify.exact._tree_cells import TreeRound, contract_tree_law, enumerate_tree_round
from spec_verify.exact._tree_proofs import acceptance_by_branching, prove_tree_rules, typical_bias
from spec_verify.results import Status
from spec_verify.tiers.tree import (
    check_tree_argmax,
    check_tree_exact,
    check_tree_parity,
    random_tree_round,
    tree_rounds,
)

F = Fraction


@pytest.fixture(scope="module")
def reference():
    return load_implementation("reference")


@pytest.mark.parametrize("module", [_tree_cells, _tree_proofs], ids=lambda m: m.__name__)
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted and not result.failed


def test_reference_law_per_fixed_tree_is_the_rule_s(reference):
    rng = np.random.default_rng(7)
    for rnd in [*tree_rounds(0, 0), random_tree_round(rng, 8, 7, "with_replacement", False),
                random_tree_round(rng, 8, 7, "without_replacement", False),
                random_tree_round(rng, 12, 9, "with_replacement", True)]:
        e = enumerate_tree_round(reference, rnd)
        assert e.complete, e.reason
        assert e.distribution == contract_tree_law(rnd)
        assert e.located == () and e.notes == ()
        assert e.lower_bound <= e.calls <= 4 * e.lower_bound + 40  # probes of the fits


def test_enumerator_reports_a_wrong_law_with_its_uniforms():
    bad = load_implementation("mutant:t02")  # without replacement, the draft not renormalised
    rnd = tree_rounds(0, 0)[1]
    e = enumerate_tree_round(bad, rnd)
    assert e.complete and e.distribution != contract_tree_law(rnd)


def test_another_draw_order_is_located_and_proven_in_law():
    # t08 draws u_resample only when every child is rejected: exact in law, other draw order
    impl = load_implementation("mutant:t08")
    rnd = tree_rounds(0, 0)[2]
    e = enumerate_tree_round(impl, rnd)
    assert e.complete and e.distribution == contract_tree_law(rnd)
    assert e.calls > enumerate_tree_round(load_implementation("reference"), rnd).calls


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


def test_tree_round_rejects_bad_rows():
    p = (F(1, 2), F(1, 2))
    with pytest.raises(InvalidArgument, match="node 1 has parent 1"):
        TreeRound((p, p, p), (-1, 1), (0, 1))
    with pytest.raises(InvalidDistribution, match="sums to"):
        TreeRound(((F(1, 2), F(1, 4)), p), (-1,), (0,))
    with pytest.raises(InvalidDistribution, match="gives node 0's token 1 probability 0"):
        TreeRound((p, p), (-1,), (1,), ((F(1), F(0)), None))
    with pytest.raises(InvalidArgument, match="rule"):
        TreeRound((p, p), (-1,), (1,), rule="typical")


def test_adapter_checks_the_returned_path():
    parents, tokens = [-1, 0, -1], [2, 1, 0]
    assert check_tree_result("x", ([2, 1, 0], [0, 1]), parents, tokens, 3) == ([2, 1, 0], [0, 1])
    for bad, match in [(([2, 1, 0], [0, 2]), "not a child of node 0"),
                       (([1, 0], [0]), "carries token 2"),
                       (([2], [0]), "one more"),
                       (([2, 5], [0]), "out of"),
                       ((None, 3), "returned")]:
        with pytest.raises(ImplementationError, match=match):
            check_tree_result("x", bad, parents, tokens, 3)


# --- the rules themselves ---------------------------------------------------------------------

def test_lossless_rules_are_proven_over_the_draws():
    proofs = prove_tree_rules(vocab_sizes=(3,), max_branching=3, max_depth=2)
    assert len(proofs) == 12 and all(p.proven and p.tv == 0 for p in proofs)


def test_the_proof_fails_a_lossy_rule():  # negative control of the proof itself
    proofs = prove_tree_rules(vocab_sizes=(3,), max_branching=2, max_depth=1, rules=("typical",))
    assert proofs and not any(p.proven for p in proofs)
    assert all(p.tv > 0 for p in proofs)


def test_typical_bias_is_exact_and_positive():
    rows = typical_bias(epsilons=("0.01", "0.5"), V=3, branching=2, depth=1)
    for row in rows:
        assert isinstance(row.tv, Fraction) and row.tv > 0
        assert 0 < row.tv_first <= row.tv  # a marginal is never further than the joint
        assert sum(row.first_token_error.values()) == 0
        assert row.tv_first == sum(abs(v) for v in row.first_token_error.values()) / 2
        assert row.mean_kept >= 0 and row.lossless_mean_kept > 0


def test_acceptance_grows_with_branching():
    by_rule = acceptance_by_branching(V=4, depth=2, max_branching=3)
    for rule, points in by_rule.items():
        kept = [v for _, v in points]
        assert kept == sorted(kept) and kept[-1] > kept[0], rule
    # without replacement never keeps less than with replacement at the same branching
    for (_, a), (_, b) in zip(by_rule["with_replacement"], by_rule["without_replacement"],
                              strict=True):
        assert b >= a
