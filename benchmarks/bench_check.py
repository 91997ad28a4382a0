"""``spec-verify check`` on the bundled reference: in the harness's process (the old path)
against a worker process (the path every implementation takes now), same tiers, same seed.

Prints the seconds of each and their ratio (target: the worker within 1.5x); both verdicts
must be PASSED, or the numbers mean nothing.

Usage: python benchmarks/bench_check.py [--full] [--tier T ...]
"""

from __future__ import annotations

import argparse
import time

from spec_verify.adapters._loader import load_implementation
from spec_verify.runner import run_checks


def timed(in_process: bool, tiers: list[str] | None, quick: bool) -> tuple[float, bool, str]:
    start = time.perf_counter()
    impl = load_implementation("reference", in_process=in_process)
    try:
        report = run_checks(impl, tiers=tiers, quick=quick)
    finally:
        close = getattr(impl, "close", None)
        if callable(close):
            close()
    failed = ", ".join(f"{r.tier}/{r.name}" for r in report.failures())
    return time.perf_counter() - start, report.passed, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full run (default: --quick)")
    parser.add_argument("--tier", action="append", help="only this tier (repeatable)")
    args = parser.parse_args()
    rows = []
    for label, in_process in (("in process (old path)", True), ("worker process", False)):
        seconds, passed, failed = timed(in_process, args.tier, not args.full)
        rows.append((label, seconds, passed, failed))
    base = rows[0][1]
    print(
        f"spec-verify check reference {'(full)' if args.full else '--quick'}"
        f"{' --tier ' + ' --tier '.join(args.tier) if args.tier else ''}"
    )
    for label, seconds, passed, failed in rows:
        verdict = "PASSED" if passed else f"FAILED ({failed})"
        print(f"{label:<24} {seconds:8.1f} s  {seconds / base:5.2f}x  {verdict}")


if __name__ == "__main__":
    main()
