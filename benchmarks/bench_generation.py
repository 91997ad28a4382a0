"""Speculative vs plain generation on the bundled attention model, measured in the same run.

Prints target passes per token and the wall-time ratio (speculative / plain) for each draft,
greedy and sampled. The bundled numpy model scores a chunk position by position (so rows are
bit-identical however the context is chunked): a pass over five tokens costs about five times
one token here, unlike on a GPU, so the pass count is the number that transfers, and the
wall-time ratio shows the bookkeeping overhead of speculation on top of it.

Usage: python benchmarks/bench_generation.py [--tokens N] [-k K] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import time

from spec_verify.reference import SamplingParams, generate, speculative_generate
from spec_verify.reference.bundled import (
    BUNDLED_PROMPT,
    bundled_drafts,
    bundled_target,
    bundled_tokenizer,
)


def timed(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("-k", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tok = bundled_tokenizer()
    prompt = tok.encode(BUNDLED_PROMPT)
    print(f"bundled attention model, {args.tokens} tokens, k = {args.k}, median of {args.repeats}")
    print(
        f"{'mode':<8} {'draft':<14} {'passes/token':>12} {'acceptance':>10} "
        f"{'wall ms':>8} {'wall ratio vs plain':>20}"
    )
    for mode, temperature in (("greedy", 0.0), ("sampled", 1.0)):
        p = SamplingParams(temperature=temperature, max_tokens=args.tokens, seed=1)
        plain, plain_s = timed(lambda p=p: generate(bundled_target(), tok, prompt, p), args.repeats)
        print(
            f"{mode:<8} {'(plain)':<14} {plain.stats['target_calls'] / len(plain.ids):>12.3f} "
            f"{'-':>10} {plain_s * 1e3:>8.1f} {1.0:>20.2f}"
        )
        for name in bundled_drafts():
            out, spec_s = timed(  # a fresh draft per run: a model draft keeps a cache
                lambda name=name, p=p: speculative_generate(
                    bundled_target(), bundled_drafts()[name], tok, prompt, p, k=args.k
                ),
                args.repeats,
            )
            if temperature == 0:
                assert out.ids == plain.ids, f"{name}: greedy output differs from plain"
            print(
                f"{mode:<8} {name:<14} {out.stats['target_calls'] / len(out.ids):>12.3f} "
                f"{out.stats['acceptance_rate']:>10.2f} {spec_s * 1e3:>8.1f} "
                f"{spec_s / plain_s:>20.2f}"
            )


if __name__ == "__main__":
    main()
