"""Lossy rules as implementations: their exact output, TV distance and acceptance gained."""

from __future__ import annotations

import doctest
from fractions import Fraction as F

import pytest

from spec_verify.errors import InvalidArgument, InvalidDistribution
from spec_verify.exact import _lossy as lossy
from spec_verify.exact._lossy import (
    ConfidenceThreshold,
    EnsembleVerification,
    TypicalAcceptance,
    lossy_rule,
    measure,
)
from spec_verify.exact._theorems import run_exact_tier
from spec_verify.results import Status

P = ("1/2", "1/4", "1/8", "1/8")
Q = ("1/8", "1/2", "1/4", "1/8")


def fractions(values: tuple[str, ...]) -> tuple[F, ...]:
    return tuple(F(v) for v in values)


def test_doctests() -> None:
    assert doctest.testmod(lossy).failed == 0


def test_rules_are_implementations() -> None:
    """A lossy rule has what the exact engine calls (it does not subclass the protocol: the
    engine imports no adapter)."""
    engine_calls = ("verify_draft", "params", "breakpoint_hints", "sampling_distribution")
    for rule in (TypicalAcceptance(), EnsembleVerification(), ConfidenceThreshold()):
        assert all(callable(getattr(rule, method)) for method in engine_calls)
        assert rule.params(temperature=0.5).temperature == 0.5
        assert "injected_uniforms" in rule.capabilities


@pytest.mark.parametrize("w", ["0", "1/4", "1/2", "1"])
def test_ensemble_outputs_the_mixture(w: str) -> None:
    report = measure(EnsembleVerification(w), P, Q)
    weight = F(w)
    p, q = fractions(P), fractions(Q)
    mixture = tuple(weight * a + (1 - weight) * b for a, b in zip(p, q))
    assert report.complete
    assert report.output == mixture
    assert report.tv == (1 - weight) * F(3, 8)  # TV(p, q) = 1 - sum min(p, q) = 3/8
    assert report.acceptance == sum(min(a, b) for a, b in zip(mixture, q))
    assert report.exact_acceptance == F(5, 8)
    assert report.gained == report.acceptance - F(5, 8)


def test_typical_acceptance_by_hand() -> None:
    # H(p) = 1.75 ln 2, so delta exp(-H) = 0.5 * 2^-1.75 = 0.149: tokens 0 and 1 are kept,
    # a drafted 2 or 3 (probability 3/8) is replaced by a sample from p
    report = measure(TypicalAcceptance("0.3", "0.5"), P, Q)
    assert report.output == (F(5, 16), F(19, 32), F(3, 64), F(3, 64))
    assert report.acceptance == F(5, 8)
    assert report.tv == F(11, 32)
    # Medusa's defaults keep every draft here: the output is the draft's distribution
    loose = measure(TypicalAcceptance(), P, Q)
    assert loose.output == fractions(Q) and loose.acceptance == 1


def test_confidence_threshold_by_hand() -> None:
    # q(1) = 1/2 >= tau: a drafted 1 is always kept; the others follow the exact rule
    report = measure(ConfidenceThreshold("1/2"), P, Q)
    assert report.output == (F(1, 4), F(1, 2), F(1, 8), F(1, 8))
    assert report.acceptance == F(7, 8)
    assert report.tv == F(1, 4)
    assert measure(ConfidenceThreshold("1"), P, Q).tv == 0


def test_lossy_rules_fail_the_exact_tier() -> None:
    results = run_exact_tier(lossy_rule("ensemble:w=1/2"), cases=2, theorems=["one_position"])
    assert results[0].status is Status.FAILED


def test_render_and_json() -> None:
    report = measure(lossy_rule("ensemble"), P, Q)
    text = report.render()
    assert "TV(output, p)       3/16" in text
    assert "gained 3/16" in text
    assert report.to_json()["tv"] == "3/16"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown rule 'nope'"),
        ("ensemble:w", "is not key=value"),
        ("ensemble:v=1", "bad parameters"),
        ("ensemble:w=2", r"must be in \[0, 1\]"),
        ("typical:epsilon=x", "must be a number"),
    ],
)
def test_bad_rules(spec: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        lossy_rule(spec)


def test_bad_rows() -> None:
    with pytest.raises(InvalidDistribution, match="has 2 entries and p has 4"):
        measure(EnsembleVerification(), P, ("1/2", "1/2"))
    with pytest.raises(InvalidDistribution, match="sums to"):
        measure(EnsembleVerification(), ("1/2", "1/4"), ("1/2", "1/2"))
