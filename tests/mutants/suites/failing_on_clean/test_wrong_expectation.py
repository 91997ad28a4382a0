import numpy as np

from spec_verify.reference import SamplingParams, verify_draft


def test_greedy_right():
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    assert verify_draft(rows, [2, 0], None, SamplingParams(temperature=0), [], None)[1] == 2


def test_greedy_wrong_expectation():
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    assert verify_draft(rows, [2, 1], None, SamplingParams(temperature=0), [], None) == ([2, 1], 2)
