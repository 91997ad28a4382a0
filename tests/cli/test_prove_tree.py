"""``spec-verify prove --tree``: the rules proven, the implementation per fixed tree, the bias."""

from __future__ import annotations

import json

import pytest

from spec_verify.cli import main


def test_tree_mode_refuses_a_given_row(capsys):
    assert main(["prove", "--tree", "--p", "1/2,1/2"]) == 2
    assert "--tree" in capsys.readouterr().err


@pytest.mark.slow
def test_tree_mode_proves_the_reference_and_reports_typical_as_biased(capsys):
    assert main(["prove", "--tree", "--cases", "1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["verdict"] == "passed"
    assert all(p["proven"] for p in payload["rules"])
    assert {(p["V"], p["branching"], p["depth"]) for p in payload["rules"]} >= {(8, 3, 3)}
    assert payload["implementation"]["status"] == "passed"
    details = payload["implementation"]["details"]
    assert details["calls"] >= details["lower_bound"] > 0
    assert all(row["tv"] != "0" for row in payload["typical"])


@pytest.mark.slow
def test_tree_mode_fails_a_wrong_implementation(capsys):
    assert main(["prove", "--tree", "--impl", "mutant:t01", "--cases", "0"]) == 1
    out = capsys.readouterr().out
    assert "WRONG" in out and "verdict: NOT PROVEN" in out
    assert "reproduce: spec-verify prove --tree --impl mutant:t01" in out
