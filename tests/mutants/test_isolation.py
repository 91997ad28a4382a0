"""A suite cannot tell a mutant run from a clean one except by the reference's behaviour.

The adversarial suite (``suites/adversarial``) looks for a mutant in the environment, the
command line, ``sys.path``, the working directory, module names and the reference modules'
files, attributes and loaders, and fails when it finds any sign; it also writes everything it
saw to a side channel. Graded over the whole catalogue it detects nothing, and every run (the
clean repeats, the decoys and the mutants) saw exactly the same thing, imported modules
included: the worker starts every run from the same state. The suites that need a side
channel grade unsealed (``allow_unsealed``): sealed, the channel's folder is out of a run's
reach (``test_sealed_runs.py``), and what is shown here is that the runs look the same even
without that.
"""

from __future__ import annotations

import json
import sys

import pytest

from spec_verify.mutants import CATALOGUE
from spec_verify.mutants.grader import MutantState, Refusal, grade

from .test_grader import SUITES

SIDE_CHANNEL = "SPEC_VERIFY_SIDE_CHANNEL"


@pytest.fixture
def side_channel(tmp_path, monkeypatch):
    """A folder for the suite's side channel, in reach of its runs: they are not sealed."""
    monkeypatch.setenv(SIDE_CHANNEL, str(tmp_path))
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    return tmp_path


@pytest.mark.slow
def test_the_adversarial_suite_gains_nothing(side_channel):
    result = grade(SUITES / "adversarial", allow_unsealed=True)
    assert result.graded, result.reason  # it passes clean and decoys, fails the canary
    assert result.detected == 0
    assert all(m.state is MutantState.SURVIVED for m in result.mutants)
    seen = [json.loads(p.read_text()) for p in sorted(side_channel.glob("*.json"))]
    # 3 clean repeats + 3 decoys + 24 mutants (the canary raises before the dump)
    assert len(seen) == 3 + 3 + len(CATALOGUE)
    assert all(view == seen[0] for view in seen)


@pytest.mark.slow
def test_a_suite_that_counts_runs_is_refused_as_flaky(side_channel):
    result = grade(SUITES / "counts_runs", mutants=["s01", "s02", "s03"], allow_unsealed=True)
    assert not result.graded
    assert result.grade == 0
    assert result.refusal is Refusal.FLAKY
    assert "flaky" in result.reason
    assert result.flaky_tests == ("counts_runs/test_counts_runs.py::test_first_run_only",)


@pytest.mark.slow
def test_the_reference_is_not_replaced_in_the_grader_process():
    before = sys.modules.get("spec_verify.reference")
    grade(SUITES / "writes_files", mutants=["s05"], decoys=0)
    assert sys.modules.get("spec_verify.reference") is before
    assert not any(name.startswith("spec_verify.reference.") and name not in sys.modules
                   for name in list(sys.modules))


@pytest.mark.slow
def test_a_finder_that_claims_the_installed_reference_comes_too_late():
    # pytest's rewriting finder does this in a regular install; the run's copy is imported first.
    result = grade(SUITES / "claimed_reference", mutants=["s01"], decoys=0)
    assert result.graded, (result.reason, result.clean_failures)


def test_every_tree_is_compiled_before_the_first_run(monkeypatch):
    # Each tree of a grading gets a server in the sampler that compiles it once (a run's
    # sampler does not compile its tree). Every tree must have it before any run starts: a tree
    # first seen in the middle of a grading would make its first run slower, and a mutant
    # (a new tree) would be told from a decoy (the clean tree, already compiled) by time.
    from spec_verify.mutants._runner import RunPool, _tree_key

    started: list[bool] = []
    original = RunPool._start

    def start(pool, prepared):
        started.append(_tree_key(prepared.sources) in pool._trees)
        return original(pool, prepared)

    monkeypatch.setattr(RunPool, "_start", start)
    result = grade(SUITES / "code_paths", mutants=["s05", "s11"], decoys=1, repeats=1,
                   confirmations=1)
    assert result.graded, result.reason
    assert len(started) >= 1 + 1 + 1 + 2 and all(started), started
