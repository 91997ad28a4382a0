"""The hostile tests' process finder: it finds a live noted process, in a PID namespace with a
/proc of its own too, and nothing once the process is gone (without this control a survivor
check could never fail)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._noted_process import noted_host_pid

_ROOT = Path(__file__).resolve().parents[1]
_SLEEPER = (
    "import sys, time; from tests._noted_process import note_this_process; "
    "note_this_process(sys.argv[1]); time.sleep(60)"
)


def _started(prefix: list[str], note: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([*prefix, sys.executable, "-c", _SLEEPER, str(note)], cwd=_ROOT)
    deadline = time.monotonic() + 30
    while not note.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the sleeper never noted"
        time.sleep(0.05)
    return process


def _namespace_prefix() -> list[str] | None:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount", "--mount-proc", "true"],
                           capture_output=True, check=False)  # fmt: skip
    return ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--mount-proc"] \
        if probe.returncode == 0 else None


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "own_pid_namespace"])
def test_a_noted_process_is_found_while_it_lives(sealed, tmp_path):
    prefix = _namespace_prefix() if sealed else []
    if prefix is None:
        pytest.skip("the kernel refuses PID namespaces here")
    note = tmp_path / "pid"
    process = _started(prefix, note)
    try:
        found = noted_host_pid(note.read_text())
        assert found is not None
        if sealed:  # the namespace's pid is small; the host's is another
            assert int(note.read_text().split()[1]) <= 3
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 10
    while noted_host_pid(note.read_text()) is not None:
        assert time.monotonic() < deadline, "a killed process is still found"
        time.sleep(0.05)


def test_a_malformed_note_is_an_error():
    with pytest.raises(AssertionError, match="not a noted process identity"):
        noted_host_pid("4")
