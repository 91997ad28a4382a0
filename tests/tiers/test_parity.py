"""The parity tier on Python implementations: cases, comparison, shrinking, replay."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.adapters import Implementation
from spec_verify.reference import SamplingParams, verify_draft
from spec_verify.results import Status
from spec_verify.tiers import _cases
from spec_verify.tiers._cases import ParityCase, lookup_case, verify_case
from spec_verify.tiers._shrink import shrink
from spec_verify.tiers.parity import run_parity_tier


class SwappedDraws(Implementation):
    """The reference with u_resample drawn before u_accept (seed pitfall 4)."""

    name = "python:swapped"
    capabilities = frozenset({"verify_draft", "injected_uniforms"})

    def params(self, **fields):
        return SamplingParams(**fields)

    def verify_draft(self, target_logits, draft_ids, draft_probs, p, history, rng, prompt=()):
        class Swapped:
            def __init__(self):
                self.held = []
                self.drawn = 0

            def random(self):
                self.drawn += 1
                if self.held:
                    return self.held.pop()
                if self.drawn > 2 * len(draft_ids):  # the bonus: one draw, as it should be
                    return rng.random()
                first, second = rng.random(), rng.random()
                self.held.append(first)
                return second

        source = Swapped()
        return verify_draft(target_logits, draft_ids, draft_probs, p, history, source, prompt)


def test_cases_are_pure_functions_of_their_seed():
    a, b = verify_case(1234), verify_case(1234)
    assert a.to_json() == b.to_json()
    assert verify_case(1235).to_json() != a.to_json()
    assert lookup_case(7) == lookup_case(7)


def test_the_cases_cover_what_the_contract_pins():
    cases = [verify_case(s) for s in range(2000)]
    vocabularies = [c.V for c in cases]
    assert min(vocabularies) == 2 and max(vocabularies) > 8192
    assert sum(v > 8192 for v in vocabularies) == 2000 // _cases.BIG_V_EVERY
    assert {c.greedy for c in cases} == {True, False}
    assert {c.draft_probs is None for c in cases} == {True, False}
    assert any(c.params["top_k"] for c in cases) and any(c.params["top_p"] < 1 for c in cases)
    assert any(c.params["min_p"] for c in cases)
    assert any(c.params["repetition_penalty"] != 1 for c in cases)
    assert any(np.isneginf(c.target_logits).any() for c in cases)
    assert {c.m for c in cases} == set(range(7))
    # What the red team's planted ports exploited before: real vocabularies with ties at the
    # top-k cut, long penalised histories, tiny temperatures, 64-bit stream seeds.
    huge = [c for c in cases if c.V >= 32_000]
    assert len(huge) == 2000 // _cases.HUGE_V_EVERY
    assert any(c.params["top_k"] for c in huge)
    assert any(len(c.history) > 64 and c.params["repetition_penalty"] != 1 for c in cases)
    assert any(0 < c.params["temperature"] < 1e-2 and c.draft_ids for c in cases)
    assert any(c.own_stream and c.stream_seed >= 2**63 for c in cases)
    assert len({c.stream_seed for c in cases}) == len(cases)
    lookups = [lookup_case(s) for s in range(500)]
    assert any(len(c.ctx) > 70 for c in lookups)
    for case in cases[:200]:  # every generated case is valid for the reference
        verify_draft(
            case.target_logits, list(case.draft_ids), case.draft_probs, case.sampling_params(),
            list(case.history), iter_source(case.uniforms), list(case.prompt),
        )  # fmt: skip


def iter_source(values):
    class Source:
        def __init__(self):
            self.values = list(values)

        def random(self):
            return self.values.pop(0)

    return Source()


def test_the_reference_keeps_parity_with_itself(reference):
    results = run_parity_tier(reference, n_cases=400)
    assert [r.name for r in results] == ["verify_draft", "sampling_distribution",
                                         "prompt_lookup", "pcg32", "verify_tree"]  # fmt: skip
    assert all(r.status is Status.PASSED for r in results), [r.message for r in results]
    assert results[0].n == 400


def test_a_draw_order_bug_fails_with_a_shrunk_case_and_a_replay_command():
    [result] = run_parity_tier(SwappedDraws(), n_cases=300)
    assert result.status is Status.FAILED
    shrunk = result.details["shrunk_case"]
    assert shrunk["m"] == 1  # one position is enough to show the swap
    assert shrunk["V"] <= 3
    assert not shrunk["params"].get("top_k") and not shrunk["history"]
    seed = result.details["case_seed"]
    assert result.repro == (
        f"spec-verify check --impl python:swapped --tier parity --case-seed {seed}"
    )
    assert "reference: emitted" in result.message and "implementation: emitted" in result.message
    [replayed] = run_parity_tier(SwappedDraws(), case_seed=seed)
    assert replayed.status is Status.FAILED and replayed.n == 1


def test_shrinking_keeps_the_failure_and_never_grows():
    case = verify_case(5)
    big = ParityCase(**{**case.__dict__, "params": {**case.params, "temperature": 1.0}})
    fails_when_m_positive = lambda c: c.m > 0
    small = shrink(big, fails_when_m_positive) if big.m else big
    assert small.size() <= big.size()
    if big.m:
        assert small.m == 1


@pytest.mark.parametrize("ulps", [0, 3])
def test_distributions_within_a_few_ulps_keep_parity(reference, monkeypatch, ulps):


    class Nudged(Implementation):
        name = "python:nudged"
        capabilities = frozenset({"sampling_distribution"})

        def verify_draft(self, *args, **kwargs):
            raise AssertionError("the sampling_distribution check calls nothing else")

        def params(self, **fields):
            return SamplingParams(**fields)

        def sampling_distribution(self, logits, p, history=(), prompt=()):
            probs = reference.sampling_distribution(logits, p, history, prompt)
            for _ in range(ulps):
                probs = np.where(probs > 0, np.nextafter(probs, 2.0), 0.0)
            return probs

    [result] = run_parity_tier(Nudged(), n_cases=200)
    assert result.status is Status.PASSED
    assert result.details["max_ulps"] == pytest.approx(ulps, abs=0.01)


def test_distributions_beyond_the_tolerance_fail(reference):


    class Off(Implementation):
        name = "python:off"
        capabilities = frozenset({"sampling_distribution"})

        def verify_draft(self, *args, **kwargs):
            raise AssertionError("the sampling_distribution check calls nothing else")

        def params(self, **fields):
            return SamplingParams(**fields)

        def sampling_distribution(self, logits, p, history=(), prompt=()):
            probs = reference.sampling_distribution(logits, p, history, prompt)
            return np.where(probs > 0, probs * (1 + 1e-12), 0.0)

    [result] = run_parity_tier(Off(), n_cases=100)
    assert result.status is Status.FAILED
    assert "ulps apart" in result.message
