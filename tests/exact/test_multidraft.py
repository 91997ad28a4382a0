"""``prove --rule kseq|rrs``'s engine (spec_verify/exact/_multidraft.py): the float64 references
are proven lossless by cell enumeration over every draw of the chains, and the planted bugs
(``mutants/rules.py``: k01, w01) are WRONG with a witness."""

from __future__ import annotations

import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.exact._multidraft import (
    MULTIDRAFT_IMPLEMENTATIONS,
    chain_rounds,
    enumerate_multidraft_round,
    multidraft_cases,
    prove_multidraft,
)
from spec_verify.exact._tree_law import drafted_trees
from spec_verify.mutants.rules import MULTIDRAFT_OF_MUTANT, load_rule_mutant
from spec_verify.reference.multidraft_exact import exact_multidraft
from spec_verify.results import Status

_FIRST = multidraft_cases()[0]  # K = 2 chains of one token, V = 3
_BRANCHED = multidraft_cases()[4]  # K = 2 chains of 2 sharing their head: branching (1, 2)
# the case where each planted bug shows (w02 needs chains that share a prefix)
_CASE_OF = {"w02": _BRANCHED}


@pytest.mark.parametrize("rule", sorted(MULTIDRAFT_IMPLEMENTATIONS))
def test_the_float_reference_is_proven_lossless(rule) -> None:
    impl = load_implementation(MULTIDRAFT_IMPLEMENTATIONS[rule][0])
    (proof,) = prove_multidraft(rule, impl, [_FIRST], optimum=False)
    assert proof.rule_lossless and proof.status is Status.PASSED, proof.message
    assert proof.trees == (9 if rule == "kseq" else 6) and proof.calls > 0


def test_rrs_is_proven_where_chains_share_prefixes() -> None:
    """Without replacement below the first position: each draw is a tree with branching
    (1, 2) laid out as two chains sharing their head; the float reference is proven on all."""
    assert _BRANCHED.branching == (1, 2)
    rounds = list(chain_rounds(_BRANCHED, "rrs"))
    assert len(rounds) == 3 * 3 * 2 and sum(w for _, w in rounds) == 1
    # one head, shared; below it two distinct tokens
    assert all(r.token_ids[0] == r.token_ids[2] and r.token_ids[1] != r.token_ids[3]
               for r, _ in rounds)
    (proof,) = prove_multidraft("rrs", load_implementation(MULTIDRAFT_IMPLEMENTATIONS["rrs"][0]),
                                [_BRANCHED], optimum=False)
    assert proof.rule_lossless and proof.status is Status.PASSED, proof.message
    assert proof.trees == 18


def test_per_tree_the_float_reference_has_the_exact_law() -> None:
    """Conformance, tree by tree: the enumeration uses the predicted cells, locating nothing."""
    impl = load_implementation(MULTIDRAFT_IMPLEMENTATIONS["kseq"][0])
    for rnd, _ in list(drafted_trees(_FIRST.tree_case("kseq")))[:4]:
        e = enumerate_multidraft_round(impl, rnd, "kseq")
        assert e.complete and not e.located
        own = exact_multidraft("kseq", rnd.p_rows, rnd.parents, rnd.token_ids, rnd.q_rows)
        assert e.distribution == own


@pytest.mark.parametrize("mutant", sorted(MULTIDRAFT_OF_MUTANT))
def test_each_multidraft_mutant_is_wrong(mutant) -> None:
    rule = MULTIDRAFT_OF_MUTANT[mutant][1]
    case = _CASE_OF.get(mutant, _FIRST)
    (proof,) = prove_multidraft(rule, load_rule_mutant(f"mutant:{mutant}"), [case],
                                optimum=False)
    assert proof.rule_lossless  # the rule itself is lossless there
    assert proof.status is Status.FAILED and proof.witness is not None, proof.message
    assert "reproduce with chains" in proof.message


@pytest.mark.slow  # scipy's LP: ~3 s to import and warm up on 2 cores
def test_efficiency_orders_the_rules() -> None:
    (proof,) = prove_multidraft("kseq", load_implementation(MULTIDRAFT_IMPLEMENTATIONS["kseq"][0]),
                                [_FIRST])
    a, best = proof.accepted, proof.optimum
    iid, without = best["iid"], best["without"]
    assert iid is not None and without is not None
    # two drafts keep more than one; no lossless rule beats its drafting's optimum (float slack)
    assert a["token"] < a["kseq"] <= iid + 1e-9 and a["rrs"] <= without + 1e-9
    assert a["rrs_with"] <= iid + 1e-9 and a["token"] == a["block"]  # L = 1


def test_the_chains_lp_is_both_known_optima_at_their_edges() -> None:
    """Three programs written apart: K = 1 is the chain LP, L = 1 Hu et al.'s one-position LP;
    the negative control: a rule that always keeps chain 0 whole (lossy) keeps L > optimum."""
    from spec_verify.exact._optimal import (
        optimal_accepted,
        optimal_chains_accepted,
        optimal_multidraft_acceptance,
    )

    target, draft = _FIRST.tree_case("kseq").tables()
    assert optimal_chains_accepted(target, draft, (), 1, 2) == pytest.approx(
        optimal_accepted(target, draft, (), 2), abs=1e-9)
    iid = optimal_chains_accepted(target, draft, (), 2, 1)
    assert iid == pytest.approx(optimal_multidraft_acceptance(
        tuple(target(())), tuple(draft(())), 2), abs=1e-9)
    assert iid is not None and iid < 1  # keeping a draft always (E = L = 1) is not lossless


def test_unknown_rule_is_refused() -> None:
    from spec_verify.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        prove_multidraft("block", None, [])
