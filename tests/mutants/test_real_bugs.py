"""The real-bug family (mutants/real_bugs.py): every entry applies, names its citation, and is
killed: by its declared tests through the grader's mechanism (as the kill matrix does for the
catalogue), and by its declared ``spec-verify check`` checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_verify.mutants import CATALOGUE, mutant_by_id
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.catalogue import apply_mutant
from spec_verify.mutants.grader import run_mutants
from spec_verify.mutants.real_bugs import REAL_BUGS
from spec_verify.results import Status
from spec_verify.runner import run_checks

TESTS = Path(__file__).resolve().parents[1]


def test_the_family_is_apart_from_the_default_catalogue() -> None:
    assert len(CATALOGUE) == 36 and not {m.id for m in CATALOGUE} & {r.id for r in REAL_BUGS}
    assert [r.id for r in REAL_BUGS] == [f"r{i:02d}" for i in range(1, len(REAL_BUGS) + 1)]
    sources = reference_sources()
    for bug in REAL_BUGS:
        assert mutant_by_id(bug.id) is bug
        assert bug.citation and bug.origin == "real" and (bug.killed_by or bug.killed_by_checks)
        assert apply_mutant(bug, sources) != sources  # applies, and changes something


@pytest.mark.slow  # 34 s: eight graded runs; the checks below kill six of them in the default run
def test_each_real_bug_is_killed_by_its_declared_tests() -> None:
    graded = [bug for bug in REAL_BUGS if bug.killed_by]
    plan: dict[str | None, list[str]] = {
        None: sorted({node for bug in graded for node in bug.killed_by})}
    plan.update({bug.id: list(bug.killed_by) for bug in graded})
    outcomes = run_mutants(TESTS, plan, exitfirst=True)
    clean = outcomes[None]
    assert clean.passed_cleanly, (clean.failures, clean.errors, clean.output[-3000:])
    survivors = []
    for bug in graded:
        outcome = outcomes[bug.id]
        failed = [f.test for f in outcome.failures]
        declared = tuple(f"tests/{node}" for node in bug.killed_by)
        if outcome.code != 1 or not any(t.startswith(declared) for t in failed):
            survivors.append((bug.id, outcome.kind, outcome.code, failed, outcome.errors))
    assert survivors == [], survivors


@pytest.mark.parametrize(
    ("bug_id", "check"),
    [(bug.id, check) for bug in REAL_BUGS for check in bug.killed_by_checks],
)
def test_each_real_bug_fails_its_declared_check(bug_id: str, check: str) -> None:
    tier, _, name = check.partition("/")
    report = run_checks(f"mutant:{bug_id}", tiers=[tier], quick=True)
    failed = [r.name for r in report.results if r.status is Status.FAILED]
    assert not report.passed and any(n.startswith(name) for n in failed), (
        [(r.name, r.status, r.message[:200]) for r in report.results])


def test_the_command_line_lists_the_family_with_citations(capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from spec_verify.cli import main

    assert main(["mutants", "list"]) == 0
    out = capsys.readouterr().out
    assert "36 mutants" in out
    assert all(bug.id in out and bug.citation in out for bug in REAL_BUGS)
    assert main(["mutants", "list", "--real", "--json", "-"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in listed] == [bug.id for bug in REAL_BUGS]
    assert listed[1]["citation"] == "flashinfer-ai/flashinfer PR #424"
    assert main(["mutants", "show", "r06"]) == 0
    shown = capsys.readouterr().out
    assert "citation:  vllm-project/vllm PR #16952" in shown and "check contract/inputs" in shown
