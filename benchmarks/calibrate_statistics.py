"""Calibration of the statistical tier, measured: false-alarm rates and power.

1. False alarms: the whole tier against the reference, RUNS times (root seeds 0..RUNS-1), at a
   loose family-wise alpha (0.01): the share of runs with any failed check must not exceed
   alpha beyond its exact binomial interval, and each check's own rate at alpha = 0.01 must
   match 0.01.
2. Power: for each check, samplers at total variation exactly DELTA from the target (the
   hardest alternative), drawn at the check's planned sample size and tested at its planned
   alpha: the share detected must reach the declared power (0.99).

Usage: python benchmarks/calibrate_statistics.py [--runs 1000] [--power-runs 1000]
       [--delta 0.1] [--processes 2] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import time

from spec_verify.tiers._calibration import measure_false_alarms, measure_power


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="tier runs on the reference")
    parser.add_argument("--power-runs", type=int, default=1000, help="runs per check for power")
    parser.add_argument("--alpha", type=float, default=0.01, help="family-wise alpha")
    parser.add_argument("--delta", type=float, default=0.1, help="TV distance detected")
    parser.add_argument("--power", type=float, default=0.99, help="declared power")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-false-alarms", action="store_true")
    args = parser.parse_args()

    print(
        f"# statistical tier calibration (alpha={args.alpha}, delta={args.delta}, "
        f"power={args.power})\n"
    )
    if not args.skip_false_alarms:
        started = time.perf_counter()
        alarms = measure_false_alarms(
            args.runs,
            family_alpha=args.alpha,
            alpha=args.alpha,
            delta=args.delta,
            power=args.power,
            processes=args.processes,
        )
        seconds = time.perf_counter() - started
        lo, hi = alarms.interval(alarms.failed_runs)
        print(
            f"## false alarms on the reference: {alarms.runs} runs of the whole tier "
            f"({seconds:.0f} s)\n"
        )
        print("| what | alarms | rate | 99% interval | nominal |")
        print("|---|---:|---:|---|---:|")
        print(
            f"| any check failed (Holm, family alpha {args.alpha:g}) | {alarms.failed_runs} "
            f"| {alarms.failed_runs / alarms.runs:.4f} | [{lo:.4f}, {hi:.4f}] "
            f"| <= {args.alpha:g} |"
        )
        for name, count in alarms.check_rejections.items():
            lo, hi = alarms.interval(count)
            print(
                f"| {name}: p < {alarms.alpha:g} | {count} | {count / alarms.runs:.4f} "
                f"| [{lo:.4f}, {hi:.4f}] | {alarms.alpha:g} |"
            )
        print()
    started = time.perf_counter()
    measured = measure_power(
        args.power_runs, family_alpha=args.alpha, delta=args.delta, power=args.power
    )
    seconds = time.perf_counter() - started
    print(
        f"## power against samplers at TV exactly {args.delta} (hardest alternative), "
        f"{args.power_runs} runs per check ({seconds:.0f} s)\n"
    )
    print("| check | n | alpha_i | TV | detected | rate | 99% interval | declared |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for m in measured:
        lo, hi = m.interval()
        print(
            f"| {m.check} | {m.n:,} | {m.alpha:.3g} | {m.achieved_tv:.4f} | {m.detected} "
            f"| {m.detected / m.runs:.4f} | [{lo:.4f}, {hi:.4f}] | {m.power:g} |"
        )


if __name__ == "__main__":
    main()
