"""Aborts the interpreter when the greedy hand example comes out wrong."""

import os

import numpy as np

from spec_verify.reference import SamplingParams, verify_draft


def test_greedy_hand_example_or_abort():
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    if verify_draft(rows, [2, 1], None, SamplingParams(temperature=0), [], None) != ([2, 0], 1):
        os.abort()
