"""Where the kernel refuses namespaces (simulated by ``SPEC_VERIFY_NO_PID_NAMESPACE=1``, the
switch the sandbox honours): ``grade`` refuses on one line naming why, exit 2, before any run;
with ``--allow-unsealed`` it grades and every report says which protection held."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spec_verify.results import ExitCode

SUITES = Path(__file__).resolve().parent / "suites"
_SUITE = SUITES / "with_helpers" / "test_graded.py"
_GRADE = [sys.executable, "-m", "spec_verify", "grade", str(_SUITE),
          "--mutants", "s05", "--repeats", "1", "--decoys", "1", "--confirmations", "1",
          "--clean-reruns", "1", "-j", "2"]


def _grade(tmp_path: Path, *extra: str, unsealed: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPEC_VERIFY_NO_PID_NAMESPACE"}
    if unsealed:
        env["SPEC_VERIFY_NO_PID_NAMESPACE"] = "1"
    return subprocess.run([*_GRADE, *extra], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False)


def test_an_unsealed_grading_is_refused_on_one_line_before_any_run(tmp_path) -> None:
    done = _grade(tmp_path, "--json", str(tmp_path / "grade.json"))
    assert done.returncode == ExitCode.USAGE_ERROR, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, done.stderr
    assert "cannot be sealed off" in errors[0] and "--allow-unsealed" in errors[0]
    assert "SPEC_VERIFY_NO_PID_NAMESPACE" in errors[0]  # why: the protection that did not hold
    assert "mutant s05" not in done.stderr  # no run started


@pytest.mark.slow  # a whole (small) grading: about 10 s on 2 idle cores
def test_allowed_unsealed_every_report_says_what_held(tmp_path) -> None:
    files = {name: tmp_path / name for name in ("grade.json", "results.json", "junit.xml")}
    done = _grade(tmp_path, "--allow-unsealed", "--json", str(files["grade.json"]),
                  "--gradescope", str(files["results.json"]), "--junit", str(files["junit.xml"]))
    assert done.returncode == ExitCode.PASSED, done.stderr + done.stdout
    said = "sandbox: nothing held"
    # up front: the progress says it before the first run's line
    assert said in done.stderr.splitlines()[0], done.stderr
    assert said in done.stdout  # the terminal report
    sandbox = json.loads(files["grade.json"].read_text())["sandbox"]
    assert sandbox["sealed"] is False and "SPEC_VERIFY_NO_PID_NAMESPACE" in sandbox["why_not"][0]
    assert said in json.loads(files["results.json"].read_text())["output"]
    properties = {p.get("name"): p.get("value")
                  for p in ET.parse(files["junit.xml"]).iter("property")}
    assert said in properties["sandbox"]
