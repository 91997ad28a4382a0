"""Draw token sequences from user generators in worker processes, in parallel, never hanging.

A generator is ``python:module:function`` (or ``python:path/to/file.py:function``): a
function taking an integer seed and returning a token sequence. Each generator's seeds are
split into chunks; each chunk runs in its own worker process (its own process group, so a
hung generator and its children are killed together), at most ``workers`` at a time. The
parent reads one JSON line per draw with a deadline: no answer within ``timeout`` seconds is a
hang. The first failure of a generator (it raises, hangs, dies, returns ids out of
``[0, vocab_size)`` or fewer than ``length`` tokens) stops the drawing: the outcome keeps the
draws made so far, marked partial, and names the generator, the seed and the fix.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from spec_verify.errors import InvalidArgument
from spec_verify.ipc.supervisor import kill_tree

__all__ = ["DrawOutcome", "GeneratorFailure", "draw_sequences", "seeds_for"]

_MAX_LINE = 1 << 20  # bytes: a longer line is garbage from the worker
_LOAD_ALLOWANCE = 120.0  # seconds to import the generator's module (torch takes a few)
_STDERR_TAIL = 2000

Progress = Callable[[dict[str, int], dict[str, int]], None]


@dataclass(frozen=True)
class GeneratorFailure:
    """Why a generator's draws stopped: which generator, at which seed, and the fix."""

    label: str
    spec: str
    seed: int | None
    reason: str
    fix: str
    detail: str = ""

    def describe(self) -> str:
        where = f" at seed {self.seed}" if self.seed is not None else ""
        return f"generator {self.label} ({self.spec}){where}: {self.reason}; {self.fix}"


@dataclass(frozen=True)
class DrawOutcome:
    """The draws per generator label (rows in seed order, first ``length`` tokens), the
    seeds that produced them, and the failures (empty when every draw was made)."""

    tokens: dict[str, npt.NDArray[np.int64]]
    seeds: dict[str, tuple[int, ...]]
    requested: dict[str, int]
    failures: tuple[GeneratorFailure, ...] = ()
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.failures and all(
            len(self.tokens[label]) == n for label, n in self.requested.items()
        )


def seeds_for(index: int, count: int, n: int, root_seed: int = 0) -> list[int]:
    """The seeds of generator ``index`` of ``count``: disjoint across generators, so no two
    generators share a seed (two generators seeded alike would draw coupled samples)."""
    return [root_seed + count * i + index for i in range(n)]


@dataclass
class _Task:
    label: str
    spec: str
    seeds: list[int]
    done: int = 0


@dataclass
class _Running:
    task: _Task
    process: subprocess.Popen[bytes]
    stderr: IO[bytes]
    started: float
    last: float
    ready: bool = False
    buffer: bytearray = field(default_factory=bytearray)


