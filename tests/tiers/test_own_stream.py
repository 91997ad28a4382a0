"""``statistical/own_stream.*``: the implementation drafts on its own stream
(``propose_and_verify``); the law of the round continued with the target is the target's.
The plan is sized for noise shared between draft and verifier (vLLM PR #47386), whose exact
TV on the check's rows is recomputed here; the coupled implementation fails, the reference and
an honest own-stream implementation pass."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.profiles import Claim, claim_of
from spec_verify.reference import Pcg32, SamplingParams, propose_and_verify
from spec_verify.results import Status
from spec_verify.stats._power import achieved_power
from spec_verify.tiers._own_stream import coupled_law, product_law, total_variation
from spec_verify.tiers.statistical import (
    STATISTICAL_CHECKS,
    OwnStreamCheck,
    plan_statistical_tier,
    run_statistical_tier,
)

CHECKS = [c for c in STATISTICAL_CHECKS if isinstance(c, OwnStreamCheck)]
NAMES = [c.name for c in CHECKS]


def test_the_plan_is_sized_for_the_coupling_bugs_exact_tv() -> None:
    for check in CHECKS:
        tv = total_variation(coupled_law(check.target, check.draft), product_law(check.target))
        assert tv == Fraction(4, 91)
        assert check.planned_delta <= tv  # sized just below the bug's TV: power >= planned
        assert claim_of("statistical", check.name) is Claim.LAW
    plan = plan_statistical_tier()  # the default gate: every check, delta 0.05
    entry = next(e for e in plan.entries if e.check.name in NAMES)
    assert entry.n > 10_000  # not the run's delta 0.05: the check's own plan
    assert achieved_power(entry.cells, entry.alpha, 4 / 91, entry.n) >= plan.power


def test_the_coupled_laws_enumerator_gives_the_target_without_coupling() -> None:
    """The enumerator's negative control: rows where q = p accept everything, coupled or not."""
    p = (Fraction(1, 2), Fraction(1, 3), Fraction(1, 6))
    assert total_variation(coupled_law((p, p, p), (p, p)), product_law((p, p, p))) == 0


def test_the_reference_drafts_from_the_processed_draft_rows() -> None:
    """Its drafts follow q after the draft's processors: a top-k 1 draft always proposes its
    argmax, so the first emitted token is it whenever the target accepts it."""
    target = np.zeros((3, 4))
    draft = np.log(np.array([[0.1, 0.2, 0.6, 0.1], [0.7, 0.1, 0.1, 0.1]]))
    rng = Pcg32(3, 5)
    firsts = {propose_and_verify(target, draft, SamplingParams(), [], rng,
                                 draft_params=SamplingParams(top_k=1))[0][:2] == [2, 0]
              for _ in range(200)}  # fmt: skip
    assert True in firsts
    with pytest.raises(ValueError, match="target_logits"):
        propose_and_verify(target[:2], draft, SamplingParams(), [], rng)


@pytest.mark.slow  # about 15,000 rounds each (the check's own plan): 20-30 s
@pytest.mark.parametrize(("spec", "status"), [
    ("reference", Status.PASSED),
    ("python:tests.impls.own_stream_honest", Status.PASSED),
    ("python:tests.impls.own_stream_coupled", Status.FAILED),
])  # fmt: skip
def test_noise_coupling_fails_and_the_correct_controls_pass(spec: str, status: Status) -> None:
    impl = load_implementation(spec)
    try:
        results = run_statistical_tier(impl, checks=NAMES)
    finally:
        impl.close()
    assert [r.status for r in results] == [status] * len(NAMES), [r.message for r in results]
