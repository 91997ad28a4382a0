"""A suite cannot tell a mutant run from a clean one except by the reference's behaviour.

The adversarial suite (``suites/adversarial``) looks for a mutant in the environment, the
command line, ``sys.path``, the working directory, module names and the reference modules'
files, attributes and loaders, and fails when it finds any sign; it also writes everything it
saw to a side channel. Graded over the whole catalogue it detects nothing, and every run after
the clean one saw exactly the same thing. The clean run differs only in which modules the
worker had already imported (it is the first run, which the decoys make worthless to know).
"""

from __future__ import annotations

import json
import sys

import pytest

from spec_verify.mutants import CATALOGUE
from spec_verify.mutants.grader import MutantState, grade

from .test_grader import SUITES

SIDE_CHANNEL = "SPEC_VERIFY_SIDE_CHANNEL"


@pytest.fixture
def side_channel(tmp_path, monkeypatch):
    monkeypatch.setenv(SIDE_CHANNEL, str(tmp_path))
    return tmp_path


def test_the_adversarial_suite_gains_nothing(side_channel):
    result = grade(SUITES / "adversarial", decoys=1)
    assert result.graded, result.reason  # it passes clean and decoys, fails the canary
    assert result.detected == 0
    assert all(m.state is MutantState.SURVIVED for m in result.mutants)
    seen = [json.loads(p.read_text()) for p in sorted(side_channel.glob("*.json"))]
    # clean + decoy + 24 mutants (the canary raises before the dump)
    assert len(seen) == 1 + 1 + len(CATALOGUE)
    without_modules = [{k: v for k, v in s.items() if k != "modules"} for s in seen]
    assert all(view == without_modules[0] for view in without_modules)
    module_sets = {tuple(s["modules"]) for s in seen}
    assert len(module_sets) <= 2  # the clean run's, and everybody else's
    assert "<RUN>/lib/reference/verify.py" in json.dumps(seen[0]["reference"])


def test_a_suite_that_counts_runs_is_caught_by_the_decoys(side_channel):
    result = grade(SUITES / "counts_runs", mutants=["s01", "s02", "s03"], decoys=1)
    assert not result.graded
    assert result.grade == 0
    assert "repeated clean run" in result.reason
    assert "randomness, the clock, the order of runs" in result.reason


def test_the_reference_is_not_replaced_in_the_grader_process():
    before = sys.modules.get("spec_verify.reference")
    grade(SUITES / "writes_files", mutants=["s05"], decoys=0)
    assert sys.modules.get("spec_verify.reference") is before
    assert not any(name.startswith("spec_verify.reference.") and name not in sys.modules
                   for name in list(sys.modules))


def test_a_finder_that_claims_the_installed_reference_comes_too_late():
    # pytest's rewriting finder does this in a regular install; the run's copy is imported first.
    result = grade(SUITES / "claimed_reference", mutants=["s01"], decoys=0)
    assert result.graded, (result.reason, result.clean_failures)
