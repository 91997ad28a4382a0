"""The check worker's sandbox (``spec_verify/_sandbox.py``, ``_pid1.py``): a hostile
implementation reaches nothing of the harness, and the report says which protections held.

``tests/impls/hostile/probe.py`` makes each attack stop at the proof that it landed and undo
itself, so a sandbox that fails here damages nothing (the control run below shows every attack
landing without the sandbox, on this machine's real venv, and leaving nothing behind)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spec_verify._sandbox import Protections
from spec_verify.adapters._process import _namespace_prefix
from spec_verify.cli import main
from spec_verify.results import ExitCode

PROBE = Path(__file__).parents[1] / "impls" / "hostile" / "probe.py"
ATTACKS = ("module", "pth", "pyc", "script", "mount", "harness_cmdline", "foreign_mem",
           "report_dir")  # fmt: skip


def _attacks(report: dict) -> dict[str, str]:
    messages = [r["message"] for r in report["results"] if "HOSTILE " in r["message"]]
    assert messages, report["results"]
    text = messages[0].split("HOSTILE ", 1)[1]
    return json.loads(text[: text.index("}") + 1])


def _sealed_here() -> bool:
    prefix = _namespace_prefix()
    return prefix is not None and "--mount-proc" in prefix


@pytest.mark.skipif(not _sealed_here(), reason="the kernel refuses the namespaces here")
def test_a_hostile_worker_reaches_nothing_of_the_harness(tmp_path, monkeypatch,
                                                         capsys) -> None:
    report_path = tmp_path / "reports" / "check.json"
    report_path.parent.mkdir()
    monkeypatch.setenv("HOSTILE_REPORT_DIR", str(report_path.parent))
    code = main(["check", "--impl", f"python:{PROBE}", "--tier", "contract", "--quick",
                 "--no-progress", "--json", str(report_path)])  # fmt: skip
    assert code == ExitCode.FAILED
    report = json.loads(report_path.read_text())
    attacks = _attacks(report)
    assert {name: attacks[name] for name in ATTACKS if attacks[name] == "landed"} == {}
    sandbox = report["sandbox"]
    assert sandbox["sealed"] is True, sandbox
    assert sandbox["pid_namespace"] and sandbox["fresh_proc"] and sandbox["no_new_privs"]
    assert str(report_path.parent) in sandbox["readonly"]
    assert os.path.dirname(os.path.dirname(os.path.abspath(json.__file__))) in " ".join(
        sandbox["readonly"])  # the stdlib
    if os.geteuid() == 0:
        assert sandbox["uid"] == 65534 and attacks["uid"] == "65534"
    assert "not sealed" not in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() != 0, reason="the control needs root (what CI runs as)")
def test_without_the_sandbox_every_attack_lands(tmp_path) -> None:
    """The control: the probe's attacks are real (they fail only because of the sandbox), and
    the report says that nothing was sealed."""
    report_path = tmp_path / "check.json"
    env = {**os.environ, "SPEC_VERIFY_NO_PID_NAMESPACE": "1",
           "HOSTILE_REPORT_DIR": str(tmp_path)}  # fmt: skip
    run = subprocess.run([sys.executable, "-m", "spec_verify", "check", "--impl",
                          f"python:{PROBE}", "--tier", "contract", "--quick", "--no-progress",
                          "--json", str(report_path)], env=env, capture_output=True,
                         text=True, timeout=120, check=False)  # fmt: skip
    assert run.returncode == ExitCode.FAILED, run.stderr
    report = json.loads(report_path.read_text())
    attacks = _attacks(report)
    assert {name for name in ATTACKS if attacks[name] != "landed"} == set(), attacks
    assert report["sandbox"]["sealed"] is False
    assert "no PID namespace" in report["sandbox"]["why_not"][0]
    assert "not sealed off" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["check.json"]  # undone


def test_every_harness_module_is_imported_before_a_worker_starts() -> None:
    """A worker cannot rewrite a module the harness imports later (inside a tier)."""
    script = ("import pkgutil, sys, spec_verify; from spec_verify.runner import _import_harness,"
              " IMPLEMENTATION_SIDE; _import_harness(('contract',)); print(sorted(i.name for i in "
              "pkgutil.walk_packages(spec_verify.__path__, 'spec_verify.') if i.name not in "
              "sys.modules and i.name not in IMPLEMENTATION_SIDE"
              " and not i.name.endswith('__main__')))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_harness_never_imports_an_implementation_side_module() -> None:
    """The vLLM kernel module is the implementation (its worker imports it); the harness's
    pre-import leaves it alone, so neither vLLM's import time nor its hiding of torchvision
    reaches the harness."""
    script = ("import sys; from spec_verify.runner import _import_harness, IMPLEMENTATION_SIDE;"
              " _import_harness(('contract',));"
              " print(sorted(IMPLEMENTATION_SIDE & set(sys.modules)))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


@pytest.mark.parametrize("data", [None, [], {"pid_namespace": "yes", "readonly": "/"},
                                  {"uid": True, "why_not": [1] * 100}])
def test_a_malformed_sandbox_line_holds_nothing(data) -> None:
    held = Protections.from_json(data)
    assert not held.sealed and not held.pid_namespace and held.uid == -1
    assert len(held.why_not) <= 16


_FRESH_TMP = """
import os, sys
from spec_verify._sandbox import enter_sandbox
keep, hidden = sys.argv[1], sys.argv[2]
# a report folder that is /tmp itself must not hide the rest
held = enter_sandbox(readonly=["/tmp", keep], writable=[], needed=[keep, keep + "/inner"],
                     drop_to=None, fresh=["/tmp"])
print(list(held.why_not), os.path.exists(keep + "/inner/module.py"), os.path.exists(hidden))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root here")
def test_a_fresh_tmp_keeps_what_the_harness_needs_there(tmp_path) -> None:
    if not str(tmp_path.resolve()).startswith("/tmp/"):
        pytest.skip("pytest's folders are not in /tmp here")
    # A virtual environment made in /tmp: its site-packages must survive the empty /tmp a
    # sealed run gets (it did not: every graded run failed at its first lazy import).
    keep = tmp_path / "venv" / "site-packages"
    (keep / "inner").mkdir(parents=True)
    (keep / "inner" / "module.py").write_text("")
    (tmp_path / "other").write_text("a run's leftovers")
    done = subprocess.run([sys.executable, "-c", _FRESH_TMP, str(keep), str(tmp_path / "other")],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    if "Operation not permitted" in done.stderr:
        pytest.skip("the kernel refuses a mount namespace here")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True", "False"], done.stdout
