"""Boundary ties (spec_verify/tiers/_boundary.py): which decisions an ulp of exp could flip,
and how the parity tier reports a port that decides otherwise there."""

from __future__ import annotations

import math

import numpy as np

from spec_verify.adapters import Implementation
from spec_verify.reference import SamplingParams, sampling_distribution, verify_draft
from spec_verify.results import Status
from spec_verify.tiers import parity
from spec_verify.tiers._boundary import decision_tie, filter_tie
from spec_verify.tiers._cases import ParityCase
from spec_verify.tiers.parity import run_parity_tier

LOGITS = np.array([[0.0, math.log(3.0)]])  # p = [1/4, 3/4] up to rounding
P = SamplingParams()


def c0() -> float:
    return float(sampling_distribution(LOGITS[0], P)[0])


def bonus_tie(u: float) -> tuple[int, str] | None:
    return decision_tie(LOGITS, (), None, P, (), (), (u,), 0)


def test_a_uniform_an_ulp_from_a_cumulative_sum_is_a_tie():
    assert bonus_tie(math.nextafter(c0(), 0.0)) is not None
    assert bonus_tie(math.nextafter(c0(), 1.0))[0] == 0


def test_a_uniform_away_from_every_boundary_or_exactly_on_one_is_not():
    assert bonus_tie(c0() - 1e-9) is None
    assert bonus_tie(0.9) is None
    assert bonus_tie(c0()) is None  # equality: the contract's u < c decides, exactly


def test_the_accept_test_at_p_of_x_is_a_tie_on_its_row():
    rows = np.array([[0.0, math.log(3.0)], [0.0, 0.0]])
    p_x = float(sampling_distribution(rows[0], P)[1])
    u = math.nextafter(p_x, 0.0)  # deterministic draft of token 1: accept iff u < p(1)
    _, n = verify_draft(rows, [1], None, P, [], iter_source([u, 0.5, 0.3]))
    assert n == 1
    assert decision_tie(rows, (1,), None, P, (), (), (u, 0.5, 0.3), n) is not None
    assert decision_tie(rows, (1,), None, P, (), (), (0.2, 0.5, 0.3), 1) is None


def test_top_p_at_the_running_sum_and_min_p_at_the_threshold():
    logits = np.log([0.5, 0.3, 0.2])
    p = sampling_distribution(logits, P)
    at_cut = float(p[0] + p[1])
    near = SamplingParams(top_p=math.nextafter(at_cut, 1.0))
    assert "top-p" in filter_tie(logits, near, [], [])
    assert filter_tie(logits, SamplingParams(top_p=0.9), [], []) == ""
    ratio = float(p[2] / p[0])
    assert "min-p" in filter_tie(logits, SamplingParams(min_p=ratio * (1 + 1e-15)), [], [])
    assert filter_tie(logits, SamplingParams(min_p=0.3), [], []) == ""
    assert filter_tie(logits, SamplingParams(temperature=0, top_p=0.5), [], []) == ""


def iter_source(values):
    class Source:
        def __init__(self):
            self.values = list(values)

        def random(self):
            return self.values.pop(0)

    return Source()


class Shifted(Implementation):
    """The reference with every uniform moved by ``shift`` ulps: what an exp an ulp away does
    to a decision at a boundary (and nothing elsewhere)."""

    capabilities = frozenset({"verify_draft", "injected_uniforms"})

    def __init__(self, shift: int, swap_bonus: bool = False):
        self.shift = shift
        self.swap_bonus = swap_bonus
        self.name = f"python:shifted{shift}"

    def params(self, **fields):
        return SamplingParams(**fields)

    def verify_draft(self, target_logits, draft_ids, draft_probs, p, history, rng, prompt=()):
        shift = self.shift

        class Source:
            def random(self):
                u = rng.random()
                for _ in range(abs(shift)):
                    u = math.nextafter(u, 1.0 if shift > 0 else 0.0)
                return u

        ids, n = verify_draft(target_logits, draft_ids, draft_probs, p, history, Source(), prompt)
        if self.swap_bonus:
            ids[-1] = 1 - ids[-1]
        return ids, n


def crafted(u: float):
    def case(case_seed: int) -> ParityCase:
        return ParityCase(case_seed, LOGITS.copy(), (), None, {}, (), (), (u,))

    return case


def test_a_port_that_decides_otherwise_at_a_tie_passes_with_the_tie_reported(monkeypatch):
    monkeypatch.setattr(parity, "verify_case", crafted(math.nextafter(c0(), 0.0)))
    [result] = run_parity_tier(Shifted(2), n_cases=3)
    assert result.status is Status.PASSED
    assert len(result.details["boundary_ties"]) == 3
    assert "boundary tie" in result.message and "row 0" in result.message


def test_a_port_that_differs_away_from_a_tie_fails(monkeypatch):
    # The negative controls: the same case with the uniform well inside a cell, where the
    # shift changes nothing and a wrong token is a plain mismatch; and at the tie a port whose
    # output differs from what a flipped decision gives still fails before that row.
    monkeypatch.setattr(parity, "verify_case", crafted(c0() - 1e-6))
    [result] = run_parity_tier(Shifted(2, swap_bonus=True), n_cases=2)
    assert result.status is Status.FAILED and not result.details["boundary_ties"]
    rows = np.array([[0.0, 0.0], [0.0, math.log(3.0)]])

    def case(case_seed: int) -> ParityCase:
        # row 0: deterministic draft 0 with p(0) = 1/2 exactly, u = 0.25 keeps it; the bonus
        # uniform sits an ulp below row 1's boundary
        u = math.nextafter(c0(), 0.0)
        return ParityCase(case_seed, rows.copy(), (0,), None, {}, (), (), (0.25, 0.5, u))

    monkeypatch.setattr(parity, "verify_case", case)

    class RejectsFirst(Shifted):
        def verify_draft(self, target_logits, draft_ids, draft_probs, p, history, rng, prompt=()):
            rng.random(), rng.random()
            return [1], 0  # rejects at row 0, where nothing ties

    [result] = run_parity_tier(RejectsFirst(0), n_cases=1)
    assert result.status is Status.FAILED
    [result] = run_parity_tier(Shifted(2), n_cases=1)
    assert result.status is Status.PASSED and result.details["boundary_ties"]
