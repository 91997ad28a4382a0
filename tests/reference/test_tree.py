"""Tree verification (CONTRACT.md section 6): hand examples, draw order, exactness, bad input.

The float path is driven cell by cell in the contract's draw order (``_tree_cells``) and its law
compared, as ``Fraction``s, with the exact path (``tree_exact``), which shares no code with it;
the exact path is compared with plain sampling from the target, averaged over the draft draws.
These tests are the witnesses of the tree mutants t01-t10.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from spec_verify.reference import (
    InvalidDraft,
    InvalidLogits,
    InvalidParams,
    InvalidTree,
    SamplingParams,
    request_rng,
    sampling_distribution,
    tree,
    tree_exact,
    verify_draft,
    verify_tree,
)
from spec_verify.reference.exact import exact_target_sequences
from spec_verify.reference.tree_exact import (
    exact_tree_round,
    exact_tree_verify,
    extend_to,
    first_token_law,
    full_shape,
    parents_of,
    shape_of,
    sibling_draws,
    total_variation,
)
from spec_verify.uniforms import NoDraws, ScriptedUniforms

from ._cells import logits_of, random_dist
from ._doctests import check_doctests
from ._tree_cells import enumerate_tree

F = Fraction
SAMPLED = SamplingParams()
GREEDY = SamplingParams(temperature=0)
RULES = ("with_replacement", "without_replacement")


def _floats(rows):
    return [None if r is None else np.array([float(v) for v in r]) for r in rows]


def _call(p_rows, parents, token_ids, q_rows, rule, p=SAMPLED):
    logits = logits_of(p_rows)
    probs = None if q_rows is None else _floats(q_rows)

    def call(rng):
        return verify_tree(logits, parents, token_ids, probs, p, [], rng, rule=rule)

    return call


# --- hand examples: the worked examples of CONTRACT.md section 6 -----------------------------

ROOT = (F(0), F(1, 2), F(1, 2))  # the target bans token 0
DRAFT = (F(1, 2), F(1, 3), F(1, 6))
NODE0 = (F(1, 3), F(1, 3), F(1, 3))
NODE1 = (F(0), F(0), F(1))
HAND_ROWS = [ROOT, NODE0, NODE1]
HAND_CASES = [
    # rule, uniforms, emitted, accepted nodes
    # child 0 (token 0) has a = 0: rejected; its u_resample (0.9) is drawn and unused. Child 1
    # (token 1): the residual is (0, 1/3, 2/3), a = (1/3)/(1/3) = 1: kept; bonus from node 1.
    ("with_replacement", (0.5, 0.9, 0.7, 0.5, 0.2), [1, 2], [1]),
    # without replacement the draft becomes (0, 2/3, 1/3): a = (1/3)/(2/3) = 1/2, 0.7 rejects;
    # the residual max(0, (0, 1/3, 2/3) - (0, 2/3, 1/3)) = (0, 0, 1/3) gives 2 at u = 0.3.
    ("without_replacement", (0.5, 0.9, 0.7, 0.3), [2], []),
    ("without_replacement", (0.5, 0.9, 0.3, 0.5, 0.2), [1, 2], [1]),
]


@pytest.mark.parametrize(("rule", "uniforms", "emitted", "nodes"), HAND_CASES)
def test_tree_hand_example(rule, uniforms, emitted, nodes):
    rng = ScriptedUniforms(uniforms)
    out = verify_tree(logits_of(HAND_ROWS), [-1, -1], [0, 1], _floats([DRAFT, None, None]),
                      SAMPLED, [], rng, rule=rule)
    assert out == (emitted, nodes)
    assert rng.drawn == len(uniforms)


def test_tree_hand_example_exact_laws():
    with_law = exact_tree_verify(HAND_ROWS, [-1, -1], [0, 1], [DRAFT, None, None])
    without = exact_tree_verify(HAND_ROWS, [-1, -1], [0, 1], [DRAFT, None, None],
                                "without_replacement")
    assert with_law == {(1, 2): F(1)}
    assert without == {(1, 2): F(1, 2), (2,): F(1, 2)}


TWO_P = (F(5, 16), F(1, 4), F(5, 16), F(1, 8))
TWO_Q = (F(1, 4), F(3, 8), F(3, 16), F(3, 16))
# Root children: token 3 then token 1, both drawn from TWO_Q. Child 0: a = (1/8)/(3/16) = 2/3;
# after its rejection r = max(0, p - q) / Z = (1/3, 0, 2/3, 0). Child 1: r(1) = 0, rejected.
# With replacement r = max(0, r - q) / Z = (4/27, 0, 23/27, 0); without, the draft is first
# renormalised without 3, q_2 = (4/13, 6/13, 3/13, 0), and r = (1/18, 0, 17/18, 0).
TWO_REJECTIONS = {
    "with_replacement": {(0,): F(4, 81), (2,): F(23, 81)},
    "without_replacement": {(0,): F(1, 54), (2,): F(17, 54)},
}


@pytest.mark.parametrize("rule", RULES)
def test_tree_hand_example_two_rejections(rule):
    rows, parents, tokens, q_rows = [TWO_P] * 3, [-1, -1], [3, 1], [TWO_Q, None, None]
    expected = dict(TWO_REJECTIONS[rule])
    expected.update({(3, t): F(2, 3) * v for t, v in enumerate(TWO_P)})
    assert exact_tree_verify(rows, parents, tokens, q_rows, rule) == expected
    obtained = enumerate_tree(_call(rows, parents, tokens, q_rows, rule), rows, parents,
                              tokens, q_rows, rule)
    assert obtained == expected


def test_tree_bonus_comes_from_the_kept_leaf():
    # root -> node 0 (token 2) -> node 1 (token 1); node 1's row is one-hot on 0
    rows = [(F(0), F(0), F(1)), (F(0), F(1), F(0)), (F(1), F(0), F(0))]
    for u in (0.1, 0.5, 0.9):
        out = verify_tree(logits_of(rows), [-1, 0], [2, 1], None, SAMPLED, [],
                          ScriptedUniforms([0.5, 0.5, 0.5, 0.5, u]))
        assert out == ([2, 1, 0], [0, 1])


def test_path_tree_is_verify_draft_draw_for_draw():
    rng = np.random.default_rng(11)
    V = 6
    for trial in range(150):
        m = int(rng.integers(0, 5))
        logits = rng.normal(size=(m + 1, V)) * 2
        q = rng.dirichlet(np.ones(V), size=m)
        ids = [int(rng.choice(V, p=row)) for row in q]
        deterministic = trial % 3 == 0
        chain = verify_draft(logits, ids, None if deterministic else q, SAMPLED, [],
                             request_rng(trial))
        tree_probs = None if deterministic else [*q, None]
        tree = verify_tree(logits, list(range(-1, m - 1)), ids, tree_probs, SAMPLED, [],
                           request_rng(trial))
        assert chain == (tree[0], len(tree[1])), trial
        assert tree[1] == list(range(len(tree[1])))


# --- exactness per fixed tree: float path cell by cell == the exact path ----------------------

def _random_tree(rng, n, max_children=3):
    parents = []
    for i in range(n):
        options = [-1, *range(i)]
        counts = {o: parents.count(o) for o in options}
        options = [o for o in options if counts[o] < max_children] or [-1]
        parents.append(int(rng.choice(options)))
    return parents


def _distinct_children(rng, parents, q_rows, V):
    kids = {}
    for i, parent in enumerate(parents):
        kids.setdefault(parent, []).append(i)
    tokens = [0] * len(parents)
    for parent, children in kids.items():
        q = q_rows[parent + 1] if q_rows is not None else None
        support = [t for t in range(V) if q is None or q[t] > 0]
        picks = rng.choice(support, size=len(children), replace=False)
        for child, t in zip(children, picks, strict=True):
            tokens[child] = int(t)
    return tokens


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("deterministic", [False, True])
def test_tree_float_path_is_exact_per_fixed_tree(rule, deterministic):
    rng = np.random.default_rng(3 + deterministic)
    for trial in range(12):
        V = int(rng.integers(3, 6))
        n = int(rng.integers(1, 7))
        parents = _random_tree(rng, n)
        p_rows = [random_dist(rng, V, zeros=int(rng.integers(0, 2))) for _ in range(n + 1)]
        q_rows = None if deterministic else [random_dist(rng, V) for _ in range(n + 1)]
        tokens = _distinct_children(rng, parents, q_rows, V)
        obtained = enumerate_tree(_call(p_rows, parents, tokens, q_rows, rule), p_rows,
                                  parents, tokens, q_rows, rule)
        expected = exact_tree_verify(p_rows, parents, tokens, q_rows, rule)
        assert obtained == expected, (trial, parents, tokens)
        if deterministic:  # a fixed tree of deterministic drafts is lossless on its own
            assert first_token_law(expected) == {t: v for t, v in enumerate(p_rows[0]) if v}


def test_tree_with_repeated_siblings_is_exact():
    # with replacement, siblings may repeat a token (they were drawn i.i.d.)
    rng = np.random.default_rng(5)
    V = 3
    for _ in range(10):
        p_rows = [random_dist(rng, V) for _ in range(4)]
        q_rows = [random_dist(rng, V) for _ in range(4)]
        x = int(rng.integers(0, V))
        parents, tokens = [-1, -1, -1], [x, x, int(rng.integers(0, V))]
        rule = "with_replacement"
        obtained = enumerate_tree(_call(p_rows, parents, tokens, q_rows, rule), p_rows,
                                  parents, tokens, q_rows, rule)
        assert obtained == exact_tree_verify(p_rows, parents, tokens, q_rows, rule)


# --- exactness over the draft draws ------------------------------------------------------------

def _tables(rng, V, zeros=0):
    cache = {}

    def table(key):
        def model(ctx):
            if (key, ctx) not in cache:
                cache[(key, ctx)] = random_dist(rng, V, zeros=zeros)
            return cache[(key, ctx)]

        return model

    return table("target"), table("draft")


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize(("branching", "depth"), [(1, 2), (2, 1), (3, 1), (2, 2)])
def test_tree_round_is_lossless_over_the_drafts(rule, branching, depth):
    rng = np.random.default_rng(branching * 10 + depth)
    V = 3
    target, draft = _tables(rng, V)
    shape = full_shape(branching, depth)
    law = exact_tree_round(target, draft, (0,), shape, rule)
    assert sum(law.values()) == 1
    extended = extend_to(law, target, (0,), depth + 1)
    assert extended == exact_target_sequences(target, (0,), depth + 1)


def test_float_path_averaged_over_the_drafts_is_the_target():
    """The float path itself, per drawn tree by cells, weighted by the draws: exactly p."""
    rng = np.random.default_rng(8)
    V = 3
    p_rows = [random_dist(rng, V, zeros=1) for _ in range(3)]
    q = random_dist(rng, V)
    for rule in RULES:
        total: dict[int, Fraction] = {}
        for tokens, weight in sibling_draws(q, 2, rule):
            q_rows = [q, None, None]
            law = enumerate_tree(_call(p_rows, [-1, -1], list(tokens), q_rows, rule), p_rows,
                                 [-1, -1], list(tokens), q_rows, rule)
            for t, v in first_token_law(law).items():
                total[t] = total.get(t, F(0)) + weight * v
        assert {t: v for t, v in total.items() if v} == {
            t: v for t, v in enumerate(p_rows[0]) if v}, rule


def test_shapes_round_trip():
    for shape in (full_shape(2, 2), full_shape(3, 1), ((((),), ()),)):
        assert shape_of(parents_of(shape)) == shape


# --- greedy and typical ------------------------------------------------------------------------

def test_greedy_tree_follows_the_argmax_chain():
    rng = np.random.default_rng(2)
    V = 4
    for _ in range(40):
        n = int(rng.integers(1, 8))
        parents = _random_tree(rng, n)
        tokens = [int(t) for t in rng.integers(0, V, size=n)]
        logits = rng.normal(size=(n + 1, V))
        emitted, nodes = verify_tree(logits, parents, tokens, None, GREEDY, [], NoDraws())
        assert len(emitted) == len(nodes) + 1
        node = -1
        for kept, token in zip(nodes, emitted, strict=False):
            assert parents[kept] == node and tokens[kept] == token
            assert token == int(np.argmax(logits[node + 1]))
            node = kept
        assert emitted[-1] == int(np.argmax(logits[node + 1]))


def test_greedy_tree_takes_the_longest_agreeing_path():
    # two children carry the argmax 1; only the second has an agreeing child below it
    logits = np.array([[0, 5, 0], [9, 0, 0], [0, 0, 7], [3, 0, 0]], float)
    out = verify_tree(logits, [-1, -1, 1], [1, 1, 2], None, GREEDY, [], None)
    assert out == ([1, 2, 0], [1, 2])
    # equal lengths: the lower index wins
    assert verify_tree(logits[:3], [-1, -1], [1, 1], None, GREEDY, [], None) == ([1, 0], [0])


def test_greedy_tree_penalties_see_the_kept_path():
    p = SamplingParams(temperature=0, presence_penalty=5.0)
    logits = np.array([[0, 4, 0], [0, 3, 2], [0, 0, 0]], float)
    # after keeping 1, the presence penalty makes row 1's argmax 2, not 1
    out = verify_tree(logits, [-1, 0], [1, 1], None, p, [], None)
    assert out == ([1, 2], [0])
    assert out[0][1] == int(np.argmax(sampling_distribution(logits[1], p, [1])))


def test_typical_rule_keeps_what_passes_and_samples_once():
    logits = logits_of([(F(1, 2), F(1, 2), F(0)), (F(0), F(0), F(1)), (F(1), F(0), F(0))])
    rng = ScriptedUniforms([0.3])
    out = verify_tree(logits, [-1, -1], [2, 0], None, SAMPLED, [], rng, rule="typical")
    assert out == ([0, 0], [1])  # token 2 has p = 0 and fails; token 0 passes
    assert rng.drawn == 1


def test_typical_rule_is_biased():
    rng = np.random.default_rng(4)
    target, draft = _tables(rng, 3)
    law = exact_tree_round(target, draft, (), full_shape(2, 1), "typical")
    expected = exact_target_sequences(target, (), 2)
    assert total_variation(extend_to(law, target, (), 2), expected) > 0


# --- bad input ---------------------------------------------------------------------------------

ROWS3 = np.zeros((4, 3))
BAD = [
    # (parents, tokens, draft_probs, rule, logits, error, message)
    ([-1, 1, 0], [0, 1, 2], None, "with_replacement", ROWS3, InvalidTree, "node 1 is its own"),
    ([-1, 2, 1], [0, 1, 2], None, "with_replacement", ROWS3, InvalidTree, r"node 1 is on a cycle"),
    ([-1, 2, 0], [0, 1, 2], None, "with_replacement", ROWS3, InvalidTree, "comes after it"),
    ([-1, 0, 7], [0, 1, 2], None, "with_replacement", ROWS3, InvalidTree, "node 2 is an orphan"),
    ([-1, -2, 0], [0, 1, 2], None, "with_replacement", ROWS3, InvalidTree, "node 1 is an orphan"),
    ([-1, 0, 0], [0, 1, 1], None, "without_replacement", ROWS3, InvalidTree,
     "nodes 1 and 2 .children of node 0. both carry token 1"),
    ([-1, 0, 0], [0, 1, 5], None, "with_replacement", ROWS3, InvalidTree, "node 2 has token 5"),
    ([-1, 0], [0, 1, 2], None, "with_replacement", ROWS3, InvalidTree, "parents has 2"),
    ([-1, 0, 0], [0, 1, 2], None, "with_replacement", np.zeros((3, 3)), InvalidLogits,
     r"\(n \+ 1, V\) = \(4, V\)"),
    ([-1, 0, 0], [0, 1, 2], [[1, 0, 0]] * 3, "with_replacement", ROWS3, InvalidDraft,
     "n \\+ 1 = 4 entries"),
    ([-1, 0, 0], [0, 1, 2], [[1, 0, 0], [0.5, 0.4, 0.0], None, None], "with_replacement", ROWS3,
     InvalidDraft, r"entry 1 \(node 0\) sums to 0.9"),
    ([-1, 0, 0], [0, 1, 2], [[1, 0, 0], [0.5, 0.5], None, None], "with_replacement", ROWS3,
     InvalidDraft, r"entry 1 \(node 0\) must have V = 3"),
    ([-1, 0, 0], [0, 1, 2], [[1, 0, 0], [0.5, 0.5, 0.0], None, None], "with_replacement", ROWS3,
     InvalidDraft, "gives node 2's token 2 probability 0"),
    ([-1, 0, 0], [0, 1, 2], [None, [0.5, -0.5, 1.0], None, None], "with_replacement", ROWS3,
     InvalidDraft, "finite and non-negative"),
    ([-1, 0, 0], [0, 1, 2], None, "greedy", ROWS3, InvalidParams, "rule"),
    ([-1, 0, 0], [0, 1, 2], None, "with_replacement",
     np.array([[0, 0, 0], [0, np.nan, 0], [0, 0, 0], [0, 0, 0]]), InvalidLogits,
     r"row 1 \(node 0\) has NaN"),
]


@pytest.mark.parametrize(("parents", "tokens", "probs", "rule", "logits", "error", "message"),
                         BAD)
def test_tree_bad_input_names_the_node(parents, tokens, probs, rule, logits, error, message):
    with pytest.raises(error, match=message) as info:
        verify_tree(logits, parents, tokens, probs, SAMPLED, [], request_rng(0), rule=rule)
    assert isinstance(info.value, ValueError)


def test_tree_needs_a_uniform_source_when_sampled():
    with pytest.raises(InvalidParams, match="rng"):
        verify_tree(np.zeros((2, 3)), [-1], [0], None, SAMPLED, [], None)


@pytest.mark.parametrize("module", [tree, tree_exact], ids=lambda m: m.__name__)
def test_tree_doctests(module):
    check_doctests(module)
