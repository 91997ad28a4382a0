"""Time to grade the example suite over all mutants, divided by one clean run of it.

Both are measured in this run, on this machine: the clean run is ``python -m pytest`` on the
suite in a fresh interpreter (what a student runs), the grading is ``grade()`` end to end
(worker start, clean run, canary, decoy, 24 mutants, ``-j`` = the CPUs available). Goal: at
most 3 on a 2-core machine.

    python benchmarks/bench_grade.py [--repeat N] [--suite PATH]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from spec_verify.mutants.grader import grade

SUITE = Path(__file__).resolve().parent.parent / "examples" / "graded_suite"


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
    ratios = []
    for round_ in range(1, args.repeat + 1):
        clean = clean_run(args.suite)
        started = time.perf_counter()
        result = grade(args.suite)
        graded = time.perf_counter() - started
        ratios.append(graded / clean)
        print(f"round {round_}: clean run {clean:.2f} s, grading {graded:.2f} s "
              f"({result.detected}/{result.total} detected), ratio {graded / clean:.2f}")
    median = statistics.median(ratios)
    print(f"grade time / clean run time: median {median:.2f} (goal <= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
