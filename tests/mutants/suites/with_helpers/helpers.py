"""A helper module beside the graded test file: grading the file alone must keep it."""

import numpy as np

GREEDY_ROWS = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
