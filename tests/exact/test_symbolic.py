"""The sympy derivations prove the identities, and a negative control does not."""

from __future__ import annotations

import pytest

from spec_verify.errors import InvalidArgument
from spec_verify.exact._symbolic import derivations, expected_length, per_token_identity


def test_both_derivations_are_proven() -> None:
    found = derivations()
    assert [d.title for d in found] == [
        "Per-token identity of speculative sampling (seed 2.2)",
        "Expected tokens per round (seed 2.4)",
    ]
    assert all(d.proven for d in found)
    text = found[0].render()
    assert "in full for V = 4" in text and text.endswith("proven")
    assert found[1].to_json()["proven"] is True


def test_resampling_from_p_is_not_proven() -> None:
    wrong = per_token_identity(sizes=(2, 3), resample="p")
    assert not wrong.proven
    assert [s.verified for s in wrong.steps[-2:]] == [False, False]
    assert wrong.render().endswith("NOT proven")


def test_expected_length_checks_the_seed_number() -> None:
    steps = expected_length(check_k=3).steps
    assert "2101/625" in steps[-1].check


def test_bad_rule() -> None:
    with pytest.raises(InvalidArgument, match="resample"):
        per_token_identity(resample="q")
