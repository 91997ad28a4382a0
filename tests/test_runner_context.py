"""What a run hands its tiers (``profiles.RunContext``) and what it leaves on the caller's
implementation: nothing (its settings come back as they were); under ``--profile lossless``
a check the run does not ask is reported NOT_APPLICABLE without being computed."""

from __future__ import annotations

from typing import Any

import pytest

from spec_verify import runner
from spec_verify.profiles import Profile, RunContext
from spec_verify.results import CheckResult, Status
from spec_verify.runner import run_checks

_SETTINGS = ("timeout", "current_timeout", "capabilities", "budget", "budget_deadline")


def _settings(impl: Any) -> dict[str, Any]:
    return {name: getattr(impl, name) for name in _SETTINGS if hasattr(impl, name)}


def _spy_tier(seen: list[dict[str, Any]]) -> Any:
    """A contract tier that notes what the run set while it ran, and checks nothing else."""

    def tier(impl: Any, **options: Any) -> list[CheckResult]:
        seen.append({**_settings(impl), "run": options.get("run")})
        return [CheckResult("contract", "calls", Status.PASSED, "spy")]

    return tier


def _with_spy(monkeypatch: pytest.MonkeyPatch, seen: list[dict[str, Any]]) -> None:
    real = runner.resolve_entry_point
    monkeypatch.setattr(runner, "resolve_entry_point",
                        lambda spec: _spy_tier(seen) if spec.name == "contract" else real(spec))


def _run(impl: Any) -> None:
    report = run_checks(impl, tiers=["contract"], timeout=7.5, budget=600.0,
                        capabilities={"greedy": False}, profile="lossless")
    assert report.passed, [r.message for r in report.failures()]


def test_the_run_reaches_the_tiers_and_leaves_the_callers_implementation_as_it_was(
        reference: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _settings(reference)
    seen: list[dict[str, Any]] = []
    _with_spy(monkeypatch, seen)
    _run(reference)
    [during] = seen
    # while it ran, the run's settings were in force and its question was handed over
    assert during["timeout"] == 7.5 and during["budget"] == 600.0
    assert during["budget_deadline"] is not None
    assert "greedy" not in during["capabilities"]
    run = during["run"]
    assert run == RunContext(Profile.LOSSLESS, "token", during["capabilities"])
    assert run.not_applicable("parity", "any") is not None
    assert run.not_applicable("statistical", "sequence.law_k2") is None
    assert _settings(reference) == before


def test_negative_control_a_runner_that_does_not_restore_is_seen(
        reference: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _settings(reference)
    _with_spy(monkeypatch, [])
    monkeypatch.setattr(runner, "_restore", lambda impl, saved: None)  # the planted bug
    _run(reference)
    changed = {n for n, v in _settings(reference).items() if before[n] != v}
    assert {"timeout", "budget", "budget_deadline", "capabilities"} <= changed
    # (the ``reference`` fixture puts the shared worker back for the next test)


def _tree_exact_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Spy on the per-fixed-tree exact computation (``tiers.tree.check_tree_exact``); the spy
    answers at once instead of enumerating, so the control costs nothing."""
    from spec_verify.tiers import tree

    calls: list[str] = []

    def spy(impl: Any, **options: Any) -> CheckResult:
        calls.append(impl.name)
        return CheckResult("exact", "tree", Status.PASSED, "spy")

    monkeypatch.setattr(tree, "check_tree_exact", spy)
    return calls


def test_a_lossless_run_does_not_compute_the_per_tree_conformance_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _tree_exact_calls(monkeypatch)
    report = run_checks("python:tests.impls.tree_only", tiers=["exact"], quick=True,
                        profile="lossless")
    results = {r.name: r for r in report.results}
    assert calls == []
    assert results["tree"].status is Status.NOT_APPLICABLE
    assert "conformance only" in results["tree"].message
    assert results["tree_law"].status is Status.PASSED  # the law claim still runs
    assert report.passed


def test_negative_control_a_conformance_run_computes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _tree_exact_calls(monkeypatch)
    from spec_verify.tiers import tree

    # the law check is not what this control is about: answered at once too
    monkeypatch.setattr(tree, "check_tree_law", lambda impl, **options: CheckResult(
        "exact", "tree_law", Status.PASSED, "spy"))
    report = run_checks("python:tests.impls.tree_only", tiers=["exact"], quick=True)
    assert calls == ["python:tests.impls.tree_only"]
    assert {r.name: r.status for r in report.results}["tree"] is Status.PASSED


def test_without_a_run_a_tier_computes_every_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from spec_verify.adapters import load_implementation
    from spec_verify.tiers.exact import run_exact_tier

    calls = _tree_exact_calls(monkeypatch)
    from spec_verify.tiers import tree

    monkeypatch.setattr(tree, "check_tree_law", lambda impl, **options: None)
    impl = load_implementation("python:tests.impls.tree_only")
    try:
        results = run_exact_tier(impl, quick=True)
    finally:
        impl.close()
    assert calls == [impl.name]
    assert [r.name for r in results] == ["theorems", "tree"]
