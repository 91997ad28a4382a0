"""Plots of observed against expected counts, with the verdict (matplotlib is optional)."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from spec_verify.plots import PlotsUnavailable, plottable, write_plots
from spec_verify.results import CheckResult, Status


def _result(name: str, status: Status, cells: int = 5, **details: Any) -> CheckResult:
    observed = [10 * (i + 1) for i in range(cells)]
    expected = [float(v) + 1.5 for v in observed]
    return CheckResult(
        tier="statistical",
        name=name,
        status=status,
        message="",
        statistic=3.2,
        pvalue=0.2 if status is Status.PASSED else 1e-9,
        alpha=1e-7,
        n=sum(observed),
        details={
            "cells": [str(i) for i in range(cells)],
            "observed": observed,
            "expected": expected,
            "delta": 0.05,
            "power": 0.99,
            "family_alpha": 1e-6,
            "holm_threshold": 2e-7,
            "test": "G-test",
            **details,
        },
    )


def test_results_without_counts_are_not_plottable() -> None:
    assert plottable(_result("a", Status.PASSED))
    assert not plottable(CheckResult("exact", "x", Status.PASSED))
    assert not plottable(CheckResult("statistical", "x", Status.SKIPPED, details={"delta": 0.1}))
    broken = _result("a", Status.PASSED)
    broken.details["expected"] = broken.details["expected"][:-1]
    assert not plottable(broken)


def test_without_matplotlib_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(PlotsUnavailable, match=r"pip install 'spec-verify\[plots\]'") as info:
        write_plots([_result("a", Status.PASSED)], tmp_path)
    assert isinstance(info.value, ImportError)
    assert write_plots([CheckResult("exact", "x", Status.PASSED)], tmp_path) == []  # nothing to do


def test_one_png_per_plottable_result(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    results = [
        _result("first_token.sampled_draft", Status.PASSED),
        _result("generation.model_draft", Status.FAILED, cells=80),  # "other" bar
        _result(
            "acceptance_rate",
            Status.FAILED,
            cells=2,
            interval=[0.7, 0.8],
            observed_rate=0.74,
            expected_rate="3/4",
        ),
        CheckResult("exact", "theorem", Status.PASSED),
    ]
    paths = write_plots(results, tmp_path / "plots")
    assert [p.name for p in paths] == [
        "statistical-first_token.sampled_draft.png",
        "statistical-generation.model_draft.png",
        "statistical-acceptance_rate.png",
    ]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plots_of_a_real_run(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from spec_verify.adapters._loader import load_implementation
    from spec_verify.tiers.statistical import run_statistical_tier

    results = run_statistical_tier(
        load_implementation("python:tests.properties.impls.accept_all"),
        delta=0.3,
        sequential=True,
        checks=["sequence.two_drafts", "acceptance_rate"],
    )
    paths = write_plots(results, tmp_path)
    assert len(paths) == 2 and all(p.stat().st_size > 1000 for p in paths)
