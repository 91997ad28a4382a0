"""SpecTr's K-SEQ at one position (reference/kseq.py, CONTRACT.md section 10): its exact law
is lossless, its float path draws as pinned and follows that law."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from spec_verify.reference import Pcg32, SamplingParams
from spec_verify.reference.errors import InvalidDraft, InvalidParams
from spec_verify.reference.exact import exact_target_sequences
from spec_verify.reference.kseq import verify_kseq
from spec_verify.reference.rules_exact import exact_kseq_rho, exact_kseq_round

F = Fraction


def _dist(rng: random.Random, V: int) -> tuple[Fraction, ...]:
    w = [rng.randint(0, 5) for _ in range(V)]
    w[rng.randrange(V)] += 1
    return tuple(F(x, sum(w)) for x in w)


def _extended(target, law):  # type: ignore[no-untyped-def]
    out: dict[tuple[int, ...], Fraction] = Counter()
    for emitted, prob in law.items():
        if len(emitted) == 2:
            out[emitted] += prob
        else:
            for t, b in enumerate(target(emitted)):
                if b:
                    out[(*emitted, t)] += prob * b
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize("seed", range(12))
def test_kseq_is_lossless_in_fractions(seed: int) -> None:
    rng = random.Random(seed)
    V, K = rng.randint(2, 6), rng.randint(1, 4)
    rows: dict[tuple[int, ...], tuple[Fraction, ...]] = {}

    def target(prefix: tuple[int, ...]) -> tuple[Fraction, ...]:
        return rows.setdefault(prefix, _dist(random.Random(f"{seed}{prefix}"), V))

    law = exact_kseq_round(target, _dist(rng, V), (), K)
    assert _extended(target, law) == exact_target_sequences(target, (), 2)


def test_one_draft_is_the_token_rule() -> None:
    p, q = (F(1, 2), F(1, 4), F(1, 4)), (F(1, 4), F(1, 2), F(1, 4))
    assert exact_kseq_rho(p, q, 1) == 1
    law = exact_kseq_round(lambda pre: p, q, (), 1)
    assert sum(v for e, v in law.items() if len(e) == 2) == F(3, 4)  # sum min(p, q)


def test_two_drafts_keep_more_than_one_on_a_hand_case() -> None:
    p, q = (F(1, 2), F(1, 2)), (F(1), F(0))  # q one-hot: two drafts are the same token
    law = exact_kseq_round(lambda pre: p, (F(3, 4), F(1, 4)), (), 2)
    kept = sum(v for e, v in law.items() if len(e) == 2)
    assert kept > F(3, 4) and exact_kseq_rho(p, q, 2) >= 1


def test_the_float_path_follows_the_exact_law() -> None:
    """20,000 seeded rounds against the exact law: every outcome within 5 standard errors.
    The case sits on a tie of the rho grid (c = rho = 3/2 exactly), which the float path must
    resolve as exact arithmetic does (CONTRACT.md section 10)."""
    V, K = 3, 2
    p_rows = {(): (F(1, 2), F(1, 3), F(1, 6)), (0,): (F(1, 4), F(1, 4), F(1, 2)),
              (1,): (F(2, 3), F(1, 3), F(0)), (2,): (F(1, 5), F(2, 5), F(2, 5))}
    q = (F(1, 6), F(1, 2), F(1, 3))
    law = exact_kseq_round(p_rows.__getitem__, q, (), K)
    rng, draws = Pcg32(7), np.random.default_rng(7)
    params = SamplingParams(temperature=1.0)
    with np.errstate(divide="ignore"):
        logits = {k: np.log(np.array([float(v) for v in row])) for k, row in p_rows.items()}
    q_row = np.array([float(v) for v in q])
    n, counts = 20_000, Counter()
    for ids in draws.choice(V, size=(n, K), p=q_row):
        rows = np.stack([logits[()], *(logits[(int(x),)] for x in ids)])
        emitted, _ = verify_kseq(rows, [int(x) for x in ids], q_row, params, [], rng)
        counts[tuple(emitted)] += 1
    assert set(counts) <= set(law)
    for outcome, prob in law.items():
        se = (float(prob) * (1 - float(prob)) / n) ** 0.5
        assert abs(counts[outcome] / n - float(prob)) < 5 * se + 1e-9, outcome


def test_draw_order_stops_at_the_kept_draft() -> None:
    class Script:
        def __init__(self, u: list[float]) -> None:
            self.u, self.drawn = u, 0

        def random(self) -> float:
            self.drawn += 1
            return self.u.pop(0)

    rows = np.log(np.array([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]))
    source = Script([0.0, 0.3])  # eta_1 = 0 keeps x_1; then the bonus
    assert verify_kseq(rows, [1, 0], np.array([0.5, 0.5]), SamplingParams(), [], source) == (
        [1, 0], 1)
    assert source.drawn == 2


@pytest.mark.parametrize(("call", "error", "argument"), [
    (lambda: verify_kseq(np.zeros((2, 2)), [0], np.array([0.5, 0.5]),
                         SamplingParams(temperature=0), [], Pcg32(0)), InvalidParams, "p"),
    (lambda: verify_kseq(np.zeros((3, 2)), [0, 1], np.array([1.0, 0.0]), SamplingParams(),
                         [], Pcg32(0)), InvalidDraft, "draft_ids"),
    (lambda: verify_kseq(np.zeros((2, 2)), [0], np.array([0.5, 0.2]), SamplingParams(), [],
                         Pcg32(0)), InvalidDraft, "draft_probs"),
])
def test_bad_arguments(call, error, argument) -> None:
    with pytest.raises(error) as info:
        call()
    assert info.value.argument == argument
