"""Writes into its working directory, its home and the temporary folder, then tests a little."""

import tempfile
from pathlib import Path

import numpy as np

from spec_verify.reference import SamplingParams, verify_draft


def test_writes_and_checks_greedy():
    Path("written_by_the_suite.txt").write_text("here")
    (Path.home() / ".suite_settings").write_text("here")
    with open(Path(tempfile.gettempdir()) / "suite_scratch.txt", "w") as handle:
        handle.write("here")
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    assert verify_draft(rows, [2, 1], None, SamplingParams(temperature=0), [], None) == ([2, 0], 1)
