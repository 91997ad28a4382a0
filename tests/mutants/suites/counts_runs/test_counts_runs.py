"""Passes on the first run only (it counts runs in a side channel): a suite that would "kill"
every mutant by failing on every run after the clean one. The decoy clean runs catch it."""

import os
from pathlib import Path

from spec_verify.reference import SamplingParams


def test_first_run_only():
    assert SamplingParams().temperature == 1.0
    counter = Path(os.environ["SPEC_VERIFY_SIDE_CHANNEL"]) / "runs"
    runs = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(runs + 1))
    assert runs == 0
