"""``spec-verify prove --rule``: chain rules proven lossless, with their efficiency."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from spec_verify.cli import main


def test_the_token_rule_is_proven_and_block_reaches_the_optimum(tmp_path, capsys) -> None:
    out = tmp_path / "rule.json"
    assert main(["prove", "--rule", "token", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verdict: PROVEN EXACT" in text and "E[kept] block" in text
    data = json.loads(out.read_text())
    assert data["rule"] == "token" and len(data["cases"]) == 7
    for case in data["cases"]:
        assert case["status"] == "passed" and case["rule_lossless"]
        block = Fraction(case["expected_accepted"]["block"])
        assert float(block) == pytest.approx(case["optimum"], abs=1e-9)
        assert Fraction(case["expected_accepted"]["token"]) <= block


def test_a_rule_mutant_is_wrong_with_a_reproduction(capsys) -> None:
    assert main(["prove", "--rule", "block", "--impl", "mutant:b03"]) == 1
    text = capsys.readouterr().out
    assert "WRONG: rule/1" in text and "reproduce with drafts" in text
    assert "verdict: NOT PROVEN" in text


def test_sampler_match_prints_its_symbolic_proof(capsys) -> None:
    # The lossless proof judges any implementation: a wrong block port is the fastest one.
    assert main(["prove", "--rule", "sampler_match", "--impl", "mutant:b03"]) == 1
    text = capsys.readouterr().out
    assert "Sampler-match emits the target's own sample (V = 3)" in text
    assert "E[kept] sampler_match" in text and "WRONG: rule/1" in text


def test_an_unknown_rule_is_refused_by_the_parser(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["prove", "--rule", "kseq_tree"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["--rule", "block", "--p", "1/2,1/2"], "--rule"),
    (["--rule", "block", "--cases", "201"], "--cases"),
])
def test_bad_rule_arguments_are_usage_errors(argv, says, capsys) -> None:
    assert main(["prove", *argv]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.slow  # four cases with their efficiency numbers: ~15 s on 2 cores
def test_prove_rule_rrs_finds_its_planted_bug(capsys) -> None:
    assert main(["prove", "--rule", "rrs", "--impl", "mutant:w01"]) == 1
    text = capsys.readouterr().out
    assert "WRONG: multi/0" in text and "reproduce with chains" in text
    assert "E[kept] kseq" in text and "verdict: NOT PROVEN" in text


def test_a_multidraft_rule_needs_a_tree_implementation(capsys) -> None:
    argv = ["prove", "--rule", "kseq", "--impl", "python:spec_verify.reference.block"]
    assert main(argv) == 2
    assert "has no verify_tree" in capsys.readouterr().err


def test_kseq_reports_rho_as_the_grid_and_a_bracket_only() -> None:
    from types import SimpleNamespace

    from spec_verify.cli._prove import _rho_lines
    from spec_verify.exact._multidraft import multidraft_cases

    first = multidraft_cases()[0]
    (head, line) = _rho_lines([SimpleNamespace(case=first)])
    assert "only bracketed" in head
    # the grid's rho (49/32) lies above the bracket of the smallest valid one: never claimed equal
    assert line == "  multi/0: grid rho 49/32, smallest valid in [1.505924, 1.505925]"
