"""The grader's fork server: one warm interpreter that forks a fresh process per graded run.

Started once per grading as ``python -m spec_verify.mutants._worker`` with a fixed environment,
it imports the heavy libraries (numpy, pytest, scipy, hypothesis) once, then reads one job per
line on standard input and forks a child for it. The child, and only the child:

- becomes its own process group; where no PID namespace seals it, it becomes a subreaper
  that kills what the suite left when it ends (``ipc.supervisor.supervise_self``); a time
  limit, or the worker's end, kills its whole tree (``kill_tree``: the suite's subprocesses
  and daemons too), and what still runs after is reported (``survivors``);
- points standard input at ``/dev/null`` and standard output and error at the run's
  ``output.txt`` (the pipes to the grader are closed, so a suite cannot speak the protocol);
- sets ``HOME`` and ``TMPDIR`` to folders inside the run, ``cwd`` to the suite's copy;
- seeds ``random`` and numpy's global generator with 0, and passes ``--hypothesis-seed=0``, so
  the same suite gets the same result every time;
- installs ``spec_verify.reference`` as the proxy (``_proxy.py``) of the run's sampler process,
  over the socket the grader handed over for this run (the source never comes here);
- runs ``pytest.main`` with a recorder plugin, writes ``<run>/outcome.json`` and exits.

Speed: each child starts warm (a fixed list of preloaded libraries, a frozen heap, a premade
pytest config), so a run costs pytest's session and the tests, not an interpreter start
(``benchmarks/bench_grade.py``). Every child starts from the same state: nothing is preloaded
or cached because of an earlier run, and no run writes bytecode, so no run is faster or sees
more than another for having come later.

The worker never learns which reference a run gets: a job names only a run folder (a random
temporary path), pytest's arguments and a time limit, and the grader shuffles the runs. The
clean run, the canary, the decoys and every mutant go through this same code path, so a suite
can tell them apart only by the reference's behaviour. Replies are one JSON line per finished
run: ``{"token", "kind": "exited" | "signaled" | "timed_out", "code", "seconds",
"survivors"}`` (the pids of the run's tree still running after its kill: empty).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.machinery
import importlib.metadata
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spec_verify.ipc.supervisor import kill_tree, supervise_self

from ._cores import pin_to

__all__ = ["main"]

PACKAGE = "spec_verify.reference"
# Libraries imported once in the worker, before any run, so that each forked run starts warm
# (pytest would otherwise rewrite hypothesis's plugin modules in every run). The list is fixed:
# what a run finds already imported never depends on earlier runs.
_PRELOAD = ("numpy", "pytest", "hypothesis", "_hypothesis_pytestplugin",
            "spec_verify.mutants._proxy")
_MESSAGE_LIMIT = 10000  # a failure's message, whole unless enormous
_DETAILS_LIMIT = 20000  # its traceback
_INTERNAL_ERROR = 70  # the child's own setup failed (EX_SOFTWARE): the grader reports it


class _Recorder:
    """A pytest plugin: test order, outcomes, first failures, durations, session end."""

    def __init__(self) -> None:
        self.collected = 0
        self.passed = 0
        self.skipped = 0
        self.failures: list[dict[str, str]] = []
        self.errors: list[dict[str, str]] = []
        self.durations: dict[str, float] = {}
        self.finished = False

    def pytest_collection_finish(self, session: Any) -> None:
        self.collected = len(session.items)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.errors.append({"test": report.nodeid or ".", "message": _message(report)})

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            self.failures.append({
                "test": report.nodeid, "when": report.when, "message": _message(report),
                "details": _tail(getattr(report, "longreprtext", "") or "", _DETAILS_LIMIT),
            })
        elif report.when == "call" and report.passed:
            self.passed += 1
        elif report.skipped:
            self.skipped += 1

    def pytest_sessionfinish(self) -> None:
        self.finished = True

    def as_json(self, exit_code: int) -> dict[str, Any]:
        return {
            "exit_code": exit_code, "finished": self.finished, "collected": self.collected,
            "passed": self.passed, "skipped": self.skipped, "failures": self.failures,
            "errors": self.errors, "durations": self.durations,
        }


def _message(report: Any) -> str:
    crash: Any = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    if message:
        return _tail(message, _MESSAGE_LIMIT)
    text = (getattr(report, "longreprtext", "") or "").strip().splitlines()
    return _tail(text[-1] if text else "", _MESSAGE_LIMIT)


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def _run_child(job: dict[str, Any]) -> int:
    """Everything a forked run does; returns pytest's exit code."""
    run = Path(job["run_dir"])
    cwd = run / job["suite_name"]
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(run / "output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
    os.chdir(cwd)
    os.environ["HOME"] = str(run / "home")
    os.environ["TMPDIR"] = str(run / "tmp")
    import tempfile

    tempfile.tempdir = None  # recomputed from TMPDIR on first use
    sys.dont_write_bytecode = True  # pytest's rewrite cache too: nothing a later run can read
    sys.argv = [os.path.join(os.path.dirname(_import("pytest").__file__), "__main__.py")]
    sys.path[0] = str(cwd)  # as ``python -m pytest`` run from the suite's folder
    if any(_is_reference(name) for name in sys.modules):
        raise RuntimeError("the worker imported the reference before forking")
    # spec_verify.reference is the proxy of this run's sampler process; import it now: pytest
    # puts its assertion-rewriting finder first on sys.meta_path, and in a regular install it
    # claims every module of the spec_verify distribution (a pytest plugin), the installed
    # reference included. A reference that cannot be imported is left for the suite's own
    # import to report.
    from spec_verify.mutants._proxy import install

    try:
        install(socket.socket(fileno=int(job["sampler_fd"])))
        importlib.import_module(PACKAGE)
    except Exception:
        for name in [n for n in sys.modules if _is_reference(n)]:
            del sys.modules[name]
    import random

    random.seed(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(0)
    recorder = _Recorder()
    _use_premade_config(job.get("premade"))
    code = int(_import("pytest").main(list(job["args"]), plugins=[recorder]))
    text = json.dumps(recorder.as_json(code))
    with open(run / "outcome.json", "w", encoding="utf-8") as handle:
        handle.write(text)
    return code


def _import(name: str) -> Any:
    return __import__(name, fromlist=["_"])


def _plugin_args(args: Sequence[str]) -> tuple[str, ...]:
    """The ``-p NAME`` pairs of pytest's arguments (what pytest's ``get_config`` reads)."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "-p" and i + 1 < len(args):
            out += ["-p", args[i + 1]]
        elif arg.startswith("-p") and len(arg) > 2:
            out.append(arg)
    return tuple(out)


# pytest's plugin manager with its built-in plugins registered (``_pytest.config.get_config``)
# costs a run about a quarter of its time; the worker builds it once per set of ``-p`` options,
# before forking, and every child starts from its own pristine copy of it. Private pytest API:
# when it is missing or differs, children call pytest's own ``get_config``.
_PYTEST_MAIN_PROG = "pytest.main()"  # pytest.main names itself so in its usage line


def _premake_config(args: Sequence[str]) -> Any:
    """A fresh pytest config for ``args``' ``-p`` options, or None."""
    get_config = getattr(sys.modules.get("_pytest.config"), "get_config", None)
    premade = None
    if get_config is not None:
        with contextlib.suppress(Exception):
            premade = get_config(list(_plugin_args(args)), prog=_PYTEST_MAIN_PROG)
    gc.collect()
    gc.freeze()
    return premade


def _use_premade_config(premade: Any) -> None:
    """In a child: make pytest's ``get_config`` hand out the worker's premade config once."""
    config_module = sys.modules.get("_pytest.config")
    original = getattr(config_module, "get_config", None)
    config_class = getattr(config_module, "Config", None)
    if original is None or premade is None or config_class is None:
        return
    handed_out: list[Any] = []

    def get_config(args: Any = None, plugins: Any = None, **kwargs: Any) -> Any:
        unusual = set(kwargs) - {"prog"} or kwargs.get("prog") != _PYTEST_MAIN_PROG
        if handed_out or unusual or _plugin_args(list(args or ())) != _plugin_args(
                list(premade.invocation_params.args)):
            return original(args, plugins, **kwargs)
        handed_out.append(premade)
        premade.invocation_params = config_class.InvocationParams(
            args=args or (), plugins=plugins, dir=Path.cwd())
        return premade

    config_module.get_config = get_config  # type: ignore[union-attr]


def _is_reference(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _fork(job: dict[str, Any], private_fds: Sequence[int]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        with contextlib.suppress(OSError):  # the child may have done it already
            os.setpgid(pid, pid)
        return pid
    code = _INTERNAL_ERROR
    try:
        os.setpgid(0, 0)
        pin_to(job.get("cpu"))  # the core its sampler's process runs on (see _cores)
        for fd in private_fds:
            os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if not _seal(job):
            return 0  # unreachable: _seal exits when the run may not go on
        code = _run_child(job)
    except BaseException:  # report it in the run's output, never return into the worker loop
        with contextlib.suppress(BaseException):
            import traceback

            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code if 0 <= code < 256 else _INTERNAL_ERROR)
    return 0  # unreachable: the child always leaves through os._exit


# What every process may write: each run gets empty ones, so no run leaves anything there for
# a later run to read (a run counter, a clock, a cache); the run's own folder is bound back.
_FRESH = ("/tmp", "/var/tmp", "/dev/shm")


def _plan_for(plan: dict[str, Any], run_dir: str | None) -> dict[str, Any]:
    extra = [run_dir] if run_dir else []
    return {"readonly": plan.get("readonly", []), "writable": extra,
            "needed": [*plan.get("needed", []), *extra],
            "drop_to": plan.get("drop_to"), "chown": extra,
            # the instructors' catalogue, hidden the way /tmp is emptied
            "fresh": (*_FRESH, *_hidden(plan.get("hidden")))}


def _hidden(folders: Any) -> list[str]:
    """The folders to hide that are not hidden already: one inside ``/tmp`` is gone with the
    rest of it (and a tmpfs could not be mounted there: the folder is no longer there), and
    one holding ``/tmp`` (``/``) would hide the harness."""
    out = []
    for given in folders if isinstance(folders, list) else []:
        if not (isinstance(given, str) and os.path.isabs(given)):
            continue
        folder = given.rstrip("/")
        if folder and not any(folder == f or folder.startswith(f + "/") or f.startswith(
                folder + "/") for f in _FRESH):
            out.append(folder)
    return out


def _seal(job: dict[str, Any]) -> bool:
    """Seal the run off (``spec_verify/_sandbox.enter_sandbox``); True to go on. A run whose
    sandbox holds less than the grading's probe found is ended at once: no run is less sealed
    than another (the grader says up front what the probe found)."""
    plan = job.get("sandbox")
    if not isinstance(plan, dict):
        supervise_self()  # no namespace's pid 1: this process kills what the suite leaves
        return True
    from spec_verify._sandbox import enter_sandbox

    held = enter_sandbox(**_plan_for(plan, str(job["run_dir"])))
    if plan.get("require_sealed") and not held.sealed:
        sys.stderr.write(f"run {job['token']}: the sandbox did not hold: {held.summary()}\n")
        sys.stderr.flush()
        os._exit(_INTERNAL_ERROR)
    if not held.sealed:
        supervise_self()
    return True


def probe_sandbox(plan: dict[str, Any]) -> dict[str, Any]:
    """Which protections a run gets here: a child sealed as every run is, asked."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read)
            from spec_verify._sandbox import enter_sandbox

            held = enter_sandbox(**_plan_for(plan, None))
            os.write(write, json.dumps(held.to_json()).encode())
        except BaseException:
            code = _INTERNAL_ERROR
        finally:
            os._exit(code)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    try:
        result = json.loads(data)
    except ValueError:
        result = None
    return result if isinstance(result, dict) else {"sealed": False,
                                                      "why_not": ["the probe died"]}


def _preload(names: Sequence[str]) -> None:
    """Import ``names`` and the modules of the installed pytest plugins (``pytest11`` entry
    points: every ``pytest.main`` imports them, and pytest rewrote and compiled them, and
    their imports, in every run: about half a second a run, anyio's plugin importing its
    event-loop backends most of it); each import that pulls in the reference is undone. Then
    freeze the heap: the collector of every forked run skips the worker's objects (pytest
    collects several times per session) and copy-on-write pages stay shared. The list is the
    machine's, fixed before the first run; a preloaded plugin is not assertion-rewritten, whose
    warning every run ignores alike (``pytest_arguments``)."""
    for name in names:
        if name in sys.modules or _is_reference(name):
            continue
        before = set(sys.modules)
        with contextlib.suppress(Exception):
            _import(name)
        if any(_is_reference(n) for n in sys.modules):  # roll the whole import back
            for added in set(sys.modules) - before:
                del sys.modules[added]
    gc.collect()
    gc.freeze()


def _plugin_modules() -> tuple[str, ...]:
    """The modules of the installed pytest plugins (their ``pytest11`` entry points)."""
    with contextlib.suppress(Exception):  # entry points are scanned by every pytest.main
        return tuple(entry.value.split(":")[0].strip()
                     for entry in importlib.metadata.entry_points(group="pytest11"))
    return ()


def main() -> int:
    """Serve jobs until standard input closes; then end every run still going."""
    plan = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
    sealed = probe_sandbox(plan) if isinstance(plan, dict) else {
        "sealed": False, "why_not": ["SPEC_VERIFY_NO_PID_NAMESPACE is set: no sandbox"]}
    _preload((*_PRELOAD, *_plugin_modules()))
    requests = os.dup(0)
    replies = os.dup(1)
    # the first line says which protections every run gets
    os.write(replies, json.dumps({"sandbox": sealed}).encode() + b"\n")
    if isinstance(plan, dict):
        plan["require_sealed"] = bool(sealed and sealed.get("sealed"))
    handover = socket.socket(fileno=int(sys.argv[1]))  # the suite's ends of the socket pairs
    os.dup2(2, 1)  # stray prints must not corrupt the protocol
    running: dict[int, dict[str, Any]] = {}
    premade_by_options: dict[tuple[str, ...], Any] = {}
    pending = b""
    open_input = True

    def reply(job: dict[str, Any], kind: str, code: int) -> None:
        seconds = time.monotonic() - job["started"]
        line = json.dumps({"token": job["token"], "kind": kind, "code": code, "seconds": seconds,
                           "survivors": sorted(set(job.get("survivors", ())))})
        os.write(replies, line.encode() + b"\n")

    # A child's exit wakes the loop at once through its pidfd (Linux >= 5.3); elsewhere the
    # loop polls every 5 ms.
    pidfds: dict[int, int] = {}  # pidfd -> pid
    use_pidfds = hasattr(os, "pidfd_open")

    def wait_seconds() -> float | None:
        if running and not use_pidfds:
            return 0.005
        deadlines = [job["deadline"] for job in running.values() if not job["timed_out"]]
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    while open_input or running:
        watched = ([requests] if open_input else []) + list(pidfds)
        ready, _, _ = select.select(watched, [], [], wait_seconds())
        if requests in ready:
            chunk = os.read(requests, 1 << 16)
            if not chunk:
                open_input = False
                for pid, job in running.items():
                    job.setdefault("survivors", []).extend(kill_tree(pid))
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                job = json.loads(line)
                options = _plugin_args(job["args"])
                if options not in premade_by_options:
                    premade_by_options[options] = _premake_config(job["args"])
                job["premade"] = premade_by_options[options]
                job["sandbox"] = plan
                data, fds, _, _ = socket.recv_fds(handover, 256, 1)
                if data.decode() != job["token"] or len(fds) != 1:
                    raise RuntimeError("the grader's handover is out of step with its jobs")
                job["sampler_fd"] = fds[0]
                job["started"] = time.monotonic()
                job["deadline"] = job["started"] + float(job["timeout"])
                job["timed_out"] = False
                pid = _fork(job, (requests, replies, handover.fileno(), *pidfds))
                os.close(job["sampler_fd"])
                running[pid] = job
                if use_pidfds:
                    try:
                        pidfds[os.pidfd_open(pid)] = pid
                    except OSError:  # a kernel without pidfds: poll from now on
                        use_pidfds = False
        now = time.monotonic()
        for pid, job in running.items():
            if not job["timed_out"] and now > job["deadline"]:
                job["timed_out"] = True
                job.setdefault("survivors", []).extend(kill_tree(pid))
        while running:
            try:  # seen, not reaped: the run's pid (and group) cannot be reused while it is killed
                seen = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                break
            if seen is None:
                break
            pid = seen.si_pid
            if pid in running:  # whatever the run left behind in its tree or its group
                running[pid].setdefault("survivors", []).extend(kill_tree(pid))
            _, status = os.waitpid(pid, 0)
            finished = running.pop(pid, None)
            for fd in [fd for fd, owner in pidfds.items() if owner == pid]:
                os.close(fd)
                del pidfds[fd]
            if finished is None:
                continue
            job = finished
            if job["timed_out"]:
                reply(job, "timed_out", 0)
            elif os.WIFSIGNALED(status):
                reply(job, "signaled", os.WTERMSIG(status))
            else:
                reply(job, "exited", os.waitstatus_to_exitcode(status))
    return 0


if __name__ == "__main__":
    sys.exit(main())
