"""The thread-safety check: concurrent calls on the worker's threads against serial answers.

Negative control: the Rust port's ``bug_shared_scratch`` variant (its probabilities pass
through one global buffer) must fail in at least 99 of 100 runs; the clean port never fails.
"""

from __future__ import annotations

import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.results import Status
from spec_verify.tiers._thread_safety import THREADS, check_thread_safety


def _run(path: object, seed: int, impl: object = None) -> Status:
    impl = impl or load_implementation(f"ffi:{path}")
    return check_thread_safety(impl, seed, None, lambda: "repro").status


@pytest.mark.rust
def test_the_clean_port_passes(rust_port, port):
    impl = port
    assert [_run(rust_port, seed, impl) for seed in range(3)] == [Status.PASSED] * 3


@pytest.mark.rust
def test_a_shared_scratch_buffer_fails(rust_variants):
    impl = load_implementation(f"ffi:{rust_variants['bug_shared_scratch']}")
    result = check_thread_safety(impl, 0, None, lambda: "repro")
    assert result.status is Status.FAILED
    assert f"on {THREADS} threads at once differ" in result.message


@pytest.mark.rust
def test_the_worker_runs_calls_concurrently_and_in_order(port):
    impl = port
    calls = [("pcg32_uniforms", {"initstate": s, "initseq": 54, "n": 3}, None) for s in range(9)]
    serial = impl.batch(calls)
    assert [o.value.tolist() for o in impl.batch(calls, threads=THREADS)] == [
        o.value.tolist() for o in serial
    ]


@pytest.mark.rust
@pytest.mark.slow
def test_the_detection_rate_on_a_shared_scratch_buffer(rust_variants):
    """Measured: 100 of 100 runs on two loaded cores; required: at least 99 of 100."""
    impl = load_implementation(f"ffi:{rust_variants['bug_shared_scratch']}")
    failed = sum(_run(None, seed, impl) is Status.FAILED for seed in range(100))
    assert failed >= 99, f"detected in {failed} of 100 runs"
