"""The statistical tier across the C ABI: batched rounds against one call per round.

Runs the tier's verify_draft checks on the Rust port twice, in the same process, on the same
plan (same checks, same sample sizes):
- batched: what the tier does (``SampledVerifier``: one message per batch of rounds, each round
  from the library's own PCG32 stream under a fresh seed);
- one call each: the same adapter behind a wrapper that hides ``batch``, so every round is a
  round trip to the worker with uniforms from a numpy generator (the tier before batching).
Both runs must pass (a benchmark of wrong answers is no benchmark). Prints seconds, rounds per
second and the ratio.

Usage: python benchmarks/bench_statistical.py [--lib PATH] [--repeats R]
(without --lib the Rust port is built with cargo).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from _port import add_port_argument, load_port

from spec_verify.tiers.statistical import STATISTICAL_CHECKS, run_statistical_tier

# The tier's verify_draft checks (generation runs Python modules only, not a C ABI library).
CHECKS = [c.name for c in STATISTICAL_CHECKS if c.needs == "verify_draft"]


class Unbatched:
    """The adapter without ``batch``: every round is one call into the worker."""

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    def __getattr__(self, name: str) -> Any:
        if name == "batch":
            raise AttributeError(name)
        return getattr(self._impl, name)


def run(impl: Any, repeats: int) -> tuple[float, int]:
    times, rounds = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        results = run_statistical_tier(impl, checks=CHECKS)
        times.append(time.perf_counter() - start)
        failed = [r.name for r in results if not r.status.ok]
        if failed:
            raise SystemExit(f"the port failed {failed}: the timing would be meaningless")
        rounds = sum(r.n or 0 for r in results)
    return statistics.median(times), rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_port_argument(parser)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    impl = load_port(args.lib)
    batched, rounds = run(impl, args.repeats)
    single, single_rounds = run(Unbatched(impl), args.repeats)
    print(f"statistical tier, {len(CHECKS)} checks on the Rust port (median of {args.repeats}):")
    print(
        f"  batched:       {batched:7.2f} s  {rounds / batched:10,.0f} rounds/s  ({rounds} rounds)"
    )
    print(
        f"  one call each: {single:7.2f} s  {single_rounds / single:10,.0f} rounds/s  "
        f"({single_rounds} rounds)"
    )
    print(f"  speed-up: {single / batched:.1f}x")


if __name__ == "__main__":
    main()
