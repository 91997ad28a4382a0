"""Root seeds: one rule for run_checks, every command's --seed and the plugin's --spec-seed."""

from __future__ import annotations

import argparse

import pytest

from spec_verify.cli import main
from spec_verify.errors import InvalidArgument
from spec_verify.runner import run_checks
from spec_verify.seeds import MAX_SEED, DrawnSeed, check_seed, seed_option


@pytest.mark.parametrize("value", [0, 1, 2**32, MAX_SEED - 1])
def test_valid_seeds(value):
    assert check_seed(value) == value
    assert seed_option("--seed")(str(value)) == value


@pytest.mark.parametrize("value", [-1, MAX_SEED, 2**64, 1.0, "3", True, None])
def test_invalid_seeds_name_the_argument_and_the_rule(value):
    with pytest.raises(InvalidArgument, match=r"case_seed=.*must be an integer in \[0, 2\*\*63\)"):
        check_seed(value, "case_seed")


@pytest.mark.parametrize("text", ["-1", str(MAX_SEED), "1.5", "", "random"])
def test_the_option_refuses_what_is_not_a_seed(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"--seed .*\(e\.g\. --seed 0\)"):
        seed_option("--seed")(text)


def test_random_draws_a_fresh_valid_seed_each_time():
    parse = seed_option("--seed", allow_random=True)
    draws = {parse("random") for _ in range(5)}
    assert all(isinstance(d, DrawnSeed) and 0 <= d < MAX_SEED for d in draws)
    assert len(draws) == 5  # equal draws: about 1 in 2**61
    assert not isinstance(parse("7"), DrawnSeed)


def test_run_checks_refuses_a_bad_seed_before_any_work():
    with pytest.raises(InvalidArgument, match="seed=-1"):
        run_checks("reference", tiers=["contract"], seed=-1)
    with pytest.raises(InvalidArgument, match="case_seed"):
        run_checks("reference", tiers=["parity"], case_seed=2**64)


@pytest.mark.parametrize("command", [["check"], ["check", "--case-seed"], ["prove"], ["demo"]])
def test_every_command_refuses_a_negative_seed_as_a_usage_error(command, capsys):
    # before: a traceback from numpy (prove, demo) or "a harness bug" in the parity tier
    option = command[1] if len(command) > 1 else "--seed"
    with pytest.raises(SystemExit) as info:
        main([command[0], option, "-1"])
    assert info.value.code == 2
    assert f"{option} '-1': must be an integer in [0, 2**63)" in capsys.readouterr().err


def test_check_with_a_random_seed_says_which_and_replays_it(capsys):
    code = main(["check", "--seed", "random", "--tier", "contract", "--quick", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0
    drawn = int(captured.err.split("--seed random drew ")[1].split(";")[0])
    assert f"--seed {drawn} replays this run" in captured.err
    assert f"seed {drawn}," in captured.out


def test_the_top_seed_passes_the_reference(capsys):
    # the generation tier hands seeds to PCG32's initstate (< 2**64): 2**64 failed the reference
    tiers = ["--tier", "contract", "--tier", "generation"]
    assert main(["check", "--seed", str(MAX_SEED - 1), *tiers, "--quick", "--no-progress"]) == 0
