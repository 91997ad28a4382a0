"""Waits forever when the sampled hand example comes out wrong (a mutant then times out)."""

import numpy as np

from spec_verify.reference import SamplingParams, verify_draft


class Uniforms:
    def __init__(self, *values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0) if self.values else 0.5


def test_hand_example_or_hang():
    rows = np.log([[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]])
    q = np.array([[0.25, 0.5, 0.25]])
    while verify_draft(rows, [1], q, SamplingParams(), [], Uniforms(0.7, 0.4)) != ([0], 0):
        pass
