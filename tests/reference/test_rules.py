"""The reference chain rules (CONTRACT.md sections 8 and 9): block verification and
sampler-match, their float64 paths against their exact Fraction paths, their draw orders,
their input contract, and their laws."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.exact._rules import rule_cases
from spec_verify.exact._theorems import prove_case
from spec_verify.reference import SamplingParams, verify_draft
from spec_verify.reference.block import verify_block
from spec_verify.reference.errors import InvalidDraft, InvalidLogits, InvalidParams
from spec_verify.reference.exact import exact_target_sequences, exact_verify
from spec_verify.reference.rules_exact import (
    exact_block,
    exact_rule_sequences,
    exact_sampler_match,
    expected_accepted,
)
from spec_verify.reference.sampler_match import verify_sampler_match
from spec_verify.reference.traversal import verify_traversal
from spec_verify.results import Status

F = Fraction
RULES = {"block": verify_block, "sampler_match": verify_sampler_match,
         "traversal": verify_traversal}
SAMPLED = SamplingParams(temperature=1.0)


class Script:
    """A uniform source that replays ``uniforms`` and counts the draws."""

    def __init__(self, uniforms: list[float]) -> None:
        self.uniforms, self.drawn = list(uniforms), 0

    def random(self) -> float:
        self.drawn += 1
        return self.uniforms.pop(0)


def _logits(rows: list[list[float]]) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(rows, dtype=np.float64))


def _random_rows(rng: random.Random, n: int, V: int) -> list[tuple[Fraction, ...]]:
    out = []
    for _ in range(n):
        w = [rng.randint(0, 4) for _ in range(V)]
        w[rng.randrange(V)] += 1
        out.append(tuple(F(x, sum(w)) for x in w))
    return out


def test_block_with_one_draft_is_the_token_rule() -> None:
    """At k = 1 the stop weight is w_1 = min(1, p/q) and the residual max(p - q, 0)."""
    rng = random.Random(1)
    for _ in range(50):
        p_rows, (q,) = _random_rows(rng, 2, 4), _random_rows(rng, 1, 4)
        x = rng.choice([t for t in range(4) if q[t]])
        assert exact_block(p_rows, [x], [q]) == exact_verify(p_rows, [x], [q])


def test_a_hand_block() -> None:
    """p = [1/2, 1/2] everywhere, q = [1, 0] (one-hot on 0), drafts [0, 0]: w = 1/2, 1/4;
    h_1 = R_1 / (R_1 + 1 - w_1) with R_1 = sum max(p/2 - q, 0) = 1/4, so h_1 = 1/3, h_2 = 1/4."""
    half = (F(1, 2), F(1, 2))
    law = exact_block([half, half, half], [0, 0], None)
    # tau = 2 w.p. 1/4; tau = 1 w.p. (3/4)(1/3) = 1/4; tau = 0 w.p. 1/2 (then token 1)
    assert law == {(0, 0, 0): F(1, 8), (0, 0, 1): F(1, 8), (0, 1): F(1, 4), (1,): F(1, 2)}


@pytest.mark.parametrize("rule", ["block", "sampler_match", "token", "traversal"])
def test_each_rule_is_lossless_on_the_default_cases_in_fractions(rule: str) -> None:
    for case in rule_cases(3):
        m = case.models
        law = exact_rule_sequences(rule, m.target, m.draft, m.context, case.k, case.length)
        assert {s: v for s, v in law.items() if v} == exact_target_sequences(
            m.target, m.context, case.length), case.name


def test_block_accepts_at_least_the_token_rule_and_sampler_match_at_most() -> None:
    strictly = 0
    for case in rule_cases(8):
        m = case.models
        a = {r: expected_accepted(r, m.target, m.draft, m.context, case.k)
             for r in ("block", "token", "sampler_match")}
        assert a["block"] >= a["token"] >= a["sampler_match"], case.name
        strictly += a["block"] > a["token"]
    assert strictly >= 5


def test_the_sampler_match_law_keeps_x_with_the_targets_probability() -> None:
    p0, p1 = (F(1, 2), F(1, 3), F(1, 6)), (F(1, 4), F(3, 4), F(0))
    law = exact_sampler_match([p0, p1], [1], [(F(0), F(1), F(0))])
    assert law == {(0,): F(1, 2), (2,): F(1, 6), (1, 0): F(1, 12), (1, 1): F(1, 4)}


@pytest.mark.parametrize("name", ["rule/0", "rule/4", "rule/6"])
@pytest.mark.parametrize("rule", sorted(RULES))
def test_the_float_path_is_proven_exact_by_cell_enumeration(rule: str, name: str) -> None:
    case = next(c for c in rule_cases() if c.name == name)
    impl = load_implementation(f"python:spec_verify.reference.{rule}", in_process=True)
    result = prove_case(impl, case)
    assert result.status is Status.PASSED, result.message


def test_block_draws_k_plus_one_uniforms_in_position_order() -> None:
    rows = _logits([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    q = [[0.9, 0.1], [0.9, 0.1]]
    # w_1 = 5/9, w_2 = 25/81: eta_2 = 0.0 < h_2 = w_2 keeps both; the bonus from p (u = 0.7)
    source = Script([0.99, 0.0, 0.7])
    assert verify_block(rows, [0, 0], q, SAMPLED, [], source) == ([0, 0, 1], 2)
    assert source.drawn == 3
    # h_1 = R_1 / (R_1 + 1 - w_1) = (8/45) / (8/45 + 4/9) = 2/7 < 0.99: nothing kept, and
    # the residual max(p - q, 0) is token 1 only
    source = Script([0.99, 0.99, 0.2])
    assert verify_block(rows, [0, 0], q, SAMPLED, [], source) == ([1], 0)
    assert source.drawn == 3


def test_block_keeps_the_longest_block_not_the_first_failure() -> None:
    rows = _logits([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    # eta_1 fails (h_1 = 1/3 with a one-hot draft), eta_2 = 0 < w_2 = 1/4 passes: tau = 2
    assert verify_block(rows, [0, 0], None, SAMPLED, [], Script([0.9, 0.0, 0.1]))[1] == 2


def test_sampler_match_draws_one_uniform_per_reached_position() -> None:
    rows = _logits([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]])
    q = [[1 / 3] * 3] * 2
    source = Script([0.1, 0.5])  # t_1 = 0 = x_1 kept, t_2 = 2 != x_2 = 1: emit 2, stop
    assert verify_sampler_match(rows, [0, 1], q, SAMPLED, [], source) == ([0, 2], 1)
    assert source.drawn == 2
    source = Script([0.1, 0.15, 0.95])  # both kept, the bonus from the last row
    assert verify_sampler_match(rows, [0, 1], q, SAMPLED, [], source) == ([0, 1, 2], 2)
    assert source.drawn == 3


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("u", [0.0, 2.0**-53, 2.0**-24, 1 - 2.0**-24, 1 - 2.0**-53])
def test_a_token_the_target_rules_out_never_comes_out(rule: str, u: float) -> None:
    rows = _logits([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    for ids in ([0, 1], [1, 1], [2, 0], [1, 2]):
        emitted, _ = RULES[rule](rows, ids, None, SAMPLED, [], Script([u] * 3))
        for i, token in enumerate(emitted):
            assert np.exp(rows[i][token]) > 0, (ids, u, emitted)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_greedy_is_the_contracts_greedy_path(rule: str) -> None:
    rows = [[0, 1, 3], [2, 1, 0], [0, 5, 1]]
    greedy = SamplingParams(temperature=0)
    for ids in ([2, 1], [2, 0], [0, 0]):
        assert RULES[rule](rows, ids, None, greedy, [], None) == verify_draft(
            rows, ids, None, greedy, [], None)


BAD = [
    ("rows", lambda f: f(np.zeros((1, 3)), [0], None, SAMPLED, [], Script([0.5] * 3)),
     InvalidLogits, "target_logits"),
    ("q(x) = 0", lambda f: f(np.zeros((2, 3)), [0], [[0.0, 0.5, 0.5]], SAMPLED, [],
                             Script([0.5] * 3)), InvalidDraft, "draft_probs"),
    ("id range", lambda f: f(np.zeros((2, 3)), [3], None, SAMPLED, [], Script([0.5] * 3)),
     InvalidParams, "draft_ids"),
    ("no rng", lambda f: f(np.zeros((2, 3)), [0], None, SAMPLED, [], None),
     InvalidParams, "rng"),
    ("nan", lambda f: f(np.full((2, 3), np.nan), [0], None, SAMPLED, [], Script([0.5] * 3)),
     InvalidLogits, "target_logits"),
]


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize(("label", "call", "error", "argument"), BAD, ids=[b[0] for b in BAD])
def test_bad_arguments_raise_before_any_draw(rule, label, call, error, argument) -> None:
    with pytest.raises(error) as info:
        call(RULES[rule])
    assert info.value.argument == argument
