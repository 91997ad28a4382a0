"""``check_sampler(shape="propose_and_verify")``: a sampler that drafts on its own stream and
verifies, its joint law against the target's, each case sized for noise coupling (vLLM PR
#47386) at its exact TV. Declared: family alpha 1e-3 (Holm over the cases), power 0.99 at
each case's planned TV (0.04 and 0.1, below the coupling's exact 4/91 and 0.15). The honest
control passes; the coupled one fails (the probability of a miss is at most 0.01 per case)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from spec_verify.endtoend import check_sampler, propose_cases
from spec_verify.errors import InvalidArgument
from spec_verify.stats._power import achieved_power
from spec_verify.tiers._own_stream import coupled_law, product_law, total_variation
from tests.impls import propose_samplers


def _fractions(row: object) -> tuple[Fraction, ...]:
    return tuple(Fraction(float(v)).limit_denominator(1000) for v in np.asarray(row))


def test_each_case_is_planned_below_the_coupling_bugs_exact_tv() -> None:
    tvs = []
    for case in propose_cases():
        k = case.draft_length
        target = [_fractions(case.target_row((0,) * i)) for i in range(k + 1)]
        draft = [_fractions(case.draft_row((0,) * i)) for i in range(k)]
        tv = total_variation(coupled_law(target, draft), product_law(target))
        assert case.planned_delta <= tv
        tvs.append(tv)
    assert tvs == [Fraction(4, 91), Fraction(3, 20)]


def test_the_honest_sampler_passes_and_noise_coupling_fails() -> None:
    honest = check_sampler(propose_samplers.honest, shape="propose_and_verify", seed=1)
    assert honest.passed, honest.message
    assert "noise-coupling TV" in honest.message
    coupled = check_sampler(propose_samplers.coupled, shape="propose_and_verify", seed=1)
    assert not coupled.passed
    assert all(case.rejected for case in coupled.cases), coupled.message
    for case, planned in zip(coupled.cases, (0.04, 0.1), strict=True):
        cells = 27 if case.case == "own_stream_v3_k2" else 125
        assert achieved_power(cells, 1e-3 / 2, planned, case.n) >= 0.99


def test_float32_rows_and_a_bad_shape() -> None:
    result = check_sampler(propose_samplers.honest, shape="propose_and_verify",
                           dtype="float32", seed=2)  # fmt: skip
    assert result.passed and result.dtype == "float32", result.message
    with pytest.raises(InvalidArgument, match="shape"):
        check_sampler(propose_samplers.honest, shape="propose")
