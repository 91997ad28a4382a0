"""Grading at scale: a folder of submissions (CSV + table) and the Gradescope bundle."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from spec_verify.cli import main
from spec_verify.errors import InvalidArgument
from spec_verify.mutants.batch import (
    CSV_FIELDS,
    SubmissionGrade,
    grade_submissions,
    submissions_in,
    summary_table,
    write_csv,
)
from spec_verify.mutants.grader import GradeResult, Refusal
from spec_verify.mutants.gradescope import CONFIG_NAME, run, write_bundle

SUITES = Path(__file__).resolve().parent / "suites"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "graded_suite"


def _result(graded: bool, detected: int = 0, reason: str = "r") -> GradeResult:
    return GradeResult(grade=detected / 4 if graded else 0.0, detected=detected, total=4,
                       graded=graded, reason=reason, mutants=(), suite="s",
                       refusal=Refusal.NONE if graded else Refusal.FLAKY)


def test_the_table_and_the_csv(tmp_path):
    rows = [SubmissionGrade("alice", _result(True, 3)),
            SubmissionGrade("bob", _result(False, reason="grade 0: the suite is flaky\nfull")),
            SubmissionGrade("carol", None, error="OSError: disk full")]
    table = summary_table(rows)
    assert "alice" in table and "75.0%" in table and "3/4" in table
    assert "flaky: grade 0: the suite is flaky full" in table
    assert "3 submissions: 1 graded, 2 not graded (flaky 1, grader error 1)" in table
    path = tmp_path / "grades.csv"
    write_csv(rows, path)
    with open(path, newline="") as handle:
        read = list(csv.DictReader(handle))
    assert tuple(read[0]) == CSV_FIELDS
    assert [r["submission"] for r in read] == ["alice", "bob", "carol"]
    assert read[0]["grade_percent"] == "75.0" and read[1]["refusal"] == "flaky"
    assert read[1]["reason"] == "grade 0: the suite is flaky full"  # whole, on one line
    assert read[2]["reason"] == "OSError: disk full"


def test_a_folder_without_submissions_is_refused(tmp_path):
    with pytest.raises(InvalidArgument, match="no submission folder"):
        submissions_in(tmp_path)
    with pytest.raises(InvalidArgument, match="must be a folder"):
        submissions_in(tmp_path / "missing")
    (tmp_path / "alice").mkdir()
    (tmp_path / ".git").mkdir()
    assert [p.name for p in submissions_in(tmp_path)] == ["alice"]


def test_the_bundle(tmp_path):
    # the checkout explicitly: under a regular install the running package is not one
    checkout = Path(__file__).resolve().parents[2]
    bundle = write_bundle(tmp_path / "out", {"mutants": ["s05"], "decoys": 4}, source=checkout)
    out = tmp_path / "out"
    for name in ("setup.sh", "run_autograder"):
        assert os.access(out / name, os.X_OK)
        assert (out / name).read_text().startswith("#!/usr/bin/env bash")
    assert "spec_verify.mutants.gradescope run" in (out / "run_autograder").read_text()
    config = json.loads((out / CONFIG_NAME).read_text())
    assert config["mutants"] == ["s05"] and config["decoys"] == 4 and config["repeats"] == 3
    names = set(zipfile.ZipFile(bundle).namelist())
    assert {"setup.sh", "run_autograder", CONFIG_NAME} <= names
    assert "source/pyproject.toml" in names and "source/reference/verify.py" in names
    info = zipfile.ZipFile(bundle).getinfo("run_autograder")
    assert (info.external_attr >> 16) & 0o111  # executable in the zip too
    with pytest.raises(InvalidArgument, match="options grade does not take"):
        write_bundle(tmp_path / "bad", {"maxfail": 1})


def test_the_grader_always_writes_results(tmp_path):
    (tmp_path / "results").mkdir()
    data = run(tmp_path)  # no submission folder at all
    assert data["score"] == 0
    assert "could not grade this submission" in data["output"]
    assert json.loads((tmp_path / "results" / "results.json").read_text()) == data


@pytest.mark.slow
def test_a_folder_of_submissions(tmp_path, capsys):
    submissions = tmp_path / "submissions"
    shutil.copytree(SUITES / "with_helpers", submissions / "alice")
    (submissions / "alice" / "test_not_graded.py").unlink()
    shutil.copytree(SUITES / "failing_on_clean", submissions / "bob")
    shutil.copytree(SUITES / "empty", submissions / "carol")
    table = tmp_path / "grades.csv"
    code = main(["grade", str(submissions), "--submissions", "--csv", str(table),
                 "--mutants", "s05,s11", "-q"])
    out = capsys.readouterr().out
    assert code == 0
    with open(table, newline="") as handle:
        rows = {r["submission"]: r for r in csv.DictReader(handle)}
    assert rows["alice"]["grade_percent"] == "50.0" and rows["alice"]["graded"] == "True"
    assert rows["bob"]["refusal"] == Refusal.FAILING.value
    assert "collected no tests" in rows["carol"]["reason"]
    assert "3 submissions: 1 graded, 2 not graded" in out
    assert grade_submissions  # the library face is what the CLI calls


@pytest.mark.slow
def test_the_bundle_grades_a_submission_laid_out_as_gradescope_does(tmp_path):
    root = tmp_path / "autograder"  # stands for /autograder
    write_bundle(root / "source", {"mutants": ["s05", "s11"]})
    shutil.copytree(EXAMPLE, root / "submission")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "SPEC_VERIFY_PYTHON": sys.executable}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert (results["score"], results["max_score"]) == (1, 2)
    assert {t["number"]: t["status"] for t in results["tests"]} == {
        "s05": "passed", "s11": "failed"}


CATALOGUE = Path(__file__).resolve().parents[2] / "examples" / "custom_catalogue"
# kills c02 (a forbidden draft accepted at u = 0) and misses c01 (min-p's threshold)
_KILLS_C02 = '''
import numpy as np
from spec_verify.reference import speculative_step


def test_a_forbidden_draft_is_rejected():
    assert speculative_step(np.array([1.0, 0.0]), np.array([0.5, 0.5]), 1, 0.0, 0.5) == (0, False)
'''


def test_the_bundle_carries_the_catalogue_and_refuses_a_broken_one(tmp_path, capsys):
    checkout = Path(__file__).resolve().parents[2]
    bundle = write_bundle(tmp_path / "out", {"mutants": ["c01", "c02"]}, source=checkout,
                          catalogue=CATALOGUE / "catalogue.json")
    config = json.loads((tmp_path / "out" / CONFIG_NAME).read_text())
    assert config["catalogue"] == "catalogue/catalogue.json"
    names = set(zipfile.ZipFile(bundle).namelist())
    assert {"catalogue/catalogue.json", "catalogue/test_private.py"} <= names
    # a catalogue that would not grade is refused when the bundle is written, the entry named
    broken = tmp_path / "broken"
    shutil.copytree(CATALOGUE, broken)
    data = json.loads((broken / "catalogue.json").read_text())
    data["mutants"][1]["id"] = "c01"
    (broken / "catalogue.json").write_text(json.dumps(data))
    with pytest.raises(InvalidArgument, match="entry c01: the id is repeated"):
        write_bundle(tmp_path / "bad", catalogue=broken / "catalogue.json")
    with pytest.raises(InvalidArgument, match="write_bundle's catalogue argument"):
        write_bundle(tmp_path / "bad", {"catalogue": "x.json"})
    # the command line: exit 2 and one line naming the entry
    assert main(["gradescope-bundle", str(tmp_path / "cli"), "--catalogue",
                 str(broken / "catalogue.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entry c01: the id is repeated" in err, err
    assert main(["gradescope-bundle", str(tmp_path / "cli"), "--mutants", "c01",
                 "--catalogue", str(CATALOGUE / "catalogue.json")]) == 0
    assert json.loads((tmp_path / "cli" / CONFIG_NAME).read_text())["catalogue"] == (
        "catalogue/catalogue.json")


@pytest.mark.slow
def test_the_bundle_grades_against_its_catalogue(tmp_path):
    root = tmp_path / "autograder"
    write_bundle(root / "source", {"mutants": ["c01", "c02"]},
                 catalogue=CATALOGUE / "catalogue.json")
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "test_mine.py").write_text(_KILLS_C02)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "SPEC_VERIFY_PYTHON": sys.executable}
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert (results["score"], results["max_score"]) == (1, 2), results["output"]
    tests = {t["number"]: t for t in results["tests"]}
    assert {n: t["status"] for n, t in tests.items()} == {"c01": "failed", "c02": "passed"}
    assert "hint: min-p keeps every token" in tests["c01"]["output"]  # the survivor's hint
    assert "hint" not in tests["c02"]["output"]
