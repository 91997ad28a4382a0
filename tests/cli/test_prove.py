"""``spec-verify prove``: tables, verdicts, exit codes and errors."""

from __future__ import annotations

import json
import re

import pytest

from spec_verify.cli import build_parser, main
from spec_verify.results import ExitCode

SEED = ["--p", "1/2,1/4,1/4", "--q", "1/4,1/2,1/4"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["prove", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_registered() -> None:
    assert "prove" in build_parser().format_help()


def test_seed_example_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *SEED, "--x", "1")
    assert code == 0
    assert "drafted x = 1" in out and "drafted x = 0" not in out
    # the cells, their widths and outcomes, as in seed section 3
    assert "u_accept[0] [0, 1/2) keep 1 | unused [0, 1) any | bonus [0, 1/2) token 0" in out
    assert "u_accept[0] [1/2, 1) reject 1 | u_resample[0] [0, 1) residual 0" in out
    assert "verdict: PROVEN EXACT" in out


def test_every_draft_without_x(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *SEED)
    assert code == 0
    assert all(f"drafted x = {x}" in out for x in range(3))


def test_residual_bug_is_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *SEED, "--impl", "python:tests.impls.residual_bug")
    assert code == 1
    assert "verdict: WRONG" in out
    assert "difference 1/16" in out and "reproduce with drafts [1]" in out


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *SEED, "--json")
    payload = json.loads(out)
    assert code == 0 and payload["verdict"] == "passed"
    assert payload["result"]["rows"][1] == {
        "outcome": [1], "obtained": "1/4", "expected": "1/4", "difference": "0"
    }
    assert len(payload["enumerations"]) == 3


def test_case(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--case", "deterministic_drafts/0")
    assert code == 0
    assert "one-hot drafts 2 then 0" in out and "verdict: PROVEN EXACT" in out


def test_failing_case_prints_its_repro(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--case", "one_position/0", "--impl",
                       "python:tests.impls.residual_bug", "--seed", "3")
    assert code == 1
    assert ("reproduce: spec-verify prove --impl python:tests.impls.residual_bug --case "
            "one_position/0 --seed 3") in out


def test_theorems(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--theorem", "one_position", "--cases", "2")
    assert code == 0 and "PROVEN EXACT  one_position" in out
    code, out, _ = run(capsys, "--cases", "1")
    # four law theorems and the sequence law; the token rule's round length is conformance
    assert code == 0 and out.count("PROVEN EXACT ") == 5
    assert "CONFORMANT    expected_length" in out
    assert "verdict: PROVEN EXACT; conformant to the token rule" in out


def test_not_provable_is_not_a_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--theorem", "one_position", "--cases", "3", "--impl",
                       "python:tests.impls.float32_cumsum")
    assert code == 1 and "NOT PROVABLE" in out


def test_symbolic(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--symbolic")
    assert code == 0
    assert "Per-token identity" in out and "Expected tokens per round" in out


def test_lossy(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--lossy", "ensemble:w=1/2", *SEED)
    assert code == 1  # lossy: not an exact pass
    assert "TV(output, p)       1/8" in out and "verdict: lossy" in out
    code, out, _ = run(capsys, "--lossy", "ensemble:w=1", *SEED, "--json")
    assert code == 0 and json.loads(out)["verdict"] == "exact"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--p", "1/2,1/4", "--q", "1/4,1/2,1/4"], "sums to 3/4, not 1"),
        (["--p", "1/2,1/2,-0", "--q", "1/4,1/2,1/4,0"], "has 4 entries and p has 3"),
        (["--p", "1/2,-1/4,3/4", "--q", "1/4,1/2,1/4"], "negative entries"),
        (["--p", "1/2,1/2", "--q", "x,1"], "not an exact rational"),
        (["--p", "1/2,1/2"], "give both"),
        ([*SEED, "--x", "7"], "must be a token with q\\(x\\) > 0"),
        (["--x", "1"], "only applies with --p and --q"),
        (["--lossy", "ensemble"], "needs --p and --q"),
        (["--lossy", "nope", *SEED], "unknown rule"),
        (["--case", "nope/1"], "THEOREM/INDEX"),
        (["--theorem", "nope"], "choose from"),
        (["--impl", "bogus:x", *SEED], "unknown scheme"),
        (["--p", ",".join(["1/200"] * 200), "--q", ",".join(["1/200"] * 200)],
         "V is at most 128"),
    ],
)
def test_bad_input(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "spec-verify prove: error:" in err
    assert re.search(message, err), err


def test_zero_cases_are_a_usage_error_not_a_proof(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", "--theorem", "one_position", "--cases", "0"])
    assert code == ExitCode.USAGE_ERROR
    assert "--cases" in capsys.readouterr().err


def test_a_theorem_over_no_case_is_not_proven() -> None:
    from spec_verify.adapters import load_implementation
    from spec_verify.exact._theorems import run_theorem
    from spec_verify.results import Status

    check, _ = run_theorem(load_implementation("reference", in_process=True), "one_position",
                           cases=0)  # fmt: skip
    assert check.status is Status.NOT_PROVABLE
    assert "zero cases or zero calls prove nothing" in check.message


def test_a_far_case_is_built_alone_and_equals_the_generated_one() -> None:
    from spec_verify.exact._theorems import THEOREMS, generate_cases, named_case

    for theorem in THEOREMS:
        for index, case in enumerate(generate_cases(theorem, 4, seed=3)):
            alone = named_case(f"{theorem}/{index}", seed=3)
            assert (alone.name, alone.description) == (case.name, case.description)
    far = named_case("one_position/999999")  # once built every case before it: minutes
    assert far.name == "one_position/999999"
