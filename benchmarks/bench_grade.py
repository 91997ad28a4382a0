"""The grader's two ratios (issue 25), side by side in one run, and where the time goes.

1. **Per-run overhead**: a graded clean run of the example suite (sealed as every graded run is,
   its sampler a served child of the tree's server, every call through the proxy), fork to
   exit, against the same suite run in-process on the clean reference (pytest in a child
   forked from this warm process: no proxy, no sandbox, no second process). Goal: at most 2.
2. **Runs per grading beside the lottery bound they buy**: a grading with the defaults, its
   runs counted per phase, and the counting attacker's bound (``mutants/lottery.py``) at the
   clean reruns used and at one fewer (which must be over the 1-in-100 target: no more runs
   than the bound requires).

Also printed: the grading's wall time against one plain ``python -m pytest`` of the suite
(CPU time too: on a shared machine wall time moves with other people's load), each phase's
runs and seconds, and one call through the proxy against the same call in-process.

    python benchmarks/bench_grade.py [--repeat N] [--runs N] [--suite PATH] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from spec_verify.mutants import grader as grader_module
from spec_verify.mutants._runner import RunPool, RunRequest, worker_environment
from spec_verify.mutants._source import reference_sources
from spec_verify.mutants.catalogue import CATALOGUE
from spec_verify.mutants.grader import (
    DEFAULT_CONFIRMATIONS,
    DEFAULT_DECOYS,
    grade,
    pytest_arguments,
)
from spec_verify.mutants.lottery import TARGET_WIN, clean_reruns_needed, counting_lottery_win

SUITE = Path(__file__).resolve().parent.parent / "examples" / "graded_suite"


def _cpu() -> float:
    """CPU seconds of this process and of its finished children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def clean_run(suite: Path) -> float:
    with tempfile.TemporaryDirectory() as cwd:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
                       cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - started


