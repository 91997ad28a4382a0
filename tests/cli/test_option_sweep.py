"""Every option of every sub-command, given a bad value: a usage error (exit 2) on stderr that
names the option, with no traceback, before any work. The options are read from the parser
itself, so an option added later is swept too; each gets a bad value of its kind (a word for a
number, an unknown choice, a missing file, a misspelt implementation, a value out of range).
Each call runs in this process under an alarm: a bad value that is not refused starts the
real work, and the alarm stops it as a finding, not a hang.

A bad output path is one below a regular file (``not-a-folder/out.file``): no user, root
included, can create it, whereas a missing folder at the file system's root is created for
root. Every case must be a usage error in a few seconds (the alarm's 20 s is the finding, not
the budget)."""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from spec_verify.cli._main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
BIGRAM = f"python:{ROOT / 'examples' / 'bigram_speculative.py'}"
_SECONDS = 10  # far above a usage error's cost (well under a second), far below a real run

# The smallest arguments with which each command is valid (its required positionals and
# options), so that the swept option is the only thing wrong.
VALID = {
    "check": [],
    "demo": [],
    "power": ["--vocab", "8", "--delta", "0.1"],
    "compare": [f"{BIGRAM}:speculative", f"{BIGRAM}:plain", "--vocab", "4"],
    "mutants": ["list"],
    "grade": [str(ROOT / "examples" / "graded_suite")],
    "gradescope-bundle": ["{new_folder}"],
    "prove": [],
}

# Bad values by option name where its kind is not in the parser (free-text options).
_BAD_TEXT = {
    "--impl": "pyhton:x",
    "--mutants": "s999",
    "--catalogue": "/nonexistent-spec-verify/catalogue.json",
    "--source": "/nonexistent-spec-verify/src",
    "--case": "no_such_case/0",
    "--theorem": "no_such_theorem",
    "--lossy": "no_such_rule",
    "--p": "0.5,zzz",
    "--q": "zzz",
    "--p-next": "zzz",
}
_NOT_A_FOLDER = "not-a-folder"  # a regular file each case creates in its own folder
_OUTPUT_FILES = {"--json", "--junit", "--html", "--markdown", "--plots", "--csv", "--gradescope"}
# Numbers out of their range (a count below 1, a probability outside (0, 1), a limit <= 0).
_OUT_OF_RANGE = {
    "--vocab": "0", "--alpha": "1.5", "--power": "0", "--delta": "0", "--samples": "0",
    "--budget": "-1", "--timeout": "0", "--jobs": "0", "-j": "0", "--fail-under": "101",
    "--timeout-factor": "0", "--min-timeout": "-1", "--clean-timeout": "0", "--decoys": "-1",
    "--repeats": "-1", "--confirmations": "-1", "--clean-reruns": "-1", "--length": "0",
    "--workers": "0", "--max-tokens": "-1", "-k": "-1", "--x": "-1", "--cases": "0",
}


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _value_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    flags = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction,
             argparse._CountAction, argparse._HelpAction, argparse._VersionAction)
    return [a for a in parser._actions
            if a.option_strings and not isinstance(a, flags) and a.nargs != 0]


def _bad_values(action: argparse.Action) -> list[str]:
    name = action.option_strings[-1]
    values = []
    if action.choices is not None:
        values.append("no-such-choice")
    elif action.type is not None and name not in _BAD_TEXT:
        values.append("not-a-number")
    if name in _BAD_TEXT:
        values.append(_BAD_TEXT[name])
    if name in _OUTPUT_FILES:
        values.append(f"{_NOT_A_FOLDER}/out.file")
    if name in _OUT_OF_RANGE:
        values.append(_OUT_OF_RANGE[name])
    return values


def _cases() -> Iterator[tuple[str, str, str]]:
    for command, parser in _commands().items():
        for action in _value_options(parser):
            for value in _bad_values(action):
                yield command, action.option_strings[-1], value


CASES = list(_cases())


@contextlib.contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    def stop(signum, frame):
        raise TimeoutError(f"no usage error within {seconds} s: the bad value started work")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            with _alarm(_SECONDS):
                code = main(argv)
        except SystemExit as exit_:  # argparse's own errors
            code = int(exit_.code or 0)
    return code, err.getvalue()


def _usage_error_problems(code: int, err: str, option: str) -> list[str]:
    """What is wrong with a bad value's outcome (empty: a clean usage error)."""
    problems = []
    if code != 2:
        problems.append(f"exit {code}, not 2")
    if "Traceback" in err:
        problems.append("a traceback")
    lines = [line for line in err.splitlines() if line.strip()]
    if not lines or option not in lines[-1]:
        problems.append(f"the last line does not name {option}: {lines[-1:]}")
    return problems


def test_the_sweep_covers_every_command_and_many_options() -> None:
    assert {c for c, _, _ in CASES} >= set(VALID) - {"mutants"}
    assert len(CASES) > 60, len(CASES)


@pytest.mark.parametrize(("command", "option", "value"), CASES,
                         ids=[f"{c} {o} {v}" for c, o, v in CASES])
def test_a_bad_value_is_a_usage_error_naming_its_option(command, option, value, tmp_path,
                                                        monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing a run might write lands in the checkout
    (tmp_path / _NOT_A_FOLDER).write_text("a file, so no folder can be made below it\n")
    valid = [a.replace("{new_folder}", str(tmp_path / "bundle")) for a in VALID[command]]
    code, err = _run([command, *valid, option, value])
    assert not _usage_error_problems(code, err, option), (code, err[-600:])


def test_every_option_a_command_accepts_is_in_its_help() -> None:
    for command, parser in _commands().items():
        text = parser.format_help()
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in text, (command, flag)


def test_the_sweep_finds_a_traceback_and_a_silent_acceptance() -> None:
    """Negative controls of the judgement: a harness crash (exit 3 with a traceback) and a
    run that went ahead (exit 0) are both findings."""
    crashed = "Traceback (most recent call last):\n  ...\nspec-verify check: internal error"
    assert _usage_error_problems(3, crashed, "--seed") != []
    assert _usage_error_problems(0, "", "--seed") != []
    assert _usage_error_problems(2, "spec-verify check: error: --seed 'x': not an integer",
                                 "--seed") == []
