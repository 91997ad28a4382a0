"""Project-wide test options and fixtures.

- Slow tests run only with ``--runslow`` (CI passes it).
- ``reference``: the bundled reference in one worker process per test session (per xdist
  worker), shared by every test that is not about loading, isolation, crashes or limits; each
  test gets it back with the attributes ``run_checks`` and tiers may set put back as they were.
  A test that needs a worker of its own calls ``load_implementation("reference")`` and says why.
- Every test proves in its teardown that it left no process running (``_no_stray_processes``).
- One BLAS/OpenMP thread per process (``OMP_NUM_THREADS=1`` unless set): see ``_one_thread``.
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


def _one_thread() -> None:
    """torch, numpy's BLAS and OpenMP start a thread per core by default. The suite runs one
    xdist worker per core, and its tensors are a few dozen floats, so extra threads only spin:
    on 2 cores under load the transformers ensemble test took 51 CPU s with them and 14 CPU s
    without. Set before any test imports torch; workers the tests start inherit it."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, "1")


_one_thread()

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


# The tests whose setup computes a value the run shares, then the longest tests, longest
# first, as measured in clean-clone CI runs on 2 cores (seconds in the comments: wall time of a
# loaded machine, for the order only). They run before everything else: under
# `--dist worksteal` the worker that gets them runs them first while the other works through
# short tests and then steals short ones from the end of its queue, so no long test starts
# near the end of the run with the other worker idle. The shared values (`reference_check`,
# `example_grade`) are computed first, before another worker can wait for them. A test not
# listed keeps its collection order; the list only orders, it selects nothing.
LONGEST_FIRST = (
    "tests/cli/test_check.py::test_the_reference_passes_every_tier",  # 196, reference_check
    "tests/tiers/test_statistical.py::test_the_reference_passes_the_default_gate",  # 222 default
    "tests/mutants/test_grader.py::test_the_example_suite_scores_22_of_36",  # 187, example_grade
    "tests/adapters/test_transformers.py::test_with_torchs_own_generator_it_is_lossless",  # 324
    "tests/test_gate_mutants.py::test_the_whole_gate_runs_to_its_end_on_a_mutant",  # 163
    "tests/mutants/test_kill_matrix.py::test_each_mutant_is_killed_by_its_declared_test",  # 157
    "tests/tiers/test_statistical.py::test_calibration_false_alarms_and_power",  # 136
    "tests/ffi/test_gate.py::test_the_port_passes_every_tier",  # 128
    "tests/test_plugin.py::test_builtin_properties_pass_on_the_reference",  # 104
    "tests/tiers/test_sequence_law.py::",  # 51 + 48 + 54
    "tests/endtoend/test_batched.py::test_a_bias_after_the_first_token_is_caught",  # 84
    "tests/ffi/test_action.py::",  # 75, setup
    "tests/test_profiles.py::test_lossless_passes_correct_samplers_and_fails_lossy_ones",  # 67
    "tests/mutants/test_batch.py::test_the_bundle_grades_a_submission",  # 65
    "tests/test_gate_mutants.py::test_the_clean_reference_passes_each_tier",  # 64
    "tests/adapters/test_kernel.py::test_the_lossless_gate_tells_an_honest_kernel",  # 63
    "tests/tiers/test_statistical_trees.py::",  # 66 + 60 + 42 + 33
    "tests/cli/test_impl_paths.py::test_the_example_passes_the_whole_lossless_quick_gate",  # 56
    "tests/mutants/test_grader.py::",  # 52 + 46 + 44
    "tests/test_gate_mutants.py::test_the_full_gate_rejects_the_mutant",  # 36 x up to 48
    "tests/endtoend/test_tutorial.py::test_python_blocks",  # 48
    "tests/endtoend/test_transformers.py::",  # 46
    "tests/ffi/test_statistical_port.py::",  # 46
    "tests/tiers/test_statistical.py::test_calibration_runs_share_a_worker_and_close_it",  # 45
    "tests/adapters/test_transformers.py::test_its_ensemble_rule_fails_the_law",  # 43
    "tests/mutants/test_real_bugs.py::",  # 38
    "tests/test_gate_mutants.py::test_the_gate_rejects_the_mutant",  # up to 56 (parity)
)


def _rank(item: pytest.Item) -> int:
    for rank, prefix in enumerate(LONGEST_FIRST):
        if item.nodeid.startswith(prefix):
            return rank
    return len(LONGEST_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the unlisted tests keep their order
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
