"""A graded suite that plants a daemon: fork, ``setsid``, fork again, sleep (not collected by
our own runs; ``tests/mutants/test_supervised_runs.py`` grades it)."""

import os
import subprocess
import sys

MARKER = os.environ.get("SV_DAEMON_MARKER", "sv-daemon-marker")


def _plant() -> None:
    code = f"import time; time.sleep(600)  # {MARKER}"
    if os.fork() == 0:
        os.setsid()
        subprocess.Popen([sys.executable, "-c", code, MARKER], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        os._exit(0)
    os.wait()


def _left_running() -> list[str]:
    """The processes of this machine (of this namespace, when sealed) holding the marker: a
    daemon an earlier run planted."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
        except OSError:
            continue
        if MARKER.encode() in words:
            found.append(entry)
    return found


def test_nothing_left_then_plants_a_daemon_and_passes() -> None:
    assert _left_running() == []
    _plant()


def test_nothing_left_then_plants_a_daemon_and_hangs() -> None:
    assert _left_running() == []
    _plant()
    import time

    time.sleep(600)
