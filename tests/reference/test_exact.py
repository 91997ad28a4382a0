"""The exact Fraction path reproduces seed section 3 and the theorems, with equality."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from spec_verify.reference import InvalidDraft
from spec_verify.reference.exact import (
    as_dist,
    exact_first_token,
    exact_round,
    exact_speculative_sequences,
    exact_step,
    exact_target_sequences,
    exact_verify,
    expected_tokens_per_round,
    step_table,
)

P = as_dist(["1/2", "1/4", "1/4"])
Q = as_dist(["1/4", "1/2", "1/4"])


def test_seed_section_3_by_hand():
    accept, rejected = exact_step(P, Q, 1)
    assert accept == F(1, 2)
    assert rejected == {0: F(1, 2)}  # residual [1, 0, 0]
    # token 1 only when x = 1 is kept: q1 * 1/2 = 1/4; token 0: 1/4 + 1/2 * 1/2 = 1/2
    assert exact_first_token(P, Q) == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}
    rows = step_table(P, Q, 1)
    assert rows[0][2] == "1/2" and rows[-1][2] == "emit 0"


def test_exact_verify_of_a_kept_draft_adds_the_bonus_row():
    bonus = as_dist(["0", "0", "1"])
    assert exact_verify([P, bonus], [1], [Q]) == {(0,): F(1, 2), (1, 2): F(1, 2)}
    # a deterministic draft of a zero-probability token is never kept
    p = as_dist(["0", "1/2", "1/2"])
    assert exact_verify([p, bonus], [0], None) == {(1,): F(1, 2), (2,): F(1, 2)}


def test_k_positions_equal_plain_sampling():
    def target(prefix):
        return as_dist(["1/2", "1/3", "1/6"]) if len(prefix) % 2 else as_dist(["1/5", "0", "4/5"])

    def draft(prefix):
        return as_dist(["1/3", "1/3", "1/3"]) if prefix[-1:] == (2,) else as_dist(["0", "1", "0"])

    for k in range(4):
        assert exact_speculative_sequences(target, draft, (0,), k, 3) == exact_target_sequences(
            target, (0,), 3
        )
    assert sum(exact_round(target, draft, (0,), 3).values()) == 1


def test_expected_tokens_per_round_formula():
    # seed section 2.4: "3.36" tokens per pass for alpha = 0.8, k = 4 (3.3616 exactly)
    assert expected_tokens_per_round(F(4, 5), 4) == F(2101, 625)
    assert expected_tokens_per_round(F(1), 4) == 5
    p, q = as_dist(["1/2", "1/2"]), as_dist(["3/4", "1/4"])
    alpha = sum(min(a, b) for a, b in zip(p, q))
    for k in range(4):
        dist = exact_round(lambda _: p, lambda _: q, (), k)
        assert sum(len(e) * v for e, v in dist.items()) == expected_tokens_per_round(alpha, k)


@pytest.mark.parametrize("bad", [["1/2", "1/4"], ["-1/2", "3/2"], [], ["x"]])
def test_as_dist_rejects_non_distributions(bad):
    with pytest.raises(InvalidDraft, match="dist"):
        as_dist(bad)


def test_a_drafted_token_with_q_zero_raises():
    with pytest.raises(InvalidDraft, match="probability 0"):
        exact_step(P, as_dist(["1", "0", "0"]), 1)
