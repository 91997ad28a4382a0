"""The cell enumerator: exact distributions of one round, for the reference and for outside
implementations with bugs, other draw orders, float32 sums and misbehaviour."""

from __future__ import annotations

import doctest
import random
from collections.abc import Callable
from fractions import Fraction as F

import pytest

from spec_verify.adapters._implementations import Implementation
from spec_verify.adapters._loader import load_implementation
from spec_verify.errors import InvalidArgument, InvalidDistribution
from spec_verify.exact import _cells as cells
from spec_verify.exact._cells import (
    GUARD,
    Round,
    check_dist,
    contract_output,
    enumerate_round,
    parse_dist,
)
from spec_verify.reference.exact import exact_verify
from spec_verify.uniforms import ScriptedUniforms
from tests.impls import misbehaving

P = (F(1, 2), F(1, 4), F(1, 4))
Q = (F(1, 4), F(1, 2), F(1, 4))
SEED_ROUND = Round((P, P), (1,), (Q,))


@pytest.fixture(scope="module")
def reference() -> Implementation:
    return load_implementation("python:spec_verify.reference")


def outside(name: str) -> Implementation:
    return load_implementation(f"python:tests.impls.{name}")


def random_round(rng: random.Random, V: int, m: int, deterministic: bool = False) -> Round:
    def row(zeros: float) -> tuple[F, ...]:
        weights = [0 if rng.random() < zeros else rng.randint(1, 20) for _ in range(V)]
        weights[rng.randrange(V)] += 1
        return tuple(F(w, sum(weights)) for w in weights)

    p_rows = tuple(row(0.25) for _ in range(m + 1))
    if deterministic:
        return Round(p_rows, tuple(rng.randrange(V) for _ in range(m)), None)
    q_rows = tuple(row(0.25) for _ in range(m))
    ids = tuple(rng.choice([t for t in range(V) if q[t]]) for q in q_rows)
    return Round(p_rows, ids, q_rows)


def test_doctests() -> None:
    assert doctest.testmod(cells).failed == 0


# -- inputs ------------------------------------------------------------------------------------

BAD_DISTS = [
    (["1/2", "1/4"], "sums to 3/4, not 1"),
    (["1/2", "-1/4", "3/4"], r"negative entries at ids \[1\]"),
    ([0.5, 0.5], "is the float 0.5; exact entries are needed"),
    ([], "is empty"),
    (["a", "1"], "is not an exact rational"),
]


@pytest.mark.parametrize(("values", "message"), BAD_DISTS)
def test_check_dist_rejects(values: list[object], message: str) -> None:
    with pytest.raises(InvalidDistribution, match=message):
        check_dist(values, "p")


def test_parse_dist() -> None:
    assert parse_dist("1/2, 1/4,1/4") == P
    with pytest.raises(InvalidDistribution, match="empty entry"):
        parse_dist("1/2,,1/2")


BAD_ROUNDS = [
    (lambda: Round((P,), (1,), (Q,)), InvalidArgument, "must have m \\+ 1 = 2"),
    (
        lambda: Round((P, P[:2] + (F(1, 4),) * 0 + (F(1, 2),)), (1,), (Q,)),
        InvalidDistribution,
        "p_rows\\[1\\]",
    ),
    (
        lambda: Round((P, (F(1, 2), F(1, 2))), (1,), (Q,)),
        InvalidDistribution,
        "has 2 entries; row 0 has 3",
    ),
    (lambda: Round((P, P), (3,), (Q,)), InvalidArgument, "ids are in \\[0, 3\\)"),
    (lambda: Round((P, P), (1,), (Q, Q)), InvalidArgument, "it must have m = 1"),
    (
        lambda: Round((P, P), (1,), ((F(1), F(0), F(0)),)),
        InvalidDistribution,
        "drafted token 1 probability 0",
    ),
    (
        lambda: Round((P, P), (1,), ((F(1, 2), F(1, 2)),)),
        InvalidDistribution,
        "p and q must have the same length",
    ),
    (
        lambda: Round((P, P), (1,), (Q,), logits=((0.0,) * 3,)),
        InvalidArgument,
        "must be \\(m \\+ 1, V\\)",
    ),
]


