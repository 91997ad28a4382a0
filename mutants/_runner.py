"""Graded runs: one temporary folder per run, run by two fork servers.

A run is two processes: the suite's, forked by ``_worker.py`` (it runs pytest), and the graded
sampler's, forked by ``_sampler.py`` (it serves the run's reference tree, clean or changed).
They speak over a socket pair the grader makes per run: before handing one end to the suite's
side, the grader writes the tree into it, so it arrives at the sampler's end; the suite's
process only ever holds the proxy (``_proxy.py``) and never the source, in memory or on disk.

A run folder is ``<grading tmp>/run-<random>/`` holding ``<suite name>/`` (a fresh copy of the
suite's folder, the run's working directory), ``home/`` and ``tmp/`` (the run's ``HOME`` and
``TMPDIR``) and a ``pytest.ini`` that stops pytest's search for configuration at the run
folder (a suite's own configuration, closer to the tests, wins). Every run has exactly this
layout. The folder is deleted when the run has been read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from spec_verify._sandbox import NOBODY, harness_paths
from spec_verify.adapters._process import REPORT_FOLDERS
from spec_verify.errors import SpecVerifyError
from spec_verify.ipc.errors import WireError
from spec_verify.ipc.frames import send_message
from spec_verify.ipc.supervisor import become_subreaper, children, reap_all_children
from spec_verify.mutants._cores import available_cores, pick_core

__all__ = ["HarmfulRun", "RunFailure", "RunOutcome", "RunPool", "RunRequest", "WorkerError"]

# Folders a suite's copy leaves out: caches and databases of earlier runs.
_IGNORED = ("__pycache__", ".pytest_cache", ".hypothesis", ".git", ".mypy_cache", ".ruff_cache")
_OUTPUT_TAIL = 20000


class WorkerError(SpecVerifyError):
    """The grader's own machinery failed (never a verdict on the suite)."""


class HarmfulRun(WorkerError):
    """A run of the suite killed one of the grader's processes (the sampler's or the suite's
    fork server): a verdict on the suite (it is refused as harmful), not a bug to report."""


@dataclass(frozen=True)
class RunFailure:
    """A failed test (or a collection error) of one run."""

    test: str
    message: str
    when: str = "call"
    details: str = ""


@dataclass(frozen=True)
class RunOutcome:
    """What one run of the suite did.

    Attributes:
        kind: ``exited``, ``signaled`` (the interpreter died of a signal) or ``timed_out``.
        code: the exit code, or the signal number.
        seconds: wall time from fork to exit.
        finished: pytest finished its session and the outcome was recorded (False when the
            interpreter died or a test ended the process).
        collected / passed / skipped: counts of test items.
        failures: failed tests, in the order they failed.
        errors: collection errors (a module that cannot be imported).
        durations: seconds per test (setup + call + teardown).
        output: the tail of the run's standard output and error.
        wrote: files the suite created or changed in its copy, home or temporary folder.
        ran: node ids of the tests that reported, in the order they ran.
        survivors: pids of the run's process tree still running after the fork server killed
            it (``ipc.supervisor.kill_tree``); empty when nothing was left.
    """

    kind: str
    code: int
    seconds: float
    finished: bool = False
    collected: int = 0
    passed: int = 0
    skipped: int = 0
    failures: tuple[RunFailure, ...] = ()
    errors: tuple[RunFailure, ...] = ()
    durations: Mapping[str, float] = field(default_factory=dict)
    output: str = ""
    wrote: tuple[str, ...] = ()
    ran: tuple[str, ...] = ()
    survivors: tuple[int, ...] = ()

    @property
    def passed_cleanly(self) -> bool:
        """Exit code 0 after a finished session with at least one test that passed."""
        return (self.kind == "exited" and self.code == 0 and self.finished
                and not self.failures and not self.errors and self.passed > 0)


