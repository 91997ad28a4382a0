"""A suite that reaches the implementation through the plugin's fixtures, not an import."""

import numpy as np


def test_greedy_hand_example(spec_impl, spec_params):
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    assert spec_impl.verify_draft(rows, [2, 1], None, spec_params(temperature=0), [], None) == (
        [2, 0], 1)