@pytest.mark.parametrize(("make", "error", "message"), BAD_ROUNDS)
def test_round_rejects(make: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()  # type: ignore[operator]


def test_guard_is_checked(reference: Implementation) -> None:
    with pytest.raises(InvalidArgument, match="guard"):
        enumerate_round(reference, SEED_ROUND, guard=F(1, 2))


# -- the reference -----------------------------------------------------------------------------


def test_seed_example_cells_widths_outcomes(reference: Implementation) -> None:
    e = enumerate_round(reference, SEED_ROUND)
    assert e.complete and not e.notes and not e.located
    table = [
        ([(d.role, d.cell.low, d.cell.high) for d in leaf.draws], leaf.weight, leaf.emitted)
        for leaf in e.leaves
    ]
    assert table == [
        ([("u_accept[0]", 0, F(1, 2)), ("unused", 0, 1), ("bonus", 0, F(1, 2))], F(1, 4), (1, 0)),
        (
            [("u_accept[0]", 0, F(1, 2)), ("unused", 0, 1), ("bonus", F(1, 2), F(3, 4))],
            F(1, 8),
            (1, 1),
        ),
        ([("u_accept[0]", 0, F(1, 2)), ("unused", 0, 1), ("bonus", F(3, 4), 1)], F(1, 8), (1, 2)),
        ([("u_accept[0]", F(1, 2), 1), ("u_resample[0]", 0, 1)], F(1, 2), (0,)),
    ]
    assert e.distribution == exact_verify(SEED_ROUND.p_rows, (1,), SEED_ROUND.q_rows)


def test_probes_sit_inside_their_cells(reference: Implementation) -> None:
    e = enumerate_round(reference, random_round(random.Random(1), 6, 2))
    for leaf in e.leaves:
        for draw in leaf.draws:
            assert draw.cell.low + GUARD <= F(draw.uniform) <= draw.cell.high - GUARD


@pytest.mark.parametrize("seed", range(12))
def test_reference_equals_the_exact_rule(reference: Implementation, seed: int) -> None:
    rng = random.Random(seed)
    rnd = random_round(rng, rng.randint(2, 6), rng.randint(0, 3), deterministic=seed % 3 == 0)
    e = enumerate_round(reference, rnd)
    assert e.complete, e.reason
    assert e.distribution == exact_verify(rnd.p_rows, rnd.draft_ids, rnd.q_rows)
    assert not e.notes, "the reference keeps the contract's draw order"


def test_deterministic_draft_with_zero_probability(reference: Implementation) -> None:
    rnd = Round(((F(1, 2), F(1, 2), F(0)), (F(1, 3),) * 3), (2,), None)
    e = enumerate_round(reference, rnd)
    assert e.distribution == {(0,): F(1, 2), (1,): F(1, 2)}
    assert e.leaves[0].draws[0].cell.label == "reject 2"


def test_reproducing_uniforms(reference: Implementation) -> None:
    e = enumerate_round(reference, SEED_ROUND)
    for leaf in e.leaves:
        assert contract_output(SEED_ROUND, leaf.uniforms) == leaf.emitted
    # the seed's hand example: u = 0.7, 0.4 rejects and resamples token 0
    assert contract_output(SEED_ROUND, [0.7, 0.4]) == (0,)
    bonus = Round((P, (F(0), F(0), F(1))), (1,), (Q,))
    assert contract_output(bonus, [0.3, 0.9, 0.1]) == (1, 2)
    assert contract_output(bonus, [0.3]) is None


def test_a_cell_narrower_than_the_guard_band_is_not_provable(
    reference: Implementation,
) -> None:
    tiny = F(1, 10**10)
    p = (F(1, 2) - tiny, tiny, F(1, 2))
    e = enumerate_round(reference, Round((p,), (), None))
    assert e.status == "not_provable"
    assert "narrower than 4 x guard" in e.reason


# -- outside implementations ---------------------------------------------------------------------


def test_residual_bug_is_measured_exactly() -> None:
    e = enumerate_round(outside("residual_bug"), SEED_ROUND)
    assert e.complete
    # a rejected x = 1 is resampled from p instead of the residual [1, 0, 0]
    assert e.distribution == {
        (0,): F(1, 4),
        (1,): F(1, 8),
        (2,): F(1, 8),
        (1, 0): F(1, 4),
        (1, 1): F(1, 8),
        (1, 2): F(1, 8),
    }
    assert any("sample p[0]" in note for note in e.notes)


@pytest.mark.parametrize("name", ["skip_resample", "resample_first", "one_uniform", "extra_draw"])
@pytest.mark.parametrize("seed", range(4))
def test_other_draw_orders_give_the_exact_distribution(name: str, seed: int) -> None:
    rng = random.Random(100 + seed)
    rnd = random_round(rng, rng.randint(2, 5), rng.randint(1, 2), deterministic=seed == 3)
    e = enumerate_round(outside(name), rnd)
    assert e.complete, e.reason
    assert e.distribution == exact_verify(rnd.p_rows, rnd.draft_ids, rnd.q_rows)


@pytest.mark.parametrize("p", [(F(3, 8), F(3, 8), F(1, 4)), (F(1, 8), F(1, 8), F(3, 4))])
def test_resample_first_is_not_taken_for_the_contract(p: tuple[F, ...]) -> None:
    # p(1)/q(1) = 3/4 > DEFAULT_UNIFORM: with the later u_accept at its default the first draw
    # looks as if it did nothing; 1/4 < DEFAULT_UNIFORM: it looks like a resample draw
    rnd = Round((p, p), (1,), (Q,))
    e = enumerate_round(outside("resample_first"), rnd)
    assert e.complete
    assert e.distribution == exact_verify(rnd.p_rows, (1,), rnd.q_rows)
    assert e.notes  # the departure from the contract's order is reported


class _Masked(Implementation):
    """Draws u_0 and u_1; when u_1 < 1/2 emits 0 iff u_0 > 3/4, else 0 iff 2 u_1 - 1 < 1/4.
    Exact for p = (1/4, 3/4), but at the root, with u_1 held at its default, u_0 seems to do
    nothing, and its breakpoint 3/4 is none of the bonus cells' boundaries."""

    name = "masked"
    capabilities = frozenset({"verify_draft", "injected_uniforms"})

    def verify_draft(
        self,
        target_logits: object,
        draft_ids: object,
        draft_probs: object,
        p: object,
        history: object,
        rng: ScriptedUniforms,
        prompt: object = (),
    ) -> tuple[list[int], int]:
        u0, u1 = rng.random(), rng.random()
        if u1 < 0.5:
            return [0 if u0 > 0.75 else 1], 0
        return [0 if 2 * u1 - 1 < 0.25 else 1], 0


def test_leaf_audits_find_a_draw_whose_use_a_later_draw_hides() -> None:
    rnd = Round(((F(1, 4), F(3, 4)),), (), None)
    e = enumerate_round(_Masked(), rnd)  # type: ignore[arg-type]
    assert e.complete
    assert e.distribution == {(0,): F(1, 4), (1,): F(3, 4)}
    assert F(3, 4) in {b.value for b in e.located}
    assert any("changes the outcome when another draw differs" in n for n in e.notes)


def test_float32_breakpoints_are_rounding_not_exact() -> None:
    p = (F(1, 3), F(1, 7), F(11, 21))
    e = enumerate_round(outside("float32_cumsum"), Round((p, p), (2,), (P,)))
    expected = exact_verify((p, p), (2,), (P,))
    if e.complete:
        assert e.distribution != expected
        worst = max(abs(e.distribution.get(k, 0) - v) for k, v in expected.items())
        assert worst <= e.tolerance()
        assert all(b.source != "known" for b in e.located)
    else:
        assert "narrower" in e.reason or "within 4 x guard" in e.reason


def test_threshold_bug_breakpoints_are_located() -> None:
    e = enumerate_round(outside("threshold_bug"), SEED_ROUND)
    assert e.complete
    assert F(9, 20) in {b.value for b in e.located}  # 0.9 * 1/2
    assert e.distribution[(0,)] == F(11, 20)


@pytest.mark.parametrize(
    ("mode", "status", "reason"),
    [
        ("raises", "error", "raised RuntimeError: boom"),
        ("hangs", "error", "did not return within"),
        ("out_of_range", "error", "ids out of"),
        ("wrong_count", "error", "returned 2 ids with n_accepted=0"),
        ("value_error", "error", "rejected valid input"),
        ("draws_forever", "not_provable", "drew more than"),
    ],
)
def test_misbehaving_implementations(mode: str, status: str, reason: str) -> None:
    e = enumerate_round(misbehaving.load(mode, timeout=0.3), SEED_ROUND)
    assert e.status == status
    assert reason in e.reason


def test_call_budget_is_not_provable(reference: Implementation) -> None:
    e = enumerate_round(reference, SEED_ROUND, max_calls=3)
    assert e.status == "not_provable"
    assert "more than 3 calls" in e.reason


class _BadParams(Implementation):
    name = "bad-params"
    capabilities = frozenset({"verify_draft", "injected_uniforms"})

    def params(self, **fields: object) -> object:
        raise RuntimeError("no params here")

    def verify_draft(self, *args: object, **kwargs: object) -> tuple[list[int], int]:
        raise AssertionError("not reached: params fail first")


def test_params_that_raise_are_an_error() -> None:
    e = enumerate_round(_BadParams(), SEED_ROUND)  # type: ignore[arg-type]
    assert e.status == "error" and "no params here" in e.reason


def test_implementation_hints_are_snapped_to() -> None:
    from spec_verify.exact._lossy import EnsembleVerification

    rule = EnsembleVerification("1/3")
    e = enumerate_round(rule, SEED_ROUND)
    # accept threshold min(1, (p + 2q) / 3q) at x = 1: (1/4 + 1) / (3/2) = 5/6
    assert [(b.value, b.source) for b in e.located][:1] == [(F(5, 6), "known")]


# -- hidden rules: planted where the node probes cannot see them ---------------------------------

# each adv_* emits T - 1 instead of the last token T when every draft is kept and its rule holds
# on draws the exploration has left behind; the share of those leaves' mass the rule moves:
HIDDEN: dict[str, Callable[[Round], F]] = {
    "adv_evid": lambda rnd: F(1, 20) / rnd.accept_probability(0),  # u_accept[0] < 1/20
    "adv_hidden": lambda rnd: F(1, 4),  # u_resample[0] < 1/4
    "adv_xor": lambda rnd: 2 * F(1, 4) * F(3, 4),  # exactly one of u_resample[0, 1] < 1/4
}


def full_support_round(seed: int, V: int, m: int) -> Round:
    """Rows without zeros and drafts with p < q < 4 p: every hidden rule has mass to move,
    and adv_evid's 1/20 lies well below the middle of the keep cell [0, p/q), where the leaves
    hold ``u_accept[0]``."""
    rng = random.Random(f"hidden/{seed}")

    def row() -> tuple[F, ...]:
        weights = [rng.randint(1, 20) for _ in range(V)]
        return tuple(F(w, sum(weights)) for w in weights)

    p_rows, q_rows = tuple(row() for _ in range(m + 1)), tuple(row() for _ in range(m))
    ids = []
    for p, q in zip(p_rows, q_rows):
        over = [t for t in range(V) if p[t] < q[t] < 4 * p[t]]
        ids.append(rng.choice(over) if over else rng.randrange(V))
    return Round(p_rows, tuple(ids), q_rows)


def hidden_distribution(name: str, rnd: Round) -> dict[tuple[int, ...], F]:
    """What ``tests.impls.<name>`` emits, exactly: the target's rule with the hidden share of
    the all-kept leaves ending in T moved to T - 1."""
    out = dict(exact_verify(rnd.p_rows, rnd.draft_ids, rnd.q_rows))
    T = rnd.V - 1
    share = HIDDEN[name](rnd)
    for key, value in list(out.items()):
        if len(key) == rnd.m + 1 and key[-1] == T:
            out[key] -= share * value
            moved = (*key[:-1], T - 1)
            out[moved] = out.get(moved, F(0)) + share * value
    return {key: value for key, value in out.items() if value}


@pytest.mark.parametrize(
    ("name", "V", "m"),
    [("adv_evid", 3, 1), ("adv_evid", 8, 2), ("adv_evid", 64, 4), ("adv_hidden", 3, 1),
     ("adv_hidden", 8, 2), ("adv_hidden", 16, 3), ("adv_xor", 8, 2), ("adv_xor", 16, 3)],
)
def test_hidden_rules_are_measured_exactly(name: str, V: int, m: int) -> None:
    rnd = full_support_round(V * 10 + m, V, m)
    assert rnd.accept_probability(0) > F(1, 4)  # the leaves' u_accept[0] is above 1/8
    e = enumerate_round(outside(name), rnd)
    assert e.complete, e.reason
    expected = hidden_distribution(name, rnd)
    target = exact_verify(rnd.p_rows, rnd.draft_ids, rnd.q_rows)
    assert expected != target  # the rule moves mass: a pass here would be a false proof
    assert e.distribution == expected
    threshold = F(1, 20) if name == "adv_evid" else F(1, 4)
    assert threshold in {b.value for b in e.located}
    assert any("changes the outcome when another draw differs" in n for n in e.notes)


def test_batched_calls_prove_what_calls_one_by_one_prove() -> None:
    """Through a worker the engine sends its calls in batches (``verify_scripted_many``); the
    enumeration is the same, call for call, as one made call by call in process."""
    rnd = Round(
        tuple(tuple(F(w, 10) for w in row) for row in ((1, 2, 3, 4), (4, 3, 2, 1), (2, 2, 3, 3))),
        (3, 0),
        ((F(1, 10), F(1, 10), F(1, 10), F(7, 10)), (F(7, 10), F(1, 10), F(1, 10), F(1, 10))),
    )
    local = enumerate_round(load_implementation("reference", in_process=True), rnd)
    impl = load_implementation("reference")
    try:
        batched = enumerate_round(impl, rnd)
    finally:
        impl.close()
    assert local.status == batched.status == "complete"
    assert batched.distribution == local.distribution
    assert local.distribution == exact_verify(rnd.p_rows, rnd.draft_ids, rnd.q_rows)
    assert (batched.calls, batched.audit_calls) == (local.calls, local.audit_calls)


def test_a_crash_inside_a_batch_is_found_call_by_call() -> None:
    """A worker that dies in a batch fails the batch as a whole; the engine then makes the
    calls one by one and reports the one that crashed, with its uniforms."""
    impl = load_implementation("python:tests.impls.crashes_near_one")
    try:
        e = enumerate_round(impl, SEED_ROUND)
    finally:
        impl.close()
    assert e.status == "error"
    assert "exit" in e.reason, e.reason
    assert e.script[0] >= 0.999, e.script


# A round where tests/impls/hidden_chain_breakpoint hides its breakpoint inside a cell: the
# draft (token 1) is kept for u_accept in [0, 1/2), and from 3/8 on the bonus comes from a
# stale row whose tokens agree with the bonus row (1/2, 1/4, 1/4) at each cell's midpoint.
_HIDDEN = Round(((F(1, 2), F(1, 4), F(1, 4)),) * 2, (1,), ((F(1, 4), F(1, 2), F(1, 4)),))


def _hidden_law() -> dict[tuple[int, ...], F]:
    """The planted sampler's true law on ``_HIDDEN``, by hand: kept early (3/8) the bonus row,
    kept late (1/8) the stale row (3/10, 9/20, 1/4), rejected (1/2) the residual's token 0."""
    bonus, stale = (F(1, 2), F(1, 4), F(1, 4)), (F(3, 10), F(9, 20), F(1, 4))
    law = {(1, t): F(3, 8) * bonus[t] + F(1, 8) * stale[t] for t in range(3)}
    return {(0,): F(1, 2), **law}


def test_the_deep_audit_finds_a_breakpoint_hidden_inside_a_chain_cell() -> None:
    impl = load_implementation("python:tests.impls.hidden_chain_breakpoint", in_process=True)
    found = enumerate_round(impl, _HIDDEN, deep_audit=True)
    assert found.complete, found.reason
    assert found.distribution == _hidden_law()
    assert any("other points of their cells" in note for note in found.notes)


def test_negative_control_the_plain_audit_takes_the_hidden_breakpoint_for_the_contract(
        reference: Implementation) -> None:
    impl = load_implementation("python:tests.impls.hidden_chain_breakpoint", in_process=True)
    plain = enumerate_round(impl, _HIDDEN)
    assert plain.complete
    # the false pass the deep audit closes: the reference's law, not the sampler's
    assert plain.distribution == enumerate_round(reference, _HIDDEN).distribution
    assert plain.distribution != _hidden_law()


def test_the_deep_audit_keeps_the_reference_exact(reference: Implementation) -> None:
    deep = enumerate_round(reference, _HIDDEN, deep_audit=True)
    assert deep.complete and deep.distribution == enumerate_round(reference, _HIDDEN).distribution


def test_the_exact_tiers_law_theorems_audit_deep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Law theorems enumerate with the deep audit; the token rule's round length does not."""
    from spec_verify.exact import _theorems

    seen: list[tuple[str, bool]] = []
    real = _theorems.enumerate_round

    def spy(impl: Implementation, rnd: Round, **options: object) -> cells.Enumeration:
        seen.append((theorem, bool(options.get("deep_audit"))))
        return real(impl, rnd, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(_theorems, "enumerate_round", spy)
    impl = load_implementation("reference", in_process=True)
    for theorem in ("one_position", "expected_length"):
        case = _theorems.named_case(f"{theorem}/1")
        assert _theorems.prove_case(impl, case).status.ok
    assert {deep for name, deep in seen if name == "one_position"} == {True}
    assert {deep for name, deep in seen if name == "expected_length"} == {False}
