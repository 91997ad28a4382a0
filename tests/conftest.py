"""Project-wide test options and fixtures.

- Slow tests run only with ``--runslow`` (CI passes it).
- ``reference``: the bundled reference in one worker process per test session (per xdist
  worker), shared by every test that is not about loading, isolation, crashes or limits; each
  test gets it back with the attributes ``run_checks`` and tiers may set put back as they were.
  A test that needs a worker of its own calls ``load_implementation("reference")`` and says why.
- Every test proves in its teardown that it left no process running (``_no_stray_processes``).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from spec_verify.adapters._process import descendants, kill_tree

# A process a test started must be gone this long after the test ends (killing a worker tree
# is asynchronous; 30 s is far beyond what a loaded machine needs for a SIGKILL to land).
_STRAY_GRACE = 30.0
# The shared reference worker's process: the only child allowed to outlive a test.
_SHARED_PIDS: set[int] = set()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow",
        action="store_true",
        default=False,
        help="also run tests marked slow (calibration, the full kill matrix)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _worker_pid(impl: Any) -> int | None:
    session = getattr(impl, "_session", None)
    return None if session is None else session.worker.pid


@pytest.fixture(scope="session")
def reference_worker() -> Iterator[Any]:
    """The session's one worker for the bundled reference (use ``reference`` in a test)."""
    from spec_verify.adapters import load_implementation

    impl = load_implementation("reference")
    try:
        yield impl
    finally:
        impl.close()


_RESTORED = ("timeout", "current_timeout", "capabilities", "budget", "budget_deadline")


@pytest.fixture
def reference(reference_worker: Any) -> Iterator[Any]:
    """The shared reference worker, as it was when loaded: ``run_checks`` writes ``timeout``,
    ``budget`` and ``capabilities`` onto an implementation it is given, and a hang is
    remembered; both are undone after the test. A test that closes or kills the worker gets
    a fresh one started on the next call (the adapter restarts a lost worker)."""
    saved = {name: getattr(reference_worker, name) for name in _RESTORED}
    hung = dict(reference_worker._hung)
    try:
        yield reference_worker
    finally:
        for name, value in saved.items():
            setattr(reference_worker, name, value)
        reference_worker._hung.clear()
        reference_worker._hung.update(hung)
        pid = _worker_pid(reference_worker)
        _SHARED_PIDS.clear()
        if pid is not None:
            _SHARED_PIDS.add(pid)


@pytest.fixture(autouse=True)
def _no_stray_processes() -> Iterator[None]:
    """Fail a test that leaves a process of its own running (killed here so that it cannot
    disturb the tests after it)."""
    before = _running_children()
    yield
    left = _running_children() - before - _SHARED_PIDS
    if left:  # an implementation dropped without close() stops its worker when collected
        gc.collect()
    deadline = time.monotonic() + _STRAY_GRACE
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _running_children() - before - _SHARED_PIDS
    if left:
        described = {pid: _command_line(pid) for pid in sorted(left)}
        for pid in left:
            kill_tree(pid, descendants(pid))
        pytest.fail(
            f"the test left {len(left)} process(es) running {_STRAY_GRACE:g} s after it "
            f"ended (killed now): {described}",
            pytrace=False,
        )


def _running_children() -> set[int]:
    """This process's children that are still running (a zombie has ended: it only waits to
    be reaped by whoever started it)."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == me and fields[0] not in (b"Z", b"X"):
            found.add(int(entry))
    return found


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as raw:
            return raw.read().replace(b"\0", b" ").decode(errors="replace").strip()[:160]
    except OSError:
        return "?"
