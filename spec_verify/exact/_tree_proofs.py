"""Proofs about the tree rules themselves, and the exact bias of Medusa's typical acceptance.

- ``prove_tree_rules``: for each lossless rule, vocabulary size, branching and depth, one round
  with the draft tree's tokens drawn as the rule says (``tree_exact.exact_tree_round``, exact
  over every draw), continued with the target to ``depth + 1`` tokens, equals plain sampling
  from the target (``exact_target_sequences``) as ``Fraction``s. Seeded rational tables with
  zeros in both models (tokens the target bans, tokens the draft never proposes).
- ``typical_bias``: the same round under the typical rule, for a range of thresholds: the exact
  total-variation distance of the continued law to the target's, of the first token's law to
  ``p``, the per-token difference of the first token, and the expected number of drafts kept
  (against the lossless rules' on the same tables).

An implementation is then proven lossless by ``tiers.tree.check_tree_exact``: its law per fixed
tree equals the reference rule's, which is lossless averaged over the draws (proven here).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from spec_verify.exact._cells import format_fraction
from spec_verify.reference.exact import Dist

__all__ = [
    "BiasRow",
    "RuleProof",
    "acceptance_by_branching",
    "prove_tree_rules",
    "typical_bias",
]

LOSSLESS = ("with_replacement", "without_replacement")
DEFAULT_EPSILONS = ("0.001", "0.01", "0.05", "0.09", "0.2", "0.3", "0.5", "0.8")


class _Tables:
    """Seeded rational next-token tables (a target or a draft), memoised per context."""

    def __init__(self, seed: int, name: str, V: int, zeros: int) -> None:
        self.rng = random.Random(f"{seed}/{name}/{V}")
        self.V = V
        self.zeros = zeros
        self.rows: dict[tuple[int, ...], Dist] = {}

    def __call__(self, context: tuple[int, ...]) -> Dist:
        row = self.rows.get(context)
        if row is None:
            weights = [self.rng.randint(1, 9) for _ in range(self.V)]
            for token in self.rng.sample(range(self.V), min(self.zeros, self.V - 1)):
                weights[token] = 0
            total = sum(weights)
            row = tuple(Fraction(w, total) for w in weights)
            self.rows[context] = row
        return row


@dataclass(frozen=True)
class RuleProof:
    """One lossless rule on one (V, branching, depth): ``proven`` iff the laws are equal."""

    rule: str
    V: int
    branching: int
    depth: int
    proven: bool
    outcomes: int
    tv: Fraction
    mean_kept: Fraction
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "V": self.V, "branching": self.branching,
                "depth": self.depth, "proven": self.proven, "outcomes": self.outcomes,
                "tv": format_fraction(self.tv), "mean_kept": format_fraction(self.mean_kept),
                "seconds": self.seconds}


def _mean_kept(law: dict[tuple[int, ...], Fraction]) -> Fraction:
    return sum(((len(seq) - 1) * prob for seq, prob in law.items()), Fraction(0))


def _round(rule: str, V: int, branching: int, depth: int, seed: int,
           epsilon: float = 0.09, delta: float = 0.3) -> tuple[Any, ...]:
    from spec_verify.reference.exact import exact_target_sequences
    from spec_verify.reference.tree_exact import (
        exact_tree_round,
        extend_to,
        full_shape,
        total_variation,
    )

    target = _Tables(seed, "target", V, zeros=1 if V > 2 else 0)
    # without replacement needs at least `branching` tokens the draft can propose
    draft = _Tables(seed, "draft", V, zeros=max(0, min(1, V - branching)))
    law = exact_tree_round(target, draft, (), full_shape(branching, depth), rule,
                           epsilon, delta)
    continued = extend_to(law, target, (), depth + 1)
    expected = exact_target_sequences(target, (), depth + 1)
    return law, continued, expected, total_variation(continued, expected), target


def prove_tree_rules(
    *, seed: int = 0, vocab_sizes: Sequence[int] = (2, 4, 8), max_branching: int = 3,
    max_depth: int = 3, rules: Sequence[str] = LOSSLESS,
) -> list[RuleProof]:
    """Each lossless rule on every (V, branching, depth) asked: exact over the draft draws.

    >>> [p.proven for p in prove_tree_rules(vocab_sizes=(3,), max_branching=2, max_depth=1)]
    [True, True, True, True]
    """
    out = []
    for rule in rules:
        for V in vocab_sizes:
            for branching in range(1, max_branching + 1):
                if rule == "without_replacement" and branching > V:
                    continue
                for depth in range(1, max_depth + 1):
                    start = time.perf_counter()
                    law, continued, expected, tv, _ = _round(rule, V, branching, depth, seed)
                    out.append(RuleProof(rule, V, branching, depth, continued == expected,
                                         len(law), tv, _mean_kept(law),
                                         time.perf_counter() - start))
    return out


@dataclass(frozen=True)
class BiasRow:
    """Typical acceptance at one threshold: its exact bias and the drafts it keeps."""

    epsilon: Fraction
    delta: float
    tv: Fraction  # the round continued to depth + 1 tokens, against the target's law
    tv_first: Fraction  # the first token's law against p
    first_token_error: dict[int, Fraction]  # P(first = v) - p(v), per token
    mean_kept: Fraction
    lossless_mean_kept: Fraction  # with replacement, on the same tables

    def to_json(self) -> dict[str, Any]:
        return {"epsilon": format_fraction(self.epsilon), "delta": self.delta,
                "tv": format_fraction(self.tv), "tv_first": format_fraction(self.tv_first),
                "first_token_error": {str(t): format_fraction(v)
                                      for t, v in self.first_token_error.items()},
                "mean_kept": format_fraction(self.mean_kept),
                "lossless_mean_kept": format_fraction(self.lossless_mean_kept)}


def typical_bias(
    *, seed: int = 0, epsilons: Sequence[object] = DEFAULT_EPSILONS, V: int = 4,
    branching: int = 2, depth: int = 2,
) -> list[BiasRow]:
    """Medusa's typical acceptance at each ``epsilon`` (with Medusa's ``delta = sqrt(epsilon)``):
    its exact TV to the target and the drafts it keeps, on one seeded pair of tables."""
    from spec_verify.reference.tree_exact import first_token_law, total_variation

    lossless, *_ = _round("with_replacement", V, branching, depth, seed)
    rows = []
    for value in epsilons:
        epsilon = Fraction(str(value))
        delta = math.sqrt(float(epsilon))
        law, _, _, tv, target = _round("typical", V, branching, depth, seed,
                                       float(epsilon), delta)
        first = first_token_law(law)
        p = {t: v for t, v in enumerate(target(())) if v}
        error = {t: first.get(t, Fraction(0)) - p.get(t, Fraction(0))
                 for t in range(V) if first.get(t) or p.get(t)}
        rows.append(BiasRow(epsilon, delta, tv, total_variation(dict(first), dict(p)), error,
                            _mean_kept(law), _mean_kept(lossless)))
    return rows


def acceptance_by_branching(
    *, seed: int = 0, V: int = 6, depth: int = 2, max_branching: int = 4,
) -> dict[str, list[tuple[int, Fraction]]]:
    """The exact expected number of drafts kept per round against the branching factor, for
    each lossless rule (what the docs plot)."""
    out: dict[str, list[tuple[int, Fraction]]] = {}
    for rule in LOSSLESS:
        out[rule] = []
        for branching in range(1, max_branching + 1):
            law, *_ = _round(rule, V, branching, depth, seed)
            out[rule].append((branching, _mean_kept(law)))
    return out
