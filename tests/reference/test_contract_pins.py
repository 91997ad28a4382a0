"""The ambiguities CONTRACT.md section 5 pins, one test each (issue 12).

Each was found by writing a port from CONTRACT.md alone, and each test is built so that the
other reading of the contract gives a different answer (the test says which one).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from spec_verify.reference import InvalidLogits, InvalidParams, SamplingParams, verify_draft
from spec_verify.reference.sampling import lane_sum, sample, sampling_distribution


class Counting:
    """Replays ``values`` (then 0.5 forever) and counts the draws."""

    def __init__(self, *values: object) -> None:
        self.values = list(values)
        self.drawn = 0

    def random(self) -> object:
        self.drawn += 1
        return self.values.pop(0) if self.values else 0.5


def softmax(row: list[float]) -> np.ndarray:
    """Step 5 of CONTRACT.md section 2, as the reference computes it."""
    logits = np.array(row)
    e = np.exp(logits - logits.max())  # the reference's exp (CONTRACT.md 2.5)
    return e / lane_sum(e)


def test_penalties_are_one_subtraction():
    # Token 1 (logit 2, in history) loses 2^-53 + 2^-53. One subtraction: 2 - 2^-52, a tie with
    # token 0, so the argmax is 0. Two subtractions round back to 2 each time: argmax 1.
    tiny = 2.0**-53
    assert (2.0 - tiny) - tiny == 2.0 and 2.0 - (tiny + tiny) == 2.0 - 2.0**-52
    p = SamplingParams(temperature=0, presence_penalty=tiny, frequency_penalty=tiny)
    out = sampling_distribution([2.0 - 2.0**-52, 2.0], p, history=[1])
    assert out.tolist() == [1.0, 0.0]


def test_min_p_judges_the_softmax_not_the_top_p_renormalised_vector():
    # top_p = 0.8 keeps tokens 1 and 2; min_p is exactly p[2] / p[1] in the softmax's floats,
    # so token 2 sits on the min-p boundary and is kept (prob >= min_p * max). Judged on the
    # vector top-p renormalised, the same ratio rounds the other way and token 2 is dropped.
    row = [0.0, 3.0, 2.0, 1.5]
    probs = softmax(row)
    min_p = float(probs[2] / probs[1])
    renormalised = np.where([False, True, True, False], probs, 0.0)
    renormalised = renormalised / lane_sum(renormalised)
    assert renormalised[2] < min_p * renormalised[1]  # the other reading drops token 2
    out = sampling_distribution(row, SamplingParams(top_p=0.8, min_p=min_p))
    assert np.flatnonzero(out).tolist() == [1, 2]


@pytest.mark.parametrize("fields", [{"top_p": 0.999}, {"min_p": 1e-3}], ids=["top_p", "min_p"])
def test_no_renormalisation_when_nothing_positive_was_dropped(fields):
    # The softmax of [0, 1, 2] sums to 1 - 2^-53 in float64, so dividing it by its own sum
    # again would change it; a filter that drops nothing must return step 5's vector as is.
    probs = softmax([0.0, 1.0, 2.0])
    assert (probs / lane_sum(probs) != probs).any()  # the other reading differs
    out = sampling_distribution([0.0, 1.0, 2.0], SamplingParams(**fields))
    assert out.tolist() == probs.tolist()


OVERFLOWS = [
    # logits, params, the words the message must hold
    ([1.0, 2.0], {"temperature": 1e-310}, "temperature=1e-310"),  # +inf: the softmax was NaN
    ([-1.0, 0.0], {"temperature": 1e-310}, "temperature=1e-310"),  # -inf: a silent ban
    ([1e308, 0.0], {"presence_penalty": -1e308}, "penalties"),
    ([-1e308, 0.0], {"repetition_penalty": 10.0, "temperature": 0}, "penalties"),
]


@pytest.mark.parametrize(("logits", "fields", "words"), OVERFLOWS)
def test_overflowing_logits_are_an_error(logits, fields, words):
    p = SamplingParams(**fields)
    with pytest.raises(InvalidLogits, match="overflows float64") as raised:
        sampling_distribution(logits, p, history=[0])
    assert words in str(raised.value) and "id 0" in str(raised.value)


def test_every_row_is_validated_before_the_first_draw():
    # Row 2 (the bonus row) overflows only with the kept drafts in the history: token 1 is
    # drafted at position 1, so row 2 sees it and -1e308 * 10 overflows; row 1 does not see
    # it. Checked position by position, both drafts would be accepted (u = 0: four draws) first.
    rows = np.zeros((3, 3))
    rows[2, 1] = -1e308
    p = SamplingParams(repetition_penalty=10.0)
    source = Counting(0.0, 0.0, 0.0, 0.0)
    with pytest.raises(InvalidLogits, match=r"overflows float64 under the penalties"):
        verify_draft(rows, [1, 1], None, p, [], source)
    assert source.drawn == 0
    rows[2, 1] = math.inf  # a +inf logit in the last row: also before any draw
    with pytest.raises(InvalidLogits, match=r"target_logits=.*\+inf at \(row, id\) \[\(2, 1\)\]"):
        verify_draft(rows, [1, 1], None, SamplingParams(), [], source)
    assert source.drawn == 0


BAD_UNIFORMS = [1.0, 1.5, -(2.0**-60), math.nan, math.inf, "0.5", True, None]


@pytest.mark.parametrize("u", BAD_UNIFORMS, ids=repr)
def test_uniforms_outside_the_unit_interval_are_rejected(u):
    with pytest.raises(InvalidParams, match=r"rng=.*must return a float in \[0, 1\)"):
        sample([0.5, 0.5], Counting(u))
    source = Counting(0.25, u)  # the bad value comes at the second draw (u_resample)
    with pytest.raises(InvalidParams, match=r"^rng="):
        verify_draft(np.zeros((2, 2)), [0], None, SamplingParams(), [], source)
    assert source.drawn == 2


@pytest.mark.parametrize("u", [0.0, 2.0**-53, 1.0 - 2.0**-53, np.float32(0.5)], ids=repr)
def test_uniforms_inside_the_unit_interval_are_accepted(u):
    assert sample([0.5, 0.5], Counting(u)) == (0 if u < 0.5 else 1)
