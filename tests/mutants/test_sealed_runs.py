"""Every graded run sealed off (``spec_verify/_sandbox.py``, ``mutants/_worker._seal``): a
suite sees no process of the grading, reaches no memory or page table of the sampler, and
nothing it starts outlives its run; a killed fork server refuses the suite as harmful; a
stopped grading leaves nothing on disk. The suites are in ``suites/`` (``sealed``,
``kills_sampler``, ``sleeps``); none can damage anything if the sandbox fails."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spec_verify.cli import main
from spec_verify.mutants._runner import HarmfulRun, RunPool
from spec_verify.mutants.grader import Refusal, grade
from spec_verify.results import ExitCode

SUITES = Path(__file__).resolve().parent / "suites"


def _reached(result) -> dict[str, str]:
    messages = [f.message for f in result.clean_failures if "REACHED " in f.message]
    assert messages, result.reason
    text = messages[0].split("REACHED ", 1)[1]
    return json.loads(text[: text.index("}") + 1])


def _sealed() -> bool:
    with RunPool(SUITES / "sealed") as pool:
        return bool(pool.sandbox.get("sealed"))


@contextlib.contextmanager
def _host_counter_files():
    """The counting suite's fixed host files (``spec-verify-cheat-count`` in /tmp and
    /dev/shm), held under a host-wide lock: two tests that grade it on different xdist
    workers would otherwise see each other's counts. Removed before and after."""
    leftovers = [Path(f, "spec-verify-cheat-count") for f in ("/tmp", "/dev/shm")]
    with open("/tmp/spec-verify-cheat-count.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for path in leftovers:
                path.unlink(missing_ok=True)
            yield leftovers
        finally:
            for path in leftovers:
                path.unlink(missing_ok=True)


def test_a_sealed_run_reaches_nothing_and_its_daemon_dies(tmp_path, monkeypatch,
                                                          capsys) -> None:
    if not _sealed():
        pytest.skip("the kernel refuses the namespaces here")
    report = tmp_path / "reports" / "grade.json"
    report.parent.mkdir()
    monkeypatch.setenv("SV_CHEAT_REPORT", str(report))
    code = main(["grade", str(SUITES / "sealed"), "--mutants", "s01", "--repeats", "1",
                 "--json", str(report), "-q"])  # fmt: skip
    assert code == ExitCode.FAILED
    written = report.read_text()
    time.sleep(2.0)  # the daemon would have written by now
    assert report.read_text() == written and "forged" not in written
    data = json.loads(written)
    assert data["sandbox"]["sealed"] is True, data["sandbox"]
    out = capsys.readouterr().out
    assert "REACHED" in out
    result = grade(SUITES / "sealed", mutants=["s01"], repeats=1)
    reached = _reached(result)
    assert {k: v for k, v in reached.items() if v == "yes"} == {}, reached
    if os.geteuid() == 0:
        assert reached["uid"] == "65534"
    assert result.sandbox is not None and result.sandbox["uid"] == (
        65534 if os.geteuid() == 0 else os.getuid())


def test_unsealed_the_suite_reaches_the_sampler_and_its_daemon_still_dies(
        tmp_path, monkeypatch) -> None:
    """The control (``--allow-unsealed``): the same suite sees the sampler and the grader,
    and even then the subreaper kills its daemon before the report is written."""
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    report = tmp_path / "grade.json"
    monkeypatch.setenv("SV_CHEAT_REPORT", str(report))
    assert main(["grade", str(SUITES / "sealed"), "--mutants", "s01", "--repeats", "1",
                 "--json", str(report), "-q"]) == ExitCode.USAGE_ERROR  # refused up front
    assert not report.exists()
    result = grade(SUITES / "sealed", mutants=["s01"], repeats=1, allow_unsealed=True)
    reached = _reached(result)
    assert reached["sampler"] == "yes" and reached["grader"] == "yes"
    assert result.sandbox is not None and result.sandbox["sealed"] is False
    time.sleep(2.0)
    assert not report.exists()  # the daemon was killed with the grading


def test_a_suite_that_kills_the_sampler_is_refused_as_harmful(monkeypatch) -> None:
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")  # sealed, it cannot see it
    result = grade(SUITES / "kills_sampler", mutants=["s01", "s02"], repeats=2,
                   allow_unsealed=True, jobs=1)
    assert not result.graded and result.refusal is Refusal.HARMFUL, result.reason
    assert "killed the grader's sampler" in result.reason
    assert "please report" not in result.reason


def test_a_killed_sampler_is_a_harmful_run_not_an_internal_error() -> None:
    with RunPool(SUITES / "sealed") as pool:
        assert pool._sampler is not None
        os.kill(pool._sampler.pid, signal.SIGKILL)
        pool._sampler.wait()
        with pytest.raises(HarmfulRun, match="killed the grader's sampler"):
            pool.precompile([{"x.py": "x = 1\n"}])


def test_sigterm_removes_the_gradings_folder(tmp_path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    grading = subprocess.Popen(
        [sys.executable, "-m", "spec_verify", "grade", str(SUITES / "sleeps"), "--mutants",
         "s01", "--repeats", "1", "-q"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                p.name.startswith("spec-verify-grade-") and any(p.glob("run-*"))
                for p in scratch.iterdir()):
            time.sleep(0.1)
        assert any(scratch.iterdir()), "the grading never started a run"
        time.sleep(0.5)
        grading.send_signal(signal.SIGTERM)
        _, err = grading.communicate(timeout=60)
    finally:
        if grading.poll() is None:
            grading.kill()
            grading.wait()
    assert grading.returncode == ExitCode.INTERRUPTED, err
    assert "SIGTERM" in err
    assert list(scratch.iterdir()) == []


def test_no_run_sees_what_an_earlier_run_left_in_tmp() -> None:
    """Each sealed run gets an empty /tmp and /dev/shm: a suite cannot count its runs there
    (so the clean repeats coming first tells it nothing). Unsealed, the second repeat fails."""
    if not _sealed():
        pytest.skip("the kernel refuses the namespaces here")
    with _host_counter_files() as leftovers:
        result = grade(SUITES / "counts_in_tmp", mutants=["s01"], repeats=3, jobs=1)
        # every clean run passed (its count was 1); it then passes on the canary too
        assert result.refusal is Refusal.TESTS_NOTHING, (result.reason, result.clean_failures)
        assert not any(p.exists() for p in leftovers)


def test_unsealed_the_counting_suite_fails_its_second_run(monkeypatch) -> None:
    monkeypatch.setenv("SPEC_VERIFY_NO_PID_NAMESPACE", "1")
    with _host_counter_files():
        result = grade(SUITES / "counts_in_tmp", mutants=["s01"], repeats=2, jobs=1,
                       allow_unsealed=True)
        assert result.refusal is Refusal.FLAKY, result.reason
