"""Conventions every command shares: ``--version``, ``python -m spec_verify``, the exit codes
in ``--help`` and README.md, one meaning of ``--json`` (FILE, or ``-`` for stdout), and a
schema version and the tool's version in every JSON report."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import spec_verify
from spec_verify.cli import build_parser, main
from spec_verify.cli._json_out import versioned
from spec_verify.cli._main import EXIT_CODES
from spec_verify.reports import SCHEMA_VERSION
from spec_verify.results import ExitCode

ROOT = Path(__file__).parents[2]


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"spec-verify {spec_verify.__version__}"


def test_python_dash_m_is_the_command(tmp_path) -> None:
    # from a folder that is not the source checkout, as after a plain pip install
    run = subprocess.run([sys.executable, "-m", "spec_verify", "--version"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"spec-verify {spec_verify.__version__}"
    run = subprocess.run([sys.executable, "-m", "spec_verify", "mutants", "show", "s999"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == ExitCode.USAGE_ERROR


def test_every_exit_code_is_explained_in_help_and_readme() -> None:
    assert set(EXIT_CODES) == set(ExitCode)
    text = build_parser().format_help()
    readme = (ROOT / "README.md").read_text()
    for code in ExitCode:
        assert re.search(rf"^  {int(code)} +\S", text, re.MULTILINE), text
        assert re.search(rf"^\| `{int(code)}` \|", readme, re.MULTILINE), f"README: {code}"


@pytest.mark.parametrize("command", ["check", "compare", "prove", "power", "grade"])
def test_each_command_lists_the_exit_codes_in_its_help(capsys, command) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for code in ExitCode:
        assert f" {int(code)} " in out.split("exit codes:", 1)[1] + " ", (command, code)


def test_the_cli_and_the_library_agree_on_the_schema_version() -> None:
    assert versioned("x", {})["schema_version"] == SCHEMA_VERSION


def _header_ok(data: dict, report: str) -> None:
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["spec_verify_version"] == spec_verify.__version__
    assert data["report"] == report
    assert list(data)[:3] == ["schema_version", "spec_verify_version", "report"]


def test_check_json_to_a_file_and_to_stdout(tmp_path, capsys) -> None:
    argv = ["check", "--tier", "contract", "--quick", "--no-progress"]
    assert main([*argv, "--json", str(tmp_path / "r.json")]) == 0
    _header_ok(json.loads((tmp_path / "r.json").read_text()), "check")
    capsys.readouterr()
    assert main([*argv, "--json", "-"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)  # stdout is one JSON document
    _header_ok(data, "check")
    assert data["state"] == "complete" and data["passed"] is True
    assert "spec-verify check reference: PASSED" in captured.err  # the text went to stderr


def test_power_and_prove_json_to_stdout_and_to_a_file(tmp_path, capsys) -> None:
    assert main(["power", "--vocab", "5", "--delta", "0.1", "--json"]) == 0
    _header_ok(json.loads(capsys.readouterr().out), "power")
    assert main(["power", "--vocab", "5", "--delta", "0.1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    _header_ok(json.loads(captured.out), "power")
    assert "required samples" in captured.err
    target = tmp_path / "deep" / "plan.json"
    assert main(["power", "--vocab", "5", "--delta", "0.1", "--json", str(target)]) == 0
    _header_ok(json.loads(target.read_text()), "power")
    assert "required samples" in capsys.readouterr().out  # a file: the text stays on stdout
    assert main(["prove", "--p", "1/2,1/2", "--q", "1/4,3/4", "--json"]) == 0
    _header_ok(json.loads(capsys.readouterr().out), "prove")


@pytest.mark.parametrize("command", [
    ["power", "--vocab", "5", "--delta", "0.1"],
    ["prove", "--p", "1/2,1/2", "--q", "1/4,3/4"],
    ["compare", "python:a:f", "python:b:g", "--vocab", "4"],
    ["grade", "nowhere"],
])  # fmt: skip
def test_a_json_path_that_is_a_folder_is_a_usage_error(tmp_path, capsys, command) -> None:
    assert main([*command, "--json", str(tmp_path)]) == ExitCode.USAGE_ERROR
    err = capsys.readouterr().err
    assert f"--json {str(tmp_path)!r}: is a folder" in err
    assert "Traceback" not in err


def test_help_counts_the_catalogue(capsys) -> None:
    from spec_verify.mutants.catalogue import CATALOGUE

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert f"{len(CATALOGUE)} planted bugs" in " ".join(out.split())


def test_docs_count_the_catalogue() -> None:
    from spec_verify.mutants.catalogue import CATALOGUE

    n = len(CATALOGUE)
    for page in ("README.md", "examples/graded_suite/README.md"):
        text = " ".join((ROOT / page).read_text().split())
        counts = {int(c) for c in re.findall(r"\b(\d+) (?:planted bugs|mutants)\b", text)}
        assert counts == {n}, (page, counts)
        assert not re.search(r"\b\d+/24\b", text), page


@pytest.mark.parametrize("words", ["seed section", "seed rung", "issue 1", "DESIGN.md",
                                   "STYLE.md", "seed's"])  # fmt: skip
def test_no_reference_to_documents_users_do_not_have(words) -> None:
    pages = [ROOT / "README.md", ROOT / "docs" / "implementing.md",
             ROOT / "examples" / "graded_suite" / "README.md"]
    for page in pages:
        assert words not in page.read_text(), (page.name, words)
    help_text = build_parser().format_help()
    for action in build_parser()._subparsers._group_actions:  # type: ignore[union-attr]
        for sub in action.choices.values():
            help_text += sub.format_help()
    assert words not in help_text


def test_compare_json_to_stdout_names_its_schema(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "gens.py").write_text("def coin(seed):\n    return [seed % 2]\n")
    monkeypatch.chdir(tmp_path)  # found from the current folder, as by the worker
    argv = ["compare", "python:gens.py:coin", "python:gens:coin", "--vocab", "2", "--length", "1",
            "--delta", "0.9", "--power", "0.5", "--alpha", "0.05", "--workers", "1"]  # fmt: skip
    code = main([*argv, "--json", "-"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    _header_ok(data, "compare")
    assert code == 0 and data["passed"] is True
    assert captured.err.count("SAME LAW: ") == 1 and "same law:" not in captured.err


def _with_open_files(limit: int):
    def lower() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return lower


def test_too_few_open_files_is_a_usage_error_before_any_work() -> None:
    # `ulimit -n 8` used to end in a traceback from deep inside the worker start (exit 3)
    started = subprocess.run(
        [sys.executable, "-m", "spec_verify", "check", "--quick"], check=False,
        capture_output=True, text=True, timeout=120, preexec_fn=_with_open_files(8),
    )  # fmt: skip
    assert started.returncode == ExitCode.USAGE_ERROR, started.stderr
    assert "open-file limit is 8" in started.stderr and "ulimit -n" in started.stderr
    assert "Traceback" not in started.stderr and started.stdout == ""


def test_a_low_soft_limit_is_raised_not_refused() -> None:
    # control: a soft limit of 8 under a generous hard limit is raised, and the command runs
    def lower_soft() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (8, 4096))

    started = subprocess.run(
        [sys.executable, "-m", "spec_verify", "power", "--vocab", "4", "--delta", "0.2"],
        check=False, capture_output=True, text=True, timeout=120, preexec_fn=lower_soft,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert "open-file limit" not in started.stderr
