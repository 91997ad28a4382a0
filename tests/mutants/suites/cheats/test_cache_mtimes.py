"""Bytecode cache side channel: a run that finds compiled files left by an earlier run (or
older than itself) decides it is not the clean run and fails."""

import time
from pathlib import Path

from _cheat import honest_part, reference_files

STARTED = time.time()


def test_honest():
    honest_part()


def test_cache_side_channel():
    roots = [Path.cwd(), *[Path(f).parent for f in reference_files()]]
    stale = [p for root in roots if root.is_dir() for p in root.rglob("*.pyc")
             if p.stat().st_mtime < STARTED - 0.5]
    assert not stale, f"bytecode from an earlier run: {stale[:3]}"
