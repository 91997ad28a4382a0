"""``spec-verify demo``: the seed's worked example proven exactly, a random case, and a
speculative generation on the bundled attention model."""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from typing import Any

from spec_verify.results import ExitCode
from spec_verify.seeds import seed_option

__all__ = ["register", "run"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="prove a worked example exactly and run the bundled model",
        description="Prove the exact output distribution of a worked example (p = 1/2,1/4,1/4, "
        "q = 1/4,1/2,1/4) and of a "
        "random case, then run speculative generation on the bundled attention model with each "
        "draft, showing tokens per target pass and the acceptance rate.",
    )
    parser.add_argument("--seed", type=seed_option("--seed"), default=0,
                        help="seed of the random case and sampling, in [0, 2**63)")
    parser.add_argument("--vocab", type=int, default=5,
                        help="vocabulary of the random case, 2 to 64 (default 5)")
    parser.add_argument("--max-tokens", type=int, default=120, help="tokens to generate")
    parser.add_argument("-k", type=int, default=4, help="draft tokens per round")
    parser.set_defaults(func=run)


def _fmt(dist: dict[int, Fraction], V: int) -> str:
    return "[" + ", ".join(str(dist.get(t, Fraction(0))) for t in range(V)) + "]"


def _prove(title: str, p: tuple[Fraction, ...], q: tuple[Fraction, ...], x: int) -> bool:
    from spec_verify.reference.exact import exact_first_token, step_table

    print(f"\n== {title}")
    print(f"   target p = [{', '.join(map(str, p))}]")
    print(f"   draft  q = [{', '.join(map(str, q))}]")
    print(f"   drafted token x = {x}:")
    for step, computation, result in step_table(p, q, x):
        print(f"     {step:<24} {computation:<58} {result}")
    out = exact_first_token(p, q)
    exact: bool = out == {t: v for t, v in enumerate(p) if v}
    print(f"   over x ~ q, P(first token) = {_fmt(out, len(p))}")
    print(f"   equals p exactly: {'yes (proven with Fractions)' if exact else 'NO'}")
    return exact


def _random_case(seed: int, V: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    import numpy as np

    rng = np.random.default_rng(seed)

    def dist() -> tuple[Fraction, ...]:
        weights = rng.integers(0, 6, size=V)
        weights[rng.integers(V)] += 1  # never all zero
        return tuple(Fraction(int(w), int(weights.sum())) for w in weights)

    return dist(), dist()


def _generation(max_tokens: int, k: int, seed: int) -> None:
    from spec_verify.reference import SamplingParams, generate, speculative_generate
    from spec_verify.reference.bundled import (
        BUNDLED_PROMPT,
        bundled_drafts,
        bundled_target,
        bundled_tokenizer,
    )

    tok = bundled_tokenizer()
    prompt = tok.encode(BUNDLED_PROMPT)
    print(f"\n== speculative generation on the bundled attention model (k = {k})")
    print(f"   prompt: {tok.decode(prompt)!r}")
    for label, temperature in (("greedy", 0.0), ("sampled, temperature 1", 1.0)):
        p = SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed)
        start = time.perf_counter()
        plain = generate(bundled_target(), tok, prompt, p)
        plain_s = time.perf_counter() - start
        print(
            f"\n   {label}: plain decoding {len(plain.ids)} tokens in "
            f"{plain.stats['target_calls']} target passes ({plain_s * 1e3:.0f} ms)"
        )
        print(
            f"   {'draft':<14} {'passes':>6} {'tokens/pass':>11} {'acceptance':>10} "
            f"{'ms':>6}  same ids as plain"
        )
        for name, draft in bundled_drafts().items():
            start = time.perf_counter()
            out = speculative_generate(bundled_target(), draft, tok, prompt, p, k=k)
            ms = (time.perf_counter() - start) * 1e3
            same = (
                "yes"
                if out.ids == plain.ids
                else ("n/a (sampled: equal in distribution)" if temperature else "NO")
            )
            print(
                f"   {name:<14} {out.stats['target_calls']:>6} "
                f"{len(out.ids) / out.stats['target_calls']:>11.2f} "
                f"{out.stats['acceptance_rate']:>10.2f} {ms:>6.0f}  {same}"
            )
        print(f"   text: {plain.text[:70]!r}")


# The random case is printed in full, every probability a fraction: beyond this it is a wall of
# numbers, not a demonstration (``spec-verify prove`` takes any V).
MAX_DEMO_VOCAB = 64


def _usage_problem(args: argparse.Namespace) -> str | None:
    if not 2 <= args.vocab <= MAX_DEMO_VOCAB:
        return (f"--vocab {args.vocab}: must be in [2, {MAX_DEMO_VOCAB}] (the case is printed "
                "in full; spec-verify prove --p ... --q ... takes any size)")
    if args.k < 0:
        return f"-k {args.k}: must be >= 0 draft tokens per round"
    if args.max_tokens < 1:
        return f"--max-tokens {args.max_tokens}: must be >= 1"
    return None


def run(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem is not None:
        print(f"spec-verify demo: {problem}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    F = Fraction
    ok = _prove(
        "worked example",
        (F(1, 2), F(1, 4), F(1, 4)),
        (F(1, 4), F(1, 2), F(1, 4)),
        1,
    )
    p, q = _random_case(args.seed, args.vocab)
    x = max(range(args.vocab), key=lambda t: q[t])
    ok &= _prove(f"random case (seed {args.seed}, V = {args.vocab})", p, q, x)
    _generation(args.max_tokens, args.k, args.seed)
    return ExitCode.PASSED if ok else ExitCode.FAILED
