"""Time to grade the example suite over all mutants, divided by one clean run of it.

Both are measured in this run, on this machine: the clean run is ``python -m pytest`` on the
suite in a fresh interpreter (what a student runs), the grading is ``grade()`` end to end with
its defaults (both fork servers, 3 clean repeats, the canary, 3 decoys, 24 mutants, 2
confirmations of each detection with 2 clean reruns, every run talking to its sampler's
process through the proxy, ``-j`` = the CPUs available). Goal (issue 11): at most 6 on a
2-core machine. The CPU time of both (processes included) is printed too: on a
shared machine the wall-time ratio moves with other people's load, the CPU ratio much less.

    python benchmarks/bench_grade.py [--repeat N] [--suite PATH]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (median reported)")
    parser.add_argument("--suite", type=Path, default=SUITE)
    args = parser.parse_args()
    ratios, cpu_ratios = [], []
    for round_ in range(1, args.repeat + 1):
        cpu = _cpu()
        clean = clean_run(args.suite)
        clean_cpu = _cpu() - cpu
        cpu, started = _cpu(), time.perf_counter()
        result = grade(args.suite)
        graded = time.perf_counter() - started
        graded_cpu = _cpu() - cpu
        ratios.append(graded / clean)
        cpu_ratios.append(graded_cpu / clean_cpu)
        print(f"round {round_}: clean run {clean:.2f} s (cpu {clean_cpu:.2f} s), grading "
              f"{graded:.2f} s (cpu {graded_cpu:.2f} s, {result.detected}/{result.total} "
              f"detected): ratio {graded / clean:.2f}, cpu ratio {graded_cpu / clean_cpu:.2f}")
    print(f"grade time / clean run time: median {statistics.median(ratios):.2f} (goal <= 6); "
          f"cpu time ratio: median {statistics.median(cpu_ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
