"""A generator's worker is supervised as a check worker is (``spec_verify/ipc/supervisor.py``):
one that hangs, crashes or raises after starting a daemon (fork, ``setsid()``, fork) is
reported as the generator's failure, and nothing it started is left running, sealed in a PID
namespace or not. The negative controls plant the supervision's bugs: the old ``killpg``-only
worker leaves the daemon running, and a kill that misses descendants is caught by
``kill_tree``'s proof and reported."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from spec_verify.endtoend import _draw, draw_sequences
from spec_verify.ipc import supervisor
from tests._noted_process import noted_host_pid

GENERATORS = Path(__file__).with_name("generators.py")
_OLD_BOOT = (  # the worker before the supervisor: sandbox only, then killpg from the harness
    "import json, runpy, sys; plan = json.loads(sys.argv.pop(2)); "
    "runpy.run_path(sys.argv[1], run_name='__main__')"
)
CASES = [
    ("daemon_then_hangs", "did not return within 1 s"),
    ("daemon_then_exits", "ended its process (exit code 4)"),
    ("daemon_then_raises", "raised RuntimeError: DAEMON"),
]


def _namespaces() -> bool:
    from spec_verify.adapters._process import _namespace_prefix

    return _namespace_prefix() is not None


def _draw_one(name: str) -> tuple[_draw.DrawOutcome, int | None]:
    """Draw from generator ``name``; the outcome and the host pid of its daemon if it runs."""
    outcome = draw_sequences(
        {"A": f"python:{GENERATORS}:{name}"}, 2, length=2, vocab_size=3, workers=1, timeout=1
    )
    assert outcome.failures, "the generator was not reported"
    text = " ".join(f"{f.reason} {f.detail}" for f in outcome.failures)
    found = re.search(r"DAEMON (pid:\[\d+\] \d+ \d+)", text)
    assert found, text
    time.sleep(0.1)  # a kill is asynchronous
    return outcome, noted_host_pid(found.group(1))


def _kill_leftover(pid: int | None) -> None:
    if pid is not None:
        os.kill(pid, signal.SIGKILL)


# Sealed, the namespace's end kills what is left (the kernel's guarantee): slow-marked, as the
# unsealed fallback is what this module's supervision adds.
@pytest.mark.parametrize(
    "sealed", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["unsealed", "sealed"]
)
@pytest.mark.parametrize(("name", "reason"), CASES, ids=[c[0] for c in CASES])
def test_a_generator_that_starts_a_daemon_is_reported_and_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, sealed: bool, name: str, reason: str
) -> None:
    if sealed and not _namespaces():
        pytest.skip("the kernel refuses the namespaces here")
    if not sealed:
        monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    outcome, leftover = _draw_one(name)
    _kill_leftover(leftover)
    (failure,) = outcome.failures
    assert reason in failure.reason and failure.label == "A", failure
    assert leftover is None, f"the daemon of {name} outlived its worker"


def test_control_the_killpg_only_worker_leaves_the_daemon_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    monkeypatch.setattr(_draw, "_BOOT", _OLD_BOOT)

    def killpg_only(pid: int) -> list[int]:
        os.killpg(pid, signal.SIGKILL)
        return []

    monkeypatch.setattr(_draw, "kill_tree", killpg_only)
    _, leftover = _draw_one("daemon_then_hangs")
    _kill_leftover(leftover)
    assert leftover is not None, "the control's daemon should have outlived its worker"


def test_control_a_kill_that_misses_descendants_is_caught_by_the_proof(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    monkeypatch.setattr(supervisor, "_kill_descendants", lambda tree: None)
    outcome, leftover = _draw_one("daemon_then_hangs")
    _kill_leftover(leftover)
    assert leftover is not None
    left = [f for f in outcome.failures if "processes running after its worker" in f.reason]
    assert left and str(leftover) in left[0].reason, outcome.failures


def test_kill_tree_proves_a_tree_gone_and_names_what_it_missed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = ("import os, sys, time\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    print(os.getpid(), flush=True); time.sleep(3600)\n"
              "time.sleep(3600)\n")  # fmt: skip
    for planted in (False, True):
        if planted:
            monkeypatch.setattr(supervisor, "_kill_descendants", lambda tree: None)
        root = subprocess.Popen(
            ["python3", "-c", script], stdout=subprocess.PIPE, start_new_session=True
        )
        assert root.stdout is not None
        child = int(root.stdout.readline())
        survivors = supervisor.kill_tree(root.pid)
        root.wait()
        root.stdout.close()
        if planted:
            assert survivors == [child]
            os.kill(child, signal.SIGKILL)
        else:
            assert survivors == [] and not supervisor.alive(child)
