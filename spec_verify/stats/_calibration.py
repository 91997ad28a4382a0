"""Calibration of ``two_sample_test``, measured by simulation: false alarms and power.

Used by ``benchmarks/calibrate_two_sample.py`` (the numbers in docs/calibration.md) and, with
fewer runs, by a slow test. Each regime is a law shared by both samples (the null) and the
sample sizes; together they cover the test's modes: a dense table (chi-square limit), a sparse
one over thousands of categories (heavy pooling), a tiny one (permutation p-values), token
sequences (the joint law), unequal sample sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from spec_verify.stats._binomial import clopper_pearson
from spec_verify.stats._two_sample import two_sample_required_samples, two_sample_test

__all__ = ["REGIMES", "Calibration", "Regime", "false_alarms", "power_at_delta"]

Draw = Callable[[np.random.Generator, int], npt.NDArray[np.int64]]


@dataclass(frozen=True)
class Regime:
    """A null: one law sampled twice, with sizes ``n_a`` and ``n_b``."""

    name: str
    description: str
    n_a: int
    n_b: int
    draw: Draw


@dataclass(frozen=True)
class Calibration:
    """How often a test rejected in ``runs`` simulated runs, with an exact interval."""

    regime: str
    runs: int
    rejections: int
    alpha: float
    methods: tuple[str, ...]

    @property
    def rate(self) -> float:
        return self.rejections / self.runs

    def interval(self, level: float = 0.99) -> tuple[float, float]:
        """The Clopper-Pearson interval of the rejection rate at ``level``."""
        return clopper_pearson(self.rejections, self.runs, 1 - level)


def _categorical(probs: list[float]) -> Draw:
    p = np.asarray(probs, dtype=np.float64)
    p = p / p.sum()

    def draw(rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        return rng.choice(len(p), size=n, p=p).astype(np.int64)

    return draw


def _zipf(V: int) -> Draw:
    return _categorical([1 / (k + 1) for k in range(V)])


def _markov_sequences(V: int, L: int) -> Draw:
    # A fixed random transition matrix: sequences of L tokens with a non-uniform joint law.
    matrix = np.random.default_rng(12345).dirichlet(np.full(V, 0.7), size=V)
    start = np.random.default_rng(54321).dirichlet(np.full(V, 0.7))

    def draw(rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        out = np.empty((n, L), dtype=np.int64)
        out[:, 0] = rng.choice(V, size=n, p=start)
        cumulative = np.cumsum(matrix, axis=1)
        for t in range(1, L):
            u = rng.random(n)
            rows = cumulative[out[:, t - 1]]
            out[:, t] = np.minimum((rows < u[:, None]).sum(axis=1), V - 1)
        return out

    return draw


REGIMES: tuple[Regime, ...] = (
    Regime(
        "dense",
        "V=5, p=(.4,.3,.15,.1,.05), n=500 each",
        500,
        500,
        _categorical([0.4, 0.3, 0.15, 0.1, 0.05]),
    ),
    Regime(
        "sparse", "Zipf over V=2000, n=300 each (most categories pooled)", 300, 300, _zipf(2000)
    ),
    Regime(
        "tiny",
        "V=4, p=(.4,.3,.2,.1), n=8 each (permutation)",
        8,
        8,
        _categorical([0.4, 0.3, 0.2, 0.1]),
    ),
    Regime(
        "sequences",
        "joint law of 3 tokens of a Markov chain, V=6, n=400 each",
        400,
        400,
        _markov_sequences(6, 3),
    ),
    Regime("unequal", "Zipf over V=10, n_a=150, n_b=1500", 150, 1500, _zipf(10)),
)


def false_alarms(regime: Regime, runs: int, alpha: float, seed: int = 0) -> Calibration:
    """Reject rate of ``two_sample_test`` at ``alpha`` when both samples share the law."""
    root = np.random.SeedSequence([seed, _stable_hash(regime.name)])
    rejections = 0
    methods: set[str] = set()
    for child in root.spawn(runs):
        rng = np.random.default_rng(child)
        a = regime.draw(rng, regime.n_a)
        b = regime.draw(rng, regime.n_b)
        result = two_sample_test(a, b, alpha=alpha, seed=rng)
        rejections += not result.passed
        methods.add(result.method)
    return Calibration(regime.name, runs, rejections, alpha, tuple(sorted(methods)))


def power_at_delta(
    probs: list[float], delta: float, alpha: float, power: float, runs: int, seed: int = 0
) -> tuple[Calibration, int]:
    """Detection rate of ``two_sample_test`` against the hardest alternative at TV ``delta``.

    The categories are split into two groups of mass as close to 1/2 as possible; the
    alternative scales one group up by ``delta / p(A)`` and the other down by
    ``delta / p(B)``. Both samples have ``two_sample_required_samples`` draws.

    Returns:
        The calibration and the planned sample size per sample.
    """
    p = np.asarray(probs, dtype=np.float64)
    p = p / p.sum()
    order = np.argsort(-p)
    in_a = np.zeros(len(p), dtype=bool)
    mass = 0.0
    for token in order:
        if abs(mass + p[token] - 0.5) < abs(mass - 0.5):
            in_a[token] = True
            mass += p[token]
    q = np.where(in_a, p * (1 + delta / mass), p * (1 - delta / (1 - mass)))
    n = two_sample_required_samples(len(p), alpha, delta, power)
    root = np.random.SeedSequence([seed, 7])
    rejections = 0
    methods: set[str] = set()
    for child in root.spawn(runs):
        rng = np.random.default_rng(child)
        a = rng.choice(len(p), size=n, p=p)
        b = rng.choice(len(p), size=n, p=q)
        result = two_sample_test(a, b, alpha=alpha, seed=rng)
        rejections += not result.passed
        methods.add(result.method)
    name = f"hardest alternative at TV {delta:g}, V={len(p)}, n={n} each"
    return Calibration(name, runs, rejections, alpha, tuple(sorted(methods))), n


def _stable_hash(text: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(text)) % (2**31)
