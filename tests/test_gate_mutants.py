"""The gate rejects every mutant of the catalogue, naming a tier that catches it.

Each mutant runs the one tier that catches it cheapest; the slow tests run the whole gate on
each (with --fail-fast) and on one mutant to its end. The clean reference passes the same
tiers: the negative control.
"""

from __future__ import annotations

import json

import pytest

from spec_verify.cli import main
from spec_verify.mutants.catalogue import CATALOGUE
from spec_verify.tiers import TIER_NAMES

TIER_BY_MUTANT = {
    "s01": "exact", "s02": "exact", "s03": "exact", "s04": "parity", "s05": "greedy",
    "s06": "greedy", "s07": "exact", "s08": "greedy", "s09": "exact", "s10": "parity",
    "s11": "parity", "s12": "generation", "s13": "exact", "s14": "generation",
    "s15": "generation", "s16": "generation", "s17": "generation", "s18": "generation",
    "s19": "generation", "s20": "exact", "s21": "generation", "s22": "generation",
    "s23": "generation", "s24": "generation",
    # trees (CONTRACT.md section 6): the law per fixed tree, the argmax chain, the draw order
    "t01": "exact", "t02": "exact", "t03": "exact", "t04": "exact", "t05": "exact",
    "t06": "exact", "t07": "exact", "t08": "parity", "t09": "greedy", "t10": "greedy",
    "t11": "parity", "t12": "exact",
}  # fmt: skip


def test_every_catalogued_mutant_has_a_gate_tier():
    assert sorted(TIER_BY_MUTANT) == sorted(m.id for m in CATALOGUE)


@pytest.mark.parametrize("tier", sorted(set(TIER_BY_MUTANT.values())))
def test_the_clean_reference_passes_each_tier(tier, capsys):
    assert main(["check", "--tier", tier, "--quick", "--no-progress"]) == 0, capsys.readouterr()


@pytest.mark.parametrize(("mutant", "tier"), sorted(TIER_BY_MUTANT.items()))
def test_the_gate_rejects_the_mutant(mutant, tier, capsys):
    code = main(["check", "--impl", f"mutant:{mutant}", "--tier", tier, "--quick", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"FAIL {tier}/" in out or f"ERROR {tier}/" in out, out
    assert "reproduce: " in out


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(TIER_BY_MUTANT))
def test_the_full_gate_rejects_the_mutant(mutant, capsys, tmp_path):
    """The whole gate in its order, one worker for every tier, with --fail-fast: every mutant
    fails it, and a run that stopped stopped at the tier of a failed law check."""
    report = tmp_path / "r.json"
    code = main(["check", "--impl", f"mutant:{mutant}", "--quick", "--no-progress", "-x",
                 "--json", str(report)])  # fmt: skip
    assert code == 1, capsys.readouterr().out
    results = json.loads(report.read_text())["results"]
    failed = [r for r in results if r["status"] in ("failed", "error")]
    assert failed
    skipped = {r["tier"] for r in results if r["message"].startswith("not run: --fail-fast")}
    ran = {r["tier"] for r in results} - skipped
    # -x stops at the first failed LAW check; a conformance failure (parity, say) lets the run
    # go on to the end. When it stopped, the last tier that ran holds the failure that did it.
    if skipped:
        last = max(ran, key=TIER_NAMES.index)
        assert any(r["tier"] == last for r in failed), (last, [r["name"] for r in failed])
        assert all(TIER_NAMES.index(t) > TIER_NAMES.index(last) for t in skipped)


@pytest.mark.slow
def test_the_whole_gate_runs_to_its_end_on_a_mutant(capsys, tmp_path):
    """Without --fail-fast every tier runs on a mutant that fails all but one of them, and
    each says so (the harness keeps going; the FFI gate tests do the same for a port)."""
    report = tmp_path / "r.json"
    code = main(["check", "--impl", "mutant:s20", "--quick", "--no-progress",
                 "--json", str(report)])  # fmt: skip
    assert code == 1
    results = json.loads(report.read_text())["results"]
    assert not [r for r in results if r["status"] == "skipped"]
    failing = {r["tier"] for r in results if r["status"] in ("failed", "error")}
    assert failing == set(TIER_NAMES) - {"greedy"}  # s20 samples wrongly; argmax is right
