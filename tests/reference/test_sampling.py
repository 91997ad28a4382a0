"""The sampling distribution: filter order, tie rules, penalties' histories (CONTRACT.md §2)."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.reference import InvalidLogits, SamplingParams, sample, sampling_distribution
from spec_verify.reference.sampling import token_logprobs


class Fixed:
    def __init__(self, u):
        self.u = u

    def random(self):
        return self.u


def dist(logits, **fields):
    return sampling_distribution(np.array(logits, float), SamplingParams(**fields))


def test_temperature_one_is_softmax():
    np.testing.assert_allclose(dist(np.log([0.2, 0.3, 0.5])), [0.2, 0.3, 0.5], rtol=1e-12)


def test_greedy_is_one_hot_with_ties_to_the_lowest_id():
    assert dist([1.0, 3.0, 3.0], temperature=0).tolist() == [0.0, 1.0, 0.0]


def test_top_k_keeps_exactly_k_with_ties_to_the_lowest_id():
    out = dist([1.0, 2.0, 2.0, 2.0], top_k=2)
    assert out[0] == 0 and out[3] == 0 and out[1] == out[2] == 0.5


TOP_P_CASES = [
    # probs, top_p, kept
    ([0.5, 0.3, 0.2], 0.5, [0]),  # the first token reaches 0.5 exactly: stop
    ([0.5, 0.3, 0.2], 0.51, [0, 1]),
    ([0.5, 0.3, 0.2], 1.0, [0, 1, 2]),
    ([0.2, 0.3, 0.5], 0.01, [2]),  # always at least the top token
    ([0.25, 0.25, 0.5], 0.6, [0, 2]),  # ties in order (-prob, id): 2, then 0
]


@pytest.mark.parametrize(("probs", "top_p", "kept"), TOP_P_CASES)
def test_top_p_keeps_the_shortest_prefix_reaching_top_p(probs, top_p, kept):
    out = dist(np.log(probs), top_p=top_p)
    assert sorted(np.flatnonzero(out).tolist()) == kept
    assert out.sum() == pytest.approx(1.0)


def test_min_p_drops_tokens_below_a_fraction_of_the_top():
    out = dist(np.log([0.5, 0.3, 0.15, 0.05]), min_p=0.3)  # threshold 0.15 keeps 0.15
    assert np.flatnonzero(out).tolist() == [0, 1, 2]


def test_filters_apply_in_the_pinned_order():
    # top-k first (keeps 0,1,2), then top-p over the renormalised three, then min-p.
    logits = np.log([0.4, 0.3, 0.2, 0.1])
    out = dist(logits, top_k=3, top_p=0.75)
    assert np.flatnonzero(out).tolist() == [0, 1]  # 0.4/0.9 = 0.44 < 0.75, +0.33 reaches it


def test_repetition_penalty_sees_prompt_and_history_sign_aware():
    logits = np.array([2.0, -1.0, 0.5])
    p = SamplingParams(temperature=0, repetition_penalty=4.0)
    # token 0 (2.0 -> 0.5) seen in the prompt; token 2 unseen stays 0.5; ties -> lowest id 0
    assert sampling_distribution(logits, p, [], [0]).tolist() == [1.0, 0.0, 0.0]
    assert sampling_distribution(logits, p, [0], []).tolist() == [1.0, 0.0, 0.0]
    out = sampling_distribution(np.array([2.0, -1.0, 1.9]), p, [0], [])
    assert out.tolist() == [0.0, 0.0, 1.0]


def test_presence_and_frequency_penalties_see_only_the_history():
    logits = np.array([1.0, 1.0])
    p = SamplingParams(temperature=0, frequency_penalty=0.4)
    assert sampling_distribution(logits, p, [], [0, 0, 0]).tolist() == [1.0, 0.0]  # prompt unseen
    assert sampling_distribution(logits, p, [0], []).tolist() == [0.0, 1.0]
    sampled = SamplingParams(presence_penalty=np.log(2), frequency_penalty=0.0)
    np.testing.assert_allclose(sampling_distribution(logits, sampled, [0, 0], []), [1 / 3, 2 / 3])


def test_sample_is_the_inverse_cdf_over_ascending_ids():
    probs = np.array([0.25, 0.0, 0.5, 0.25])
    assert [sample(probs, Fixed(u)) for u in (0.0, 0.2499, 0.25, 0.74, 0.75, 0.9999)] == [
        0,
        0,
        2,
        2,
        3,
        3,
    ]
    assert sample(probs, None) == 2  # greedy: no draw


def test_sample_never_returns_a_zero_probability_token_after_rounding():
    probs = np.array([0.1, 0.2, 0.7, 0.0])
    assert sample(probs, Fixed(np.nextafter(1.0, 0.0))) == 2


def test_token_logprobs_are_raw_log_softmax():
    logits = np.array([[0.0, np.log(3.0)], [np.log(3.0), 0.0]])
    np.testing.assert_allclose(token_logprobs(logits, [1, 1]), np.log([0.75, 0.25]))


@pytest.mark.parametrize("bad", [[np.nan, 0.0], [np.inf, 0.0], [-np.inf, -np.inf], [], [[0.0]]])
def test_bad_logits_raise(bad):
    with pytest.raises(InvalidLogits, match="logits"):
        sampling_distribution(np.array(bad, float), SamplingParams())
