"""The e-process: exact values, the martingale property, validity under optional stopping."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

from spec_verify.errors import InvalidArgument, InvalidDistribution
from spec_verify.stats._sequential import SequentialGofTest, SequentialResult

# Declared false-failure probability of each simulated assertion (binomial tail).
FALSE_FAILURE = 1e-7

TARGET = np.array([0.3, 0.2, 0.1, 0.2, 0.2])


def dirichlet_multinomial_ratio(tokens: list[int], p: list[float], a: float) -> float:
    """E_n in closed form: the Dirichlet(a) mixture's sequence likelihood over p's."""
    K, counts = len(p), np.bincount(tokens, minlength=len(p))
    log_mixture = (
        special.gammaln(K * a)
        - special.gammaln(len(tokens) + K * a)
        + sum(special.gammaln(c + a) - special.gammaln(a) for c in counts)
    )
    return math.exp(log_mixture - sum(c * math.log(q) for c, q in zip(counts, p, strict=True)))


def test_krichevsky_trofimov_hand_example() -> None:
    test = SequentialGofTest([Fraction(1, 2), Fraction(1, 2)], alpha=0.01)
    test.update(0)
    assert test.e_value == pytest.approx(1.0)  # q_1(0) = 1/2 = p(0)
    test.update(0)
    assert test.e_value == pytest.approx(1.5)  # q_2(0) = (1 + 1/2) / (1 + 1) = 3/4
    test.update(1)
    assert test.e_value == pytest.approx(1.5 * (1 / 2 / 3) / (1 / 2))  # q_3(1) = 1/2 / 3


@pytest.mark.parametrize("a", [0.5, 1.0, 2.0])
def test_e_value_is_the_dirichlet_multinomial_ratio(a: float) -> None:
    tokens = [int(t) for t in np.random.default_rng(1).choice(5, size=60, p=TARGET)]
    test = SequentialGofTest(TARGET, alpha=0.01, concentration=a)
    test.update_many(tokens)
    expected = dirichlet_multinomial_ratio(tokens, list(TARGET), a)
    assert test.e_value == pytest.approx(expected, rel=1e-9)


def test_e_value_has_mean_one_under_the_null() -> None:
    # Exact enumeration of all 3^6 sequences: E[E_6] = 1 (the martingale property).
    p = [0.5, 0.3, 0.2]
    mean = 0.0
    for sequence in itertools.product(range(3), repeat=6):
        test = SequentialGofTest(p, alpha=0.5)
        test.update_many(list(sequence))
        mean += math.prod(p[t] for t in sequence) * test.e_value
    assert mean == pytest.approx(1.0, abs=1e-12)


def test_update_and_update_many_agree_and_keep_the_running_maximum() -> None:
    rng = np.random.default_rng(2)
    q = np.array([0.6, 0.1, 0.1, 0.1, 0.1])
    tokens = rng.choice(5, size=400, p=q)
    one = SequentialGofTest(TARGET, alpha=0.01)
    for token in tokens:
        one.update(int(token))
    batched = SequentialGofTest(TARGET, alpha=0.01)
    for chunk in np.array_split(tokens, 7):
        batched.update_many(chunk)
    whole = SequentialGofTest(TARGET, alpha=0.01)
    whole.update_many(tokens)
    for test in (batched, whole):
        assert test.log_e_value == pytest.approx(one.log_e_value)
        assert test.result().stopped_at == one.result().stopped_at
        assert test.result().max_e_value == pytest.approx(one.result().max_e_value)
    assert one.rejected


def test_rejection_is_sticky_when_e_falls_back() -> None:
    # Cross 1/alpha with a run of token 2 (p = 0.1), then dilute with the target's exact
    # frequencies, under which E decays like n^(-(V-1)/2).
    test = SequentialGofTest(TARGET, alpha=0.05)
    test.update_many([2] * 4 + [0, 0, 0, 1, 1, 2, 3, 3, 4, 4] * 100)
    result = test.result()
    assert result.stopped_at is not None and result.stopped_at <= 4
    assert result.e_value < 20 <= result.max_e_value
    assert test.rejected and not result.passed
    assert result.pvalue == pytest.approx(1 / result.max_e_value)


def test_zero_probability_token_rejects_at_once() -> None:
    test = SequentialGofTest([Fraction(1, 2), Fraction(0), Fraction(1, 2)], alpha=1e-6)
    test.update_many([0, 2, 0])
    assert not test.rejected
    assert test.update(1)
    assert test.e_value == math.inf
    test.update_many([0, 2, 1])
    result = test.result()
    assert result.stopped_at == 4
    assert result.zero_probability_tokens == (1,)
    assert result.pvalue == 0.0
    assert "token 1 (observed 2 times)" in result.message


def test_result_is_a_frozen_value() -> None:
    test = SequentialGofTest(TARGET, alpha=0.01)
    test.update_many([0, 1, 2])
    result = test.result()
    assert isinstance(result, SequentialResult)
    fields = list(result.__dataclass_fields__)
    assert fields[:5] == ["passed", "statistic", "pvalue", "e_value", "alpha"]
    assert result.statistic == pytest.approx(math.log(result.max_e_value))
    assert result.passed and result.n == 3 and result.counts == (1, 1, 1, 0, 0)
    assert "not rejected after n=3" in result.message
    with pytest.raises(AttributeError):
        result.n = 4  # type: ignore[misc]


def test_never_rejects_beyond_alpha_under_the_null() -> None:
    # Ville: P(sup_n E_n >= 1/alpha) <= alpha, for every horizon. 1000 monitored runs of
    # 500 draws; measured rate 0.03-0.045 at alpha = 0.05.
    alpha, runs, horizon = 0.05, 1000, 500
    rng = np.random.default_rng(8)
    rejections = 0
    for _ in range(runs):
        test = SequentialGofTest(TARGET, alpha)
        rejections += test.update_many(rng.choice(5, size=horizon, p=TARGET))
    high = stats.binom.isf(FALSE_FAILURE, runs, alpha)
    assert rejections <= high, (rejections, high)
    # The bound can fail: peeking at a fixed-n G-test every 10 draws (not safe under optional
    # stopping) on the same kind of data exceeds it.
    draws = rng.choice(5, size=(runs, horizon), p=TARGET)
    peeking = np.zeros(runs, dtype=bool)
    for n in range(50, horizon + 1, 10):
        counts = np.stack([np.bincount(row[:n], minlength=5) for row in draws])
        expected = n * TARGET
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(counts > 0, counts * np.log(counts / expected), 0.0)
        peeking |= stats.chi2.sf(2 * terms.sum(axis=1), 4) < alpha
    assert peeking.sum() > high


def test_detects_a_clear_deviation() -> None:
    # Hardest alternative at TV distance 0.2 over 4 tokens: KL(q || p) = 0.082 per draw, so
    # log E_2000 sits about 8 standard deviations above log(1e6): a miss has probability
    # far below 1e-9 per run.
    p = np.full(4, 0.25)
    q = np.array([0.35, 0.35, 0.15, 0.15])
    rng = np.random.default_rng(9)
    stops = []
    for _ in range(50):
        test = SequentialGofTest(p, alpha=1e-6)
        assert test.update_many(rng.choice(4, size=2000, p=q))
        stops.append(test.result().stopped_at)
    assert all(stop is not None and stop < 2000 for stop in stops)


INVALID_CONSTRUCTION: list[tuple[Any, Any, Any, str]] = [
    # (expected_probs, alpha, concentration, argument)
    ([0.5, 0.5], 0.0, 0.5, "alpha"),
    ([0.5, 0.5], 1.0, 0.5, "alpha"),
    ([0.5, 0.5], "0.1", 0.5, "alpha"),
    ([0.5, 0.5], 0.01, 0.0, "concentration"),
    ([0.5, 0.5], 0.01, -1.0, "concentration"),
    ([0.5, 0.5], 0.01, math.inf, "concentration"),
    ([0.5, 0.6], 0.01, 0.5, "expected_probs"),
    ([0.5, -0.5, 1.0], 0.01, 0.5, "expected_probs"),
    ([], 0.01, 0.5, "expected_probs"),
]


@pytest.mark.parametrize(("probs", "alpha", "concentration", "argument"), INVALID_CONSTRUCTION)
def test_invalid_construction_raises_naming_the_argument(
    probs: Any, alpha: Any, concentration: Any, argument: str
) -> None:
    with pytest.raises(InvalidArgument) as info:
        SequentialGofTest(probs, alpha, concentration=concentration)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}=")
    if argument == "expected_probs":
        assert isinstance(info.value, InvalidDistribution)


INVALID_TOKENS: list[tuple[str, Any, str]] = [
    ("update", 3, "token"),
    ("update", -1, "token"),
    ("update", 1.0, "token"),
    ("update", True, "token"),
    ("update_many", [0, 1, 3], "tokens"),
    ("update_many", [0, -1], "tokens"),
    ("update_many", [0.0, 1.0], "tokens"),
    ("update_many", [[0, 1]], "tokens"),
    ("update_many", [True], "tokens"),
]


@pytest.mark.parametrize(("method", "tokens", "argument"), INVALID_TOKENS)
def test_invalid_tokens_raise_and_leave_the_state_alone(
    method: str, tokens: Any, argument: str
) -> None:
    test = SequentialGofTest([0.5, 0.25, 0.25], alpha=0.01)
    test.update_many([0, 1])
    before = test.result()
    with pytest.raises(InvalidArgument) as info:
        getattr(test, method)(tokens)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}=")
    assert test.result() == before
