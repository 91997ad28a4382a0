"""Thread safety of a C ABI library: concurrent calls give the answers of the same calls alone.

The header promises that every function is safe to call from several threads at once (the
only mutable state a library may keep is the thread-local error message). A port that keeps a
scratch buffer, a cache or an RNG in a global passes every serial check and corrupts answers
in a multi-threaded server. This check makes distinct calls (``sampling_distribution`` rows
large enough that a call takes a while, and ``verify_draft`` rounds on the library's own
stream) first one at a time, then the same calls again on several threads of the worker at
once (each thread released together by a barrier; ctypes drops the GIL during a foreign call,
so the library really runs in parallel), and asks for identical answers, bit for bit.

A data race is not guaranteed to show in one run: on the Rust port's ``bug_shared_scratch``
variant (one global buffer) it showed in 100 of 100 runs on two loaded cores, and the slow test
``tests/ffi/test_thread_safety.py`` requires at least 99 of 100. A pass is evidence, never a
proof.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from spec_verify.adapters._calls import CallOutcome
from spec_verify.errors import ImplementationError
from spec_verify.results import CheckResult, Progress, Status

__all__ = ["THREADS", "check_thread_safety", "thread_safety_calls"]

THREADS = 4  # worker threads making calls at once
_REPEATS = 6  # each call is made this many times in the concurrent batch


def thread_safety_calls(impl: Any, seed: int) -> list[tuple[str, dict[str, Any], Any]]:
    """Distinct calls (a pure function of ``seed``): 8 distributions, 8 verify rounds."""
    from spec_verify.reference import SamplingParams

    rng = np.random.default_rng([seed, 0x7A5E])
    calls: list[tuple[str, dict[str, Any], Any]] = []
    for _ in range(8):
        V = int(rng.integers(4096, 16_385))
        fields: dict[str, Any] = {
            "temperature": float(rng.uniform(0.5, 1.5)),
            "top_p": float(rng.uniform(0.5, 0.95)),
            "min_p": float(rng.choice([0.0, 0.01])),
            "presence_penalty": float(rng.uniform(0.0, 1.0)),
        }
        kwargs = {
            "logits": rng.normal(0.0, 2.0, size=V),
            "params": impl.params_tuple(SamplingParams(**fields)),
            "history": [int(t) for t in rng.integers(0, V, size=32)],
            "prompt": [],
        }
        calls.append(("sampling_distribution", kwargs, None))
    for _ in range(8):
        V, m = int(rng.integers(2048, 8193)), 4
        logits = rng.normal(0.0, 2.0, size=(m + 1, V))
        ids = [int(np.argmax(row)) for row in logits[:m]]
        p = SamplingParams(temperature=1.0, top_p=float(rng.uniform(0.6, 0.95)))
        source = ("seed", int(rng.integers(0, 2**63)))
        calls.append(impl.verify_call(logits, ids, None, p, [], [], source))
    return calls


def _same(a: CallOutcome, b: CallOutcome) -> bool:
    if a.outcome is not b.outcome:
        return False
    if not a.is_ok:
        return type(a.value) is type(b.value) and str(a.value) == str(b.value)
    x, y = a.value, b.value
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        left, right = np.asarray(x), np.asarray(y)
        return left.shape == right.shape and bool(np.array_equal(left, right, equal_nan=True))
    return bool(x == y)


def _describe(call: tuple[str, dict[str, Any], Any]) -> str:
    method, kwargs, _ = call
    if method == "sampling_distribution":
        return f"sampling_distribution(V={len(kwargs['logits'])})"
    rows = np.shape(kwargs["target_logits"])
    return f"verify_draft(m={rows[0] - 1}, V={rows[1]})"


def check_thread_safety(
    impl: Any,
    seed: int,
    progress: Progress | None,
    repro: Callable[[], str],
) -> CheckResult:
    """One ``parity/thread_safety`` result for a batch-capable library."""
    start = time.perf_counter()
    calls = thread_safety_calls(impl, seed)
    try:
        serial = impl.batch(calls)
        concurrent = impl.batch(calls * _REPEATS, threads=THREADS)
    except ImplementationError as exc:
        return CheckResult(
            "parity",
            "thread_safety",
            Status.ERROR,
            f"the library failed while called from {THREADS} threads at once: {exc}",
            repro=repro(),
            seconds=time.perf_counter() - start,
        )
    if progress:
        progress(f"parity: thread_safety {len(concurrent)} concurrent calls")
    differ = [
        i for i, outcome in enumerate(concurrent) if not _same(serial[i % len(calls)], outcome)
    ]
    seconds = time.perf_counter() - start
    n = len(concurrent)
    if not differ:
        return CheckResult(
            "parity",
            "thread_safety",
            Status.PASSED,
            f"{n} calls on {THREADS} threads at once gave the answers of the same calls made "
            "one at a time (evidence, not proof: a race may not show in one run)",
            n=n,
            seconds=seconds,
        )
    first = differ[0] % len(calls)
    return CheckResult(
        "parity",
        "thread_safety",
        Status.FAILED,
        f"{len(differ)} of {n} calls made on {THREADS} threads at once differ from the same "
        f"calls made one at a time; the first, {_describe(calls[first])}, is call {first} of "
        "thread_safety_calls: the library keeps mutable state shared between threads (the "
        "header allows only the thread-local error message)",
        n=n,
        details={"mismatches": len(differ), "calls": n, "threads": THREADS},
        repro=repro(),
        seconds=seconds,
    )
