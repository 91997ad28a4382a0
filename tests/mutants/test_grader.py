"""The grader: the example suite's grade, the reports, and every kind of bad suite.

Gradings take tens of seconds each (many runs of a suite), so they are marked slow; the fast
tests check the pieces directly (verdict tables, reports of built results, option checks).
"""

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
from spec_verify.mutants._runner import RunFailure, RunOutcome, RunPool, RunRequest
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.grader import (
    SCORE_DEFINITION,
    GradeResult,
    MutantState,
    Refusal,
    SuiteNotFound,
    _classify,
    _why_not_passing,
    grade,
    pytest_arguments,
)
from spec_verify.mutants.reports import (
    gradescope_results,
    junit_xml,
    mutant_location,
    mutation_testing_report,
    terminal_report,
)
from tests._once import computed_once

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "graded_suite"
SUITES = Path(__file__).resolve().parent / "suites"
# shortest n-gram first; the n-gram draft's context; and every tree mutant (the example suite
# tests chains only)
EXAMPLE_SURVIVORS = {"s11", "s21"} | {f"t{i:02d}" for i in range(1, 13)}
TOTAL = len(CATALOGUE)  # 24 chain and 12 tree mutants


@pytest.fixture(scope="session")
def example_grade(tmp_path_factory) -> GradeResult:
    def graded() -> GradeResult:
        private = tmp_path_factory.mktemp("grader_tmp")  # other graders may share the system's
        saved, tempfile.tempdir = tempfile.tempdir, str(private)
        try:
            result = grade(EXAMPLE)
        finally:
            tempfile.tempdir = saved
        assert list(private.iterdir()) == [], "the grader left a temporary folder behind"
        return result

    return computed_once(tmp_path_factory, "example_grade", graded)


@pytest.mark.slow
def test_the_example_suite_scores_22_of_36(example_grade):
    result = example_grade
    assert result.graded, result.reason
    assert TOTAL == 36
    assert (result.detected, result.total) == (22, TOTAL)
    assert result.grade == pytest.approx(22 / TOTAL)
    assert {m.mutant_id for m in result.mutants if m.state is MutantState.SURVIVED} == (
        EXAMPLE_SURVIVORS)
    assert [m.mutant_id for m in result.mutants] == [m.id for m in CATALOGUE]
    for m in result.mutants:
        if m.state is MutantState.KILLED:
            assert m.killed_by and m.killed_by.startswith("graded_suite/test_speculative.py::")
    assert result.clean_tests == 13
    assert len(result.clean_seconds) == 3  # the default repeats
    assert result.time_limit >= 10.0
    assert result.notes == ()


@pytest.mark.slow
def test_the_grade_is_the_same_every_time(example_grade):
    again = grade(EXAMPLE, mutants=["s03", "s11"], jobs=2, decoys=0, repeats=1)
    by_id = {m.mutant_id: m for m in example_grade.mutants}
    assert [(m.mutant_id, m.state, m.killed_by) for m in again.mutants] == [
        (i, by_id[i].state, by_id[i].killed_by) for i in ("s03", "s11")]


# --- reports ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_terminal_report(example_grade):
    text = terminal_report(example_grade)
    assert "grade: 22/36 detected = 61.1%" in text
    assert "killed 22, survived 14, timed out 0, errored 0" in text
    assert "s11  prompt lookup tries the shortest n-gram first" in text
    survivors = ",".join(sorted(EXAMPLE_SURVIVORS))
    assert f"reproduce: spec-verify grade {EXAMPLE} --mutants {survivors}" in text
    assert SCORE_DEFINITION[:40] in text


STATUSES = {"Killed", "Survived", "NoCoverage", "CompileError", "RuntimeError", "Timeout",
            "Ignored", "Pending"}


@pytest.mark.slow
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


@pytest.mark.slow
def test_gradescope_results(example_grade):
    results = gradescope_results(example_grade)
    assert (results["score"], results["max_score"]) == (22, TOTAL)
    assert len(results["tests"]) == TOTAL
    assert sum(t["score"] for t in results["tests"]) == 22
    assert {t["number"] for t in results["tests"] if t["status"] == "failed"} == EXAMPLE_SURVIVORS
    assert SCORE_DEFINITION in results["output"]


@pytest.mark.slow
def test_junit_xml(example_grade):
    root = ET.fromstring(junit_xml(example_grade))
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("tests") == str(TOTAL + 1)  # every mutant and the clean run
    assert suite.get("failures") == str(len(EXAMPLE_SURVIVORS))
    failed = {case.get("name").split()[0] for case in suite.iter("testcase")
              if case.find("failure") is not None}
    assert failed == EXAMPLE_SURVIVORS


