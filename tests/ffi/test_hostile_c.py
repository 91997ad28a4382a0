"""Hostile C libraries in a worker: the verdict is the harness's, whatever they do.

The C half of ``tests/adapters/test_hostile.py``. Each ``tests/ffi/hostile/<name>.c`` is a
wrong sampler (it rejects the first draft and emits token 0) with one attack on the process
that loads it: ending it, outliving it, flooding it, starving it, writing onto its socket.
For each: the run is not PASSED, it ends well within its time, and no process it started is
left running, with a PID namespace (the default where the kernel allows it) and without one
for the attacks that leave processes behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from spec_verify.adapters import _process
from spec_verify.adapters._process import descendants
from spec_verify.results import ExitCode, Status
from spec_verify.runner import run_checks
from tests._noted_process import noted_host_pid
from tests.adapters.test_hostile import _alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

# name -> what the failure message must say (None: any FAILED or ERROR will do, e.g. a flood
# may finish its writes or run into the time limit, depending on the machine's load)
HOSTILE_C: dict[str, str | None] = {
    "exit_in_call": "exited with status 0",
    "thread_exit": "exited with status 0",
    "fork_child": None,
    "setsid_grandchild": None,
    "fork_at_load": None,
    "fork_runner": None,
    "flood": None,
    "slow_calls": None,
    "memory_blowup": None,
    "ignores_signals": "did not return within 2 s",
    "stops_itself": "did not return within 2 s",
    "writes_inputs": "modified its input target_logits",
    "forged_reply": None,
    "garbage_bytes": "bad frame magic",
    "giant_prefix": "announced; the limit is",
    "closes_fds": "in the worker process",
    "busy_thread": None,
    "kills_its_group": "crashed with SIGKILL (out of memory, or killed from outside)",
    "clears_subreaper": None,
}
# The attacks that start processes: run again without a PID namespace, where only the
# worker's subreaper and the harness's /proc walk stand between them and the machine.
_SPAWNERS = ["fork_child", "setsid_grandchild", "fork_at_load", "fork_runner", "clears_subreaper"]
_LIMIT = 60.0  # seconds a run may take, with a per-call timeout of 2 s
_ROOT = Path(__file__).resolve().parents[2]


def _check_nothing_survives(pid_file: Path, before: set[int]) -> None:
    left = [p for p in descendants(os.getpid()) if p not in before and _alive(p)]
    assert not left, "a process was left behind"
    if pid_file.exists():
        # fork_runner rewrites the file from each new generation: a change means it runs on
        first = pid_file.read_text()
        time.sleep(0.2)
        assert pid_file.read_text() == first, "the fork runner is still forking"
        assert noted_host_pid(first) is None, "a process the library started survived the run"


def _run_hostile(lib: Path, pid_file: Path, timeout: float = 2.0) -> list[str]:
    """Run the greedy tier on ``lib``; assert what every hostile must show; the messages."""
    before = set(descendants(os.getpid()))
    started = time.monotonic()
    report = run_checks(f"ffi:{lib}", tiers=["greedy"], quick=True, timeout=timeout)
    assert time.monotonic() - started < _LIMIT
    messages = [r.message for r in report.results]
    assert not report.passed, messages
    assert any(r.status in (Status.FAILED, Status.ERROR) for r in report.results)
    _check_nothing_survives(pid_file, before)
    return messages


@pytest.mark.parametrize("name", sorted(HOSTILE_C))
def test_a_hostile_library_does_not_pass(name, hostile_c_libs, tmp_path, monkeypatch):
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    messages = _run_hostile(hostile_c_libs[name], pid_file)
    expected = HOSTILE_C[name]
    if expected is not None:
        assert any(expected in m for m in messages), messages
    if name in _SPAWNERS:
        assert pid_file.exists(), "the library's process never started: the test tests nothing"


# Without a namespace the subreaper flag is the worker's own: cleared, a daemon's orphan goes
# to init, out of reach (the limit docs/threat-model.md states; its sleep ends in 10 s).
# Without a namespace a fork runner and the kill race; the harness usually wins, but under load
# (seen at load 10 in a full run) a fork can slip out. With a namespace (the default where
# unshare works) the kernel ends the race. A stress test, not a gate.
_RACE = pytest.mark.skipif(
    os.environ.get("SPEC_VERIFY_STRESS") != "1",
    reason="a race the harness usually wins without a PID namespace, not a guarantee "
    "(docs/threat-model.md); run with SPEC_VERIFY_STRESS=1",
)

_ESCAPES_TO_INIT = pytest.mark.xfail(
    reason="a library that clears the worker's subreaper flag can daemonise out of its tree "
    "when there is no PID namespace (docs/threat-model.md)",
    strict=True,
)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=_ESCAPES_TO_INIT) if n == "clears_subreaper"
        else pytest.param(n, marks=_RACE) if n == "fork_runner"
        else n
        for n in _SPAWNERS
    ],
)
def test_without_a_pid_namespace_nothing_is_left_behind(
    name, hostile_c_libs, tmp_path, monkeypatch
):
    monkeypatch.setattr(_process, "_namespace_prefix", lambda: None)
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    try:
        _run_hostile(hostile_c_libs[name], pid_file)
        assert pid_file.exists(), "the library's process never started: the test tests nothing"
    finally:
        if pid_file.exists():  # an escape must not outlive its test
            escaped = noted_host_pid(pid_file.read_text())
            if escaped is not None:
                with contextlib.suppress(OSError):
                    os.kill(escaped, signal.SIGKILL)


# A library caller (not a subreaper) starting and closing the fork runner's worker; prints the
# runs after which the runner still ran.
_CALLER = """
import os, sys, time
import numpy as np
from spec_verify.adapters import _process
from spec_verify.adapters._ffi_adapter import FfiImplementation
_process._namespace_prefix = lambda: None
lib, folder, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
for run in range(runs):
    pid_file = os.path.join(folder, f"pid{run}")
    os.environ["HOSTILE_PID_FILE"] = pid_file
    impl = FfiImplementation(lib, timeout=5.0)
    impl.verify_draft(np.zeros((2, 2)), [1], None, impl.params(temperature=0.0), [], None)
    impl.close()
    first = open(pid_file).read()
    time.sleep(0.2)
    if open(pid_file).read() != first:
        print("escaped after run", run)
