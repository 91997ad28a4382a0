"""``check_tree_result``: what ``verify_tree`` returns must be a path from the root."""

from __future__ import annotations

import pytest

from spec_verify.adapters import check_tree_result
from spec_verify.errors import ImplementationError


def test_adapter_checks_the_returned_path():
    parents, tokens = [-1, 0, -1], [2, 1, 0]
    assert check_tree_result("x", ([2, 1, 0], [0, 1]), parents, tokens, 3) == ([2, 1, 0], [0, 1])
    for bad, match in [(([2, 1, 0], [0, 2]), "not a child of node 0"),
                       (([1, 0], [0]), "carries token 2"),
                       (([2], [0]), "one more"),
                       (([2, 5], [0]), "out of"),
                       ((None, 3), "returned")]:
        with pytest.raises(ImplementationError, match=match):
            check_tree_result("x", bad, parents, tokens, 3)


