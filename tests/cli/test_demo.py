"""spec-verify demo: the worked example and a random case proven exactly, then generation on the
bundled model with each draft; bad options are usage errors; a closed pipe is no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from spec_verify.cli import main


def test_the_demo_proves_both_cases_and_greedy_drafts_match_plain_decoding(capsys):
    assert main(["demo", "--max-tokens", "12", "--seed", "3", "--vocab", "6"]) == 0
    out = capsys.readouterr().out
    assert out.count("equals p exactly: yes (proven with Fractions)") == 2
    assert "random case (seed 3, V = 6)" in out
    greedy = out.split("   greedy:")[1].split("   sampled")[0]
    rows = [line for line in greedy.splitlines() if line.strip().endswith(("yes", "NO"))]
    assert len(rows) == 3 and all(row.endswith("yes") for row in rows), greedy


@pytest.mark.parametrize(("args", "message"), [
    (["--vocab", "1"], "--vocab 1: must be in [2, 64]"),
    (["--vocab", "65"], "--vocab 65: must be in [2, 64]"),
    (["-k", "-1"], "-k -1: must be >= 0"),
    (["--max-tokens", "0"], "--max-tokens 0: must be >= 1"),
])  # fmt: skip
def test_bad_options_are_usage_errors(args, message, capsys):
    assert main(["demo", *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""


def test_a_reader_that_closes_the_pipe_gets_no_traceback():
    # the read end is closed before the demo prints (its imports take far longer), so its
    # first print meets a pipe with no reader, as under `| head` once head has had enough
    process = subprocess.Popen(
        [sys.executable, "-m", "spec_verify.cli", "demo", "--max-tokens", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=60) == 130, err
    assert "stopped: its output was closed (broken pipe)" in err
    assert "Traceback" not in err
