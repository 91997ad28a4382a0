"""``spec-verify prove --impl``: the sequence law whatever the rule, and conformance to the token
rule reported apart. Block verification (reference/block.py) is proven lossless and reported
not conformant (its rounds are longer), never WRONG; a planted block bug whose first token and
constant-row cases are exact (the token rule's stopping weight) is WRONG with a witness."""

from __future__ import annotations

import json

import pytest

from spec_verify.cli import main


def _prove(capsys: pytest.CaptureFixture[str], impl: str, *extra: str) -> tuple[int, str]:
    code = main(["prove", "--impl", impl, *extra])
    return code, capsys.readouterr().out


@pytest.mark.slow
def test_block_verification_is_proven_and_not_conformant_to_the_token_rule(capsys) -> None:
    code, out = _prove(capsys, "python:spec_verify.reference.block", "--cases", "2")
    assert code == 0, out
    assert "PROVEN EXACT  sequence_law" in out
    assert "NOT CONFORMANT expected_length" in out and "WRONG" not in out
    assert "verdict: PROVEN EXACT; not conformant to the token rule (expected_length)" in out


@pytest.mark.slow
def test_a_planted_block_bug_is_wrong_by_the_sequence_law_with_a_witness(capsys) -> None:
    bug = "python:tests.impls.block_wrong_stop"
    code, out = _prove(capsys, bug, "--theorem", "sequence_law", "--json", "-")
    payload = json.loads(out)
    assert code == 1 and payload["verdict"] == "not_passed"
    (law,) = payload["checks"]
    assert law["name"] == "sequence_law" and law["claim"] == "law"
    assert law["status"] == "failed"
    assert "reproduce with drafts" in law["message"] and "uniforms" in law["message"]
    code, out = _prove(capsys, bug, "--theorem", "k_positions", "--cases", "4")
    assert code == 0, out  # constant rows: the bug is exact there
