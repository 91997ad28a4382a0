"""An instructors' catalogue (``grade --catalogue``): loading, every way an entry is refused
(naming it, exit 2), kill tests that must kill, and a grading that mixes it with built-ins."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from spec_verify.cli import main
from spec_verify.mutants import PITFALLS
from spec_verify.mutants.custom import (
    CatalogueError,
    CustomMutant,
    check_kill_tests,
    hint_of,
    load_catalogue,
)
from spec_verify.mutants.grader import MutantState, grade, pytest_arguments
from spec_verify.mutants.reports import mutation_testing_report, terminal_report

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_catalogue"


def _example(tmp_path: Path, change=None) -> Path:
    """A copy of the example catalogue (and its tests), ``change`` applied to its JSON."""
    folder = tmp_path / "private"
    shutil.copytree(EXAMPLE, folder)
    data = json.loads((folder / "catalogue.json").read_text())
    if change is not None:
        change(data)
    (folder / "catalogue.json").write_text(json.dumps(data))
    return folder / "catalogue.json"


def test_the_example_catalogue_loads_with_its_hints():
    catalogue = load_catalogue(EXAMPLE / "catalogue.json")
    assert [m.id for m in catalogue.mutants] == ["c01", "c02"]
    c01, c02 = catalogue.mutants
    assert isinstance(c01, CustomMutant) and c01.origin == "custom"
    assert hint_of(c01).startswith("min-p keeps every token")
    assert hint_of(c02) == PITFALLS[3]  # a pitfall given by number: the seed's words
    assert c02.killed_by == ("test_private.py::test_a_token_the_target_forbids_is_never_accepted",)
    assert not catalogue.kill_tests_checked


def _first(data):
    return data["mutants"][0]


@pytest.mark.parametrize(("change", "rule"), [
    (lambda d: _first(d).update(id="s03"), "entry s03: the id is a built-in mutant's"),
    (lambda d: _first(d).update(id="r02"), "entry r02: the id is a built-in mutant's"),
    (lambda d: d["mutants"][1].update(id="c01"), "entry c01: the id is repeated"),
    (lambda d: _first(d)["changes"][0].update(old="no such text"),
     "entry c01: the replacement no longer applies: its old text in reference/sampling.py "
     "is not found"),
    (lambda d: _first(d)["changes"][0].update(file="nowhere.py"),
     "entry c01: the replacement no longer applies"),
    (lambda d: _first(d).pop("killed_by"), "entry c01: missing keys killed_by"),
    (lambda d: _first(d).update(killed_by="test_private.py"), "'killed_by' must be a pytest node"),
    (lambda d: _first(d).update(pitfall=13), "entry c01: pitfall 13 is not a seed pitfall"),
    (lambda d: _first(d).update(colour="red"), "entry c01: unknown keys colour"),
    (lambda d: d.update(mutants=[]), "'mutants' is a non-empty list"),
])
def test_a_broken_entry_is_refused_naming_it(tmp_path, change, rule):
    path = _example(tmp_path, change)
    with pytest.raises(CatalogueError, match="catalogue=") as raised:
        load_catalogue(path)
    assert rule in str(raised.value), str(raised.value)


def test_the_cli_refuses_a_broken_catalogue_before_any_run(tmp_path, capsys):
    path = _example(tmp_path, lambda d: _first(d).update(id="s01"))
    code = main(["grade", str(EXAMPLE), "--catalogue", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "entry s01: the id is a built-in mutant's" in err and err.count("\n") == 1


def test_a_kill_test_that_does_not_kill_its_mutant_is_refused(tmp_path):
    # the control: c02's test does not see c01's bug (min-p), so c01 given c02's test survives
    path = _example(tmp_path, lambda d: _first(d).update(killed_by=d["mutants"][1]["killed_by"]))
    catalogue = load_catalogue(path)
    with pytest.raises(CatalogueError, match=r"entry c01: its kill test .* passes with the "
                       r"mutant planted: it does not kill it"):
        check_kill_tests(catalogue, jobs=2, timeout=60, args=pytest_arguments())


@pytest.mark.slow
def test_the_example_catalogue_kill_tests_kill_and_a_missing_test_is_refused(tmp_path):
    checked = check_kill_tests(load_catalogue(EXAMPLE / "catalogue.json"), jobs=2, timeout=60,
                               args=pytest_arguments())
    assert checked.kill_tests_checked
    path = _example(tmp_path, lambda d: _first(d).update(killed_by="test_private.py::test_nope"))
    with pytest.raises(CatalogueError, match=re.escape("entry c01: its kill test "
                       "test_private.py::test_nope was not found")):
        check_kill_tests(load_catalogue(path), jobs=2, timeout=60, args=pytest_arguments())


SUITE = '''
import numpy as np
from spec_verify.reference import speculative_step


def test_a_forbidden_draft_is_rejected():
    assert speculative_step(np.array([1.0, 0.0]), np.array([0.5, 0.5]), 1, 0.0, 0.5) == (0, False)
'''


@pytest.mark.slow
def test_a_custom_catalogue_grades_a_suite_mixed_with_built_ins(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_mine.py").write_text(SUITE)
    catalogue = EXAMPLE / "catalogue.json"
    result = grade(suite, catalogue=catalogue, mutants=["c01", "c02", "s01"], jobs=2,
                   decoys=1, repeats=1)
    assert result.graded, result.reason
    states = {m.mutant_id: m.state for m in result.mutants}
    assert states == {"c01": MutantState.SURVIVED, "c02": MutantState.KILLED,
                      "s01": MutantState.SURVIVED}
    hints = {m.mutant_id: m.hint for m in result.mutants}
    assert hints["c02"] == ""  # detected: no hint
    assert hints["c01"].startswith("min-p keeps every token")
    assert hints["s01"] == PITFALLS[1]
    text = terminal_report(result)
    assert "      hint: min-p keeps every token" in text
    assert f"--mutants c01,s01 --catalogue {catalogue}" in text
    report = mutation_testing_report(result)
    records = {r["id"]: r for f in report["files"].values() for r in f["mutants"]}
    assert set(records) == {"c01", "c02", "s01"}
    assert "hint" not in records["c02"] and records["c01"]["hint"] == hints["c01"]
