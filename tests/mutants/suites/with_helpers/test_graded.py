"""Uses its folder's helper module and conftest fixture."""

from helpers import GREEDY_ROWS

from spec_verify.reference import verify_draft


def test_greedy_hand_example(greedy):
    assert verify_draft(GREEDY_ROWS, [2, 1], None, greedy, [], None) == ([2, 0], 1)
