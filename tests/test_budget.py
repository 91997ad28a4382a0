"""The whole-run budget: when it runs out, what is left is ERROR and the run fails, in time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spec_verify.errors import BudgetExhausted, InvalidArgument
from spec_verify.results import ExitCode, Status
from spec_verify.runner import run_checks

_ROOT = Path(__file__).resolve().parents[1]  # where tests.impls imports from
_SLOW = "python:tests.impls.hostile.slow_calls"


def test_a_slow_implementation_stops_at_the_budget_with_errors() -> None:
    started = time.monotonic()
    report = run_checks(_SLOW, tiers=["parity", "statistical"], quick=True, budget=3.0)
    assert time.monotonic() - started < 20  # 2,000 parity cases at 50 ms would take 100 s
    assert not report.passed
    exhausted = [r for r in report.results if "budget" in r.message]
    assert exhausted and all(r.status is Status.ERROR for r in exhausted)
    # The tier that never started says so, and says how to get more time.
    statistical = [r for r in report.results if r.tier == "statistical"]
    assert statistical and "not run: the run's budget of 3 s is exhausted" in (
        statistical[0].message
    )


def test_the_reference_passes_within_a_generous_budget(reference) -> None:
    report = run_checks(reference, tiers=["contract", "greedy"], quick=True, budget=600)
    assert report.passed, [r.message for r in report.failures()]


@pytest.mark.parametrize("budget", [0, -1, float("nan"), float("inf")])
def test_a_budget_must_be_a_positive_number(budget: float) -> None:
    with pytest.raises(InvalidArgument, match="budget"):
        run_checks("reference", tiers=["contract"], budget=budget)


def test_budget_exhausted_names_the_budget_and_the_fix() -> None:
    error = BudgetExhausted("python:x", "verify_draft", 5.0)
    assert "budget of 5 s is exhausted" in str(error) and "--budget" in str(error)


def test_the_cli_reports_an_exhausted_budget_as_a_failed_run(tmp_path) -> None:
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "spec_verify.cli", "check", "--impl", _SLOW, "--tier", "parity",
         "--quick", "--budget", "2", "--json", str(report), "--no-progress"],
        check=False, capture_output=True, text=True, timeout=120, cwd=_ROOT,
    )  # fmt: skip
    assert done.returncode == ExitCode.FAILED, done.stderr
    data = json.loads(report.read_text())
    assert data["passed"] is False and "budget" in json.dumps(data)


def test_the_cli_refuses_a_bad_budget_before_any_work(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spec_verify.cli", "check", "--budget", "0", "--no-progress"],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == ExitCode.USAGE_ERROR
    assert "--budget 0: must be a positive number of seconds" in done.stderr
