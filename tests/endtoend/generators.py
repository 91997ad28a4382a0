"""Generators for the compare tests: honest ones and every way a generator can misbehave.

Loaded by path (``python:<this file>:name``) in compare's worker processes.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np


def uniform(seed: int) -> list[int]:
    return [int(x) for x in np.random.default_rng(seed).integers(0, 3, 2)]


def uniform_array(seed: int) -> np.ndarray:
    return np.random.default_rng(seed + 99).integers(0, 3, (1, 2))  # a (1, n) batch of one


def skewed(seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    first = 0 if rng.random() < 0.4 else int(rng.integers(0, 3))
    return [first, int(rng.integers(0, 3))]


def raises(seed: int) -> list[int]:
    if seed == 7:
        raise RuntimeError("the model fell over")
    return [0, 1]


def hangs(seed: int) -> list[int]:
    if seed == 7:
        time.sleep(3600)
    return [0, 1]


def too_short(seed: int) -> list[int]:
    return [1]


def out_of_range(seed: int) -> list[int]:
    return [1, 3] if seed == 7 else [1, 2]


def exits(seed: int) -> list[int]:
    os._exit(4)


def not_ids(seed: int) -> list[float]:
    return [0.5, 1.0]


def chatty(seed: int) -> list[int]:
    print("a generator that prints to stdout", seed)
    return uniform(seed + 12345)


def _daemon() -> str:
    """Start a sleeper that leaves this process's session and parent (fork, ``setsid()``,
    fork) and keeps the worker's stdout open; return its identity (``tests/_noted_process``)."""
    from tests._noted_process import this_process_identity

    read, write = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(write, this_process_identity().encode())
            time.sleep(3600)
        os._exit(0)
    os.close(write)
    os.wait()
    identity = os.read(read, 400).decode()
    os.close(read)
    return identity


def daemon_then_hangs(seed: int) -> list[int]:
    print("DAEMON", _daemon(), file=sys.stderr, flush=True)
    time.sleep(3600)
    return [0, 1]


def daemon_then_exits(seed: int) -> list[int]:
    print("DAEMON", _daemon(), file=sys.stderr, flush=True)
    os._exit(4)


def daemon_then_raises(seed: int) -> list[int]:
    raise RuntimeError("DAEMON " + _daemon())
