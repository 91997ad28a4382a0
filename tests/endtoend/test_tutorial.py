"""docs/tutorial-own-sampler.md runs as written: every python block in order, every command.

A block may be preceded by HTML comments: ``<!-- exit: N -->`` (the command's exit code),
``<!-- needs: torch -->`` (skipped without torch) and ``<!-- slow -->`` (only with --runslow).
A console block's first output line must start with the verdict word the tutorial shows.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from spec_verify.cli import main

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial-own-sampler.md"
_BLOCK = re.compile(r"((?:<!-- [^>]* -->\n)*)```(python|console)\n(.*?)```", re.S)


def _blocks() -> list[tuple[str, str, dict[str, str]]]:
    found = []
    for markers, kind, body in _BLOCK.findall(TUTORIAL.read_text()):
        options = dict(re.findall(r"<!-- (\w+)(?::\s*([^>]*?))? -->", markers))
        found.append((kind, body, options))
    return found


BLOCKS = _blocks()


def _skip(options: dict[str, str], request: pytest.FixtureRequest) -> None:
    if "slow" in options and not request.config.getoption("--runslow"):
        pytest.skip("slow: run with --runslow")
    if "needs" in options:
        pytest.importorskip("torch")
        pytest.importorskip("transformers")


def test_the_tutorial_has_commands_and_code() -> None:
    kinds = [kind for kind, _, _ in BLOCKS]
    assert kinds.count("console") >= 3 and kinds.count("python") >= 4


@pytest.mark.parametrize("index", [i for i, (kind, _, _) in enumerate(BLOCKS) if kind == "console"])
def test_command(index, request, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    _, body, options = BLOCKS[index]
    _skip(options, request)
    monkeypatch.chdir(ROOT)
    lines = body.strip().splitlines()
    command, shown = lines[0], lines[1:]
    assert command.startswith("$ spec-verify ")
    code = main(shlex.split(command[2:])[1:])
    out = capsys.readouterr().out
    assert code == int(options["exit"]), out
    if shown:
        assert out.split(":")[0] == shown[0].split(":")[0], out


def test_python_blocks(request, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    namespace: dict[str, object] = {}
    ran = 0
    for kind, body, options in BLOCKS:
        if kind != "python":
            continue
        if "needs" in options:
            try:
                import torch  # noqa: F401
                import transformers  # noqa: F401
            except ImportError:
                continue
        if "slow" in options and not request.config.getoption("--runslow"):
            continue
        exec(compile(body, str(TUTORIAL), "exec"), namespace)
        ran += 1
    assert ran >= 3
