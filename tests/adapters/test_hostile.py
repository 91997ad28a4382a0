"""Hostile implementations in a worker: the verdict is the harness's, whatever they do.

Each module of ``tests/impls/hostile`` is a wrong sampler with one attack. For each: the run
is not PASSED, it ends well within its time, and no process it started is left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spec_verify._sandbox import Protections
from spec_verify.adapters._process import _namespace_prefix, descendants
from spec_verify.results import ExitCode, Status
from spec_verify.runner import run_checks
from tests._noted_process import noted_host_pid

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

HOSTILE = [
    "patch_verdict",
    "os_exit_in_call",
    "daemon_thread_exit",
    "atexit_exit",
    "ignores_alarm",
    "nondaemon_thread",
    "setsid_child",
    "writes_inputs",
    "appends_to_history",
    "keyboard_interrupt",
    "base_exception",
    "stderr_flood",
    "memory_blowup",
    "garbage_frame",
    "giant_prefix",
    "forged_reply",
    "hangs_in_sleep",
]
if _namespace_prefix() is not None:  # it would stop the test run itself without a namespace
    HOSTILE.append("stops_the_harness")
_LIMIT = 60.0  # seconds a run may take, with a per-call timeout of 2 s


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_implementation_does_not_pass(name, tmp_path, monkeypatch):
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    # Workers of other tests' implementations may still be alive in this process (closed when
    # they are collected): only what this run started counts.
    before = set(descendants(os.getpid()))
    started = time.monotonic()
    report = run_checks(
        f"python:tests.impls.hostile.{name}", tiers=["greedy"], quick=True, timeout=2.0,
    )  # fmt: skip
    assert time.monotonic() - started < _LIMIT
    assert not report.passed, [r.message for r in report.results]
    assert any(r.status in (Status.FAILED, Status.ERROR) for r in report.results)
    left = [p for p in descendants(os.getpid()) if p not in before and _alive(p)]
    assert not left, "a process was left behind"
    if pid_file.exists():
        assert noted_host_pid(pid_file.read_text()) is None, "the setsid() grandchild survived"


def test_failure_messages_quote_the_workers_output():
    report = run_checks("python:tests.impls.hostile.os_exit_in_call", tiers=["greedy"],
                        quick=True, timeout=2.0)  # fmt: skip
    text = " ".join(r.message for r in report.results)
    assert "exited with status 0" in text and "worker process" in text


def test_a_flood_is_kept_bounded_and_quoted():
    from spec_verify.adapters._loader import load_implementation

    impl = load_implementation("python:tests.impls.hostile.stderr_flood", in_process=False)
    try:
        impl.module.verify_draft(None, [], None, None, [], None)
        session = impl._session  # type: ignore[attr-defined]
        time.sleep(0.5)
        tail = session.worker.output_tail()
        assert "flood" in tail and len(tail) < 4000
    finally:
        impl.close()  # type: ignore[attr-defined]


def test_exit_at_import_is_a_load_failure():
    report = run_checks("python:tests.impls.hostile.exit_at_import", tiers=["greedy"])
    assert not report.passed
    assert report.results[0].tier == "load"
    assert "SystemExit" in report.results[0].message
    # its code ran in a worker: the report says what that worker's sandbox held, as any other
    held = Protections.from_json(report.sandbox)
    assert report.to_json()["sandbox"] == held.to_json() and held.uid != -1, report.sandbox


def test_a_spec_refused_before_any_worker_reports_no_sandbox():
    """The control: nothing of the implementation ran, so no sandbox is claimed."""
    report = run_checks("python:", tiers=["greedy"])
    assert report.results[0].tier == "load" and report.sandbox is None


@pytest.mark.parametrize("name", ["patch_verdict", "atexit_exit", "keyboard_interrupt"])
def test_the_cli_exit_code_is_the_harness_verdict(name, tmp_path):
    report = tmp_path / "r.json"
    process = subprocess.run(
        [sys.executable, "-m", "spec_verify.cli", "check", "--impl",
         f"python:tests.impls.hostile.{name}", "--tier", "greedy", "--quick", "--timeout", "2",
         "--json", str(report), "--no-progress"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2], check=False,
    )  # fmt: skip
    assert process.returncode == ExitCode.FAILED, process.stdout + process.stderr
    assert json.loads(report.read_text())["passed"] is False
