"""Calibration of the statistical tier: measured false-alarm rates and measured power.

Two experiments, shared by ``benchmarks/calibrate_statistics.py`` (which prints the numbers in
``docs/calibration.md``) and the slow test:

- **False alarms**: the whole tier against a correct implementation (the reference), run after
  run with root seeds ``0, 1, ...``; the share of runs in which any check failed must be at most
  ``family_alpha`` (within its exact binomial interval), and each check's own rate at the loose
  level ``alpha`` must match ``alpha``.
- **Power**: for each check, samplers whose outcome law is at total variation *exactly*
  ``delta`` from the target: the hardest alternative (``hardest_alternative``), drawn at the
  check's planned sample size and tested at its planned alpha; the share detected must reach
  the declared power.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec_verify.adapters._loader import load_implementation
from spec_verify.errors import InvalidArgument
from spec_verify.results import Status
from spec_verify.stats._binomial import clopper_pearson
from spec_verify.stats._gof import pool_cells
from spec_verify.tiers.statistical import (
    STATISTICAL_CHECKS,
    StatisticalPlan,
    check_delta,
    observe,
    plan_statistical_tier,
    run_statistical_tier,
)

__all__ = [
    "FalseAlarms",
    "PowerMeasurement",
    "hardest_alternative",
    "measure_false_alarms",
    "measure_power",
]

Sample = Hashable


def hardest_alternative(law: Mapping[Sample, float], delta: float, n: int) -> dict[Sample, float]:
    """A law at total variation exactly ``delta`` from ``law`` that a G-test on ``n`` draws
    finds (nearly) hardest to detect.

    The test's cells (``law``'s support pooled by expected counts at ``n``, as ``g_test`` pools
    them) are split into two groups A and B with masses as close to 1/2 as a greedy split gets;
    the alternative is ``p (1 + delta / p(A))`` on A and ``p (1 - delta / p(B))`` on B. Its
    chi-square divergence is ``delta**2 / p(A) + delta**2 / p(B)``, which is the minimum
    ``4 delta**2`` when ``p(A) = 1/2``; every pooled cell moves as one, so pooling hides none
    of the deviation. Zero-probability outcomes stay at 0.

    Raises:
        InvalidArgument: ``delta`` is larger than the lighter group's mass (no such law).
    """
    outcomes = list(law)
    p = np.array([float(law[o]) for o in outcomes], dtype=np.float64)
    support = [int(i) for i in np.flatnonzero(p > 0)]
    groups = sorted(pool_cells(n * p, support), key=lambda cell: (-float(p[cell].sum()), cell[0]))
    side_a: list[int] = []
    side_b: list[int] = []
    mass_a = mass_b = 0.0
    for cell in groups:
        mass = float(p[cell].sum())
        if mass_a <= mass_b:
            side_a += cell
            mass_a += mass
        else:
            side_b += cell
            mass_b += mass
    if not side_b or delta > min(mass_a, mass_b):
        raise InvalidArgument(
            "delta",
            delta,
            f"no law at TV {delta} keeps the split {mass_a:.3g} / {mass_b:.3g} non-negative",
        )
    q = p.copy()
    q[side_a] *= 1 + delta / mass_a
    q[side_b] *= 1 - delta / mass_b
    q /= q.sum()
    return {outcome: float(value) for outcome, value in zip(outcomes, q, strict=True)}


@dataclass(frozen=True)
class FalseAlarms:
    """False alarms of the tier against a correct implementation over ``runs`` runs.

    ``failed_runs`` counts runs in which any check failed (Holm at ``family_alpha``);
    ``check_rejections`` counts, per check, the runs whose p-value was below ``alpha`` (each
    check on its own at the loose level).
    """

    runs: int
    family_alpha: float
    alpha: float
    delta: float
    failed_runs: int
    check_rejections: dict[str, int]

    def interval(self, count: int, level: float = 0.99) -> tuple[float, float]:
        """Exact (Clopper-Pearson) ``level`` interval for the rate behind ``count``."""
        return clopper_pearson(count, self.runs, 1 - level)


@dataclass(frozen=True)
class PowerMeasurement:
    """Detections of samplers at TV exactly ``delta`` by one check, at its planned n and alpha."""

    check: str
    runs: int
    detected: int
    n: int
    alpha: float
    delta: float
    power: float
    achieved_tv: float

    def interval(self, level: float = 0.99) -> tuple[float, float]:
        return clopper_pearson(self.detected, self.runs, 1 - level)


_Outcome = tuple[bool, dict[str, float]]


_Job = tuple[str, Sequence[int], float, float, float, Sequence[str] | None]


def _one_run(impl: Any, seed: int, family_alpha: float, delta: float, power: float,
             checks: Sequence[str] | None = None) -> _Outcome:
    results = run_statistical_tier(
        impl, seed=seed, family_alpha=family_alpha, delta=delta, power=power, checks=checks
    )
    failed = any(r.status is not Status.PASSED for r in results if r.status is not Status.SKIPPED)
    return failed, {r.name: float(r.pvalue) for r in results if r.pvalue is not None}


def _runs(args: _Job | tuple[str, Sequence[int], float, float, float],
          progress: Callable[[int], None] | None = None) -> list[_Outcome]:
    """The tier's runs for ``seeds`` on one worker, closed at the end (a run's outcome depends
    on its seed only: ``tests/tiers/test_statistical.py`` compares them with runs on fresh
    workers). Before, every run loaded a worker and none was closed: a 1,000-run calibration
    held about 700 worker processes and 12 GB when it was stopped."""
    spec, seeds, family_alpha, delta, power, *rest = args
    checks = rest[0] if rest else None
    impl = load_implementation(spec)
    try:
        outcomes = []
        for seed in seeds:
            outcomes.append(_one_run(impl, seed, family_alpha, delta, power, checks))
            if progress is not None:
                progress(len(outcomes))
        return outcomes
    finally:
        impl.close()


def measure_false_alarms(
    runs: int,
    *,
    spec: str = "reference",
    family_alpha: float = 0.01,
    alpha: float = 0.01,
    delta: float = 0.1,
    power: float = 0.99,
    first_seed: int = 0,
    processes: int = 1,
    progress: Callable[[int], None] | None = None,
    checks: Sequence[str] | None = None,
) -> FalseAlarms:
    """Run the whole tier (or its ``checks``, as one family) ``runs`` times (root seeds
    ``first_seed, ...``) and count alarms."""
    seeds = list(range(first_seed, first_seed + runs))
    failed_runs = 0
    rejections = {c.name: 0 for c in STATISTICAL_CHECKS if checks is None or c.name in checks}
    if processes > 1:
        chunks = [seeds[i::processes * 4] for i in range(min(runs, processes * 4))]
        with ProcessPoolExecutor(processes) as pool:
            outcomes = [o for chunk in pool.map(
                _runs, [(spec, c, family_alpha, delta, power, checks) for c in chunks])
                for o in chunk]
    else:
        outcomes = _runs((spec, seeds, family_alpha, delta, power, checks), progress)
    for failed, pvalues in outcomes:
        failed_runs += failed
        for name, pvalue in pvalues.items():
            rejections[name] += pvalue < alpha
    return FalseAlarms(runs, family_alpha, alpha, delta, failed_runs, rejections)


def measure_power(
    runs: int,
    *,
    family_alpha: float = 0.01,
    delta: float = 0.1,
    power: float = 0.99,
    seed: int = 0,
    checks: Sequence[str] | None = None,
) -> list[PowerMeasurement]:
    """For each check: ``runs`` samples of its planned size from the hardest alternative at TV
    ``delta`` (or the check's own smaller planned TV, ``check_delta``: what its plan declares),
    each tested at the check's planned alpha (its Holm threshold when it is the only deviating
    check of a run). Deterministic for a given ``seed``."""
    plan: StatisticalPlan = plan_statistical_tier(
        None, family_alpha=family_alpha, delta=delta, power=power
    )
    out = []
    for entry in plan.entries:
        if checks is not None and entry.check.name not in checks:
            continue
        law = entry.check.probabilities()
        declared = check_delta(entry.check, delta)
        q = hardest_alternative(law, declared, entry.n)
        outcomes = list(q)
        probs = np.array([q[o] for o in outcomes])
        tv = 0.5 * math.fsum(abs(q[o] - law[o]) for o in outcomes)
        rng = np.random.default_rng([seed, entry.index])
        detected = 0
        for _ in range(runs):
            draws = rng.choice(len(outcomes), size=entry.n, p=probs)
            sample = [outcomes[i] for i in draws]
            detected += observe(sample, entry.check, entry.alpha).pvalue < entry.alpha
        out.append(
            PowerMeasurement(
                entry.check.name, runs, detected, entry.n, entry.alpha, declared, power, tv
            )
        )
    return out
