"""``--impl python:`` from where the user stands: a file by its path, a module in the current
folder, the same in the worker; a reproduction line that works when pasted; and what is not an
implementation refused as a usage error (exit 2, one line, the closest name) before any work."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spec_verify.cli import main
from spec_verify.results import ExitCode

EXAMPLE = Path(__file__).parents[2] / "examples" / "minimal_sampler.py"
# The minimal example is lossless, not a port: the contract's exception types and draw order
# are conformance checks it does not claim.
FAST = ["--tier", "contract", "--tier", "greedy", "--tier", "exact", "--quick", "--no-progress",
        "--profile", "lossless"]  # fmt: skip

# A sampler whose greedy path keeps a wrong draft: the greedy tier fails it.
WRONG_GREEDY = '''
import numpy as np
from spec_verify.reference import verify_draft as _reference


def verify_draft(target_logits, draft_ids, draft_probs, p, history, rng, prompt=()):
    if p.temperature == 0 and len(draft_ids) > 0:
        return [int(draft_ids[0]), int(np.argmax(target_logits[1]))], 1
    return _reference(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
'''


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh folder, the current one, holding the minimal example as ``mine.py``; it is not
    on ``sys.path`` (the harness must find it from the current folder by itself)."""
    shutil.copy(EXAMPLE, tmp_path / "mine.py")
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path
    return tmp_path


@pytest.mark.parametrize("spec", ["python:mine.py", "python:./mine.py", "python:mine"])
def test_a_sampler_beside_you_is_checked_by_path_or_name(here, capsys, spec) -> None:
    code = main(["check", "--impl", spec, *FAST])
    out = capsys.readouterr().out
    assert code == ExitCode.PASSED, out
    assert f"spec-verify check {spec}: PASSED" in out
    assert re.search(r"^exact +k_positions +PASS", out, re.MULTILINE), out  # proven exactly


def test_an_absolute_path_from_another_folder(here, tmp_path_factory, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    spec = f"python:{here / 'mine.py'}"
    assert main(["check", "--impl", spec, *FAST]) == 0


def test_a_file_imports_its_neighbours(here, capsys) -> None:
    # A name no other folder on sys.path holds: the file's folder comes after sys.path (an
    # installed package wins), and under xdist sys.path holds tests/mutants/suites/*/helpers.py.
    (here / "entry_neighbour.py").write_text("from mine import verify_draft  # noqa: F401\n")
    (here / "sub").mkdir()
    (here / "sub" / "entry.py").write_text(
        "from entry_neighbour import verify_draft  # noqa: F401\n"
    )
    shutil.move(here / "entry_neighbour.py", here / "sub" / "entry_neighbour.py")
    shutil.copy(here / "mine.py", here / "sub" / "mine.py")
    code = main(["check", "--impl", "python:sub/entry.py", *FAST])
    assert code == ExitCode.PASSED, capsys.readouterr().out


def test_the_reproduction_line_works_when_pasted(here, capsys) -> None:
    (here / "wrong.py").write_text(WRONG_GREEDY)
    assert main(["check", "--impl", "python:wrong.py", *FAST]) == ExitCode.FAILED
    out = capsys.readouterr().out
    [line] = [ln for ln in out.splitlines() if "reproduce:" in ln and "greedy" in ln]
    argv = shlex.split(line.split("reproduce:", 1)[1])
    assert argv[:2] == ["spec-verify", "check"]
    # pasted in a shell, in the same folder, with no PYTHONPATH: the same failure, not a
    # load error
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-m", "spec_verify", *argv[1:], "--no-progress"],
        cwd=here, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == ExitCode.FAILED, run.stdout + run.stderr
    assert "FAIL greedy/" in run.stdout
    assert "load/load" not in run.stdout


def test_the_example_passes_the_lossless_gate_from_a_temporary_folder(here, capsys) -> None:
    # docs/implementing.md's first command, on its example, run as a user would
    code = main(["check", "--impl", "python:mine.py", "--profile", "lossless", "--quick",
                 "--tier", "contract", "--tier", "greedy", "--tier", "exact", "--tier", "edges",
                 "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == ExitCode.PASSED, out
    assert "profile lossless" in out


@pytest.mark.slow
def test_the_example_passes_the_whole_lossless_quick_gate(here) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-m", "spec_verify", "check", "--impl", "python:mine.py", "--profile",
         "lossless", "--quick", "--no-progress"],
        cwd=here, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert run.returncode == ExitCode.PASSED, run.stdout[-3000:] + run.stderr[-2000:]
    assert re.search(r"^statistical +sequence.law_k2 +PASS", run.stdout, re.MULTILINE)


# --- what is not an implementation: a usage error, at once ---------------------------------


def _no_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make starting any worker process fail the test: a usage error comes before them."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker was started for a spec that names nothing")

    import spec_verify.adapters._ffi_adapter as ffi_adapter
    import spec_verify.adapters._process as process

    monkeypatch.setattr(process.WorkerProcess, "__init__", refuse)
    monkeypatch.setattr(ffi_adapter.FfiImplementation, "start", refuse)


@pytest.mark.parametrize(
    ("spec", "rule", "suggestion"),
    [
        ("pyhton:mine", "unknown scheme 'pyhton'", "did you mean 'python:mine'?"),
        ("referenc", "names no scheme", "did you mean 'reference'?"),
        ("mine.py", "names no scheme", "did you mean 'python:mine.py'?"),
        ("python:mien", "module 'mien' cannot be imported", "did you mean 'python:mine'?"),
        ("python:./mien.py", "no file ./mien.py", "did you mean 'python:mine.py'?"),
        ("python:pkg.sampelr", "package 'pkg' has no module 'sampelr'",
         "did you mean 'python:pkg.sampler'?"),
        ("python:json.encoderr", "package 'json' has no module 'encoderr'",
         "did you mean 'python:json.encoder'?"),
        ("python:mine.verify", "'mine' is a module, not a package", "did you mean 'python:mine'?"),
        ("python:", "python: needs a module or a file", "python:path/to/file.py"),
        ("python:my-sampler", "is neither a dotted module name nor a .py file", ""),
        ("python:notes.txt", "notes.txt (from ", "is not a .py file"),
        ("ffi:mine.py", "is not a loadable shared library: it is Python source",
         "use python:mine.py"),
        ("ffi:libmine.so", "no such file: libmine.so", "did you mean 'ffi:libmien.so'?"),
        ("ffi:libtext.so", "is not a loadable shared library: it is a file starting with",
         "cc -shared -fPIC"),
        ("ffi:.", "is a folder", "give the path of the shared library"),
        ("ffi:", "ffi: needs a path", "ffi:path/to/lib.so"),
        ("mutant:s3", "is not in the catalogue", "did you mean 'mutant:s03'?"),
        ("mutant:s99", "is not in the catalogue", "spec-verify mutants list"),
    ],
)
def test_what_is_not_an_implementation_is_a_usage_error(
    here, monkeypatch, capsys, spec, rule, suggestion
) -> None:
    (here / "libmien.so").write_bytes(b"\x7fELF" + bytes(60))  # named close to the typo
    (here / "notes.txt").write_text("not Python\n")
    (here / "libtext.so").write_text("a text file named like a library\n")
    (here / "pkg").mkdir()
    (here / "pkg" / "__init__.py").write_text("")
    (here / "pkg" / "sampler.py").write_text("")
    _no_workers(monkeypatch)
    report = here / "r.json"
    report.write_text(json.dumps({"passed": True}))  # a stale passing report
    started = time.monotonic()
    code = main(["check", "--impl", spec, "--json", str(report)])
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert code == ExitCode.USAGE_ERROR
    assert captured.out == ""  # no report scaffolding, no reproduce line
    [line] = captured.err.splitlines()  # one line
    assert line.startswith(f"spec-verify check: error: --impl {spec!r}: "), line
    assert rule in line and suggestion in line, line
    assert line.count(rule) == 1 and line.count(f"{spec!r}") == 1  # said once
    assert elapsed < 5  # no worker, no harness import: well under a second unloaded
    data = json.loads(report.read_text())
    assert data["state"] == "usage_error" and data["passed"] is False
    assert data["exit_code"] == ExitCode.USAGE_ERROR


def test_a_typo_exits_2_in_under_a_second_in_a_fresh_process(here) -> None:
    # the whole command, interpreter start included: the check needs neither numpy nor a
    # worker. Twice the budget on a loaded machine still catches a worker (seconds) or the
    # harness import (about a second).
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "spec_verify", "check", "--impl", "pyhton:mine"],
        cwd=here, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert run.returncode == ExitCode.USAGE_ERROR, run.stderr
    assert "did you mean 'python:mine'?" in run.stderr
    assert run.stdout == ""
    assert elapsed < 2.0, elapsed


