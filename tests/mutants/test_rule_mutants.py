"""The rule mutants (``mutants/rules.py``): each plants one wrong port of a reference rule,
is WRONG under the rule's exact proof with a witness, and stays out of the default catalogue."""

from __future__ import annotations

import pytest

from spec_verify.exact._rules import prove_rule, rule_cases
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.catalogue import CATALOGUE, apply_mutant
from spec_verify.mutants.rules import RULE_MUTANTS, RULE_OF_MUTANT, load_rule_mutant
from spec_verify.results import Status

# One small default case where each mutant's law departs (the others may too).
_CASE_OF = {"b01": "rule/4", "b02": "rule/1", "b03": "rule/4", "m01": "rule/0",
            "v01": "rule/4", "v02": "rule/6"}


def test_the_default_catalogue_is_untouched() -> None:
    assert len(CATALOGUE) == 36
    assert not {m.id for m in RULE_MUTANTS} & {m.id for m in CATALOGUE}
    assert set(RULE_OF_MUTANT) == {m.id for m in RULE_MUTANTS} == set(_CASE_OF)


@pytest.mark.parametrize("mutant", RULE_MUTANTS, ids=lambda m: m.id)
def test_each_rule_mutant_applies_and_says_where_it_came_from(mutant) -> None:
    sources = reference_sources()
    mutated = apply_mutant(mutant, sources)
    assert mutated[mutant.files[0]] != sources[mutant.files[0]]
    assert mutant.origin == "rule" and mutant.symptom


def test_each_real_bug_mutant_cites_its_report() -> None:
    cited = {m.id: m.symptom for m in RULE_MUTANTS}
    assert "#7807" in cited["b01"] and "#7839" in cited["b02"] and "#11985" in cited["b03"]


@pytest.mark.parametrize("mutant", RULE_MUTANTS, ids=lambda m: m.id)
def test_each_rule_mutant_is_wrong_with_a_witness(mutant) -> None:
    case = next(c for c in rule_cases() if c.name == _CASE_OF[mutant.id])
    impl = load_rule_mutant(f"mutant:{mutant.id}")
    (proof,) = prove_rule(RULE_OF_MUTANT[mutant.id], impl, [case], optimum=False)
    assert proof.rule_lossless  # the reference rule itself is lossless there
    assert proof.status is Status.FAILED, proof.message
    assert proof.implementation.witnesses
    assert "reproduce with drafts" in proof.message


def test_b02_is_right_for_deterministic_drafts() -> None:
    """Ratios p/q <= 1 with one-hot drafts: clipping once equals clipping at every step."""
    case = next(c for c in rule_cases() if c.name == "rule/4")
    assert case.models.deterministic
    (proof,) = prove_rule("block", load_rule_mutant("mutant:b02"), [case], optimum=False)
    assert proof.status is Status.PASSED, proof.message