class PhaseClock:
    """Wall time, run count and summed run seconds of each phase of one grading."""

    PHASES = ("calibrate", "controls_and_mutants", "confirm")

    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}  # phase -> [wall, runs, run seconds]
        self.current = "setup"
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> PhaseClock:
        grading = grader_module._Grading
        for name in self.PHASES:
            original = getattr(grading, name)
            self._saved[name] = original
            setattr(grading, name, self._timed(name, original))
        original_run_all = RunPool.run_all
        self._saved["run_all"] = original_run_all
        clock = self

        def run_all(pool: RunPool, jobs: int, runs: Any) -> Iterator[Any]:
            row = clock.rows.setdefault(clock.current, [0.0, 0, 0.0])
            for index, outcome in original_run_all(pool, jobs, runs):
                row[1] += 1
                row[2] += outcome.seconds
                yield index, outcome

        RunPool.run_all = run_all  # type: ignore[method-assign]
        return self

    def _timed(self, name: str, original: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.current = name
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.rows.setdefault(name, [0.0, 0, 0.0])[0] += time.perf_counter() - started

        return timed

    def __exit__(self, *exc: object) -> None:
        for name in self.PHASES:
            setattr(grader_module._Grading, name, self._saved[name])
        RunPool.run_all = self._saved["run_all"]  # type: ignore[method-assign]

    def report(self) -> str:
        lines = []
        for name in self.PHASES:
            wall, runs, run_seconds = self.rows.get(name, [0.0, 0, 0.0])
            mean = run_seconds / runs if runs else 0.0
            lines.append(f"    {name:22s} {int(runs):3d} runs, {wall:7.2f} s wall, runs' own "
                         f"{run_seconds:7.2f} s ({mean:.3f} s a run)")
        return "\n".join(lines)


def call_costs(calls: int) -> tuple[float, float]:
    """Microseconds per ``verify_draft`` + ``rng.random()`` pair (the example suite's loop),
    in-process and through the proxy of a served sampler (one forked child, as in a run)."""
    import spec_verify.reference as real
    from spec_verify.ipc.frames import send_message
    from spec_verify.mutants._proxy import connect
    from spec_verify.mutants._sampler import serve
    from spec_verify.mutants._source import reference_sources

    def loop(ref: Any) -> float:
        rng = ref.request_rng(1)
        q = np.array([0.25, 0.5, 0.25])
        rows = np.log(np.array([[0.5, 0.25, 0.25], [1 / 3] * 3]))
        params = ref.SamplingParams()
        started = time.perf_counter()
        for _ in range(calls):
            x = int(np.searchsorted(np.cumsum(q), rng.random(), side="right"))
            ref.verify_draft(rows, [x], q[None, :], params, [], rng)
        return (time.perf_counter() - started) / calls * 1e6

    local = loop(real)
    near, far = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            near.close()
            serve(far)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    far.close()
    try:
        send_message(near, {"sources": reference_sources(), "private": False})
        proxied = loop(connect(near).module("spec_verify.reference"))
    finally:
        near.close()
        os.waitpid(pid, 0)
    return local, proxied


def graded_clean_runs(suite: Path, runs: int) -> tuple[list[float], dict[str, object]]:
    """Seconds (fork to exit) of ``runs`` graded clean runs, one at a time, and the sandbox."""
    sources = reference_sources()
    request = RunRequest(sources, pytest_arguments(), 600.0)
    with RunPool(suite) as pool:
        pool.precompile([sources])
        seconds = []
        for _, outcome in pool.run_all(1, [request] * runs):
            if not outcome.passed_cleanly:
                raise SystemExit(f"a graded clean run failed:\n{outcome.output[-2000:]}")
            seconds.append(outcome.seconds)
        return seconds, dict(pool.sandbox)


def in_process_runs(suite: Path, runs: int) -> list[float]:
    """Seconds of ``runs`` runs of the suite by pytest in a child forked from this process
    (pytest, numpy and the installed reference imported once here, as the grader's fork
    servers import theirs), on a copy of the suite, with the graded runs' arguments."""
    import pytest

    import spec_verify.reference  # noqa: F401 (imported before the fork, as a server would)

    env = worker_environment()
    seconds = []
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / suite.name
        shutil.copytree(suite, copy, ignore=shutil.ignore_patterns("__pycache__"))
        (Path(scratch) / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        for _ in range(runs):
            started = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.chdir(copy)
                    os.environ.clear()
                    os.environ.update(env)
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, 1)
                    os.dup2(devnull, 2)
                    code = int(pytest.main([*pytest_arguments(), "."]))
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            seconds.append(time.perf_counter() - started)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit("the suite failed in-process on the clean reference")
    return seconds


def runs_beside_bound(counts: dict[str, int], mutants: int, decoys: int,
                      confirmations: int) -> str:
    """The grading's runs and the counting lottery's bound at its clean reruns (and one fewer)."""
    reruns = clean_reruns_needed(mutants, decoys, confirmations)
    bound = counting_lottery_win(mutants, decoys, confirmations, reruns)
    fewer = counting_lottery_win(mutants, decoys, confirmations, reruns - 1)
    total = sum(counts.values())
    parts = ", ".join(f"{name} {count}" for name, count in counts.items())
    return (f"runs per grading: {total} ({parts}); {reruns} clean reruns bound a counting "
            f"lottery at {bound:.4f} (target < {TARGET_WIN}); {reruns - 1} would give "
            f"{fewer:.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (median reported)")
    parser.add_argument("--suite", type=Path, default=SUITE)
    parser.add_argument("--calls", type=int, default=2000,
                        help="call pairs timed in-process and through the proxy")
    parser.add_argument("--runs", type=int, default=9,
                        help="graded clean runs and in-process runs timed for ratio 1")
    args = parser.parse_args()
    graded_seconds, sandbox = graded_clean_runs(args.suite, args.runs)
    local_seconds = in_process_runs(args.suite, args.runs)
    graded_run, local_run = statistics.median(graded_seconds), statistics.median(local_seconds)
    overhead = graded_run / local_run
    print(f"sandbox of the graded runs: sealed={sandbox.get('sealed')}")
    if args.calls > 0:
        local, proxied = call_costs(args.calls)
        print(f"one verify_draft + rng.random() pair: {local:.0f} us in-process, "
              f"{proxied:.0f} us through the proxy (x{proxied / local:.1f})")
    ratios, cpu_ratios, run_counts = [], [], []
    detected = 0
    for round_ in range(1, args.repeat + 1):
        cpu = _cpu()
        clean = clean_run(args.suite)
        clean_cpu = _cpu() - cpu
        cpu, started = _cpu(), time.perf_counter()
        with PhaseClock() as clock:
            result = grade(args.suite)
        graded = time.perf_counter() - started
        graded_cpu = _cpu() - cpu
        ratios.append(graded / clean)
        cpu_ratios.append(graded_cpu / clean_cpu)
        run_counts.append({name: int(clock.rows.get(name, [0, 0, 0])[1])
                           for name in PhaseClock.PHASES})
        detected = result.detected
        print(f"round {round_}: clean run {clean:.2f} s (cpu {clean_cpu:.2f} s), grading "
              f"{graded:.2f} s (cpu {graded_cpu:.2f} s, {result.detected}/{result.total} "
              f"detected, graded: {result.graded}): ratio {graded / clean:.2f}, "
              f"cpu ratio {graded_cpu / clean_cpu:.2f}")
        print(clock.report())
    if ratios:
        print(f"grade time / plain pytest run: median {statistics.median(ratios):.2f}; "
              f"cpu time ratio: median {statistics.median(cpu_ratios):.2f}")
    print()
    print(f"1. per-run overhead: graded clean run {graded_run:.3f} s / in-process run "
          f"{local_run:.3f} s = {overhead:.2f} (goal <= 2; medians of {args.runs})")
    if run_counts:
        line = runs_beside_bound(run_counts[-1], len(CATALOGUE), DEFAULT_DECOYS,
                                 DEFAULT_CONFIRMATIONS)
        print(f"2. {line} ({detected} detections confirmed twice each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
