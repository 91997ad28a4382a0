"""Bytecode cache side channel: a run that finds compiled files of an earlier run next to its
tests (the grader used to plant the first run's rewritten bytecode in later runs) decides it is
not the clean run and fails."""

import time
from pathlib import Path

from _cheat import honest_part

STARTED = time.time()


def test_honest():
    honest_part()


def test_cache_side_channel():
    stale = [p for p in Path.cwd().rglob("*.pyc") if p.stat().st_mtime < STARTED]
    assert not stale, f"bytecode from an earlier run: {stale[:3]}"
