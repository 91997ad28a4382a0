"""The CI recipe for ports (action.yml, its steps in action/run.sh), run locally: the env
mapping is read from action.yml, the script builds a port and gates it, and the job summary,
the JUnit file and the exit code agree. The port runs reuse the tests' built libraries
(tests/ffi/conftest.py) at --quick sizes on the fast tiers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spec_verify.results import ExitCode

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "action" / "run.sh"
FAST = "--quick --tier contract --tier greedy"


def _action() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "action.yml").read_text())


def _step_env(inputs: dict[str, str]) -> dict[str, str]:
    """The run.sh step's env with ``${{ inputs.X }}`` replaced as GitHub would (defaults for
    what is not given)."""
    action = _action()
    defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    unknown = set(inputs) - set(defaults)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    values = {**defaults, "spec-verify": "", **inputs}  # the test's installed spec-verify
    (step,) = [s for s in action["runs"]["steps"] if "action/run.sh" in s.get("run", "")]
    env = {}
    for name, text in step["env"].items():
        env[name] = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: values[m.group(1)],
                           str(text))
    return env


def _run(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], str]:
    summary = tmp_path / "summary.md"
    env = {**os.environ, **_step_env(inputs), "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(tmp_path / "output"),
           "SPEC_VERIFY": str(Path(sys.executable).parent / "spec-verify")}
    run = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=900, check=False)
    return run, summary.read_text() if summary.exists() else ""


def test_the_action_is_a_composite_whose_step_gets_every_input_as_env():
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert {"build", "library", "profile", "args", "junit"} <= set(action["inputs"])
    (step,) = [s for s in action["runs"]["steps"] if "action/run.sh" in s.get("run", "")]
    assert step["shell"] == "bash"
    mapped = " ".join(str(v) for v in step["env"].values())
    for name in action["inputs"]:
        if name != "python-version":  # the setup-python step's
            assert f"inputs.{name} " in mapped + " ", name
    assert "inputs." not in step["run"]  # inputs reach the shell as env, never as its text


def test_a_failed_build_fails_the_job_and_says_so(tmp_path):
    run, summary = _run(tmp_path, build="echo compiling; exit 7", library="lib.so")
    assert run.returncode == 7, run.stderr
    assert "the port did not build (exit 7)" in summary
    assert not (tmp_path / "spec-verify-junit.xml").exists()


def test_a_missing_library_is_a_usage_error(tmp_path):
    run, summary = _run(tmp_path, build="true", library="target/nothing.so")
    assert run.returncode == ExitCode.USAGE_ERROR
    assert "library 'target/nothing.so' is not a file after the build" in run.stderr
    assert "is not a file" in summary


@pytest.mark.rust
@pytest.mark.slow
def test_the_action_passes_the_port_and_fails_a_planted_bug(tmp_path, rust_port, rust_variants):
    clean, buggy = tmp_path / "clean", tmp_path / "buggy"
    clean.mkdir()
    buggy.mkdir()
    # the "build" copies the tests' built library where the library input says it will be
    run, summary = _run(clean, build=f"mkdir -p out && cp {rust_port} out/port.so",
                        library="out/port.so", args=FAST)
    assert run.returncode == ExitCode.PASSED, run.stdout[-3000:] + run.stderr[-3000:]
    assert summary.startswith("## ✅ spec-verify check: PASSED")
    root = ET.parse(clean / "spec-verify-junit.xml").getroot()
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert int(root.get("tests")) > 0
    assert (clean / "output").read_text() == "exit-code=0\n"

    bug = rust_variants["bug_bonus_wrong_row"]  # rejected by the greedy tier
    run, summary = _run(buggy, build=f"cp {bug} port.so", library="port.so", args=FAST,
                        junit="reports/junit.xml")
    assert run.returncode == ExitCode.FAILED, run.stderr[-3000:]
    assert summary.startswith("## ❌ spec-verify check: FAILED")
    assert re.search(r"^\| greedy/\w+ \| FAIL \| law \| yes \|", summary, re.MULTILINE)
    root = ET.parse(buggy / "reports" / "junit.xml").getroot()
    assert int(root.get("failures")) >= 1
    assert (buggy / "output").read_text() == "exit-code=1\n"