def worker_environment() -> dict[str, str]:
    """The worker's environment: ours, less pytest's variables, with fixed seeds and threads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS_"))}
    env.update({
        "PYTHONHASHSEED": "0",  # forked runs share it: fixed, so set order is reproducible
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        # No bytecode is written by any run (pytest's rewrite cache included): a cache whose
        # files or times one run leaves and another reads would tell runs apart.
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.pop("PYTHONSTARTUP", None)
    return env


def sandbox_plan(hidden: Sequence[str] = ()) -> dict[str, Any] | None:
    """What the fork server seals every run with (``_worker._seal``): the harness's folders
    and the report folders read-only, the ``hidden`` folders (an instructors' catalogue and
    its kill tests) under an empty tmpfs, the interpreter reachable by the unprivileged uid a
    run drops to where the grader is root. None (no sandbox) with
    ``SPEC_VERIFY_NO_PID_NAMESPACE=1``, as for check workers."""
    if os.environ.get("SPEC_VERIFY_NO_PID_NAMESPACE", "") not in ("", "0"):
        return None
    readonly = harness_paths()
    with contextlib.suppress(ValueError, TypeError):
        readonly += [str(f) for f in json.loads(os.environ.get(REPORT_FOLDERS, "[]"))
                     if isinstance(f, str)]
    needed = [p for p in (sys.base_prefix, sys.prefix, *sys.path)
              if p and os.path.isabs(p) and os.path.exists(p)]
    return {"readonly": readonly, "needed": needed, "hidden": [str(h) for h in hidden],
            "drop_to": NOBODY if os.geteuid() == 0 else None}


def _tree_key(sources: Mapping[str, str]) -> str:
    """A tree's identity: the digest of its files and texts."""
    digest = hashlib.sha256()
    for name in sorted(sources):
        for part in (name, sources[name]):
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def scratch_dir() -> str:
    """Where run folders go: the temporary folder the user chose (``TMPDIR`` or
    ``tempfile.tempdir``), else ``/dev/shm`` when it is a writable memory file system (a run
    writes and deletes dozens of files), else the system's temporary folder."""
    if os.environ.get("TMPDIR") or tempfile.tempdir is not None:
        return tempfile.gettempdir()
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


def _snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in _IGNORED]
            for name in filenames:
                path = Path(dirpath, name)
                with contextlib.suppress(OSError):
                    st = path.lstat()
                    out[str(path.relative_to(root.parent))] = (st.st_size, st.st_mtime_ns)
    return out


