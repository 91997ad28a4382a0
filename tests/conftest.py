"""Project-wide test options and fixtures.

- Slow tests run only with ``--runslow`` (CI passes it).
- ``reference``: the bundled reference in one worker process per test session (per xdist
  worker), shared by every test that is not about loading, isolation, crashes or limits; each
  test gets it back with the attributes ``run_checks`` and tiers may set put back as they were.
  A test that needs a worker of its own calls ``load_implementation("reference")`` and says why.
- Every test proves in its teardown that it left no process running (``_no_stray_processes``).
"""

from __future__ import annotations

import contextlib
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
# The shared workers' processes: the only children allowed to outlive a test.
_SHARED_PIDS: set[int | None] = set()
_SHARED_OF: dict[int, int] = {}  # id of a session's implementation -> its worker's pid


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow",
        action="store_true",
        default=False,
        help="also run tests marked slow (calibration, the gradings, the whole gates)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def reference_worker() -> Iterator[Any]:
    """The session's one worker for the bundled reference (use ``reference`` in a test)."""
    from spec_verify.adapters import load_implementation

    impl = load_implementation("reference")
    allow_to_outlive_tests(impl)
    try:
        yield impl
    finally:
        impl.close()


# What a test (or a tier called directly) may write onto an implementation it is lent;
# run_checks itself puts its settings back (tests/test_runner_context.py).
_RESTORED = ("timeout", "current_timeout", "capabilities", "budget", "budget_deadline")


@contextlib.contextmanager
def shared(impl: Any) -> Iterator[Any]:
    """Lend a session's implementation to one test: what the test (or ``run_checks``) writes
    onto it, and the calls it remembers as hung, are put back afterwards. A test that closes
    or kills its worker gets a fresh one on the next call (the adapters restart a lost worker),
    and that one becomes the session's."""
    saved = {name: getattr(impl, name) for name in _RESTORED if hasattr(impl, name)}
    hung = dict(getattr(impl, "_hung", {}))
    try:
        yield impl
    finally:
        for name, value in saved.items():
            setattr(impl, name, value)
        if hasattr(impl, "_hung"):
            impl._hung.clear()
            impl._hung.update(hung)
        allow_to_outlive_tests(impl)


def allow_to_outlive_tests(impl: Any) -> None:
    """Let the worker ``impl`` has now run on after the test (a session's implementation)."""
    session = getattr(impl, "_session", None)
    worker = session.worker if session is not None else getattr(impl, "_worker", None)
    _SHARED_PIDS.discard(_SHARED_OF.pop(id(impl), None))
    if worker is not None:
        _SHARED_PIDS.add(worker.pid)
        _SHARED_OF[id(impl)] = worker.pid


@pytest.fixture
def reference(reference_worker: Any) -> Iterator[Any]:
    """The shared reference worker, as it was when loaded (see ``shared``)."""
    with shared(reference_worker) as impl:
        yield impl


@pytest.fixture(scope="session")
def reference_check(request: pytest.FixtureRequest,
                    tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``spec-verify check --json`` on the bundled reference at default sizes, run once per test
    run and shared by every xdist worker: ``{"code", "out", "report", "html", "markdown"}``
(the last two: its ``--html`` and ``--markdown`` files). With ``--runslow`` it is
    the README's whole gate (tests/cli/test_check.py asserts every tier); without, only its
    statistical tier, which tests/tiers/test_statistical.py asserts in both runs (before, the
    full run paid for the statistical tier twice)."""
    import contextlib
    import io
    import json

    from spec_verify.cli import main

    from ._once import computed_once

    whole = bool(request.config.getoption("--runslow"))

    def run() -> dict[str, Any]:
        folder = tmp_path_factory.mktemp("reference-check")
        args = ["check", "--json", str(folder / "r.json"), "--html", str(folder / "r.html"),
                "--markdown", str(folder / "r.md"), "--no-progress"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(args if whole else [*args, "--tier", "statistical"])
        report = json.loads((folder / "r.json").read_text())
        return {"code": code, "out": out.getvalue(), "report": report,
                "html": (folder / "r.html").read_text(), "markdown": (folder / "r.md").read_text()}

    return computed_once(tmp_path_factory, f"reference-check-{'all' if whole else 'statistical'}",
                         run)


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
