"""The sympy identities of the reference rules, and a negative control."""

from __future__ import annotations

from spec_verify.exact._rule_symbolic import kseq_identity, rule_derivations


def test_the_rule_derivations_are_proven() -> None:
    found = rule_derivations()
    assert [d.proven for d in found] == [True, True]
    assert "K-SEQ" in found[0].title and "Sampler-match" in found[1].title
    assert len(found[1].steps) == 3


def test_kseq_with_the_first_tries_weight_is_not_proven() -> None:
    wrong = kseq_identity(wrong_c=True)
    assert [s.verified for s in wrong.steps] == [False, False]
    assert wrong.render().endswith("NOT proven")