def draw_sequences(
    specs: dict[str, str],
    n: int,
    *,
    length: int,
    vocab_size: int,
    root_seed: int = 0,
    workers: int | None = None,
    timeout: float = 60.0,
    progress: Progress | None = None,
) -> DrawOutcome:
    """Draw ``n`` sequences from each generator of ``specs`` (label -> spec).

    Args:
        specs: generators by label (``{"A": "python:m:f", "B": ...}``).
        n: draws per generator.
        length: tokens kept per draw (the first ``length``); a shorter draw is a failure.
        vocab_size: token ids must lie in ``[0, vocab_size)``.
        root_seed: generator ``i`` gets seeds ``root_seed + len(specs) * j + i``.
        workers: processes at once (default: the number of CPUs).
        timeout: seconds a single draw may take before it counts as a hang.
        progress: called as ``progress(done_by_label, requested_by_label)`` while drawing.

    Returns:
        A ``DrawOutcome``; never raises for a misbehaving generator (see its ``failures``).

    Raises:
        InvalidArgument: a bad spec string, ``n``, ``length``, ``vocab_size`` or ``timeout``.
    """
    for label, spec in specs.items():
        _check_spec(label, spec)
    n = _positive_int("n", n)
    length = _positive_int("length", length)
    vocab_size = _positive_int("vocab_size", vocab_size)
    if not timeout > 0:
        raise InvalidArgument("timeout", timeout, "must be positive seconds", "e.g. 60")
    workers = max(1, workers or os.cpu_count() or 1)
    # One chunk per worker share: a worker's start (importing torch, building models) is paid
    # once per chunk.
    chunks = max(1, -(-workers // len(specs)))
    seeds_by_label: dict[str, list[int]] = {}
    chunks_by_label: dict[str, list[_Task]] = {}
    size = -(-n // chunks)
    for index, (label, spec) in enumerate(specs.items()):
        seeds = seeds_for(index, len(specs), n, root_seed)
        seeds_by_label[label] = seeds
        chunks_by_label[label] = [
            _Task(label, spec, seeds[i : i + size]) for i in range(0, n, size)
        ]
    # Interleaved (A1, B1, A2, B2, ...): every generator makes progress from the start.
    tasks = [task for round_ in zip(*chunks_by_label.values(), strict=True) for task in round_]
    rows: dict[str, dict[int, list[int]]] = {label: {} for label in specs}
    failures: list[GeneratorFailure] = []
    started = time.monotonic()
    selector = selectors.DefaultSelector()
    running: list[_Running] = []
    pending = list(tasks)
    try:
        while (pending or running) and not failures:
            while pending and len(running) < workers:
                running.append(_launch(pending.pop(0), length, selector))
            for key, _ in selector.select(timeout=0.2):
                worker: _Running = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fd)
                    failure = _finished(worker)
                    running.remove(worker)
                    if failure:
                        failures.append(failure)
                    continue
                worker.buffer.extend(chunk)
                failure = _consume(worker, rows, length, vocab_size)
                if failure:
                    failures.append(failure)
                    break
            now = time.monotonic()
            for worker in list(running):
                allowance = timeout + (0 if worker.ready else _LOAD_ALLOWANCE)
                if now - worker.last > allowance and not failures:
                    failures.append(_hung(worker, allowance))  # killed below
            if progress is not None:
                progress({label: len(r) for label, r in rows.items()}, dict.fromkeys(specs, n))
    finally:
        for worker in running:
            _kill(worker, failures)
        selector.close()
    tokens: dict[str, npt.NDArray[np.int64]] = {}
    seeds_done: dict[str, tuple[int, ...]] = {}
    for label, by_seed in rows.items():
        ordered = [s for s in seeds_by_label[label] if s in by_seed]
        seeds_done[label] = tuple(ordered)
        tokens[label] = np.array([by_seed[s] for s in ordered], dtype=np.int64).reshape(
            len(ordered), length
        )
    return DrawOutcome(
        tokens=tokens,
        seeds=seeds_done,
        requested=dict.fromkeys(specs, n),
        failures=tuple(failures),
        seconds=time.monotonic() - started,
    )


# The worker file runs by path: importing it as spec_verify.endtoend._worker would import the
# package (numpy, scipy) before the generator's own imports; it needs only the standard library.
# Supervised as a check worker is (spec_verify/ipc/supervisor.py): limits and death with the
# harness first (no address-space limit: a generator may load a model), then sealed off
# (spec_verify/_sandbox.py: own PID and mount namespaces, a fresh /proc, the harness's folders
# read-only, uid 65534 where the harness is root), the plan being the process's own argument,
# removed before the worker runs. Where the kernel refuses the namespaces, the process splits
# in two instead (supervise_self): a subreaper parent that kills what the generator left once
# it ends, as the namespace's pid 1 does.
_BOOT = ("import json, runpy, sys; from spec_verify._sandbox import enter_sandbox; "
         "from spec_verify.ipc.supervisor import harden_worker, supervise_self; "
         "harden_worker(memory_limit=None); plan = json.loads(sys.argv.pop(2)); "
         "(plan and enter_sandbox(**plan).pid_namespace) or supervise_self(); "
         "runpy.run_path(sys.argv[1], run_name='__main__')")


def _sandbox_plan(spec: str) -> dict[str, Any]:
    """The generator's worker's sandbox: what it needs reachable (the interpreter, sys.path,
    the working folder, the generator's file) and what stays read-only; ``{}`` for none
    (``SPEC_VERIFY_NO_PID_NAMESPACE=1``)."""
    from spec_verify._sandbox import NOBODY, harness_paths

    target = spec.removeprefix("python:").rpartition(":")[0]
    needed = [p for p in (sys.base_prefix, sys.prefix, *sys.path, os.getcwd(),
                          os.path.dirname(os.path.abspath(target)) if target else "")
              if p and os.path.isabs(p) and os.path.exists(p)]
    if os.environ.get("SPEC_VERIFY_NO_PID_NAMESPACE", "") not in ("", "0"):
        return {}  # no sandbox, as for check workers
    return {"readonly": harness_paths(), "writable": [], "needed": needed,
            "drop_to": NOBODY if os.geteuid() == 0 else None}


def _launch(task: _Task, length: int, selector: selectors.BaseSelector) -> _Running:
    worker_file = str(Path(__file__).with_name("_worker.py"))
    # Closed by _kill when the worker ends; its tail goes into a failure's detail.
    stderr = tempfile.TemporaryFile()  # noqa: SIM115
    process = subprocess.Popen(
        # -c puts the working directory first on sys.path, so the user's modules import.
        [sys.executable, "-c", _BOOT, worker_file, json.dumps(_sandbox_plan(task.spec))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(
        json.dumps({"spec": task.spec, "seeds": task.seeds, "length": length}).encode()
    )
    process.stdin.close()
    now = time.monotonic()
    worker = _Running(task=task, process=process, stderr=stderr, started=now, last=now)
    os.set_blocking(process.stdout.fileno(), False)
    selector.register(process.stdout.fileno(), selectors.EVENT_READ, worker)
    return worker


def _consume(
    worker: _Running, rows: dict[str, dict[int, list[int]]], length: int, vocab_size: int
) -> GeneratorFailure | None:
    task = worker.task
    while b"\n" in worker.buffer:
        line, _, rest = bytes(worker.buffer).partition(b"\n")
        worker.buffer = bytearray(rest)
        worker.last = time.monotonic()
        failure = _message(worker, line, rows, length, vocab_size)
        if failure:
            return failure
    if len(worker.buffer) > _MAX_LINE:
        return _failure(
            worker,
            _next_seed(task),
            "sent a line longer than 1 MiB",
            "return a short token sequence",
        )
    return None


def _message(  # noqa: PLR0911 - one return per rule a draw can break
    worker: _Running,
    line: bytes,
    rows: dict[str, dict[int, list[int]]],
    length: int,
    vocab_size: int,
) -> GeneratorFailure | None:
    task = worker.task
    try:
        message = json.loads(line)
    except ValueError:
        return _failure(
            worker,
            _next_seed(task),
            "its worker sent malformed output",
            "do not write to the process's file descriptors",
        )
    if not isinstance(message, dict):
        return _failure(worker, _next_seed(task), "its worker sent malformed output", "")
    if "load_error" in message:
        return _failure(
            worker,
            None,
            f"could not be loaded: {message['load_error']}",
            "check the module path (run from the directory that holds it) and the function name",
            str(message.get("traceback", "")),
        )
    if message.get("ready") is True:
        worker.ready = True
        return None
    seed = _next_seed(task)
    if message.get("seed") != seed:
        return _failure(worker, seed, "its worker answered out of order", "")
    if "error" in message:
        return _failure(
            worker,
            seed,
            f"raised {message['error']}",
            f"call it by hand with seed {seed} to debug it",
            str(message.get("traceback", "")),
        )
    tokens, total = message.get("tokens"), message.get("length")
    if (
        not isinstance(tokens, list)
        or not isinstance(total, int)
        or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens)
    ):
        return _failure(worker, seed, "its worker sent malformed output", "")
    if total < length:
        return _failure(
            worker,
            seed,
            f"returned {total} tokens, fewer than length={length}",
            "generate at least that many new tokens (max_new_tokens, no EOS stop), "
            "or lower the length",
        )
    bad = [t for t in tokens if not 0 <= t < vocab_size]
    if bad:
        return _failure(
            worker,
            seed,
            f"returned token id {bad[0]}, outside [0, {vocab_size})",
            "return token ids of the declared vocabulary (new tokens only, no prompt), "
            "or declare the right vocabulary size",
        )
    assert seed is not None  # the worker answered for a seed it was given
    rows[task.label][seed] = tokens
    task.done += 1
    return None


def _finished(worker: _Running) -> GeneratorFailure | None:
    code = worker.process.wait()
    task = worker.task
    failure = None
    if worker.buffer:
        failure = _failure(worker, _next_seed(task), "its worker sent malformed output", "")
    elif task.done < len(task.seeds) or not worker.ready:
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        failure = _failure(
            worker,
            _next_seed(task) if worker.ready else None,
            f"ended its process ({how}) before answering",
            "a generator must return, not exit the process",
        )
    _close(worker)  # it ended on its own, and its supervisor ended the rest first
    return failure


def _hung(worker: _Running, allowance: float) -> GeneratorFailure:
    seed = _next_seed(worker.task) if worker.ready else None
    what = "did not return" if worker.ready else "did not load"
    failure = _failure(
        worker,
        seed,
        f"{what} within {allowance:g} s (a hang; its process was killed)",
        "fix the hang, or raise --timeout if a draw really takes that long",
    )
    return failure


def _failure(
    worker: _Running, seed: int | None, reason: str, fix: str, detail: str = ""
) -> GeneratorFailure:
    if not detail:
        detail = _stderr_tail(worker)
    return GeneratorFailure(worker.task.label, worker.task.spec, seed, reason, fix, detail)


def _stderr_tail(worker: _Running) -> str:
    try:
        worker.stderr.seek(0, os.SEEK_END)
        size = worker.stderr.tell()
        worker.stderr.seek(max(0, size - _STDERR_TAIL))
        return worker.stderr.read().decode(errors="replace")
    except (OSError, ValueError):
        return ""


def _next_seed(task: _Task) -> int | None:
    return task.seeds[task.done] if task.done < len(task.seeds) else None


def _kill(worker: _Running, failures: list[GeneratorFailure]) -> None:
    """End ``worker`` and every process its generator started; a process still running after
    (``kill_tree``'s proof failed) is the generator's failure, added to ``failures``. A worker
    that ended on its own left nothing: its supervisor (pid 1 of its namespace, or the
    subreaper parent of ``supervise_self``) ends only after the generator's processes."""
    if worker.process.poll() is None:
        survivors = kill_tree(worker.process.pid)
        worker.process.wait()
        if survivors:
            failures.append(_failure(
                worker, None,
                f"left {len(survivors)} processes running after its worker was killed "
                f"(pids {', '.join(map(str, survivors[:8]))})",
                "a generator must not start processes that outlive it; kill them by hand",
            ))  # fmt: skip
    _close(worker)


def _close(worker: _Running) -> None:
    if worker.process.stdout is not None:
        worker.process.stdout.close()
    worker.stderr.close()


def _check_spec(label: str, spec: Any) -> None:
    if not isinstance(spec, str) or not spec.startswith("python:") or spec.count(":") < 2:
        raise InvalidArgument(
            label,
            spec,
            "must name a generator as python:module:function (or python:file.py:function)",
            "e.g. python:mygen:speculative, a function taking a seed and returning token ids",
        )


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(name, value, "must be a positive integer")
    return value
