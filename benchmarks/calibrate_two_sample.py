"""Calibration of ``two_sample_test``, measured: false-alarm rates under the null and power.

1. False alarms: for each regime (spec_verify.stats._calibration.REGIMES), RUNS pairs of samples
   drawn from one law, tested at each ALPHA; the rejection rate must stay within alpha up to
   its exact (Clopper-Pearson) interval.
2. Power: the hardest alternative at total variation DELTA, both samples of the planned size
   ``two_sample_required_samples``; the detection rate must reach the declared power.

Usage: python benchmarks/calibrate_two_sample.py [--runs 2000] [--power-runs 1000]
"""

from __future__ import annotations

import argparse
import time

from spec_verify.stats._calibration import REGIMES, false_alarms, power_at_delta


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="null runs per regime and alpha")
    parser.add_argument("--power-runs", type=int, default=1000, help="runs for the power row")
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.05, 0.01])
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--power", type=float, default=0.9)
    args = parser.parse_args()

    print("| regime | alpha | runs | rejections | rate | 99% interval | p-values |")
    print("|---|---:|---:|---:|---:|---|---|")
    for regime in REGIMES:
        for alpha in args.alphas:
            started = time.perf_counter()
            found = false_alarms(regime, args.runs, alpha)
            lo, hi = found.interval()
            print(
                f"| {regime.name}: {regime.description} | {alpha:g} | {found.runs} "
                f"| {found.rejections} | {found.rate:.4f} | [{lo:.4f}, {hi:.4f}] "
                f"| {', '.join(found.methods)} ({time.perf_counter() - started:.0f} s) |"
            )
    print()
    print("| alternative | alpha | runs | detected | rate | 99% interval | declared power |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for alpha in args.alphas:
        found, _ = power_at_delta(
            [0.4, 0.3, 0.15, 0.1, 0.05], args.delta, alpha, args.power, args.power_runs
        )
        lo, hi = found.interval()
        print(
            f"| {found.regime} | {alpha:g} | {found.runs} | {found.rejections} "
            f"| {found.rate:.4f} | [{lo:.4f}, {hi:.4f}] | {args.power:g} |"
        )


if __name__ == "__main__":
    main()
