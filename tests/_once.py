"""A value computed once per test run, shared by every xdist worker.

pytest-xdist's ``--dist loadgroup`` does not group tests under pytest 9 (it renames
``item._nodeid``, which pytest 9 no longer reads), so a fixture that grades a suite for several
tests was graded once per worker. The first worker to ask computes the value under a file lock
in the run's shared temporary folder and pickles it; the others wait and read it.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def computed_once(factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker's base folder sits in the run's one folder
    stored = root / f"{name}.pickle"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stored.exists():
            value: T = pickle.loads(stored.read_bytes())
            return value
        value = compute()
        stored.write_bytes(pickle.dumps(value))
        return value
