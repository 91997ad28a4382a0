"""The grader: the example suite's grade, the reports, and every kind of bad suite."""

from __future__ import annotations

import json
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spec_verify.cli import main
from spec_verify.errors import InvalidArgument
from spec_verify.mutants import CATALOGUE, apply_mutant, mutant_by_id
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.grader import (
    SCORE_DEFINITION,
    GradeResult,
    MutantState,
    SuiteNotFound,
    grade,
)
from spec_verify.mutants.reports import (
    gradescope_results,
    junit_xml,
    mutant_location,
    mutation_testing_report,
    terminal_report,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "graded_suite"
SUITES = Path(__file__).resolve().parent / "suites"
EXAMPLE_SURVIVORS = {"s11", "s21"}  # shortest n-gram first; the n-gram draft's context


@pytest.fixture(scope="module")
def example_grade(tmp_path_factory) -> GradeResult:
    private = tmp_path_factory.mktemp("grader_tmp")  # other graders may share the system's
    saved, tempfile.tempdir = tempfile.tempdir, str(private)
    try:
        result = grade(EXAMPLE)
    finally:
        tempfile.tempdir = saved
    assert list(private.iterdir()) == [], "the grader left a temporary folder behind"
    return result


def test_the_example_suite_scores_22_of_24(example_grade):
    result = example_grade
    assert result.graded, result.reason
    assert (result.detected, result.total) == (22, 24)
    assert result.grade == pytest.approx(22 / 24)
    assert {m.mutant_id for m in result.mutants if m.state is MutantState.SURVIVED} == (
        EXAMPLE_SURVIVORS)
    assert [m.mutant_id for m in result.mutants] == [m.id for m in CATALOGUE]
    for m in result.mutants:
        if m.state is MutantState.KILLED:
            assert m.killed_by and m.killed_by.startswith("graded_suite/test_speculative.py::")
    assert result.clean_tests == 13
    assert result.time_limit >= 10.0
    assert result.notes == ()


def test_the_grade_is_the_same_every_time(example_grade):
    again = grade(EXAMPLE, mutants=["s03", "s11"], jobs=2, decoys=0)
    states = {m.mutant_id: m.state for m in example_grade.mutants}
    assert {m.mutant_id: m.state for m in again.mutants} == {i: states[i] for i in ("s03", "s11")}
    # (Which test fails first may change: later runs order tests by their measured times.)


# --- reports ----------------------------------------------------------------------------------

def test_terminal_report(example_grade):
    text = terminal_report(example_grade)
    assert "grade: 22/24 detected = 91.7%" in text
    assert "killed 22, survived 2, timed out 0, errored 0" in text
    assert "s11  prompt lookup tries the shortest n-gram first" in text
    assert f"reproduce: spec-verify grade {EXAMPLE} --mutants s11,s21" in text
    assert SCORE_DEFINITION[:40] in text


STATUSES = {"Killed", "Survived", "NoCoverage", "CompileError", "RuntimeError", "Timeout",
            "Ignored", "Pending"}


def test_mutation_testing_elements_report(example_grade):
    report = json.loads(json.dumps(mutation_testing_report(example_grade)))
    assert report["schemaVersion"] == "2"
    assert set(report["thresholds"]) == {"high", "low"}
    sources = reference_sources()
    seen = []
    for path, entry in report["files"].items():
        assert set(entry) >= {"language", "source", "mutants"}
        name = path.removeprefix("reference/")
        assert entry["source"] == sources[name]
        lines = entry["source"].splitlines(keepends=True)
        for record in entry["mutants"]:
            assert set(record) >= {"id", "mutatorName", "location", "status"}
            assert record["status"] in STATUSES
            start, end = record["location"]["start"], record["location"]["end"]
            assert min(start["line"], start["column"], end["line"], end["column"]) >= 1

            def offset(pos, lines=lines):
                return sum(len(line) for line in lines[: pos["line"] - 1]) + pos["column"] - 1

            rebuilt = (entry["source"][: offset(start)] + record["replacement"]
                       + entry["source"][offset(end):])
            assert rebuilt == apply_mutant(mutant_by_id(record["id"]), sources)[name]
            seen.append((record["id"], record["status"]))
    assert sorted(seen) == sorted(
        (m.mutant_id, "Survived" if m.mutant_id in EXAMPLE_SURVIVORS else "Killed")
        for m in example_grade.mutants)
    killer = next(iter(report["testFiles"].values()))["tests"][0]
    assert set(killer) >= {"id", "name"}
    assert report["config"]["scoreDefinition"] == SCORE_DEFINITION


def test_mutant_location_spans_every_change():
    sources = reference_sources()
    file, start, end, replacement = mutant_location(mutant_by_id("s24"), sources)
    assert file == "generate.py"
    text = sources[file]
    assert text[:start] + replacement + text[end:] == apply_mutant(
        mutant_by_id("s24"), sources)[file]


def test_gradescope_results(example_grade):
    results = gradescope_results(example_grade)
    assert (results["score"], results["max_score"]) == (22, 24)
    assert len(results["tests"]) == 24
    assert sum(t["score"] for t in results["tests"]) == 22
    assert {t["number"] for t in results["tests"] if t["status"] == "failed"} == EXAMPLE_SURVIVORS
    assert SCORE_DEFINITION in results["output"]


def test_junit_xml(example_grade):
    root = ET.fromstring(junit_xml(example_grade))
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "25"
    assert suite.get("failures") == "2"
    failed = {case.get("name").split()[0] for case in suite.iter("testcase")
              if case.find("failure") is not None}
    assert failed == EXAMPLE_SURVIVORS


def test_cli_grade_writes_every_report(tmp_path, capsys):
    files = {name: tmp_path / name for name in ("mte.json", "results.json", "junit.xml")}
    code = main(["grade", str(EXAMPLE), "--mutants", "s05,s11", "-j", "2", "-q", "--decoys", "0",
                 "--json", str(files["mte.json"]), "--gradescope", str(files["results.json"]),
                 "--junit", str(files["junit.xml"]), "--fail-under", "60"])
    out = capsys.readouterr().out
    assert code == 1  # graded, but 50% is under --fail-under 60
    assert "grade: 1/2 detected = 50.0%" in out
    assert json.loads(files["mte.json"].read_text())["schemaVersion"] == "2"
    assert json.loads(files["results.json"].read_text())["score"] == 1
    assert ET.parse(files["junit.xml"]).getroot().tag == "testsuites"


def test_cli_grade_refuses_bad_input(capsys):
    assert main(["grade", str(SUITES / "no_such_suite"), "-q"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["grade", str(EXAMPLE), "--mutants", "s99", "-q"]) == 2
    assert "s99" in capsys.readouterr().err


# --- bad suites: each ends with a grade and a reason --------------------------------------------

def test_a_missing_path_is_an_error():
    with pytest.raises(SuiteNotFound, match="does not exist") as info:
        grade(SUITES / "no_such_suite")
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("option", "value"), [
    ("jobs", 0), ("timeout_factor", 0.0), ("min_timeout", -1.0), ("clean_timeout", 0.0),
    ("decoys", -1),
])
def test_bad_options_are_refused(option, value):
    with pytest.raises(InvalidArgument, match=option):
        grade(EXAMPLE, **{option: value})


def _assert_not_graded(result: GradeResult, *phrases: str, total: int = len(CATALOGUE)) -> None:
    assert not result.graded
    assert (result.grade, result.detected) == (0.0, 0)
    assert result.total == total
    assert result.mutants == ()
    for phrase in phrases:
        assert phrase in result.reason, result.reason
    assert result.reason in terminal_report(result)
    assert gradescope_results(result)["score"] == 0
    assert ET.fromstring(junit_xml(result)).find("testsuite").get("failures") == "1"


def test_no_tests():
    _assert_not_graded(grade(SUITES / "empty"), "grade 0", "collected no tests")


def test_failing_on_the_clean_reference_shows_the_failures():
    result = grade(SUITES / "failing_on_clean")
    _assert_not_graded(result, "on the clean reference", "1 failing test")
    assert [f.test for f in result.clean_failures] == [
        "failing_on_clean/test_wrong_expectation.py::test_greedy_wrong_expectation"]
    assert result.clean_tests == 1
    assert "FAILED failing_on_clean/test_wrong_expectation.py::test_greedy_wrong_expectation" in (
        terminal_report(result))


def test_a_hanging_suite():
    result = grade(SUITES / "hanging", clean_timeout=2)
    _assert_not_graded(result, "did not finish within 2 s")


def test_a_suite_that_crashes_the_interpreter():
    _assert_not_graded(grade(SUITES / "crashing"), "crashed the interpreter (SIGSEGV)")


def test_a_suite_that_ends_the_process_early():
    _assert_not_graded(grade(SUITES / "exits_early"), "before pytest finished")


def test_a_suite_that_tests_nothing():
    _assert_not_graded(grade(SUITES / "tests_nothing", mutants=["s01", "s02"], decoys=0),
                       "every function of the reference raises", "tests nothing", total=2)


def test_a_single_test_file_is_a_suite():
    result = grade(EXAMPLE / "test_speculative.py", mutants=["s05", "s11"], decoys=0)
    assert result.graded
    assert [m.state for m in result.mutants] == [MutantState.KILLED, MutantState.SURVIVED]


@pytest.mark.parametrize("dont_write", ["1", ""], ids=["no-bytecode", "bytecode"])
def test_later_runs_see_their_own_code_paths(monkeypatch, dont_write):
    # With bytecode writing on, later runs reuse the clean run's rewritten bytecode, moved.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", dont_write)
    result = grade(SUITES / "code_paths", mutants=["s05"], decoys=1)
    assert result.graded, (result.reason, result.clean_failures)


def test_a_suite_using_the_plugin_fixture_is_graded_the_same_way():
    result = grade(SUITES / "plugin_fixture", mutants=["s05", "s06", "s10"], decoys=0)
    assert result.graded, result.reason
    assert {m.mutant_id: m.state for m in result.mutants} == {
        "s05": MutantState.KILLED, "s06": MutantState.SURVIVED, "s10": MutantState.SURVIVED}


def test_mutants_that_hang_the_suite_time_out():
    result = grade(SUITES / "hangs_on_bugs", mutants=["s04", "s05"], min_timeout=2,
                   timeout_factor=1)
    states = {m.mutant_id: m.state for m in result.mutants}
    assert states == {"s04": MutantState.TIMED_OUT, "s05": MutantState.SURVIVED}
    assert result.time_limit == 2
    assert result.detected == 1
    timed_out = next(m for m in result.mutants if m.mutant_id == "s04")
    assert "time limit of 2 s" in timed_out.reason
    assert mutation_testing_report(result)["files"]["reference/verify.py"]["mutants"][0][
        "status"] == "Timeout"


def test_mutants_that_crash_the_suite_error():
    result = grade(SUITES / "crashes_on_bugs", mutants=["s05", "s04"], decoys=0)
    states = {m.mutant_id: m.state for m in result.mutants}
    assert states == {"s04": MutantState.SURVIVED, "s05": MutantState.ERRORED}
    errored = next(m for m in result.mutants if m.mutant_id == "s05")
    assert "SIGABRT" in errored.reason
    assert result.detected == 1  # errored counts as detected


def test_a_suite_that_writes_files_changes_nothing_outside_its_folders():
    suite = SUITES / "writes_files"
    before = sorted(p.relative_to(suite) for p in suite.rglob("*"))
    home = Path.home()
    home_before = set(os.listdir(home))
    scratch = Path(tempfile.gettempdir()) / "suite_scratch.txt"
    assert not scratch.exists()
    result = grade(suite, mutants=["s05", "s11"], decoys=0)
    assert result.graded
    assert [m.state for m in result.mutants] == [MutantState.KILLED, MutantState.SURVIVED]
    assert sorted(p.relative_to(suite) for p in suite.rglob("*")) == before
    assert set(os.listdir(home)) == home_before
    assert not scratch.exists()
    (note,) = result.notes
    assert "wrote 3 file(s)" in note
    assert "written_by_the_suite.txt" in note and ".suite_settings" in note
    assert "suite_scratch.txt" in note
