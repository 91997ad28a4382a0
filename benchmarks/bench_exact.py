"""Exact proof by cell enumeration vs the samples a goodness-of-fit test would need.

For each vocabulary size V and draft length k: random rational target rows (k + 1) and draft
rows (k), drafted ids drawn from the draft rows, and one round of ``verify_draft`` enumerated
cell by cell; the exact distribution is compared with the exact rejection rule's
(``exact_verify``: the round's distribution for those drafts, from which exactness over drafts
follows by the per-token identity, proven by ``spec-verify prove --symbolic``).

Printed per (V, k): calls into the implementation (and how many of them the leaf audits made),
calls / (V (k + 1)) and the same for the exploration alone (calls less audits: flat in k, about
2 to 3); the leaf audits, which move every draw of every leaf, add a term that grows with k.
Then the lower bound any sound black-box method has on this tree, ``sum over leaves (draws +
1)`` (see ``spec_verify.exact._cells``), and the calls over it, wall time, the samples a
G-test needs to detect a deviation of 1e-3 in total variation at alpha = 1e-6 with power 0.99 (``n =
lambda(V - 1) / (4 delta^2)``, noncentral chi-square, from ``spec_verify.stats._power``), and that
number over the calls.

Usage: python benchmarks/bench_exact.py [--impl SPEC] [--seed S] [--repeats R] [--vocab V ...]
[--k K ...] (issue 14's size: --vocab 1024 --k 8)
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from fractions import Fraction

from spec_verify.adapters._loader import load_implementation
from spec_verify.exact._cells import Round, enumerate_round
from spec_verify.reference.exact import exact_verify
from spec_verify.stats._power import required_samples as planned_samples

ALPHA, DELTA, POWER = 1e-6, 1e-3, 0.99


def required_samples(V: int) -> int:
    """Samples a G-test needs to detect TV ``DELTA`` (``spec_verify.stats._power``: noncentral
    chi-square, ``n = lambda(V - 1, alpha, power) / (4 delta^2)``)."""
    return planned_samples(V, ALPHA, DELTA, POWER)


def random_row(rng: random.Random, V: int) -> tuple[Fraction, ...]:
    weights = [rng.randint(1, 1000) for _ in range(V)]
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


def make_round(V: int, k: int, seed: int) -> Round:
    rng = random.Random(f"bench/{V}/{k}/{seed}")
    p_rows = tuple(random_row(rng, V) for _ in range(k + 1))
    q_rows = tuple(random_row(rng, V) for _ in range(k))
    # drafts where q > p are the expensive ones (an accept cell and a reject cell)
    draft_ids = []
    for p, q in zip(p_rows, q_rows):
        over = [t for t in range(V) if q[t] > p[t]]
        draft_ids.append(rng.choice(over) if over else rng.randrange(V))
    return Round(p_rows, tuple(draft_ids), q_rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", default="python:spec_verify.reference")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--vocab", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    impl = load_implementation(args.impl)
    print(f"implementation: {impl.name}; G-test plan: alpha={ALPHA:g}, TV delta={DELTA:g}, "
          f"power={POWER}")
    header = (f"{'V':>4} {'k':>2} {'calls':>7} {'audits':>7} {'calls/V(k+1)':>13} "
              f"{'explore/V(k+1)':>15} "
              f"{'bound':>6} {'calls/bound':>11} {'wall s':>7} {'G-test n':>12} "
              f"{'n / calls':>10}  verdict")
    print(header)
    print("-" * len(header))
    worst = worst_explore = 0.0
    for V in args.vocab:
        samples = required_samples(V)
        for k in args.k:
            rnd = make_round(V, k, args.seed)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                enumeration = enumerate_round(impl, rnd)
                times.append(time.perf_counter() - start)
            wall = statistics.median(times)
            expected = exact_verify(rnd.p_rows, rnd.draft_ids, rnd.q_rows)
            if not enumeration.complete:
                verdict = f"not provable: {enumeration.reason}"
            elif enumeration.distribution == expected:
                verdict = "proven exact"
            else:
                verdict = "DIFFERS"
            per = enumeration.calls / (V * (k + 1))
            explore = (enumeration.calls - enumeration.audit_calls) / (V * (k + 1))
            worst, worst_explore = max(worst, per), max(worst_explore, explore)
            bound = sum(len(leaf.draws) + 1 for leaf in enumeration.leaves)
            print(f"{V:>4} {k:>2} {enumeration.calls:>7} {enumeration.audit_calls:>7} "
                  f"{per:>13.2f} {explore:>15.2f} {bound:>6} "
                  f"{enumeration.calls / bound:>11.2f} {wall:>7.2f} "
                  f"{samples:>12,} {samples / enumeration.calls:>10,.0f}  {verdict}")
    print(f"calls / (V (k + 1)) stays at most {worst:.2f}; without the leaf audits (the "
          f"exploration alone, flat in k) at most {worst_explore:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
