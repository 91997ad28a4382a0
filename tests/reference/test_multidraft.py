"""The multi-draft chain rules (reference/kseq_chains.py, reference/rrs.py, CONTRACT.md section
12): their exact laws are lossless over the chains' draws, the float paths draw as pinned, and
bad input names its argument."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from spec_verify.exact._tree_law import ContextTable
from spec_verify.reference import Pcg32, SamplingParams
from spec_verify.reference import multidraft_exact as mx
from spec_verify.reference.errors import InvalidDraft, InvalidParams, InvalidTree
from spec_verify.reference.exact import exact_target_sequences
from spec_verify.reference.kseq import verify_kseq
from spec_verify.reference.kseq_chains import chain_parents, verify_kseq_chains
from spec_verify.reference.rrs import verify_rrs
from spec_verify.reference.tree_exact import exact_tree_verify, extend_to
from spec_verify.uniforms import ScriptedUniforms

F = Fraction


def _lossless(rule: str, K: int, L: int, V: int, seed: int,
              branching: tuple[int, ...] | None = None) -> bool:
    target, draft = ContextTable(seed, "t", V, 1), ContextTable(seed, "d", V, 0)
    law = mx.exact_multidraft_round(rule, target, draft, (), K, L, branching)
    continued = extend_to(law, target, (), L + 1)
    return {k: v for k, v in continued.items() if v} == exact_target_sequences(target, (), L + 1)


@pytest.mark.parametrize("rule", sorted(mx.MULTIDRAFT_RULES))
@pytest.mark.parametrize(("K", "L", "V", "seed"), [(2, 1, 3, 1), (3, 1, 3, 2), (2, 2, 2, 3),
                                                   (2, 2, 3, 4)])
def test_each_rule_is_lossless_over_the_chains_draws(rule, K, L, V, seed) -> None:
    assert _lossless(rule, K, L, V, seed)


@pytest.mark.parametrize("branching", [(1, 2), (2, 2), (2, 1), (1, 1, 2), (1, 2, 1)])
def test_rrs_without_replacement_is_lossless_at_every_depth(branching) -> None:
    """Chains sharing prefixes (a draft tree drawn without replacement at every node, laid
    out as its root-to-leaf paths): several survivors below the first position."""
    K = 1
    for b in branching:
        K *= b
    assert _lossless("rrs", K, len(branching), 3, 11 + K, branching)


def test_drafted_chains_without_replacement_follow_the_branching() -> None:
    draft = ContextTable(3, "d", 3, 0)
    draws = list(mx.drafted_chains("rrs", draft, (), 4, 2, (2, 2)))
    assert sum(w for _, w in draws) == 1 and len(draws) == 3 * 2 * (3 * 2) ** 2
    for chains, _ in draws:
        assert chains[0][0] == chains[1][0] != chains[2][0] == chains[3][0]
        assert chains[0][1] != chains[1][1] and chains[2][1] != chains[3][1]
    with pytest.raises(InvalidTree) as info:
        list(mx.drafted_chains("rrs", draft, (), 4, 2, (2, 3)))
    assert info.value.argument == "branching"


def test_negative_control_kseq_without_its_rho_is_not_lossless(monkeypatch) -> None:
    # rho = 1 at K = 2: each draft kept with min(1, p/q), the residual clipped: biased
    monkeypatch.setattr(mx, "exact_kseq_rho", lambda p, q, K: F(1))
    assert not _lossless("kseq", 2, 1, 3, 1)


def test_negative_control_rrs_without_renormalising_is_not_lossless(monkeypatch) -> None:
    plan = mx.position_plan
    monkeypatch.setattr(mx, "position_plan",
                        lambda rule, p, q, t: plan("rrs_with" if rule == "rrs" else rule, p, q, t))
    assert _lossless("rrs_with", 2, 1, 3, 5)  # the i.i.d. rule on its own drafts is fine
    assert not _lossless("rrs", 2, 1, 3, 5)


def test_rrs_per_fixed_chains_is_the_tree_rule_without_replacement() -> None:
    """Two independent Fraction computations (multidraft_exact and tree_exact) agree."""
    rng = random.Random(5)
    V = 4
    for _ in range(20):
        K, L = rng.choice([(2, 1), (2, 2), (3, 1), (3, 2)])
        parents = chain_parents(K, L)
        heads = rng.sample(range(V), K)
        tokens = [heads[i // L] if i % L == 0 else rng.randrange(V) for i in range(K * L)]
        p_rows = [ContextTable(rng.randrange(99), "p", V, 1)((i,)) for i in range(K * L + 1)]
        q_rows = [ContextTable(rng.randrange(99), "q", V, 0)((i,)) for i in range(K * L + 1)]
        ours = mx.exact_rrs(p_rows, parents, tokens, q_rows)
        theirs = exact_tree_verify(p_rows, parents, tokens, q_rows, "without_replacement")
        assert ours == {k: v for k, v in theirs.items() if v}


def _trie(parents: list[int], tokens: list[int]) -> tuple[list[int], list[int], list[int]]:
    """The chains' prefix tree: its parents and tokens, and each chain node's tree node."""
    index: dict[tuple[int, ...], int] = {}
    t_parents: list[int] = []
    t_tokens: list[int] = []
    node_of: list[int] = []
    paths: dict[int, tuple[int, ...]] = {-1: ()}
    for i, parent in enumerate(parents):
        paths[i] = (*paths[parent], tokens[i])
        if paths[i] not in index:
            index[paths[i]] = len(t_tokens)
            t_parents.append(-1 if parent == -1 else node_of[parent])
            t_tokens.append(tokens[i])
        node_of.append(index[paths[i]])
    return t_parents, t_tokens, node_of


def test_rrs_on_shared_prefixes_is_the_tree_rule_on_their_tree() -> None:
    """Without replacement at every depth: K chains sharing prefixes have, per fixed drafts,
    the law of section 6's ``without_replacement`` rule on their prefix tree (two Fraction
    paths written apart)."""
    rng = random.Random(9)
    V = 4
    for _ in range(20):
        branching = rng.choice([(1, 2), (2, 2), (1, 3), (1, 1, 2), (2, 1, 2)])
        K = 1
        for b in branching:
            K *= b
        L = len(branching)
        draft = ContextTable(rng.randrange(99), "q", V, 0)
        target = ContextTable(rng.randrange(99), "p", V, 1)
        chains, _ = next(iter(mx.drafted_chains("rrs", draft, (), K, L, branching)))
        parents = chain_parents(K, L)
        tokens = [t for chain in chains for t in chain]
        paths = [() if i < 0 else tuple(chains[i // L][:i % L + 1]) for i in range(-1, K * L)]
        ours = mx.exact_rrs([target(s) for s in paths], parents, tokens,
                            [draft(s) for s in paths])
        t_parents, t_tokens, node_of = _trie(parents, tokens)
        t_paths = [()] + [paths[node_of.index(j) + 1] for j in range(len(t_tokens))]
        theirs = exact_tree_verify([target(s) for s in t_paths], t_parents, t_tokens,
                                   [draft(s) for s in t_paths], "without_replacement")
        assert ours == {k: v for k, v in theirs.items() if v}, (branching, tokens)


def test_negative_control_shared_prefixes_tried_per_chain(monkeypatch) -> None:
    """w02's reading (a shared token tried once per chain carrying it) is caught by both
    checks above: another law per fixed tree, and not lossless over the draws."""
    p, q = (F(1, 8), F(3, 8), F(1, 2)), (F(1, 2), F(1, 4), F(1, 4))
    args = ([p] * 5, chain_parents(2, 2), [0, 1, 0, 2], [q] * 5)
    tree = exact_tree_verify([p] * 4, [-1, 0, 0], [0, 1, 2], [q] * 4, "without_replacement")
    assert mx.exact_rrs(*args) == {k: v for k, v in tree.items() if v}
    assert _lossless("rrs", 2, 2, 3, 13, (1, 2))
    monkeypatch.setattr(mx, "_tries", lambda rule, tokens: tokens)
    assert mx.exact_rrs(*args) != {k: v for k, v in tree.items() if v}
    assert not _lossless("rrs", 2, 2, 3, 13, (1, 2))


def test_rho_bounds_are_proven_on_both_sides() -> None:
    p, q = (F(1, 2), F(1, 3), F(1, 6), F(0)), (F(1, 8), F(1, 8), F(1, 4), F(1, 2))
    lo, hi = mx.kseq_rho_bounds(p, q, 3, F(1, 1000))
    assert hi - lo <= F(1, 1000) and mx.kseq_rho_valid(p, q, 3, hi)
    assert lo == 1 or not mx.kseq_rho_valid(p, q, 3, lo)
    assert hi <= mx.exact_kseq_rho(p, q, 3)  # the grid's rho is valid, so bisection goes below
    assert mx.kseq_rho_bounds(p, p, 3) == (1, 1)  # q = p: rho = 1 is valid


def _rows(V: int, n: int, seed: int) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n + 1, V))
    q = [rng.dirichlet(np.ones(V)) for _ in range(n + 1)]
    return logits, q


def test_one_position_kseq_chains_is_verify_kseq_on_the_same_uniforms() -> None:
    V, K = 4, 3
    for seed in range(30):
        rng = np.random.default_rng(seed)
        after = rng.normal(size=(V, V))  # the row after each token: equal drafts, equal rows
        q = rng.dirichlet(np.ones(V))
        ids = [int(x) for x in rng.choice(V, K, p=q)]
        logits = np.vstack([rng.normal(size=V), after[ids]])
        a, b = Pcg32(seed), Pcg32(seed)
        emitted, _ = verify_kseq_chains(logits, chain_parents(K, 1), ids,
                                        [q, *([None] * K)], SamplingParams(), [], a)
        expected, _ = verify_kseq(logits, ids, q, SamplingParams(), [], b)
        assert emitted == expected and a.random() == b.random()


def test_the_draw_order_is_pinned() -> None:
    # two chains [1, 0] and [1, 1]: both survive position 0; position 1 uses node 0's rows
    logits = np.log(np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]))
    q = [np.array([0.5, 0.5])] * 5
    source = ScriptedUniforms([0.0, 0.99, 0.0, 0.7])  # keep 1; reject 0; keep 1; the bonus
    emitted, nodes = verify_rrs(logits, chain_parents(2, 2), [1, 0, 1, 1], q,
                                SamplingParams(), [], source, rule="with_replacement")
    assert (emitted, nodes, source.drawn) == ([1, 1, 1], [2, 3], 4)
    source = ScriptedUniforms([0.99, 0.99, 0.2])  # K-SEQ: reject both heads, then the residual
    emitted, nodes = verify_kseq_chains(logits, chain_parents(2, 2), [1, 0, 1, 1], q,
                                        SamplingParams(), [], source)
    assert (emitted, nodes, source.drawn) == ([0], [], 3)
    # without replacement the two chains share node 0: token 1 is tried once, then the
    # residual (with replacement it would be tried twice before the residual)
    source = ScriptedUniforms([0.99, 0.0])
    emitted, nodes = verify_rrs(logits, chain_parents(2, 2), [1, 0, 1, 1], q,
                                SamplingParams(), [], source)
    assert (emitted, nodes, source.drawn) == ([0], [], 2)
    source = ScriptedUniforms([0.0, 0.99, 0.0, 0.3])  # keep 1; reject 0; keep 1; the bonus
    emitted, nodes = verify_rrs(logits, chain_parents(2, 2), [1, 0, 1, 1], q,
                                SamplingParams(), [], source)
    assert (emitted, nodes, source.drawn) == ([1, 1, 0], [2, 3], 4)


_Q = [np.array([0.5, 0.5])] * 5


@pytest.mark.parametrize(("call", "error", "argument"), [
    (lambda: verify_kseq_chains(np.zeros((4, 2)), [-1, 0, 0], [0, 1, 0], _Q[:4],
                                SamplingParams(), [], Pcg32(0)), InvalidTree, "parents"),
    (lambda: verify_kseq_chains(np.zeros((4, 2)), [-1, 0, -1], [0, 1, 0], _Q[:4],
                                SamplingParams(), [], Pcg32(0)), InvalidTree, "parents"),
    (lambda: verify_kseq_chains(np.zeros((3, 2)), [-1, -1], [0, 1], _Q[:3],
                                SamplingParams(temperature=0), [], Pcg32(0)), InvalidParams, "p"),
    (lambda: verify_kseq_chains(np.zeros((3, 2)), [-1, -1], [0, 1], _Q[:3], SamplingParams(),
                                [], Pcg32(0), rule="without_replacement"), InvalidParams, "rule"),
    (lambda: verify_rrs(np.zeros((3, 2)), [-1, -1], [0, 0], _Q[:3], SamplingParams(), [],
                        Pcg32(0)), InvalidTree, "token_ids"),
    (lambda: verify_rrs(np.zeros((5, 2)), chain_parents(2, 2), [1, 0, 1, 0], _Q,
                        SamplingParams(), [], Pcg32(0)), InvalidTree, "token_ids"),
    (lambda: verify_rrs(np.zeros((3, 2)), [-1, -1], [0, 1], [None, None, None],
                        SamplingParams(), [], Pcg32(0)), InvalidDraft, "draft_probs"),
])
def test_bad_arguments_name_the_argument(call, error, argument) -> None:
    with pytest.raises(error) as info:
        call()
    assert info.value.argument == argument