"""


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("SPEC_VERIFY_STRESS") != "1",
    reason="a race the harness usually wins without a PID namespace, not a guarantee "
    "(docs/threat-model.md): it escaped in 2 of 5 runs on a machine at load 10, so it is a "
    "stress test, run with SPEC_VERIFY_STRESS=1, not a gate",
)
def test_a_fork_runner_does_not_outrun_the_kill_without_a_namespace(hostile_c_libs, tmp_path):
    """The fork runner against a plain library caller, five times. A race, so a weak guard:
    the kill that listed ``/proc`` first and signalled after let the runner escape in 17 of
    41 such runs started from a shell, but in none of 15 started under pytest (why is not
    pinned down); ``kill_tree``, killing as it reads with the worker stopped, let none of
    45 escape."""
    done = subprocess.run(
        [sys.executable, "-c", _CALLER, str(hostile_c_libs["fork_runner"]), str(tmp_path), "5"],
        capture_output=True, text=True, timeout=120, cwd=_ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "escaped" not in done.stdout, done.stdout


def test_a_slow_library_stops_at_the_budget(hostile_c_libs):
    started = time.monotonic()
    report = run_checks(f"ffi:{hostile_c_libs['slow_calls']}", tiers=["parity", "statistical"],
                        quick=True, timeout=2.0, budget=5)  # fmt: skip
    # 2,000 parity cases at 50 ms would take 100 s
    assert time.monotonic() - started < 30
    assert not report.passed
    exhausted = [r for r in report.results if "budget of 5 s is exhausted" in r.message]
    assert exhausted and all(r.status is Status.ERROR for r in exhausted)


@pytest.mark.slow
def test_a_memory_blowup_is_stopped_by_the_workers_limit(hostile_c_libs, tmp_path):
    """With time to reach it, the allocation fails at the worker's RLIMIT_AS (4 GiB): the
    library then returns its wrong answer, which is judged as such (no kill was needed)."""
    messages = _run_hostile(hostile_c_libs["memory_blowup"], tmp_path / "pid", timeout=50.0)
    assert any("emitted [0]" in m for m in messages), messages


def test_the_quoted_output_is_the_librarys(hostile_c_libs, tmp_path):
    # runpy's RuntimeWarning from the worker's start ("found in sys.modules ... unpredictable
    # behaviour") was quoted in every failure message of a namespaced worker
    messages = _run_hostile(hostile_c_libs["exit_in_call"], tmp_path / "pid")
    assert any("exited with status 0" in m for m in messages), messages
    assert not any("RuntimeWarning" in m for m in messages), messages


def test_a_flood_is_kept_bounded_and_quoted(hostile_c_libs):
    from spec_verify.adapters._ffi_adapter import FfiImplementation

    impl = FfiImplementation(hostile_c_libs["flood"], timeout=30.0)
    try:
        p = impl.params(temperature=0.0)
        logits = np.array([[0.0, 1.0], [1.0, 0.0]])
        assert impl.verify_draft(logits, [1], None, p, [], None) == ([0], 0)
        worker = impl._worker
        assert worker is not None
        time.sleep(0.5)
        assert worker._stderr.total >= 100 << 20  # the whole flood went through the ring
        tail = worker.output_tail()
        assert "flood" in tail and len(tail) < 4000
    finally:
        impl.close()


@pytest.mark.parametrize("name", ["exit_in_call", "forged_reply", "ignores_signals",
                                  "fork_runner"])  # fmt: skip
def test_the_cli_report_of_a_hostile_library_says_failed(name, hostile_c_libs, tmp_path):
    report = tmp_path / "r.json"
    process = subprocess.run(
        [sys.executable, "-m", "spec_verify.cli", "check", "--impl",
         f"ffi:{hostile_c_libs[name]}", "--tier", "greedy", "--quick", "--timeout", "2",
         "--budget", "20", "--json", str(report), "--no-progress"],
        capture_output=True, text=True, timeout=120, cwd=_ROOT, check=False,
    )  # fmt: skip
    assert process.returncode == ExitCode.FAILED, process.stdout + process.stderr
    data = json.loads(report.read_text())
    assert data["passed"] is False
