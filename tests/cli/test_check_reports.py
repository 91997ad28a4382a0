"""The report files of ``spec-verify check`` fail closed: claimed before any work, replaced
atomically, never stale, written when interrupted and when stdout is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from spec_verify.cli import main
from spec_verify.results import ExitCode

_CLI = [sys.executable, "-m", "spec_verify.cli"]


def test_an_unwritable_report_path_is_a_usage_error_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    started = time.monotonic()
    code = main(["check", "--json", str(blocker / "r.json"), "--no-progress"])
    assert code == ExitCode.USAGE_ERROR
    assert time.monotonic() - started < 5  # no tier ran
    assert "cannot write the report" in capsys.readouterr().err
    assert main(["check", "--junit", str(tmp_path), "--no-progress"]) == ExitCode.USAGE_ERROR


def test_a_stale_passing_report_is_replaced_when_nothing_loads(tmp_path, capsys):
    report = tmp_path / "r.json"
    junit = tmp_path / "r.xml"
    report.write_text(json.dumps({"passed": True}))
    junit.write_text("<testsuites failures='0' errors='0'/>")
    code = main(["check", "--impl", "python:no_such_module_here", "--json", str(report),
                 "--junit", str(junit), "--no-progress"])  # fmt: skip
    assert code == ExitCode.USAGE_ERROR  # a module that is nowhere: nothing was checked
    data = json.loads(report.read_text())
    assert data["passed"] is False and data["state"] == "usage_error"
    assert "no_such_module_here" in data["results"][0]["message"]
    assert ET.parse(junit).getroot().get("errors") == "1"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp left


def test_relative_report_paths_are_fixed_at_the_start(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--tier", "contract", "--quick", "--json", "r.json", "--no-progress"])
    assert code == ExitCode.PASSED
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["passed"] is True and data["state"] == "complete"


def _wait_for_state(path: Path, state: str, timeout: float = 60.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        if data.get("state") == state:
            return data
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached state {state!r}")


def _wait_for_a_worker(pid: int, timeout: float = 60.0) -> None:
    """Until ``pid`` has a child (its implementation's worker): on a loaded machine a fixed
    sleep may end before the run reached its tier."""
    from spec_verify.adapters._process import descendants

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if descendants(pid):
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never started a worker")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_run_writes_an_interrupted_report(tmp_path, signum):
    report = tmp_path / "r.json"
    process = subprocess.Popen(
        [*_CLI, "check", "--tier", "statistical", "--json", str(report), "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path,
        # a background shell starts pytest with SIGINT ignored, and children inherit that
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )  # fmt: skip
    running = _wait_for_state(report, "running")
    assert running["passed"] is False
    _wait_for_a_worker(process.pid)  # inside the tier: the implementation's worker is running
    time.sleep(0.5)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == ExitCode.INTERRUPTED, err
    data = json.loads(report.read_text())
    assert data["passed"] is False and data["state"] == "interrupted"


def test_a_closed_stdout_does_not_stop_the_reports(tmp_path):
    report = tmp_path / "r.json"
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout fails with a broken pipe
    process = subprocess.run(
        [*_CLI, "check", "--tier", "contract", "--quick", "--json", str(report), "--no-progress"],
        stdout=write_end, stderr=subprocess.PIPE, cwd=tmp_path, timeout=300, check=False,
    )  # fmt: skip
    os.close(write_end)
    assert process.returncode == ExitCode.PASSED, process.stderr
    data = json.loads(report.read_text())
    assert data["passed"] is True and data["state"] == "complete"