def test_prove_refuses_a_typo_the_same_way(here, monkeypatch, capsys) -> None:
    _no_workers(monkeypatch)
    assert main(["prove", "--impl", "python:mien.py", "--theorem", "one_position"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("spec-verify prove: error: --impl 'python:mien.py': no file")
    assert "did you mean 'python:mine.py'?" in line


@pytest.mark.parametrize(
    ("a", "b", "words"),
    [
        ("python:mien:rounds", "python:mine.py:verify_draft",
         "A 'python:mien:rounds': module 'mien' cannot be imported"),
        ("python:mine.py:verify_draft", "python:./mien.py:f",
         "B 'python:./mien.py:f': no file ./mien.py"),
        ("python:mine.py", "python:mine.py:verify_draft",
         "A 'python:mine.py': must name a generator as python:module:function"),
    ],
)
def test_compare_refuses_what_it_cannot_load_as_a_usage_error(here, capsys, a, b, words) -> None:
    code = main(["compare", a, b, "--vocab", "4"])
    captured = capsys.readouterr()
    assert code == ExitCode.USAGE_ERROR
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("spec-verify compare: error: ") and words in line, line


def test_a_load_error_in_the_worker_is_said_once(here, capsys) -> None:
    (here / "broken.py").write_text("import no_such_dependency_here\n")
    (here / "declares.py").write_text(
        "SPEC_VERIFY_CAPABILITIES = {'vibes': True}\ndef verify_draft(*a):\n    pass\n"
    )
    for spec, words in [
        ("python:broken.py", "No module named 'no_such_dependency_here'"),
        ("python:declares", "unknown capability"),
    ]:
        main(["check", "--impl", spec, "--tier", "contract", "--no-progress"])
        out = capsys.readouterr().out
        [line] = [ln for ln in out.splitlines() if ln.startswith("FAIL load/load")]
        assert words in line, line
        assert line.count(f"impl={spec!r}") <= 1, line
        fix = line.rsplit("; ", 1)[-1]
        assert line.count(fix) == 1, line  # the fix is not repeated
