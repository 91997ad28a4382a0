"""The optional tree symbol across the C ABI: the Rust port exports ``sv_verify_tree`` and
passes the tree checks; a library without it is still accepted (chains only); a planted tree
bug in the port fails the exact and parity tree checks."""

from __future__ import annotations

import pathlib
import random
import re

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.adapters._ffi import OPTIONAL_SYMBOLS, TREE_RULE_CODES, Library, params_struct
from spec_verify.reference import SamplingParams, request_rng, verify_tree
from spec_verify.results import Status
from spec_verify.tiers.tree import check_tree_argmax, check_tree_exact, check_tree_parity


class Uniforms:
    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


HAND_ROWS = np.log(np.array([[1e-300, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3], [1e-300, 1e-300, 1.0]]))
HAND_Q = [np.array([0.5, 1 / 3, 1 / 6]), None, None]


@pytest.mark.rust
def test_the_port_offers_trees_and_an_old_library_is_still_accepted(port, c_libs):
    assert "verify_tree" in port.capabilities
    old = load_implementation(f"ffi:{c_libs['bad_ids']}")  # exports ABI v1 without trees
    assert "verify_tree" not in old.capabilities
    assert "verify_draft" in old.capabilities


@pytest.mark.rust
@pytest.mark.parametrize(("rule", "uniforms", "expected"), [
    ("with_replacement", (0.5, 0.9, 0.7, 0.5, 0.2), ([1, 2], [1])),
    ("without_replacement", (0.5, 0.9, 0.7, 0.3), ([2], [])),
])
def test_the_port_reproduces_the_hand_example(rust_port, rule, uniforms, expected):
    lib = Library(rust_port)
    out = lib.verify_tree(HAND_ROWS, [-1, -1], [0, 1], HAND_Q, params_struct(SamplingParams()),
                          rule=rule, uniform=Uniforms(*uniforms).random)
    assert out == expected
    assert verify_tree(HAND_ROWS, [-1, -1], [0, 1], HAND_Q, SamplingParams(), [],
                       Uniforms(*uniforms), rule=rule) == expected


HEADER = pathlib.Path(__file__).resolve().parents[2] / "spec_verify" / "spec_verify.h"


def test_the_binding_says_what_the_header_says():
    text = HEADER.read_text()
    rules = {name.removeprefix("SV_TREE_").lower(): int(value)
             for name, value in re.findall(r"#define (SV_TREE_\w+)\s+(\d+)", text)}
    assert rules == TREE_RULE_CODES
    declaration = re.search(r"int32_t sv_verify_tree\((.*?)\);", text, re.S)
    assert declaration is not None
    assert declaration.group(1).count(",") + 1 == len(OPTIONAL_SYMBOLS["sv_verify_tree"][1])


@pytest.mark.rust
@pytest.mark.parametrize("make", [lambda: request_rng(7), lambda: random.Random(7),
                                  lambda: np.random.default_rng(7)])
def test_the_adapter_takes_any_source_and_leaves_it_where_the_reference_does(port, make):
    """Copyable sources are pre-drawn (2n + 1) and advanced by the count drawn; others are asked
    one uniform at a time: either way the same result and the same final state."""
    rows = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4],
                            [0.5, 0.25, 0.25]]))
    parents, tokens = [-1, -1, 0, 0], [2, 1, 0, 2]
    q = [np.array([0.3, 0.3, 0.4]), np.array([0.5, 0.2, 0.3]), None, None, None]
    for rule in ("with_replacement", "without_replacement", "typical"):
        ours, theirs, scripted = make(), make(), make()
        got = port.verify_tree(rows, parents, tokens, q, port.params(), [], ours, rule=rule)
        want = verify_tree(rows, parents, tokens, q, SamplingParams(), [], theirs, rule=rule)
        assert got == want
        assert ours.random() == theirs.random()
        remote = Uniforms(*[scripted.random() for _ in range(9)])
        assert port.verify_tree(rows, parents, tokens, q, port.params(), [], remote,
                                rule=rule) == want


@pytest.mark.rust
def test_greedy_draws_nothing_and_sampling_needs_a_source(port):
    rows = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2], [0.1, 0.1, 0.8]]))
    assert port.verify_tree(rows, [-1, -1], [2, 1], None, port.params(temperature=0.0), [],
                            None) == ([2, 0], [0])
    with pytest.raises(ValueError, match="rng"):
        port.verify_tree(rows, [-1, -1], [2, 1], None, port.params(), [], None)


@pytest.mark.rust
def test_the_port_names_the_node_of_a_bad_tree(port):
    with pytest.raises(ValueError, match="node 1 has parent 2"):
        port.verify_tree(np.zeros((4, 3)), [-1, 2, 0], [0, 1, 2], None, port.params(), [],
                         request_rng(0))
    with pytest.raises(ValueError, match="nodes 1 and 2"):
        port.verify_tree(np.zeros((4, 3)), [-1, 0, 0], [0, 1, 1], None, port.params(), [],
                         request_rng(0), rule="without_replacement")


@pytest.mark.rust
def test_the_port_passes_the_tree_checks(port):
    for check in (check_tree_exact, check_tree_argmax, check_tree_parity):
        result = check(port, quick=True)
        assert result is not None and result.status is Status.PASSED, result.message


@pytest.mark.rust
def test_a_planted_tree_bug_fails_the_exact_and_parity_checks(rust_variants):
    port = load_implementation(f"ffi:{rust_variants['bug_tree_stale_residual']}")
    assert check_tree_exact(port, quick=True).status is Status.FAILED
    assert check_tree_parity(port, quick=True).status is Status.FAILED
    assert check_tree_argmax(port, quick=True).status is Status.PASSED  # greedy is untouched
