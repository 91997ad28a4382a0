"""``spec-verify power``: both directions, JSON, and errors that say what fits."""

from __future__ import annotations

import argparse
import json

import pytest

from spec_verify.cli import _main as cli
from spec_verify.cli import _power as _cmd_power
from spec_verify.stats._power import detectable_delta, max_vocabulary, required_samples


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="spec-verify")
    _cmd_power.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["power", *argv])
    code: int = args.func(args)
    return code


def test_the_smallest_delta_still_plans(capsys: pytest.CaptureFixture[str]) -> None:
    # the negative control of the underflow rule: just above it, a sample size is given
    assert run(["--vocab", "5", "--delta", "1e-140"]) == 0
    assert capsys.readouterr().out.startswith("required samples: ")


def test_listed_in_the_cli() -> None:
    assert "spec_verify.cli._power" in cli._COMMANDS


def test_through_the_cli_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["power", "--vocab", "5", "--alpha", "1e-6", "--delta", "0.05"])
    assert code == 0
    assert capsys.readouterr().out.startswith("required samples: 6212\n")


def test_required_samples(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--vocab", "5", "--alpha", "1e-6", "--delta", "0.05", "--power", "0.99"]
    assert run(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "required samples: 6212"
    assert "V=5, alpha=1e-06, power=0.99, delta=0.05" in out


def test_detectable_delta(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--vocab", "5", "--samples", "6212"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    expected = detectable_delta(5, 1e-6, 6212, 0.99)
    assert first == f"detectable delta: {expected:.6g}"


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--vocab", "100", "--alpha", "1e-4", "--delta", "0.02", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["solved_for"] == "samples"
    assert report["samples"] == required_samples(100, 1e-4, 0.02, 0.99)
    assert report["vocab"] == 100 and report["delta"] == 0.02 and report["power"] == 0.99
    assert run(["--vocab", "100", "--samples", "5000", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["solved_for"] == "delta"
    assert report["delta"] == pytest.approx(detectable_delta(100, 1e-6, 5000, 0.99))


def test_over_budget_says_what_fits(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--vocab", "32000", "--delta", "0.05", "--budget", "100000"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    largest = max_vocabulary(1e-6, 0.05, 0.99, 100_000)
    assert captured.err.startswith("spec-verify power: error: --vocab 32000: ")
    assert f"V <= {largest:,} fits" in captured.err


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--vocab", "1", "--delta", "0.05"], "--vocab"),
        (["--vocab", "5", "--delta", "0"], "--delta"),
        (["--vocab", "5", "--delta", "1e-300"], "--delta"),  # 4 delta^2 underflows (was exit 3)
        (["--vocab", "5", "--delta", "1e-151"], "--delta"),
        (["--vocab", "5", "--delta", "0.05", "--alpha", "2"], "--alpha"),
        (["--vocab", "5", "--delta", "0.05", "--power", "1"], "--power"),
        (["--vocab", "5", "--samples", "0"], "--samples"),
        (["--vocab", "5", "--samples", "10"], "--samples"),  # too few to detect anything
        (["--vocab", "5", "--samples", "100", "--budget", "10"], "--budget"),
    ],
)
def test_invalid_values_exit_2_naming_the_option(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(argv) == 2
    assert capsys.readouterr().err.startswith(f"spec-verify power: error: {option} ")


@pytest.mark.parametrize(
    "argv",
    [
        ["--vocab", "5"],  # neither --delta nor --samples
        ["--vocab", "5", "--delta", "0.05", "--samples", "100"],  # both
        ["--delta", "0.05"],  # no --vocab
        ["--vocab", "five", "--delta", "0.05"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run(argv)
    assert info.value.code == 2
