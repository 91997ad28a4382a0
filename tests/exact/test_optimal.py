"""The efficiency oracle (``spec_verify/exact/_optimal.py``): the LP over couplings bounds
every lossless rule; block verification reaches it (Sun et al., Theorem 2), token
verification and sampler-match do not."""

from __future__ import annotations

from fractions import Fraction

import pytest

from spec_verify.exact._optimal import optimal_accepted, optimal_multidraft_acceptance
from spec_verify.exact._rules import rule_cases
from spec_verify.reference.rules_exact import exact_kseq_round, expected_accepted


def test_block_reaches_the_optimum_and_the_token_rule_falls_short() -> None:
    short = 0
    for case in rule_cases(3):
        m = case.models
        best = optimal_accepted(m.target, m.draft, m.context, case.k)
        assert best is not None
        a = {r: float(expected_accepted(r, m.target, m.draft, m.context, case.k))
             for r in ("block", "token", "sampler_match")}
        assert a["block"] == pytest.approx(best, abs=1e-9), case.name
        assert a["token"] <= best + 1e-9 and a["sampler_match"] <= best + 1e-9
        short += a["token"] < best - 1e-6
    assert short >= 4


def test_one_draft_optimum_is_the_overlap() -> None:
    """k = 1: a lossless rule keeps x with at most sum min(p, q) (maximal coupling)."""
    p, q = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), (Fraction(1, 4), Fraction(1, 2),
                                                             Fraction(1, 4))
    best = optimal_accepted(lambda pre: p, lambda pre: q, (), 1)
    assert best == pytest.approx(0.75, abs=1e-9)


def test_a_one_hot_two_draft_chain_at_the_optimum() -> None:
    """p = [1/2, 1/2] everywhere, q one-hot on 0: the drafts are always [0, 0]. The token
    rule keeps 1/2 + 1/4 = 3/4 drafts; block keeps 2 w.p. 1/4 and 1 w.p. 1/4
    (test_rules.test_a_hand_block), also 3/4; the LP shows no lossless rule keeps more."""
    half = (Fraction(1, 2), Fraction(1, 2))
    one = (Fraction(1), Fraction(0))
    best = optimal_accepted(lambda pre: half, lambda pre: one, (), 2)
    assert best == pytest.approx(0.75, abs=1e-9)
    assert expected_accepted("token", lambda pre: half, lambda pre: one, (), 2) == Fraction(3, 4)


def test_too_large_a_program_is_declined() -> None:
    uniform = tuple(Fraction(1, 6) for _ in range(6))
    assert optimal_accepted(lambda pre: uniform, lambda pre: uniform, (), 4) is None


def test_kseq_keeps_a_draft_at_most_as_often_as_the_multidraft_optimum() -> None:
    """K = 1: the optimum is sum min(p, q); K = 2, 3: K-SEQ (reference grid rho) stays below
    the coupling LP and above one draft's overlap on these rows."""
    p = (Fraction(1, 2), Fraction(1, 3), Fraction(1, 6), Fraction(0))
    q = (Fraction(1, 8), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2))
    overlap = float(sum(min(a, b) for a, b in zip(p, q, strict=True)))
    assert optimal_multidraft_acceptance(p, q, 1) == pytest.approx(overlap, abs=1e-9)
    for K in (2, 3):
        law = exact_kseq_round(lambda pre: p if not pre else q, q, (), K)
        kseq = float(sum(v for e, v in law.items() if len(e) == 2))
        best = optimal_multidraft_acceptance(p, q, K)
        assert best is not None and overlap < kseq <= best + 1e-9, (K, kseq, best)
