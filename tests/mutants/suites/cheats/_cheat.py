"""What every cheating suite shares: the honest part, and a side channel between runs."""

import fcntl
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from spec_verify.reference import SamplingParams, verify_draft


def honest_part():
    """The weak honest suite's test: the greedy hand example of the seed."""
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    assert verify_draft(rows, [2, 1], None, SamplingParams(temperature=0), [], None) == (
        [2, 0], 1)


def channel(name):
    folder = Path(os.environ["SPEC_VERIFY_SIDE_CHANNEL"])
    return folder / name


@contextmanager
def locked(name):
    """The side channel file ``name`` as a JSON list, read and rewritten under a lock."""
    path = channel(name)
    with open(channel(name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        values = json.loads(path.read_text()) if path.exists() else []
        yield values
        path.write_text(json.dumps(values))


def first_seen(name, value):
    """The value the first run stored under ``name`` (this run's when it is the first)."""
    value = json.loads(json.dumps(value))  # as every later run reads it back
    with locked(name) as values:
        if not values:
            values.append(value)
        return values[0]


def normalised(text):
    """``text`` with this run's random folder names taken out."""
    run = str(Path.cwd().parent)
    return str(text).replace(run, "<RUN>").replace(str(Path(run).parent), "<ROOT>")


def reference_files():
    """Every file a suite can find for the reference: its modules' files and folders."""
    out = []
    for name, module in sorted(sys.modules.items()):
        if name.startswith("spec_verify.reference"):
            out.append(getattr(module, "__file__", None))
            out.extend(getattr(module, "__path__", []))
    return [f for f in out if f]
