"""Time to grade the example suite over all mutants, divided by one clean run of it.

Both are measured in this run, on this machine: the clean run is ``python -m pytest`` on the
suite in a fresh interpreter (what a student runs), the grading is ``grade()`` end to end with
its defaults (both fork servers, 3 clean repeats, the canary, 3 decoys, every mutant of the
catalogue, 2 confirmations of each detection with the default 13 clean reruns, every run
talking to its sampler's process through the proxy, ``-j`` = the CPUs available). Goal
(issue 11): at most 6 on a 2-core machine. The CPU time of both (processes included) is
printed too: on a shared machine the wall-time ratio moves with other people's load, the CPU
ratio much less.

Where the time goes is printed per round: each phase's runs and wall time, the runs' own
seconds (fork to exit, summed), and the cost of one call through the proxy against the same
call in-process (``--calls``; the example suite makes about 8,000 calls in one test).

    python benchmarks/bench_grade.py [--repeat N] [--suite PATH] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import resource
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
from spec_verify.mutants._runner import RunPool
from spec_verify.mutants.grader import grade

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

    PHASES = ("clean_runs", "controls_and_mutants", "confirm")

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (median reported)")
    parser.add_argument("--suite", type=Path, default=SUITE)
    parser.add_argument("--calls", type=int, default=2000,
                        help="call pairs timed in-process and through the proxy")
    args = parser.parse_args()
    if args.calls > 0:
        local, proxied = call_costs(args.calls)
        print(f"one verify_draft + rng.random() pair: {local:.0f} us in-process, "
              f"{proxied:.0f} us through the proxy (x{proxied / local:.1f})")
    ratios, cpu_ratios = [], []
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
        print(f"round {round_}: clean run {clean:.2f} s (cpu {clean_cpu:.2f} s), grading "
              f"{graded:.2f} s (cpu {graded_cpu:.2f} s, {result.detected}/{result.total} "
              f"detected, graded: {result.graded}): ratio {graded / clean:.2f}, "
              f"cpu ratio {graded_cpu / clean_cpu:.2f}")
        print(clock.report())
    print(f"grade time / clean run time: median {statistics.median(ratios):.2f} (goal <= 6); "
          f"cpu time ratio: median {statistics.median(cpu_ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
