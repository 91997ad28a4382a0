"""The grader's fork server kills each run's whole tree (``ipc.supervisor.kill_tree``): a
suite that plants a daemon (fork, ``setsid``, fork, sleep) leaves nothing running, whether
the run ends on its own or by its time limit, sealed in namespaces or not. Each run first
checks that no run before it left its daemon (one run at a time), then plants its own."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from spec_verify.mutants.grader import run_mutants

SUITE = Path(__file__).resolve().parent / "suites" / "daemon"


def _running_with(marker: str) -> list[int]:
    """The pids on this machine whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in words:
            found.append(int(entry))
    return found


def test_the_scan_finds_a_planted_daemon() -> None:
    """The negative control: a daemon planted outside the grader is found by the same scan."""
    marker = f"sv-{uuid.uuid4().hex}"
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker],
                              start_new_session=True)
    try:
        assert _running_with(marker) == [daemon.pid]
    finally:
        daemon.kill()
        daemon.wait()
    assert _running_with(marker) == []


@pytest.mark.slow
@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "unsealed"])
def test_a_run_s_daemon_is_killed_and_no_survivor_is_reported(
    sealed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"sv-{uuid.uuid4().hex}"
    monkeypatch.setenv("SV_DAEMON_MARKER", marker)
    if sealed:
        monkeypatch.delenv("SPEC_VERIFY_NO_PID_NAMESPACE", raising=False)
    else:
        monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    passes = "test_daemon.py::test_nothing_left_then_plants_a_daemon_and_passes"
    hangs = "test_daemon.py::test_nothing_left_then_plants_a_daemon_and_hangs"
    outcomes = run_mutants(SUITE, {None: [passes], "s01": [hangs], "s02": [passes]},
                           timeout=8.0, jobs=1)
    for key in (None, "s02"):  # ran after another run planted, in whatever order they ran
        assert outcomes[key].kind == "exited" and outcomes[key].code == 0, (
            outcomes[key].failures, outcomes[key].output[-2000:])
    assert outcomes["s01"].kind == "timed_out", outcomes["s01"].output[-2000:]
    assert all(outcome.survivors == () for outcome in outcomes.values())
    assert _running_with(marker) == []
