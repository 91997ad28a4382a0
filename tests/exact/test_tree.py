"""The exact engine on trees: the cell enumerator per fixed tree (``_tree_cells``), the proofs
of the rules over the draft draws and typical acceptance's exact bias (``_tree_proofs``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.errors import InvalidArgument, InvalidDistribution
from spec_verify.exact._tree_cells import TreeRound, contract_tree_law, enumerate_tree_round
from spec_verify.exact._tree_proofs import acceptance_by_branching, prove_tree_rules, typical_bias
from spec_verify.tiers.tree import random_tree_round, tree_rounds

F = Fraction

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


def test_another_draw_order_is_located_and_proven_in_law(reference):
    # t08 draws u_resample only when every child is rejected: exact in law, other draw order
    impl = load_implementation("mutant:t08")
    rnd = tree_rounds(0, 0)[2]
    e = enumerate_tree_round(impl, rnd)
    assert e.complete and e.distribution == contract_tree_law(rnd)
    assert e.calls > enumerate_tree_round(reference, rnd).calls


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