@pytest.mark.slow
def test_cli_grade_writes_every_report(tmp_path, capsys):
    files = {name: tmp_path / name
             for name in ("mte.json", "results.json", "junit.xml", "grade.html")}
    code = main(["grade", str(EXAMPLE), "--mutants", "s05,s11", "-j", "2", "-q", "--decoys", "0",
                 "--json", str(files["mte.json"]), "--gradescope", str(files["results.json"]),
                 "--junit", str(files["junit.xml"]), "--html", str(files["grade.html"]),
                 "--fail-under", "60"])
    out = capsys.readouterr().out
    assert code == 1  # graded, but 50% is under --fail-under 60
    assert "grade: 1/2 detected = 50.0%" in out
    assert json.loads(files["mte.json"].read_text())["schemaVersion"] == "2"
    assert json.loads(files["results.json"].read_text())["score"] == 1
    assert ET.parse(files["junit.xml"]).getroot().tag == "testsuites"
    page = files["grade.html"].read_text()
    assert "<h1>FAILED</h1>" in page and "grade 1/2 detected = 50.0%" in page
    assert page.count("hint: ") == 1  # the one survivor's pitfall


def test_cli_grade_refuses_bad_input(capsys):
    assert main(["grade", str(SUITES / "no_such_suite"), "-q"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["grade", str(EXAMPLE), "--mutants", "s99", "-q"]) == 2
    assert "s99" in capsys.readouterr().err
    assert main(["grade", str(EXAMPLE), "--confirmations", "0", "-q"]) == 2
    assert "confirmations" in capsys.readouterr().err
    assert main(["grade", str(EXAMPLE), "--csv", "x.csv", "-q"]) == 2  # needs --submissions
    assert "--csv needs --submissions" in capsys.readouterr().err


# --- bad suites: each ends with a grade and a reason --------------------------------------------

def test_a_missing_path_is_an_error():
    with pytest.raises(SuiteNotFound, match="does not exist") as info:
        grade(SUITES / "no_such_suite")
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("option", "value"), [
    ("jobs", 0), ("timeout_factor", 0.0), ("min_timeout", -1.0), ("clean_timeout", 0.0),
    ("decoys", -1), ("repeats", 0), ("confirmations", 0), ("clean_reruns", 0),
    ("clean_reruns", 2.5),
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


@pytest.mark.slow
def test_no_tests():
    _assert_not_graded(grade(SUITES / "empty"), "grade 0", "collected no tests")


@pytest.mark.slow
def test_failing_on_the_clean_reference_shows_the_failures():
    result = grade(SUITES / "failing_on_clean")
    _assert_not_graded(result, "on the clean reference", "1 failing test")
    assert [f.test for f in result.clean_failures] == [
        "failing_on_clean/test_wrong_expectation.py::test_greedy_wrong_expectation"]
    assert result.clean_tests == 1
    assert "FAILED failing_on_clean/test_wrong_expectation.py::test_greedy_wrong_expectation" in (
        terminal_report(result))


@pytest.mark.slow
def test_a_hanging_suite():
    result = grade(SUITES / "hanging", clean_timeout=2)
    _assert_not_graded(result, "did not finish within 2 s")


@pytest.mark.slow
def test_a_suite_that_crashes_the_interpreter():
    _assert_not_graded(grade(SUITES / "crashing"), "crashed the interpreter (SIGSEGV)")


@pytest.mark.slow
def test_a_suite_that_ends_the_process_early():
    _assert_not_graded(grade(SUITES / "exits_early"), "before pytest finished")


@pytest.mark.slow
def test_a_suite_that_tests_nothing():
    _assert_not_graded(grade(SUITES / "tests_nothing", mutants=["s01", "s02"], decoys=0),
                       "every function of the reference raises", "tests nothing", total=2)


@pytest.mark.slow
def test_a_single_test_file_is_a_suite():
    result = grade(EXAMPLE / "test_speculative.py", mutants=["s05", "s11"], decoys=0)
    assert result.graded
    assert [m.state for m in result.mutants] == [MutantState.KILLED, MutantState.SURVIVED]


@pytest.mark.slow
def test_later_runs_see_their_own_code_paths():
    result = grade(SUITES / "code_paths", mutants=["s05"], decoys=1)
    assert result.graded, (result.reason, result.clean_failures)


@pytest.mark.slow
def test_a_suite_using_the_plugin_fixture_is_graded_the_same_way():
    result = grade(SUITES / "plugin_fixture", mutants=["s05", "s06", "s10"], decoys=0)
    assert result.graded, result.reason
    assert {m.mutant_id: m.state for m in result.mutants} == {
        "s05": MutantState.KILLED, "s06": MutantState.SURVIVED, "s10": MutantState.SURVIVED}


@pytest.mark.slow
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


@pytest.mark.slow
def test_mutants_that_crash_the_suite_error():
    result = grade(SUITES / "crashes_on_bugs", mutants=["s05", "s04"], decoys=0)
    states = {m.mutant_id: m.state for m in result.mutants}
    assert states == {"s04": MutantState.SURVIVED, "s05": MutantState.ERRORED}
    errored = next(m for m in result.mutants if m.mutant_id == "s05")
    assert "SIGABRT" in errored.reason
    assert result.detected == 1  # errored counts as detected


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_single_test_file_keeps_its_folders_helpers_and_conftest():
    result = grade(SUITES / "with_helpers" / "test_graded.py", mutants=["s05", "s11"])
    assert result.graded, (result.reason, [f.message for f in result.clean_failures])
    assert [m.state for m in result.mutants] == [MutantState.KILLED, MutantState.SURVIVED]
    assert result.mutants[0].killed_by == "with_helpers/test_graded.py::test_greedy_hand_example"


# --- the pieces, directly (fast) ---------------------------------------------------------------

def _outcome(**fields) -> RunOutcome:
    base = {"kind": "exited", "code": 0, "seconds": 1.0, "finished": True, "collected": 2,
            "passed": 2}
    base.update(fields)
    return RunOutcome(**base)


LONG = "assert " + "x" * 300 + " == 1"


@pytest.mark.parametrize(("outcome", "state", "phrase"), [
    (_outcome(), MutantState.SURVIVED, "all 2 tests passed"),
    (_outcome(code=1, passed=1, failures=(RunFailure("s/t.py::a", LONG),)),
     MutantState.KILLED, LONG),
    (_outcome(kind="timed_out", code=0, finished=False), MutantState.TIMED_OUT, "time limit"),
    (_outcome(kind="signaled", code=11, finished=False), MutantState.ERRORED, "SIGSEGV"),
    (_outcome(code=0, finished=False), MutantState.ERRORED, "before pytest finished"),
    (_outcome(code=2, errors=(RunFailure("s/t.py", "ImportError: x"),)),
     MutantState.ERRORED, "could not be collected"),
])
def test_a_run_is_classified_by_how_it_ended(outcome, state, phrase):
    got, killed_by, reason = _classify(outcome, 10.0)
    assert got is state
    assert phrase in reason  # the whole message: nothing is cut
    assert (killed_by is not None) == (state is MutantState.KILLED)


@pytest.mark.parametrize(("outcome", "phrase"), [
    (_outcome(kind="timed_out", finished=False), "did not finish within 10 s"),
    (_outcome(kind="signaled", code=6, finished=False), "SIGABRT"),
    (_outcome(code=0, finished=False), "os._exit"),
    (_outcome(code=5, collected=0, passed=0), "collected no tests"),
    (_outcome(code=1, failures=(RunFailure("s/t.py::a", "boom"),)), "1 failing test"),
    (_outcome(code=0, passed=0), "ran no test to the end"),
])
def test_why_a_control_run_did_not_pass(outcome, phrase):
    assert not outcome.passed_cleanly
    assert phrase in _why_not_passing(outcome, 10.0)


def test_every_run_gets_the_same_pytest_options():
    args = pytest_arguments()
    assert "-x" in args  # for every run alike: no run is given a different stopping rule
    assert args == pytest_arguments()
    assert not any(a.startswith(("--maxfail", "--tb")) for a in args)


def _refused(reason: str, failures=()) -> GradeResult:
    return GradeResult(grade=0.0, detected=0, total=24, graded=False, reason=reason,
                       mutants=(), suite="s", clean_failures=tuple(failures),
                       refusal=Refusal.FLAKY)


def test_reports_carry_full_messages_and_the_console_may_abbreviate():
    failure = RunFailure("s/t.py::a", LONG, details="def test_a():\n>   " + LONG)
    result = _refused("grade 0: the suite is flaky", [failure])
    full = terminal_report(result)
    assert LONG in full and "def test_a():" in full
    short = terminal_report(result, full=False)
    assert LONG not in short and "FAILED s/t.py::a" in short
    assert LONG in gradescope_results(result)["tests"][0]["output"]
    assert LONG in junit_xml(result)


def test_a_single_file_brings_its_folder(tmp_path):
    (tmp_path / "helpers.py").write_text("X = 1\n")
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "__pycache__").mkdir()
    with RunPool(tmp_path / "test_a.py") as pool:
        assert pool.select == ("test_a.py",)
        prepared = pool._prepare(RunRequest(reference_sources(), [], 10.0))
        copy = prepared.run / tmp_path.name
        assert sorted(p.name for p in copy.iterdir()) == ["conftest.py", "helpers.py",
                                                          "test_a.py"]
        assert prepared.job["args"] == ["test_a.py"]