def _remove(path: Path) -> None:
    def make_writable(function: Any, target: str, excinfo: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            os.chmod(target, stat.S_IRWXU)
            function(target)

    shutil.rmtree(path, onerror=make_writable)


def _read_text(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return text if size <= limit else "..." + text


def _parse(outcome_file: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(outcome_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _failures(items: Any) -> tuple[RunFailure, ...]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            out.append(RunFailure(str(item.get("test", "")), str(item.get("message", "")),
                                  str(item.get("when", "call")), str(item.get("details", ""))))
    return tuple(out)


@dataclass(frozen=True)
class RunRequest:
    """One run: the reference tree, pytest's arguments, a time limit and an optional selection
    (pytest arguments relative to the suite's copy) replacing the pool's.

    Nothing else varies between runs: the grader gives every run (clean, decoy, canary,
    mutant, confirmation) the same arguments, so a run's request differs only in the
    reference's text and, for confirmations, in which tests are selected.
    """

    sources: Mapping[str, str]
    args: Sequence[str]
    timeout: float
    select: Sequence[str] | None = None
    # serve the reference's private names too: only for the project's own tests of internals
    # (``run_mutants``), never for a graded suite
    private_names: bool = False


@dataclass(frozen=True)
class _Prepared:
    run: Path
    job: dict[str, Any]
    before: Mapping[str, tuple[int, int]]
    sources: Mapping[str, str]
    private_names: bool = False


class RunPool:
    """Runs a suite against reference source trees, one forked process per run.

    Use as a context manager; ``submit`` prepares a run folder and hands it to the worker,
    ``next_done`` blocks until some run ends and returns its outcome (the folder is gone then).

    Args:
        suite: the suite folder, or one test file (its folder's ``conftest.py`` comes along).
        select: pytest arguments relative to the suite's copy that choose what runs
            (default: the whole suite).
        hidden: folders no run may see (an empty tmpfs over each in every sealed run): the
            instructors' catalogue, whose mutants and tests a suite must not read.
    """

    def __init__(self, suite: Path, select: Sequence[str] = (),
                 hidden: Sequence[str | os.PathLike[str]] = ()) -> None:
        self.hidden = tuple(str(Path(h).resolve()) for h in hidden)
        self.suite = suite.resolve()
        self.folder = self.suite.parent if self.suite.is_file() else self.suite
        self.suite_name = self.folder.name or "suite"
        self.select = tuple(select) or ((self.suite.name,) if self.suite.is_file() else (".",))
        self.root: Path | None = None
        self._worker: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._runs: dict[str, _Prepared] = {}
        self._finished: list[Path] = []
        self._sampler: subprocess.Popen[bytes] | None = None
        self._sampler_control: socket.socket | None = None  # jobs and socket ends to serve
        self._handover: socket.socket | None = None  # the suite's socket ends, to the worker
        self._trees: dict[str, socket.socket] = {}  # tree key -> its server's control
        self._served: dict[str, socket.socket] = {}  # token -> the tree server of its run
        self._cores = available_cores()
        self._had_children: set[int] = set()
        self.sandbox: dict[str, Any] = {}  # which protections every run gets (the probe's)
        self._held: dict[str, int] = {}  # token -> the core of a run going on

    def __enter__(self) -> RunPool:
        # what a run leaves behind (a daemon that double-forks) is re-parented to this
        # process, where the kernel refuses the run's own PID namespace; ``close`` kills it
        become_subreaper()
        self._had_children = children()
        self.root = Path(tempfile.mkdtemp(prefix="spec-verify-grade-", dir=scratch_dir()))
        self._log = open(self.root / "worker.log", "wb")
        self._sampler_control, sampler_end = socket.socketpair(socket.AF_UNIX,
                                                               socket.SOCK_SEQPACKET)
        self._handover, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with sampler_end, worker_end:
            self._sampler = subprocess.Popen(
                [sys.executable, "-m", "spec_verify.mutants._sampler",
                 str(sampler_end.fileno())],
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                pass_fds=[sampler_end.fileno()], cwd=self.root, env=worker_environment(),
                start_new_session=True,
            )
            self._worker = subprocess.Popen(
                [sys.executable, "-m", "spec_verify.mutants._worker", str(worker_end.fileno()),
                 json.dumps(sandbox_plan(self.hidden))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                pass_fds=[worker_end.fileno()], cwd=self.root, env=worker_environment(),
                start_new_session=True,
            )
        assert self._worker.stdout is not None
        hello = self._worker.stdout.readline()
        try:
            sandbox = json.loads(hello).get("sandbox")
        except (ValueError, AttributeError):
            sandbox = None
        if not isinstance(sandbox, dict):
            self.close()
            raise WorkerError("the grader's worker process did not start: "
                              + _read_text(Path(self.root / "worker.log"), 2000))
        self.sandbox = sandbox
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """End the worker (and every run still going) and delete all run folders."""
        worker, self._worker = self._worker, None
        if worker is not None:
            with contextlib.suppress(OSError):
                if worker.stdin:
                    worker.stdin.close()
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            if worker.stdout:
                worker.stdout.close()
        for channel in (self._handover, *self._trees.values(), self._sampler_control):
            if channel is not None:
                channel.close()
        self._handover = self._sampler_control = None
        self._trees.clear()
        self._served.clear()
        sampler, self._sampler = self._sampler, None
        if sampler is not None:  # it ends every served child when its control socket closes
            try:
                sampler.wait(timeout=15)
            except subprocess.TimeoutExpired:
                sampler.kill()
                sampler.wait()
        # every process the grading started is gone before a report can be written
        reap_all_children(keep=self._had_children)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.root is not None:
            _remove(self.root)
            self.root = None
        self._runs.clear()
        self._finished.clear()

    def precompile(self, trees: Sequence[Mapping[str, str]]) -> None:
        """Give every tree of ``trees`` its own server in the sampler, which compiles it now.

        A served child then finds its tree compiled instead of compiling it (a run's sampler
        spent 0.1-0.3 s compiling the reference, most of its start), and holds no other tree:
        each tree's server is forked from the sampler's fork server, which holds only the
        installed reference, before it is sent its tree. The grader calls this with all of a
        grading's trees (clean, canary, every mutant) before the first run, so every run finds
        its tree compiled: no run is faster for its tree having been seen before (which would
        tell a decoy from a mutant by time). A tree a run brings that was not precompiled
        gets its server at that run's start.
        """
        for tree in trees:
            self._tree_control(tree)

    def _tree_control(self, sources: Mapping[str, str]) -> socket.socket:
        """The control socket of the server of tree ``sources`` (started on first use)."""
        if self._sampler_control is None:
            raise WorkerError("the run pool is not started (use it as a context manager)")
        key = _tree_key(sources)
        if key in self._trees:
            return self._trees[key]
        files = [[name, text] for name, text in sources.items() if name.endswith(".py")]
        ours, theirs = socket.socketpair()
        control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with theirs, server_end:
                socket.send_fds(self._sampler_control, [json.dumps({"op": "tree"}).encode()],
                                [theirs.fileno(), server_end.fileno()])
            send_message(ours, {"files": files}, deadline=time.monotonic() + 60)
        except (OSError, WireError) as exc:
            control.close()
            raise self._gone() or WorkerError(
                f"the grader could not hand a tree to the sampler ({exc})") from exc
        finally:
            ours.close()
        self._trees[key] = control
        return control

    def _send(self, message: Mapping[str, Any]) -> None:
        if self._worker is None or self._worker.stdin is None or self.root is None:
            raise WorkerError("the run pool is not started (use it as a context manager)")
        try:
            self._worker.stdin.write(json.dumps(message).encode() + b"\n")
            self._worker.stdin.flush()
        except OSError as exc:
            raise self._gone() or WorkerError(f"the grader's worker process is gone ({exc}); see "
                              f"{self.root / 'worker.log'}") from exc

    def _gone(self) -> HarmfulRun | None:
        """The error to raise when one of the grader's fork servers was killed, else None."""
        time.sleep(0.05)  # a kill lands asynchronously: let the exit be seen
        for process, what in ((self._sampler, "sampler (the fork server that serves the "
                               "graded reference)"),
                              (self._worker, "suite runner (the fork server of the runs)")):
            if process is not None and process.poll() is not None:
                return HarmfulRun(
                    f"a run of the suite killed the grader's {what}; it exited with "
                    f"{process.returncode}: a suite must not touch the grader's processes")
        return None

    @property
    def running(self) -> int:
        return len(self._runs)

    def submit(self, request: RunRequest) -> str:
        """Start a run of the suite; returns the run's token."""
        return self._start(self._prepare(request))

    def _start(self, prepared: _Prepared) -> str:
        token = str(prepared.job["token"])
        if self._sampler_control is None or self._handover is None:
            raise WorkerError("the run pool is not started (use it as a context manager)")
        # the run's two processes on one core, drawn afresh for each run (see _cores)
        core = pick_core(self._cores, self._held.values())
        prepared.job["cpu"] = core
        tree_control = self._tree_control(prepared.sources)
        suite_end, sampler_end = socket.socketpair()
        try:
            with sampler_end:
                try:
                    socket.send_fds(tree_control,
                                    [json.dumps({"op": "serve", "token": token,
                                                 "cpu": core}).encode()],
                                    [sampler_end.fileno()])
                except (BrokenPipeError, ConnectionError) as exc:
                    # only a run can end a tree's server (or the fork server it dies with)
                    raise self._gone() or HarmfulRun(
                        "a run of the suite killed the grader's sampler (a graded tree's "
                        "fork server): a suite must not touch the grader's processes") from exc
            # the tree goes in at the suite's end and comes out at the sampler's: the suite's
            # process receives an end whose incoming side holds only the sampler's replies
            send_message(suite_end, {"sources": dict(prepared.sources),
                                     "private": prepared.private_names},
                         deadline=time.monotonic() + 60)
            socket.send_fds(self._handover, [token.encode()], [suite_end.fileno()])
        except (OSError, WireError) as exc:
            raise self._gone() or WorkerError(f"the grader could not start a run ({exc}); see "
                              f"{self.root / 'worker.log' if self.root else 'the log'}") from exc
        finally:
            suite_end.close()
        self._send(prepared.job)
        self._runs[token] = prepared
        self._served[token] = tree_control
        if core is not None:
            self._held[token] = core
        return token

    def _prepare(self, request: RunRequest) -> _Prepared:
        """Build the run's folder (the worker is not told yet)."""
        sources = request.sources
        if self.root is None:
            raise WorkerError("the run pool is not started (use it as a context manager)")
        run = Path(tempfile.mkdtemp(prefix="run-", dir=self.root))
        copy = run / self.suite_name
        # Links are copied as their targets: writing through a link must not reach outside
        # the run's folder. A single test file brings its whole folder (helpers, conftest).
        shutil.copytree(self.folder, copy, ignore=shutil.ignore_patterns(*_IGNORED),
                        ignore_dangling_symlinks=True)
        for name in ("home", "tmp"):
            (run / name).mkdir()
        (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        before = _snapshot(copy, run / "home", run / "tmp")
        select = self.select if request.select is None else tuple(request.select)
        job = {"token": secrets.token_hex(8), "run_dir": str(run), "suite_name": self.suite_name,
               "args": [*request.args, *select], "timeout": request.timeout}
        return _Prepared(run, job, before, sources, request.private_names)

    def next_done(self, keep: bool = False) -> tuple[str, RunOutcome]:
        """Block until a run ends; its token and outcome. The run's folder is deleted, or
        with ``keep`` left for ``discard_finished`` (to delete while other runs go on)."""
        if self._worker is None or self._worker.stdout is None:
            raise WorkerError("the run pool is not started")
        line = self._worker.stdout.readline()
        if not line:
            log = _read_text(self.root / "worker.log", 2000) if self.root else ""
            raise self._gone() or WorkerError(
                f"the grader's worker process ended unexpectedly:\n{log}")
        reply = json.loads(line)
        token = str(reply["token"])
        prepared = self._runs.pop(token)
        self._held.pop(token, None)
        run = prepared.run
        tree_control = self._served.pop(token, None)
        if tree_control is not None:  # the run is over: so is its sampler
            with contextlib.suppress(OSError):
                tree_control.send(json.dumps({"op": "end", "token": token}).encode())
        outcome = self._outcome(run, prepared.before, reply)
        if keep:
            self._finished.append(run)
        else:
            _remove(run)
        return token, outcome

    def discard_finished(self) -> None:
        """Delete the folders of runs read with ``keep``."""
        while self._finished:
            _remove(self._finished.pop())

    def _outcome(self, run: Path, before: Mapping[str, tuple[int, int]],
                 reply: Mapping[str, Any]) -> RunOutcome:
        after = _snapshot(run / self.suite_name, run / "home", run / "tmp")
        wrote = tuple(sorted(p for p, v in after.items() if before.get(p) != v))
        data = _parse(run / "outcome.json") or {}
        output = _read_text(run / "output.txt", _OUTPUT_TAIL)
        durations = data.get("durations", {})

        def count(key: str) -> int:
            value = data.get(key, 0)
            return value if isinstance(value, int) else 0

        return RunOutcome(
            kind=str(reply["kind"]), code=int(reply["code"]), seconds=float(reply["seconds"]),
            finished=data.get("finished") is True and data.get("exit_code") == reply["code"],
            collected=count("collected"), passed=count("passed"), skipped=count("skipped"),
            failures=_failures(data.get("failures")), errors=_failures(data.get("errors")),
            durations={str(k): float(v) for k, v in durations.items()}
            if isinstance(durations, dict) else {},
            output=output, wrote=wrote,
            ran=tuple(str(k) for k in durations) if isinstance(durations, dict) else (),
            survivors=tuple(int(p) for p in reply.get("survivors", ()) if isinstance(p, int)),

        )

    def run_all(self, jobs: int, runs: Sequence[RunRequest]) -> Iterator[tuple[int, RunOutcome]]:
        """Run the requests ``jobs`` at a time, in the given order; yields ``(index, outcome)``
        as runs end. The next run's folder is built, and finished ones deleted, while runs go
        on, so a slot is refilled as soon as it frees."""
        index_by_token: dict[str, int] = {}
        queue = list(enumerate(runs))
        queue.reverse()
        ready: tuple[int, _Prepared] | None = None
        while queue or ready or index_by_token:
            while (queue or ready) and len(index_by_token) < max(1, jobs):
                if ready is None:
                    index, request = queue.pop()
                    ready = (index, self._prepare(request))
                index_by_token[self._start(ready[1])] = ready[0]
                ready = None
            if queue and ready is None:
                index, request = queue.pop()
                ready = (index, self._prepare(request))
            self.discard_finished()
            token, outcome = self.next_done(keep=True)
            yield index_by_token.pop(token), outcome
        self.discard_finished()
