"""The gate for ports end to end: the Rust port passes, each planted bug fails with the right
tier named, and broken libraries end as one failed check while the run finishes."""

from __future__ import annotations

import pytest

from spec_verify.cli import main
from spec_verify.results import Status
from spec_verify.runner import run_checks

# planted bug -> the first tier of the gate (in run order) that must reject it
FIRST_FAILING_TIER = {
    "bug_resample_before_accept": "parity",
    "bug_bonus_wrong_row": "greedy",
    "bug_ties_highest": "greedy",
    "bug_residual_from_p": "parity",
    "bug_lookup_oldest": "parity",
    "bug_penalty_ignores_kept": "greedy",
    "bug_top_p_inclusive": "parity",
    "bug_penalty_window": "greedy",
    "bug_sample_inclusive": "parity",
    "bug_shared_scratch": "parity",
    "bug_tree_stale_residual": "parity",  # the tree parity check (greedy trees are right)
}
FAST_TIERS = ["contract", "greedy", "parity"]


def _failing_tiers(report):
    return [r.tier for r in report.results if not r.status.ok]


@pytest.mark.rust
def test_the_port_passes_the_fast_tiers(port):
    report = run_checks(port, tiers=FAST_TIERS, quick=True)
    assert report.passed, [r.message for r in report.failures()]
    assert {r.tier for r in report.results} == set(FAST_TIERS)


@pytest.mark.rust
@pytest.mark.slow
def test_the_port_passes_every_tier(rust_port, capsys):
    code = main(["check", "--impl", f"ffi:{rust_port}", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    for tier in ("contract", "greedy", "exact", "parity"):
        assert f"\n{tier} " in out


@pytest.mark.rust
@pytest.mark.parametrize("bug", sorted(FIRST_FAILING_TIER))
def test_each_planted_bug_is_rejected_by_the_right_tier(rust_variants, bug):
    report = run_checks(f"ffi:{rust_variants[bug]}", tiers=FAST_TIERS, quick=True)
    failing = _failing_tiers(report)
    assert not report.passed
    assert failing, "the gate passed a planted bug"
    assert failing[0] == FIRST_FAILING_TIER[bug], [r.message for r in report.failures()]
    assert "contract" not in failing  # the bugs are semantic: shapes and errors stay right
    for result in report.failures():
        assert result.repro.startswith("spec-verify check --impl ffi:")


# The whole gate on a variant: every tier through the command line, at --quick sizes (the full
# sizes took 95-165 s a variant under load and add nothing here: every variant is rejected by
# the fast tiers above at their full sizes); one variant per first failing tier and a tree bug.
WHOLE_GATE = ["bug_ties_highest", "bug_residual_from_p", "bug_tree_stale_residual"]


@pytest.mark.rust
@pytest.mark.slow
@pytest.mark.parametrize("bug", WHOLE_GATE)
def test_each_planted_bug_fails_the_whole_gate(rust_variants, bug, capsys):
    code = main(["check", "--impl", f"ffi:{rust_variants[bug]}", "--quick", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"FAIL {FIRST_FAILING_TIER[bug]}/" in out
    assert "reproduce: spec-verify check --impl ffi:" in out


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("segfault", "SIGSEGV"),
        ("abort", "SIGABRT"),
        ("hang", "did not return within"),
        ("overflow", "wrote past the end of out_ids"),
        ("bad_ids", "ids out of"),
    ],
)
def test_a_broken_library_is_one_failed_check_and_the_run_finishes(c_libs, name, words):
    report = run_checks(f"ffi:{c_libs[name]}", timeout=0.5)
    failures = report.failures()
    assert len(failures) == 1, [(r.tier, r.name, r.message) for r in failures]
    [failure] = failures
    assert (failure.tier, failure.name) == ("contract", "calls")
    assert failure.status is Status.ERROR
    assert words in failure.message
    assert failure.repro
    later = [r for r in report.results if r.tier != "contract"]
    assert later and all(r.status is Status.SKIPPED for r in later)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("abi_v1", "ABI version 1"),
        ("missing_symbols", "does not export"),
    ],
)
def test_a_library_that_does_not_load_is_one_failed_check(c_libs, name, words, capsys):
    code = main(["check", "--impl", f"ffi:{c_libs[name]}", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL load/load" in out
    assert words in out
    assert "reproduce: spec-verify check --impl ffi:" in out


def test_the_cli_reports_a_crash_and_exits_1(c_libs, capsys, tmp_path):
    junit = tmp_path / "report.xml"
    code = main(
        ["check", "--impl", f"ffi:{c_libs['segfault']}", "--no-progress", "--junit", str(junit)]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "ERROR contract/calls" in out and "SIGSEGV" in out
    assert "<error" in junit.read_text()
