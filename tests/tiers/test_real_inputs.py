"""Inputs like a real model's (issue 26): the statistical case with float32-valued logits in
which top-k, top-p and min-p each cut a token and the residual has several tokens, and its
negative control, a sampler wrong only on float32-valued logits.

Declared: the check's share of the tier's Holm family (family alpha 1e-6 in a gate) and power
0.99 at its planned TV (0.1 with ``quick``); the control emits a token the target gives
probability 0, which fails at any alpha.
"""

from __future__ import annotations

import itertools

import numpy as np

from spec_verify.adapters import load_implementation
from spec_verify.reference import SamplingParams, sampling_distribution
from spec_verify.results import Status
from spec_verify.tiers.statistical import STATISTICAL_CHECKS, run_statistical_tier

NAME = "first_token.float32_logits_every_processor_cuts"
CHECK = next(c for c in STATISTICAL_CHECKS if c.name == NAME)


def test_the_case_is_float32_valued_and_every_processor_cuts() -> None:
    logits = np.array(CHECK.logits)
    assert np.array_equal(logits.astype(np.float32).astype(np.float64), logits)

    def support(**params: float) -> set[int]:
        dist = sampling_distribution(logits, SamplingParams(**params), [], [])
        return {int(t) for t in np.flatnonzero(dist)}

    stack = dict(CHECK.params)
    stages = [support(), support(top_k=stack["top_k"]),
              support(top_k=stack["top_k"], top_p=stack["top_p"]), support(**stack)]  # fmt: skip
    assert all(later < earlier for earlier, later in itertools.pairwise(stages))
    p = np.array([CHECK.probabilities()[t] for t in range(len(logits))])
    q = np.array([float(v) for v in CHECK.draft])
    assert (p > q).sum() >= 2 and ((p > 0) & (p < q)).any()  # a residual of several tokens


def test_a_sampler_wrong_only_on_float32_logits_fails_the_case() -> None:
    impl = load_implementation("python:tests.impls.wrong_on_float32")
    try:
        names = [NAME, "first_token.filters_and_penalties"]
        results = {r.name: r for r in run_statistical_tier(impl, checks=names, quick=True)}
    finally:
        impl.close()
    assert results[NAME].status is Status.FAILED, results[NAME].message
    assert "probability 0 were produced" in results[NAME].message
    # the same processors on float64 logits: right
    assert results["first_token.filters_and_penalties"].status is Status.PASSED


def test_the_reference_passes_the_case(reference) -> None:  # type: ignore[no-untyped-def]
    (result,) = run_statistical_tier(reference, checks=[NAME], quick=True)
    assert result.status is Status.PASSED, result.message
