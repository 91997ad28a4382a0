"""Report paths (``--json``, ``--junit``, ``--gradescope``, ``--html``): a regular file or a
new name.

A device, a folder, a link to a device or a mount point is a usage error before anything runs,
and nothing there is touched: as root, ``os.replace`` over ``/dev/full`` would have replaced
the device node with a regular file, and a file bound over the path would have stayed there
(the rename fails with EBUSY) saying whatever the binder wrote.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from spec_verify.cli import main
from spec_verify.cli._json_out import atomic_write, report_path_problem
from spec_verify.results import ExitCode

_COMMANDS = {
    "check": ["check", "--impl", "mutant:s999"],  # a typo: refused, but only after the paths
    "check-runs": ["check", "--tier", "contract", "--quick", "--no-progress"],
    "grade": ["grade", "nowhere"],
}


def _devices() -> list[str]:
    return [d for d in ("/dev/null", "/dev/full") if os.path.exists(d)]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("command", ["check-runs", "grade"])
@pytest.mark.parametrize("option", ["--json", "--junit", "--html"])
def test_a_device_is_a_usage_error_and_stays_a_device(capsys, device, command,
                                                      option) -> None:
    before = os.stat(device)
    assert main([*_COMMANDS[command], option, device]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert f"{option} {device!r}: is a character device" in err
    assert "regular file or a new name" in err and "give a file name" in err
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_a_link_to_a_device_is_refused(tmp_path, capsys) -> None:
    link = tmp_path / "report.json"
    link.symlink_to("/dev/null")
    assert main([*_COMMANDS["check-runs"], "--json", str(link)]) == ExitCode.USAGE_ERROR
    assert "is a character device" in capsys.readouterr().err
    assert link.is_symlink() and os.readlink(link) == "/dev/null"


@pytest.mark.parametrize("command", ["check-runs", "grade"])
def test_a_folder_is_refused_and_a_new_name_or_a_file_is_fine(tmp_path, command) -> None:
    assert report_path_problem("--json", str(tmp_path)) is not None
    assert report_path_problem("--json", str(tmp_path / "new.json")) is None
    (tmp_path / "old.json").write_text("{}")
    assert report_path_problem("--json", str(tmp_path / "old.json")) is None
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    assert "dangling" in str(report_path_problem("--json", str(tmp_path / "dangling")))
    os.mkfifo(tmp_path / "fifo")
    assert "named pipe" in str(report_path_problem("--junit", str(tmp_path / "fifo")))


def test_atomic_write_refuses_a_path_that_became_a_device(tmp_path) -> None:
    link = tmp_path / "report.json"
    link.symlink_to("/dev/null")
    with pytest.raises(OSError, match="character device"):
        atomic_write(link, "{}")
    assert link.is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _unshare_mount() -> list[str] | None:
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return None
    prefix = [unshare, "--mount"] + ([] if os.geteuid() == 0 else ["--user", "--map-root-user"])
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=30, check=False)
    return prefix if probe.returncode == 0 else None


@pytest.mark.parametrize("command", ["check-runs", "grade"])
def test_a_mount_point_is_a_usage_error(tmp_path, command) -> None:
    prefix = _unshare_mount()
    if prefix is None:
        pytest.skip("no mount namespace here (unshare --mount refused)")
    forged = tmp_path / "forged.json"
    forged.write_text('{"passed": true}\n')
    target = tmp_path / "report.json"
    target.write_text("")
    # A private mount namespace: the bind never reaches the host's mounts.
    script = (f"mount --bind {forged} {target} && exec {sys.executable} -m spec_verify "
              + " ".join(_COMMANDS[command]) + f" --json {target}")
    run = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == ExitCode.USAGE_ERROR, run.stderr
    assert f"--json {str(target)!r}: is a mount point" in run.stderr
    assert "Traceback" not in run.stderr
    assert target.read_text() == ""  # the host's file: untouched


def test_grade_reports_are_written_atomically(tmp_path, monkeypatch, capsys) -> None:
    """A grade's report replaces the old file in one rename (no half-written JSON)."""
    import spec_verify.cli._grade as grade_cli

    calls: list[Path] = []
    real = grade_cli.atomic_write

    def spy(path: Path, text: str) -> None:
        calls.append(path)
        real(path, text)

    monkeypatch.setattr(grade_cli, "atomic_write", spy)

    class Args:
        json = str(tmp_path / "r.json")
        gradescope = None
        junit = str(tmp_path / "r.xml")
        html = str(tmp_path / "r.html")
        fail_under = 0.0

    from spec_verify.mutants.grader import GradeResult

    result = GradeResult(grade=0.0, detected=0, total=0, graded=False, reason="x", mutants=(),
                         suite="s", clean_seconds=(), clean_tests=0)
    assert grade_cli._write_reports(Args(), result)
    assert calls == [tmp_path / "r.json", tmp_path / "r.xml", tmp_path / "r.html"]
    assert (tmp_path / "r.json").read_text().startswith("{")
