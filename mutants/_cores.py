"""Which CPU core a graded run's two processes share.

A run is a strict conversation: the suite's process asks, the sampler's process answers, never
both at once. On different cores every message is a cross-core wake-up (about 50 us here in a
VM against 14 us on one core); pinned together, a call through the proxy costs about half as
much (``benchmarks/bench_grade.py`` prints it). Runs that go on at the same time get different
cores where there are enough.

The core is a value a test can read (``os.sched_getaffinity``), so it must not tell a mutant
run from a clean one: it is drawn at random among the cores no other run holds, whatever the
run is, so its law is the same for every kind of run (to a suite it is one more coin flip,
which the decoys, repeats and confirmations bound like any lottery: docs/grading.md).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Collection

__all__ = ["available_cores", "pick_core", "pin_to"]


def available_cores() -> tuple[int, ...]:
    """The cores this process may run on (none where affinity is not supported)."""
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return ()


def pick_core(cores: Collection[int], held: Collection[int]) -> int | None:
    """A core of ``cores`` at random among those not in ``held`` (among all when every one
    is held); None with fewer than two cores (pinning would change nothing)."""
    if len(cores) < 2:
        return None
    free = sorted(set(cores) - set(held)) or sorted(cores)
    return free[secrets.randbelow(len(free))]


def pin_to(core: object) -> None:
    """Run this process (and what it starts) on ``core`` only; anything but an int is
    ignored, as is a core the system refuses (the run goes on unpinned)."""
    if type(core) is int:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.sched_setaffinity(0, {core})
