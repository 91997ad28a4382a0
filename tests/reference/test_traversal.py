"""Traversal verification on a chain (CONTRACT.md section 11): its leaf-to-root draw order,
its exact law (the block law walked from the leaf), and its efficiency (the chain optimum)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from spec_verify.exact._optimal import optimal_accepted
from spec_verify.exact._rules import rule_cases
from spec_verify.reference import SamplingParams
from spec_verify.reference.rules_exact import exact_block, exact_traversal, expected_accepted
from spec_verify.reference.traversal import verify_traversal

F = Fraction
SAMPLED = SamplingParams(temperature=1.0)


class Script:
    def __init__(self, uniforms: list[float]) -> None:
        self.uniforms, self.drawn = list(uniforms), 0

    def random(self) -> float:
        self.drawn += 1
        return self.uniforms.pop(0)


def _rows(rng: random.Random, n: int, V: int) -> list[tuple[Fraction, ...]]:
    out = []
    for _ in range(n):
        w = [rng.randint(0, 4) for _ in range(V)]
        w[rng.randrange(V)] += 1
        out.append(tuple(F(x, sum(w)) for x in w))
    return out


def _law(law: dict[tuple[int, ...], Fraction]) -> dict[tuple[int, ...], Fraction]:
    return {e: v for e, v in law.items() if v}


def test_the_leaf_to_root_walk_has_the_block_law_per_fixed_draft() -> None:
    """Two independent computations of one law: block's P(tau = i) = h_i prod_{j>i}(1 - h_j)
    and traversal's walk from the leaf. A planted change (the parent kept with w_i) departs."""
    rng = random.Random(3)
    departed = 0
    for _ in range(60):
        k, V = rng.randint(1, 4), rng.randint(2, 4)
        p_rows, q_rows = _rows(rng, k + 1, V), _rows(rng, k, V)
        ids = [rng.choice([t for t in range(V) if q[t]]) for q in q_rows]
        assert _law(exact_traversal(p_rows, ids, q_rows)) == _law(exact_block(p_rows, ids,
                                                                               q_rows))
        one_hot = [tuple(F(int(t == x)) for t in range(V)) for x in ids]
        assert _law(exact_traversal(p_rows, ids, None)) == _law(exact_block(p_rows, ids,
                                                                             one_hot))
        departed += _law(exact_traversal(p_rows, ids, q_rows)) != _law(exact_block(
            p_rows[:1] + p_rows[:-1], ids, q_rows))  # the negative control: shifted rows
    assert departed >= 40


def test_the_walk_starts_at_the_leaf_and_stops_at_the_first_kept_node() -> None:
    with np.errstate(divide="ignore"):
        rows = np.log(np.full((3, 2), 0.5))
    q = [[0.9, 0.1], [0.9, 0.1]]
    # w_2 = 25/81: eta_2 = 0.0 keeps the whole chain; the bonus (u = 0.7) from p: 2 draws
    source = Script([0.0, 0.7])
    assert verify_traversal(rows, [0, 0], q, SAMPLED, [], source) == ([0, 0, 1], 2)
    assert source.drawn == 2
    # the leaf fails (0.99), node 1 is kept with R_1 / (R_1 + 1 - w_1) = 2/7 > 0.1: 3 draws
    source = Script([0.99, 0.1, 0.0])
    assert verify_traversal(rows, [0, 0], q, SAMPLED, [], source) == ([0, 1], 1)
    assert source.drawn == 3
    # both fail: the root's residual max(p - q, 0) is token 1 only: k + 1 = 3 draws
    source = Script([0.99, 0.99, 0.2])
    assert verify_traversal(rows, [0, 0], q, SAMPLED, [], source) == ([1], 0)
    assert source.drawn == 3


def test_no_draft_is_one_sample_of_the_context_row() -> None:
    rows = np.log(np.array([[0.25, 0.75]]))
    assert verify_traversal(rows, [], None, SAMPLED, [], Script([0.5])) == ([1], 0)


@pytest.mark.parametrize("case", rule_cases(), ids=lambda c: c.name)
def test_traversal_reaches_the_chain_optimum_and_the_token_rule_does_not(case) -> None:
    m = case.models
    best = optimal_accepted(m.target, m.draft, m.context, case.k)
    assert best is not None
    kept = float(expected_accepted("traversal", m.target, m.draft, m.context, case.k))
    assert abs(kept - best) < 1e-9
    token = float(expected_accepted("token", m.target, m.draft, m.context, case.k))
    if case.k >= 2 and not m.deterministic:  # the control: the token rule falls short
        assert token < best - 1e-6
