"""Parity cases per second: through the FFI adapter (the Rust port in its worker process) and
through the Python reference, side by side, on the same generated cases.

Three numbers per row:
- FFI, batched: the cases sent to the worker in batches (what the parity tier does);
- FFI, one call each: ``impl.verify_draft`` per case (what a tier without batching pays: a
  round trip per call, uniforms pre-drawn from a copy of a deterministic source);
- the Python reference, one call each, on a scripted uniform stream.
Case generation is excluded (timed separately). Every answer is compared: a benchmark that
counts wrong answers fast is no benchmark.

Usage: python benchmarks/bench_parity.py [--cases N] [--lib PATH] [--repeats R]
(without --lib the Rust port is built with cargo).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from _port import add_port_argument, load_port

from spec_verify.reference import request_rng
from spec_verify.tiers import _cases, parity


def timed(fn: Any, repeats: int) -> tuple[Any, float]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    add_port_argument(parser)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    impl = load_port(args.lib)
    start = time.perf_counter()
    cases = [_cases.verify_case(s) for s in _cases.case_seeds(0, args.cases)]
    generation = time.perf_counter() - start
    runner = parity._Runner(impl)

    def ffi_batched() -> list[Any]:
        out: list[Any] = []
        for begin in range(0, len(cases), 400):
            out.extend(runner.many(cases[begin : begin + 400], lambda: None))
        return out

    def ffi_single() -> list[Any]:
        out = []
        for case in cases:
            rng = request_rng(case.stream_seed)  # the case's own uniforms
            out.append(
                impl.verify_draft(
                    case.target_logits, list(case.draft_ids), case.draft_probs,
                    case.sampling_params(), list(case.history), rng, list(case.prompt),
                )
            )  # fmt: skip
        return out

    def reference() -> list[Any]:
        return [_cases.reference_outcome(case) for case in cases]

    batched, t_batched = timed(ffi_batched, args.repeats)
    single_n = min(len(cases), 2_000)
    kept = cases
    cases = cases[:single_n]
    single, t_single = timed(ffi_single, 1)
    cases = kept
    expected, t_reference = timed(reference, args.repeats)
    wrong = sum(not parity._same(e, a) for e, a in zip(expected, batched, strict=True))
    wrong += sum(
        list(s[0]) != e[1][0] or s[1] != e[1][1]
        for s, e in zip(single, expected, strict=False)
        if e[0] == "ok"
    )
    impl.close()
    n = len(cases)
    print(
        f"{n} parity cases (verify_draft; V from 2 to 151,936), generated in {generation:.2f} s"
    )
    print(f"{'path':<34} {'cases/s':>10} {'seconds':>9}  vs Python reference")
    rows = [
        ("FFI adapter, batched (parity tier)", n / t_batched, t_batched),
        ("FFI adapter, one call per case", single_n / t_single, t_single * n / single_n),
        ("Python reference, one call each", n / t_reference, t_reference),
    ]
    for label, rate, seconds in rows:
        print(f"{label:<34} {rate:>10.0f} {seconds:>9.2f}  {rate / (n / t_reference):>6.2f}x")
    print(f"mismatches with the reference: {wrong}")


if __name__ == "__main__":
    main()
