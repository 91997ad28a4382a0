"""``spec-verify check`` on the bundled reference: the README's main command."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from spec_verify.cli import main


def test_fast_tiers_with_reports(tmp_path, capsys):
    code = main(
        ["check", "--tier", "contract", "--tier", "greedy", "--quick",
         "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.out
    assert "spec-verify check reference: PASSED" in captured.out
    assert "contract: " in captured.err  # progress goes to stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["passed"] and data["impl"] == "reference"
    assert ET.parse(tmp_path / "r.xml").getroot().get("failures") == "0"


def test_a_replayed_parity_case(capsys):
    assert main(["check", "--case-seed", "17", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "\nparity " in out and "\ngreedy " not in out
    assert "case 17:" in out


def test_usage_errors(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", "--tier", "vibes"])
    assert info.value.code == 2
    assert main(["check", "--timeout", "0"]) == 2
    assert main(["check", "--timeout", "inf"]) == 2
    assert "--timeout inf: must be a positive, finite number" in capsys.readouterr().err


def test_a_planted_bug_in_a_mutant_fails_with_a_reproduction_line(capsys):
    code = main(["check", "--impl", "mutant:s04", "--tier", "parity", "--quick", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL parity/verify_draft" in out
    assert "reproduce: spec-verify check --impl mutant:s04 --tier parity --case-seed" in out


def test_fail_fast_reports_the_tiers_it_did_not_run(tmp_path, capsys):
    report = tmp_path / "r.json"
    tiers = ["--tier", "contract", "--tier", "greedy", "--tier", "generation"]
    code = main(["check", "--impl", "mutant:s05", *tiers, "--quick", "-x", "--no-progress",
                 "--json", str(report)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL greedy/" in out
    [generation] = [r for r in json.loads(report.read_text())["results"]
                    if r["tier"] == "generation"]  # fmt: skip
    assert generation["status"] == "skipped"
    assert generation["message"].startswith("not run: --fail-fast, and the law check greedy/")
    # the failure summary names the check that stopped the run and what was not run
    assert "STOPPED by -x/--fail-fast at the law check greedy/" in out
    assert "not run: generation (rerun without -x for their verdicts)" in out


def test_without_fail_fast_the_summary_names_no_stop(capsys):
    # the negative control: the same planted bug, no -x, runs every tier
    tiers = ["--tier", "greedy", "--tier", "generation"]
    code = main(["check", "--impl", "mutant:s05", *tiers, "--quick", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "STOPPED" not in out and "not run: --fail-fast" not in out
    assert "-x, --fail-fast stops after the tier of the first failed law check" in out


@pytest.mark.slow
def test_the_reference_passes_every_tier(reference_check):
    """The README's main command at default sizes (run once per test run: tests/conftest.py)."""
    assert reference_check["code"] == 0, reference_check["out"]
    assert "spec-verify check reference: PASSED" in reference_check["out"]
    report = reference_check["report"]
    assert report["passed"]
    tiers = {r["tier"] for r in report["results"]}
    assert {"contract", "greedy", "exact", "parity", "statistical", "generation"} <= tiers


def test_plots_without_matplotlib_do_not_change_the_verdict(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    code = main(["check", "--case-seed", "3", "--no-progress", "--plots", str(tmp_path / "p")])
    captured = capsys.readouterr()
    assert code == 0
    assert "plots skipped" in captured.err


def test_not_provable_fails_the_gate_unless_allowed(capsys):
    args = ["check", "--impl", "python:tests.impls.float32_cumsum", "--tier", "exact",
            "--no-progress"]  # fmt: skip
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "NOT PROVABLE exact/" in out and "--allow-not-provable" in out
    assert main([*args, "--allow-not-provable"]) == 0
    assert "PASSED" in capsys.readouterr().out
