"""``spec-verify check`` while it runs: the plan and estimate before the first tier, each
verdict as it is recorded, the -x hint on the first blocking failure."""

from __future__ import annotations

import io

from spec_verify.cli import main
from spec_verify.cli._live import REFERENCE_SECONDS, LiveLines, estimate_seconds, format_duration
from spec_verify.results import CheckResult, Status
from spec_verify.runner import run_checks
from spec_verify.tiers import TIER_NAMES


def test_the_cost_table_covers_every_tier() -> None:
    for mode in ("full", "quick"):
        assert set(REFERENCE_SECONDS[mode]) == set(TIER_NAMES)
    assert estimate_seconds(TIER_NAMES, quick=True) < estimate_seconds(TIER_NAMES, quick=False)
    assert [format_duration(s) for s in (0.2, 40, 200, 4000)] == ["1 s", "40 s", "3 min",
                                                                    "1 h 7 min"]


def test_run_checks_tells_the_plan_first_then_each_result_as_recorded(reference) -> None:
    told: list[object] = []
    report = run_checks(reference, tiers=["contract", "edges"], quick=True,
                        on_plan=lambda impl, tiers: told.append(tiers),
                        on_result=lambda result, blocks: told.append((result, blocks)))
    assert told[0] == ("contract", "edges")
    assert [r for r, _ in told[1:]] == list(report.results)  # type: ignore[misc]
    assert all(blocks is report.blocks(r) for r, blocks in told[1:])  # type: ignore[misc]


def _live(quick: bool = False, fail_fast: bool = False, verbose: bool = False) -> LiveLines:
    return LiveLines(io.StringIO(), quick=quick, fail_fast=fail_fast, verbose=verbose)


def test_the_plan_offers_quick_when_the_full_run_is_long() -> None:
    live = _live()
    live.plan(None, tuple(TIER_NAMES))
    text = live.stream.getvalue()  # type: ignore[attr-defined]
    assert f"plan (full): {len(TIER_NAMES)} tiers" in text
    from spec_verify.tiers.statistical import DEFAULT_DELTA, plan_statistical_tier

    checks = len(plan_statistical_tier(None, delta=DEFAULT_DELTA).active())  # the tier's plan
    assert checks >= 17 and f"statistical: {checks} checks," in text and "planned draws" in text
    assert "estimate: about" in text and "measured" in text
    assert "add --quick" in text
    quick = _live(quick=True)
    quick.plan(None, ("contract",))
    assert "add --quick" not in quick.stream.getvalue()  # type: ignore[attr-defined]


def test_verdicts_print_as_they_come_and_a_blocking_one_names_fail_fast() -> None:
    live = _live()
    live.plan(None, ("contract", "exact"))
    live.result(CheckResult("contract", "calls", Status.PASSED, "5 calls"), False)
    live.result(CheckResult("exact", "x", Status.SKIPPED, "no trees"), False)
    live.result(CheckResult("exact", "one_position", Status.FAILED, "law differs\nmore"), True)
    lines = live.stream.getvalue().splitlines()  # type: ignore[attr-defined]
    assert "PASS  contract/calls [law]: 5 calls" in lines
    assert not any("exact/x" in line for line in lines)  # skips are folded in the table
    assert "FAIL  exact/one_position [law]: law differs (blocks the run)" in lines
    assert any("-x (--fail-fast)" in line for line in lines)
    assert any(line.startswith("estimate: contract took") for line in lines)


def test_a_blocking_conformance_failure_does_not_offer_fail_fast() -> None:
    # -x stops at law checks only: a parity failure blocks the run but would not stop it
    live = _live()
    live.plan(None, ("parity",))
    live.result(CheckResult("parity", "verify_draft", Status.FAILED, "draws differ"), True)
    text = live.stream.getvalue()  # type: ignore[attr-defined]
    assert "FAIL  parity/verify_draft [conformance]: draws differ (blocks the run)" in text
    assert "--fail-fast" not in text


def test_negative_control_a_pass_never_claims_to_block() -> None:
    live = _live(fail_fast=True, verbose=True)
    live.result(CheckResult("exact", "x", Status.SKIPPED, "no trees"), False)
    live.result(CheckResult("exact", "y", Status.PASSED, "ok"), False)
    text = live.stream.getvalue()  # type: ignore[attr-defined]
    assert "skip  exact/x" in text  # --verbose shows skips as they come
    assert "blocks" not in text and "--fail-fast" not in text


def test_check_prints_plan_and_verdicts_on_stderr(capsys) -> None:
    assert main(["check", "--tier", "contract", "--quick"]) == 0
    err = capsys.readouterr().err
    plan, verdict = err.index("plan (--quick): 1 tier (contract)"), err.index("PASS  contract/")
    assert plan < verdict
    assert main(["check", "--tier", "contract", "--quick", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
