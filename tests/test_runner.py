"""The check runner: tiers in order, load failures, harness errors, repro commands."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spec_verify import runner
from spec_verify.errors import UnknownImplementation
from spec_verify.results import CheckResult, Status
from spec_verify.runner import TIERS, CheckReport, repro_command, run_checks


def test_tiers_are_in_the_documented_order():
    assert [t.name for t in TIERS] == [
        "contract", "greedy", "exact", "edges", "parity", "properties", "statistical",
        "generation",
    ]  # fmt: skip


def test_the_reference_passes_the_fast_tiers(reference):
    seen = []
    report = run_checks(
        reference, tiers=["contract", "greedy", "generation"], quick=True, progress=seen.append
    )
    assert report.passed, [r.message for r in report.failures()]
    assert [r.tier for r in report.results][:3] == ["contract"] * 3
    assert {r.tier for r in report.results} == {"contract", "greedy", "generation"}
    assert any(line.startswith("greedy") for line in seen)
    assert set(report.tier_seconds) == {"contract", "greedy", "generation"}


def test_an_unloadable_spec_is_one_failed_check():
    report = run_checks("python:no_such_module_here")
    assert not report.passed
    [result] = report.results
    assert (result.tier, result.name, result.status) == ("load", "load", Status.FAILED)
    assert "cannot be imported" in result.message
    assert result.repro == "spec-verify check --impl python:no_such_module_here --tier contract"


def test_unknown_tiers_are_refused():
    with pytest.raises(UnknownImplementation, match="unknown tier"):
        run_checks("reference", tiers=["contract", "vibes"])


def test_a_tier_that_raises_is_an_error_and_the_run_goes_on(reference, monkeypatch):
    def broken(impl, **options):
        raise RuntimeError("planted harness bug")

    real = runner.resolve_entry_point
    monkeypatch.setattr(
        runner, "resolve_entry_point", lambda spec: broken if spec.name == "greedy" else real(spec)
    )
    report = run_checks(reference, tiers=["contract", "greedy", "generation"], quick=True)
    by_tier = {r.tier: r for r in report.results}
    assert by_tier["greedy"].status is Status.ERROR
    assert "planted harness bug" in by_tier["greedy"].message
    assert by_tier["greedy"].repro == "spec-verify check --tier greedy --quick"
    assert by_tier["generation"].status is Status.PASSED
    assert not report.passed


def test_a_tier_whose_entry_point_does_not_resolve_is_an_error(reference, monkeypatch):
    spec = runner.TierSpec("exact", frozenset({"verify_draft"}), "nowhere_at_all:run", "x")
    monkeypatch.setattr(runner, "TIERS", (spec,))
    report = run_checks(reference, tiers=["exact"])
    [result] = report.results
    assert result.status is Status.ERROR
    assert "nowhere_at_all" in result.message
    assert not report.passed  # a broken installation never passes a gate


def test_a_tier_that_checks_nothing_is_an_error_not_a_pass(reference, monkeypatch):
    real = runner.resolve_entry_point
    monkeypatch.setattr(
        runner,
        "resolve_entry_point",
        lambda spec: (lambda impl, **options: []) if spec.name == "greedy" else real(spec),
    )
    report = run_checks(reference, tiers=["greedy"], quick=True)
    [result] = report.results
    assert result.status is Status.ERROR
    assert not report.passed


def test_fail_fast_stops_after_the_first_failing_tier():
    # s05 keeps the contract's shapes and fails the greedy tier (test_gate_mutants)
    tiers = ["contract", "greedy", "exact", "generation"]
    full = run_checks("mutant:s05", tiers=tiers, quick=True)
    fast = run_checks("mutant:s05", tiers=tiers, quick=True, fail_fast=True)
    first = next(r for r in full.results if full.blocks(r))
    assert first.tier == "greedy"
    assert not fast.passed and fast.exit_code == full.exit_code

    def outcomes(report, wanted):
        return [(r.tier, r.name, r.status) for r in report.results if r.tier in wanted]

    ran = tiers[: tiers.index(first.tier) + 1]
    assert outcomes(fast, ran) == outcomes(full, ran)  # the tiers that ran: as in a full run
    skipped = [r for r in fast.results if r.tier not in ran]
    assert [r.tier for r in skipped] == tiers[len(ran):]
    for result in skipped:
        assert (result.name, result.status) == ("all", Status.SKIPPED)
        assert result.message == (f"not run: --fail-fast, and the law check "
                                  f"{first.tier}/{first.name} failed")


def test_fail_fast_changes_nothing_on_a_passing_run(reference):
    tiers = ["contract", "greedy", "generation"]
    report = run_checks(reference, tiers=tiers, quick=True, fail_fast=True)
    assert report.passed
    assert {r.tier for r in report.results} == set(tiers)
    assert not any(r.status is Status.SKIPPED for r in report.results)


def test_fail_fast_stops_only_at_a_failed_law_check(reference, monkeypatch):
    """An efficiency check that fails a lossless run does not block it, so it does not stop
    it either; under the conformance profile it blocks the run, yet it is no law check, so
    the run goes on; the same failure claimed as a law check stops it."""
    from spec_verify import profiles

    def slow_acceptor(impl, **options):
        return [CheckResult("greedy", "planted_efficiency", Status.FAILED, "accepts less")]

    real = runner.resolve_entry_point
    monkeypatch.setattr(
        runner, "resolve_entry_point",
        lambda spec: slow_acceptor if spec.name == "greedy" else real(spec),
    )  # fmt: skip
    monkeypatch.setattr(
        runner, "claim_of",
        lambda tier, name: profiles.Claim.EFFICIENCY if name == "planted_efficiency"
        else profiles.claim_of(tier, name),
    )  # fmt: skip
    tiers = ["contract", "greedy", "generation"]
    lossless = run_checks(reference, tiers=tiers, quick=True, fail_fast=True, profile="lossless")
    assert lossless.passed
    assert any(r.tier == "generation" and r.status is Status.PASSED for r in lossless.results)
    conformance = run_checks(reference, tiers=tiers, quick=True, fail_fast=True)
    assert not conformance.passed
    went_on = [r for r in conformance.results if r.tier == "generation"]
    assert went_on and any(r.status is Status.PASSED for r in went_on)
    assert not any(r.message.startswith("not run: --fail-fast") for r in conformance.results)
    monkeypatch.setattr(runner, "claim_of", profiles.claim_of)  # now a law check (unlisted)
    law = run_checks(reference, tiers=tiers, quick=True, fail_fast=True)
    [stopped] = [r for r in law.results if r.tier == "generation"]
    assert stopped.status is Status.SKIPPED
    assert stopped.message == ("not run: --fail-fast, and the law check "
                               "greedy/planted_efficiency failed")


@pytest.mark.parametrize(
    ("kwargs", "command"),
    [
        ({"impl": "reference"}, "spec-verify check"),
        ({"impl": "ffi:/a b/lib.so", "tiers": ["parity"], "case_seed": 7},
         "spec-verify check --impl 'ffi:/a b/lib.so' --tier parity --case-seed 7"),
        ({"impl": "mutant:s03", "seed": 5, "quick": True},
         "spec-verify check --impl mutant:s03 --seed 5 --quick"),
    ],
)  # fmt: skip
def test_repro_commands(kwargs, command):
    impl = kwargs.pop("impl")
    tiers = kwargs.pop("tiers", ())
    assert repro_command(impl, tiers, **kwargs) == command


def test_verdicts():
    def report(*statuses):
        results = tuple(CheckResult("t", str(i), s) for i, s in enumerate(statuses))
        return CheckReport("x", 0, ("t",), results, 0.0)

    assert report(Status.PASSED, Status.SKIPPED).passed
    unproven = report(Status.PASSED, Status.NOT_PROVABLE)
    assert not unproven.passed  # nothing was proven there: no pass by default
    assert [r.status for r in unproven.failures()] == [Status.NOT_PROVABLE]
    assert replace(unproven, allow_not_provable=True).passed
    assert not report(Status.PASSED, Status.FAILED).passed
    assert not report(Status.ERROR).passed
    assert not report().passed  # a run that checked nothing did not pass
    assert report(Status.PASSED, Status.FAILED).counts()["failed"] == 1


def test_the_harness_imports_its_tiers_before_the_first_worker_starts() -> None:
    """A worker runs as the same user: code the harness imported before it started cannot be
    swapped under it (planted bytecode) for the rest of the run. Checked in a fresh
    interpreter, where nothing was imported before."""
    import subprocess
    import sys

    script = """
import sys
from spec_verify.adapters import _python_adapter
from spec_verify.runner import run_checks
seen = []
original = _python_adapter.WorkerImplementation.__init__
def recording(self, *args, **kwargs):
    seen.append(set(sys.modules))
    original(self, *args, **kwargs)
_python_adapter.WorkerImplementation.__init__ = recording
run_checks("reference", tiers=["contract", "statistical"], quick=True, budget=1e-9)
print("statistical" if "spec_verify.tiers.statistical" in seen[0] else "missing")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.stdout.strip() == "statistical", done.stderr
