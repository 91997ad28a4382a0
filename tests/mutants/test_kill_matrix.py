"""Every mutant is killed by our own suite, through the grader's mechanism.

The test runs each mutant against the test of ours its catalogue entry declares (a mutant that
survives it fails here); ``benchmarks/kill_matrix.py`` runs each mutant against all of
``tests/reference`` and prints which tests kill which mutant. Both copy ``tests/`` into each
run's temporary folder and import ``spec_verify.reference`` from the run's copy of the
reference, like ``spec-verify grade``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_verify.mutants import CATALOGUE
from spec_verify.mutants.grader import run_mutants

TESTS = Path(__file__).resolve().parents[1]


def _nodes(mutant_killed_by):
    return [f"reference/{node.removeprefix('reference/')}" for node in mutant_killed_by]


@pytest.mark.slow  # every mutant's graded run: 157 s idle, 250 s loaded (CI runs it with --runslow)
def test_each_mutant_is_killed_by_its_declared_test():
    plan: dict[str | None, list[str]] = {
        None: sorted({node for m in CATALOGUE for node in _nodes(m.killed_by)})}
    plan.update({m.id: _nodes(m.killed_by) for m in CATALOGUE})
    outcomes = run_mutants(TESTS, plan, exitfirst=True)
    clean = outcomes[None]
    assert clean.passed_cleanly, (clean.failures, clean.errors, clean.output[-3000:])
    survivors = []
    for mutant in CATALOGUE:
        outcome = outcomes[mutant.id]
        failed = [f.test for f in outcome.failures]
        declared = [f"tests/{node}" for node in mutant.killed_by]
        if outcome.code != 1 or not any(t.startswith(tuple(declared)) for t in failed):
            survivors.append((mutant.id, outcome.kind, outcome.code, failed, outcome.errors))
    assert survivors == [], survivors
