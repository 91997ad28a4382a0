"""The exactness theorems, each checked on many seeded cases by cell enumeration.

Every case turns an implementation's rounds into exact distributions (``cells.enumerate_round``)
and compares one observable with what plain sampling from the target gives, as ``Fraction``s:

- ``one_position``: the first emitted token of a one-draft round, over every draft token
  ``x ~ q``, follows ``p`` (seed: test_one_token_output_is_the_target_exactly);
- ``k_positions``: with draft and target models given as rational tables, the first ``k + 1``
  tokens of speculative generation (rounds repeated until that many are out) have exactly the
  joint distribution of plain sampling from the target, so each emitted token follows the
  target given the tokens before it;
- ``deterministic_drafts``: the same with one-hot drafts (``draft_probs=None``), including
  drafted tokens the target gives probability 0;
- ``truncated_and_penalised``: target rows with zeros, top-k and top-p truncation, and
  repetition, presence and frequency penalties that see the drafts kept this round;
- ``expected_length``: with the same ``p`` and ``q`` at every position the number of tokens a
  round emits is ``n`` with probability ``a^(n-1) (1 - a)`` (``a^k`` for ``k + 1``), so its mean
  is ``(1 - a^(k+1)) / (1 - a)`` with ``a = sum min(p, q)``.

Verdicts: *passed* when the distributions are equal; *failed* when they differ by more than the
enumeration's tolerance (each breakpoint is known to within ``cells.GUARD``, and breakpoints
rounding-close to exact ones may explain small deviations); *not provable* otherwise or when an
enumeration could not be completed; *error* when the implementation raised, hung or returned
garbage. A failure names the case, the tokens, both probabilities, their exact difference and
the uniforms (with drafts and rows) of a call that produced the over-represented outcome.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cache
from typing import TYPE_CHECKING, Any

from spec_verify.errors import InvalidArgument, InvalidDistribution
from spec_verify.exact._applicability import injection_probe, witness_holds
from spec_verify.exact._cells import (
    GUARD,
    Dist,
    Enumeration,
    Leaf,
    Round,
    check_dist,
    contract_output,
    enumerate_round,
    format_fraction,
    logits_of,
    one_hot,
)
from spec_verify.results import CheckResult, Status

if TYPE_CHECKING:  # the engine takes any implementation; it imports no adapter
    from spec_verify.adapters import Implementation

__all__ = [
    "DEFAULT_CASES",
    "QUICK_CASES",
    "THEOREMS",
    "Case",
    "CaseResult",
    "Models",
    "Witness",
    "compare",
    "generate_cases",
    "named_case",
    "one_position_case",
    "prove_case",
    "run_exact_tier",
    "run_theorem",
]

TableModel = Callable[[tuple[int, ...]], Dist]
Key = tuple[int, ...]

THEOREMS: dict[str, str] = {
    "one_position": "the first emitted token follows p exactly, over all draft tokens x ~ q",
    "k_positions": "k + 1 tokens of speculative generation have the target's joint distribution",
    "deterministic_drafts": "one-hot drafts (including p(x) = 0) keep the target's distribution",
    "truncated_and_penalised": "zeros, top-k, top-p and penalties that see kept drafts",
    "expected_length": "tokens per round: P(n) = a^(n-1)(1-a), mean (1 - a^(k+1)) / (1 - a)",
}

DEFAULT_CASES = 8
"""Generated cases per theorem in the default gate (about two seconds on the reference)."""

QUICK_CASES = 2
"""Cases per theorem with ``quick`` (the hand example and one generated case)."""


# ---------------------------------------------------------------------------------------------
# models and cases


@dataclass(frozen=True)
class Models:
    """A target and a draft as exact tables over a small vocabulary.

    ``target(prefix)`` is the exact sampling distribution after ``prefix`` (penalties and
    filters applied); ``base(prefix)`` the row whose logarithm is fed as logits (defaults to the
    target; differs when ``params`` has penalties or filters). ``draft(prefix)`` is the draft's
    row; with ``deterministic`` it is one-hot and the implementation gets ``draft_probs=None``.
    The first ``prompt_len`` tokens of a prefix are the prompt, the rest the history.
    """

    V: int
    context: tuple[int, ...]
    target: TableModel
    draft: TableModel
    deterministic: bool = False
    base: TableModel | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    prompt_len: int = 0

    def round(self, prefix: tuple[int, ...], draft_ids: tuple[int, ...]) -> Round:
        """The call of ``verify_draft`` after ``prefix`` with these drafts."""
        k = len(draft_ids)
        prefixes = [prefix + draft_ids[:i] for i in range(k + 1)]
        p_rows = tuple(self.target(pre) for pre in prefixes)
        q_rows = None if self.deterministic else tuple(self.draft(pre) for pre in prefixes[:k])
        logits = None if self.base is None else logits_of([self.base(pre) for pre in prefixes])
        return Round(
            p_rows, draft_ids, q_rows, logits, dict(self.params),
            history=prefix[self.prompt_len :], prompt=prefix[: self.prompt_len],
        )

    def drafts(self, prefix: tuple[int, ...], k: int) -> list[tuple[tuple[int, ...], Fraction]]:
        """Every draft sequence of length ``k`` after ``prefix``, with its probability."""
        out: list[tuple[tuple[int, ...], Fraction]] = []

        def grow(ids: tuple[int, ...], weight: Fraction) -> None:
            if len(ids) == k:
                out.append((ids, weight))
                return
            for token, prob in enumerate(self.draft(prefix + ids)):
                if prob:
                    grow((*ids, token), weight * prob)

        grow((), Fraction(1))
        return out


@dataclass(frozen=True)
class Case:
    """One instance of a theorem: models, a draft length and what is compared."""

    theorem: str
    name: str
    description: str
    models: Models
    k: int

    @property
    def length(self) -> int:
        """Tokens compared (``k_positions`` and the like: ``k + 1``)."""
        return self.k + 1

    def expected(self) -> dict[Key, Fraction]:
        from spec_verify.reference.exact import exact_target_sequences

        models = self.models
        if self.theorem == "one_position":
            return {(t,): v for t, v in enumerate(models.target(models.context)) if v}
        if self.theorem == "expected_length":
            a = acceptance(models.target(models.context), models.draft(models.context))
            dist = {(n,): a ** (n - 1) * (1 - a) for n in range(1, self.k + 1)}
            dist[(self.k + 1,)] = a**self.k
            return {key: v for key, v in dist.items() if v}
        sequences: dict[Key, Fraction] = exact_target_sequences(
            models.target, models.context, self.length
        )
        return sequences


def acceptance(p: Dist, q: Dist) -> Fraction:
    """``a = sum min(p, q)``: the probability that one draft token is kept."""
    return sum((min(a, b) for a, b in zip(p, q, strict=True)), Fraction(0))


def _random_dist(rng: random.Random, V: int, zeros: float, max_weight: int = 9) -> Dist:
    weights = [0 if rng.random() < zeros else rng.randint(1, max_weight) for _ in range(V)]
    if not any(weights):
        weights[rng.randrange(V)] = rng.randint(1, max_weight)
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


def _table(key: str, V: int, zeros: float) -> TableModel:
    @cache
    def row(prefix: tuple[int, ...]) -> Dist:
        return _random_dist(random.Random(f"{key}|{prefix}"), V, zeros)

    return row


def _constant(row: Dist) -> TableModel:
    return lambda prefix: row


def _first_then(first: Dist, then: Dist, n: int) -> TableModel:
    """``first`` right after an ``n``-token context, ``then`` after anything longer."""
    return lambda prefix: first if len(prefix) == n else then


def _deterministic(key: str, target: TableModel, V: int) -> TableModel:
    """A one-hot draft; a third of its proposals are tokens the target gives probability 0."""

    @cache
    def row(prefix: tuple[int, ...]) -> Dist:
        rng = random.Random(f"{key}|{prefix}")
        impossible = [t for t, v in enumerate(target(prefix)) if v == 0]
        x = rng.choice(impossible) if impossible and rng.random() < 1 / 3 else rng.randrange(V)
        return one_hot(x, V)

    return row


_LOG2 = math.log(2)


def _filtered(
    base: Dist, params: Mapping[str, Any], prompt: tuple[int, ...], history: tuple[int, ...]
) -> Dist | None:
    """The contract's sampling distribution in Fractions, or None when float rounding could
    order tokens differently from exact arithmetic (then the case draws another row).

    Logits are ``log base``; the repetition penalty is an integer ``r`` (non-positive logits are
    multiplied by it: weight ``base^r``); presence and frequency penalties are ``log 2`` (a
    factor 1/2 per occurrence).
    """
    r = int(params.get("repetition_penalty", 1))
    presence = params.get("presence_penalty", 0.0) == _LOG2
    frequency = params.get("frequency_penalty", 0.0) == _LOG2
    seen = set(prompt) | set(history)
    counts = Counter(history)
    weights: list[Fraction] = []
    signature: list[tuple[bool, int]] = []
    for t, b in enumerate(base):
        w = b**r if (t in seen and r != 1) else b
        if presence and counts[t]:
            w /= 2
        if frequency:
            w /= 2 ** counts[t]
        weights.append(w)
        signature.append((t in seen, counts[t]))
    positive = [t for t in range(len(base)) if weights[t] > 0]
    for s in positive:  # equal exact weights reached by different float paths: ambiguous ties
        for t in positive:
            if s < t and weights[s] == weights[t] and signature[s] != signature[t]:
                return None
    keep = set(positive)
    top_k = int(params.get("top_k", 0))
    if 0 < top_k < len(base):
        order = sorted(range(len(base)), key=lambda t: (-weights[t], t))
        keep &= set(order[:top_k])
    total = sum((weights[t] for t in keep), Fraction(0))
    probs = [weights[t] / total if t in keep else Fraction(0) for t in range(len(base))]
    top_p = Fraction(params.get("top_p", 1.0))
    if top_p < 1:
        running = Fraction(0)
        kept_p: set[int] = set()
        for t in sorted(range(len(base)), key=lambda t: (-probs[t], t)):
            if abs(running - top_p) < Fraction(1, 10**9):
                return None
            if running >= top_p:
                break
            kept_p.add(t)
            running += probs[t]
        keep &= kept_p
        total = sum((probs[t] for t in keep), Fraction(0))
        probs = [probs[t] / total if t in keep else Fraction(0) for t in range(len(base))]
    return tuple(probs)


def _penalised_tables(
    key: str, V: int, params: Mapping[str, Any], prompt_len: int
) -> tuple[TableModel, TableModel]:
    @cache
    def rows(prefix: tuple[int, ...]) -> tuple[Dist, Dist]:
        for salt in range(100):
            base = _random_dist(random.Random(f"{key}|{prefix}|{salt}"), V, 0.2)
            target = _filtered(base, params, prefix[:prompt_len], prefix[prompt_len:])
            if target is not None:
                return base, target
        raise AssertionError(f"no unambiguous row after {prefix}")  # pragma: no cover

    return (lambda prefix: rows(prefix)[0]), (lambda prefix: rows(prefix)[1])


_SIZES = {
    "one_position": [(3, 1), (4, 1), (2, 1), (5, 1), (6, 1), (3, 1)],
    "k_positions": [(2, 1), (3, 1), (2, 2), (3, 2), (2, 3), (4, 1)],
    "deterministic_drafts": [(3, 1), (3, 2), (4, 2), (2, 3), (5, 1), (4, 3)],
    "truncated_and_penalised": [(3, 1), (4, 1), (3, 2), (4, 2), (5, 1), (3, 2)],
    "expected_length": [(3, 1), (2, 2), (3, 2), (2, 3), (2, 4), (3, 3)],
}

_PARAM_SETS: list[dict[str, Any]] = [
    {"top_k": 2, "repetition_penalty": 2.0},
    {"presence_penalty": _LOG2, "top_p": 0.75},
    {"frequency_penalty": _LOG2, "repetition_penalty": 2.0, "top_k": 3},
    {"repetition_penalty": 2.0, "presence_penalty": _LOG2, "frequency_penalty": _LOG2},
    {"top_k": 3, "top_p": 0.5},
    {"presence_penalty": _LOG2, "top_k": 2},
]


def _hand_case(theorem: str) -> Case | None:
    F = Fraction
    if theorem == "one_position":  # the contract's hand-worked one-position case
        p, q = (F(1, 2), F(1, 4), F(1, 4)), (F(1, 4), F(1, 2), F(1, 4))
        models = Models(3, (), _constant(p), _constant(q))
        return Case(theorem, "one_position/0",
                    "hand-worked case: p = [1/2, 1/4, 1/4], q = [1/4, 1/2, 1/4]", models, 1)
    if theorem == "deterministic_drafts":  # drafts 2 then 0; p(2) = 0 after the context
        rows: dict[tuple[int, ...], Dist] = {
            (): (F(1, 2), F(1, 2), F(0)), (2,): (F(1, 3), F(0), F(2, 3)),
        }
        drafts: dict[tuple[int, ...], int] = {(): 2, (2,): 0}

        def hand_target(pre: tuple[int, ...]) -> Dist:
            return rows.get(pre, (F(1, 4), F(1, 4), F(1, 2)))

        def hand_draft(pre: tuple[int, ...]) -> Dist:
            return one_hot(drafts.get(pre, 1), 3)

        models = Models(3, (), hand_target, hand_draft, deterministic=True)
        return Case(theorem, "deterministic_drafts/0",
                    "one-hot drafts 2 then 0, the first with p(2) = 0", models, 2)
    return None


def _splits_the_residual(p: Dist, q: Dist) -> bool:
    """The residual has two tokens or more and some draft is rejected only in part."""
    return sum(a > b for a, b in zip(p, q, strict=True)) >= 2 and any(
        0 < a < b for a, b in zip(p, q, strict=True))


def _generated_case(theorem: str, index: int, seed: int) -> Case:
    sizes = _SIZES[theorem]
    V, k = sizes[index % len(sizes)]
    key = f"{seed}/{theorem}/{index}"
    rng = random.Random(key)
    context = tuple(rng.randrange(V) for _ in range(rng.randint(0, 2)))
    target: TableModel
    if theorem in ("one_position", "expected_length"):
        zeros = 0.25 if theorem == "one_position" else 0.0
        p, q = _random_dist(rng, V, zeros), _random_dist(rng, V, zeros)
        # A residual max(0, p - q) on one token is a point mass whatever uniform draws from
        # it, and a draft with p(x) = 0 is rejected at every u_accept: a residual drawn with
        # the acceptance uniform (FlashInfer PR #424) passes such cases. From V = 3 on, p
        # exceeds q on two tokens and some draft is rejected only in part (0 < p(x) < q(x)).
        while theorem == "one_position" and V >= 3 and not _splits_the_residual(p, q):
            p, q = _random_dist(rng, V, zeros), _random_dist(rng, V, zeros)
        bonus = _random_dist(rng, V, zeros)
        target = _first_then(p, bonus, len(context)) if theorem == "one_position" else (
            _constant(p)
        )
        models = Models(V, context, target, _constant(q))
        text = f"V={V}, p=[{_fmt(p)}], q=[{_fmt(q)}]"
        return Case(theorem, f"{theorem}/{index}", text, models, k)
    if theorem == "k_positions":
        target = _table(key + "/target", V, 0.2)
        draft = _table(key + "/draft", V, 0.2)
        models = Models(V, context, target, draft)
        return Case(theorem, f"{theorem}/{index}", f"V={V}, k={k}, random rational tables",
                    models, k)
    if theorem == "deterministic_drafts":
        target = _table(key + "/target", V, 0.3)
        draft = _deterministic(key + "/draft", target, V)
        models = Models(V, context, target, draft, deterministic=True)
        return Case(theorem, f"{theorem}/{index}",
                    f"V={V}, k={k}, one-hot drafts, some with p(x) = 0", models, k)
    if theorem == "truncated_and_penalised":
        params = _PARAM_SETS[index % len(_PARAM_SETS)]
        prompt_len = rng.randint(1, 2)
        context = tuple(rng.randrange(V) for _ in range(prompt_len + rng.randint(0, 2)))
        base, target = _penalised_tables(key, V, params, prompt_len)
        draft = _table(key + "/draft", V, 0.2)
        models = Models(V, context, target, draft, base=base, params=params,
                        prompt_len=prompt_len)
        shown = ", ".join(f"{n}={'log 2' if v == _LOG2 else v}" for n, v in params.items())
        return Case(theorem, f"{theorem}/{index}",
                    f"V={V}, k={k}, {shown}, prompt {context[:prompt_len]}, "
                    f"history {context[prompt_len:]}", models, k)
    raise InvalidArgument("theorem", theorem, f"is not one of {sorted(THEOREMS)}")


def one_position_case(p: Dist, q: Dist, bonus: Dist | None = None) -> Case:
    """The ``one_position`` theorem for given rows (the bonus row defaults to ``p``).

    Raises:
        InvalidDistribution: a row is not a distribution, or the lengths differ.
    """
    p, q = check_dist(p, "p"), check_dist(q, "q")
    bonus = p if bonus is None else check_dist(bonus, "p_next")
    for name, row in (("q", q), ("p_next", bonus)):
        if len(row) != len(p):
            raise InvalidDistribution(
                name, [str(v) for v in row], f"has {len(row)} entries and p has {len(p)}",
                "every row has one entry per token of the vocabulary",
            )
    models = Models(len(p), (), _first_then(p, bonus, 0), _constant(q))
    return Case("one_position", "p/q", f"p = [{_fmt(p)}], q = [{_fmt(q)}]", models, 1)


def generate_cases(theorem: str, n: int, seed: int = 0) -> list[Case]:
    """``n`` cases of ``theorem`` (a hand-written case first where the seed has one)."""
    if theorem not in THEOREMS:
        raise InvalidArgument("theorem", theorem, f"is not one of {sorted(THEOREMS)}")
    if n < 0:
        raise InvalidArgument("cases", n, "must be >= 0")
    out: list[Case] = []
    hand = _hand_case(theorem)
    if hand is not None and n:
        out.append(hand)
    while len(out) < n:
        out.append(_generated_case(theorem, len(out), seed))
    return out


def named_case(name: str, seed: int = 0) -> Case:
    """The case ``theorem/index`` (as failures print it), regenerated from ``seed``."""
    theorem, sep, index = name.partition("/")
    if theorem not in THEOREMS or not sep or not index.isdigit():
        raise InvalidArgument(
            "case", name, "must be THEOREM/INDEX", f"theorems: {', '.join(THEOREMS)}",
        )
    # Each generated case depends on its own index only: build that one, not every earlier one.
    number = int(index)
    hand = _hand_case(theorem) if number == 0 else None
    return hand if hand is not None else _generated_case(theorem, number, seed)


def _fmt(dist: Sequence[Fraction]) -> str:
    return ", ".join(map(format_fraction, dist))


# ---------------------------------------------------------------------------------------------
# proving a case


@dataclass(frozen=True)
class Witness:
    """One call that produced an outcome: the round, and the leaf's uniforms and output."""

    round: Round
    leaf: Leaf

    def to_json(self) -> dict[str, Any]:
        return {
            "draft_ids": list(self.round.draft_ids),
            "history": list(self.round.history),
            "prompt": list(self.round.prompt),
            "uniforms": list(self.leaf.uniforms),
            "emitted": list(self.leaf.emitted),
            "cells": [f"{d.role} in {d.cell}" for d in self.leaf.draws],
            "p_rows": [[format_fraction(v) for v in row] for row in self.round.p_rows],
            "q_rows": None if self.round.q_rows is None
            else [[format_fraction(v) for v in row] for row in self.round.q_rows],
        }


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case, with the evidence.

    ``obtained`` and ``expected`` map outcomes (token sequences, or ``(n,)`` for a round
    length) to exact probabilities; ``witnesses`` gives, for the outcome the verdict is about,
    the calls (uniforms included) that reproduce it.
    """

    case: Case
    status: Status
    message: str
    obtained: dict[Key, Fraction]
    expected: dict[Key, Fraction]
    tolerance: Fraction
    calls: int
    enumerations: tuple[Enumeration, ...]
    outcome: Key | None = None
    witnesses: tuple[Witness, ...] = ()
    notes: tuple[str, ...] = ()
    seconds: float = 0.0

    def rows(self) -> list[tuple[Key, Fraction, Fraction, Fraction]]:
        """``(outcome, obtained, expected, obtained - expected)`` for every outcome."""
        keys = sorted(set(self.obtained) | set(self.expected))
        zero = Fraction(0)
        return [
            (key, self.obtained.get(key, zero), self.expected.get(key, zero),
             self.obtained.get(key, zero) - self.expected.get(key, zero))
            for key in keys
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case.name,
            "theorem": self.case.theorem,
            "description": self.case.description,
            "drafts": self.case.k,
            "status": self.status.value,
            "message": self.message,
            "calls": self.calls,
            "enumerations": len(self.enumerations),
            "tolerance": float(self.tolerance),
            "rows": [
                {"outcome": list(key), "obtained": format_fraction(o),
                 "expected": format_fraction(e), "difference": format_fraction(d)}
                for key, o, e, d in self.rows()
            ],
            "outcome": None if self.outcome is None else list(self.outcome),
            "witnesses": [w.to_json() for w in self.witnesses],
            "notes": list(self.notes),
            "seconds": self.seconds,
        }


def _departs(chain: tuple[Witness, ...]) -> bool:
    return any(contract_output(w.round, w.leaf.uniforms) != w.leaf.emitted for w in chain)


def _better(old: tuple[Witness, ...], new: tuple[Witness, ...]) -> tuple[Witness, ...]:
    """The witness chain to keep: one where a call departs from the contract's rule."""
    return new if _departs(new) and not _departs(old) else old


class _Stop(Exception):
    def __init__(self, enumeration: Enumeration) -> None:
        super().__init__(enumeration.reason)
        self.enumeration = enumeration


Mixture = dict[Key, tuple[Fraction, tuple[Witness, ...]]]


class _Prover:
    """Enumerates the rounds a case needs, once each, and mixes their distributions."""

    def __init__(self, impl: Implementation, models: Models, deep_audit: bool = True) -> None:
        self.impl = impl
        self.models = models
        self.deep_audit = deep_audit
        self.rounds: dict[tuple[tuple[int, ...], int], Mixture] = {}
        self.enumerations: list[Enumeration] = []

    def enumerate(self, rnd: Round) -> Enumeration:
        # the deep audit: a breakpoint hidden inside a cell (both sides emitting the same ids
        # at the leaf's own later values) would otherwise pass as the target's law
        enumeration = enumerate_round(self.impl, rnd, deep_audit=self.deep_audit)
        self.enumerations.append(enumeration)
        if not enumeration.complete:
            raise _Stop(enumeration)
        return enumeration

    def round(self, prefix: tuple[int, ...], k: int) -> Mixture:
        """Distribution of one round's ``emitted_ids`` after ``prefix``, over the drafts."""
        key = (prefix, k)
        if key in self.rounds:
            return self.rounds[key]
        out: dict[Key, Fraction] = defaultdict(Fraction)
        witness: dict[Key, tuple[Witness, bool]] = {}
        for draft_ids, weight in self.models.drafts(prefix, k):
            rnd = self.models.round(prefix, draft_ids)
            enumeration = self.enumerate(rnd)
            for leaf in enumeration.leaves:
                out[leaf.emitted] += weight * leaf.weight
                # prefer a call where the implementation departs from the contract's rule
                departs = contract_output(rnd, leaf.uniforms) != leaf.emitted
                if leaf.emitted not in witness or (departs and not witness[leaf.emitted][1]):
                    witness[leaf.emitted] = (Witness(rnd, leaf), departs)
        mixture: Mixture = {e: (v, (witness[e][0],)) for e, v in out.items() if v}
        self.rounds[key] = mixture
        return mixture

    def sequences(self, k: int, length: int) -> Mixture:
        """The first ``length`` tokens of speculative generation (as exact_speculative_sequences
        composes rounds: never more drafts than the remaining budget allows)."""
        context = self.models.context

        @cache
        def rest(done: tuple[int, ...]) -> tuple[tuple[Key, Fraction, tuple[Witness, ...]], ...]:
            if len(done) >= length:
                return (((), Fraction(1), ()),)
            k_round = max(0, min(k, length - len(done) - 1))
            acc: dict[Key, Fraction] = defaultdict(Fraction)
            witness: dict[Key, tuple[Witness, ...]] = {}
            for emitted, (prob, first) in self.round(context + done, k_round).items():
                for tail, tail_prob, later in rest(done + emitted):
                    seq = (emitted + tail)[:length]
                    acc[seq] += prob * tail_prob
                    witness[seq] = _better(witness.get(seq, first + later), first + later)
            return tuple((seq, v, witness[seq]) for seq, v in acc.items())

        return {seq: (v, w) for seq, v, w in rest(())}

    def calls(self) -> int:
        return sum(e.calls for e in self.enumerations)

    def tolerance(self) -> Fraction:
        return sum((e.tolerance() for e in self.enumerations), Fraction(0))

    def notes(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for e in self.enumerations:
            for note in e.notes:
                seen.setdefault(note, None)
        return tuple(seen)


def compare(
    obtained: Mapping[Key, Fraction], expected: Mapping[Key, Fraction], tolerance: Fraction
) -> tuple[Status, Key | None, Fraction]:
    """Verdict on two exact distributions: passed when equal; failed when some outcome differs
    by more than ``tolerance``; not provable otherwise. Returns the outcome the verdict is
    about (the most over-represented one) and its difference."""
    zero = Fraction(0)
    keys = set(obtained) | set(expected)
    diffs = {key: obtained.get(key, zero) - expected.get(key, zero) for key in keys}
    if not any(diffs.values()):
        return Status.PASSED, None, zero
    worst = max(sorted(diffs), key=lambda key: diffs[key])
    if max(abs(d) for d in diffs.values()) > tolerance:
        return Status.FAILED, worst, diffs[worst]
    return Status.NOT_PROVABLE, worst, diffs[worst]


def _show(key: Key) -> str:
    return "[" + ", ".join(map(str, key)) + "]"


def prove_case(impl: Implementation, case: Case) -> CaseResult:
    """Enumerate what ``case`` needs from ``impl`` and compare with the target."""
    start = time.perf_counter()
    # Law theorems get the deep audit; expected_length is the token rule's round length (an
    # efficiency claim under lossless), whose rounds the law theorems audit deep already.
    prover = _Prover(impl, case.models, deep_audit=case.theorem != "expected_length")
    expected = case.expected()
    mixture: Mixture = {}
    try:
        if case.theorem in ("one_position", "expected_length"):
            for emitted, (prob, witness) in prover.round(case.models.context, case.k).items():
                key = emitted[:1] if case.theorem == "one_position" else (len(emitted),)
                old = mixture.get(key, (Fraction(0), witness))
                mixture[key] = (old[0] + prob, _better(old[1], witness))
        else:
            mixture = prover.sequences(case.k, case.length)
    except _Stop as stop:
        e = stop.enumeration
        status = Status.ERROR if e.status == "error" else Status.NOT_PROVABLE
        where = (f"drafts {list(e.round.draft_ids)} after history {list(e.round.history)}, "
                 f"uniforms {list(e.script)}")
        verb = "errored" if status is Status.ERROR else "is not provable"
        return CaseResult(
            case, status, f"{case.name} {verb}: {e.reason} ({where})", {}, expected,
            prover.tolerance(), prover.calls(), tuple(prover.enumerations),
            notes=prover.notes(), seconds=time.perf_counter() - start,
        )
    obtained = {key: v for key, (v, _) in mixture.items()}
    tolerance = prover.tolerance()
    if case.theorem == "expected_length":
        tolerance *= (case.k + 1) * max(1, len(obtained))
    status, worst, diff = compare(obtained, expected, tolerance)
    witnesses = mixture[worst][1] if worst is not None and worst in mixture else ()
    if status is Status.FAILED:
        for w in witnesses:  # WRONG only on witnesses the cells can stand on
            holds = witness_holds(impl, w.round, w.leaf)
            if not holds.applies:
                return CaseResult(
                    case, Status.NOT_APPLICABLE, f"{case.name}: not applicable: {holds.reason}",
                    obtained, expected, tolerance, prover.calls() + holds.calls,
                    tuple(prover.enumerations), worst, witnesses, prover.notes(),
                    time.perf_counter() - start,
                )
    if status is Status.PASSED:
        message = f"{case.name}: proven exact ({prover.calls()} calls)"
        if case.theorem == "expected_length":
            mean = sum((n * v for (n,), v in obtained.items()), Fraction(0))
            message += f"; mean tokens per round {mean}"
    else:
        assert worst is not None
        got = obtained.get(worst, Fraction(0))
        want = expected.get(worst, Fraction(0))
        what = "round length" if case.theorem == "expected_length" else "outcome"
        message = (
            f"{case.name}: {what} {_show(worst)} has probability {got}, the target {want} "
            f"(difference {diff})"
        )
        if witnesses:
            w = next((w for w in witnesses if _departs((w,))), witnesses[0])
            after = f" after {list(w.round.history)}" if w.round.history else ""
            message += (f"; reproduce with drafts {list(w.round.draft_ids)}{after} and uniforms "
                        f"{list(w.leaf.uniforms)} -> {list(w.leaf.emitted)}")
            rule = contract_output(w.round, w.leaf.uniforms)
            if rule is not None and rule != w.leaf.emitted:
                message += f" (the contract's rule emits {list(rule)} there)"
        if status is Status.NOT_PROVABLE:
            message += f"; within the tolerance {float(tolerance):.3g} of rounding"
            if any(e.unresolved for e in prover.enumerations):
                message += (f" and of cells narrower than the guard band ({float(GUARD):g}), "
                            "which no probe can see: probabilities this small are below what "
                            "the exact engine resolves")
        elif any(b.source != "known" for e in prover.enumerations for b in e.located):
            message += (f"; with breakpoints located within {float(GUARD):g} of the "
                        f"implementation's, so exact to within {float(tolerance):.3g}")
    return CaseResult(
        case, status, message, obtained, expected, tolerance, prover.calls(),
        tuple(prover.enumerations), worst, witnesses, prover.notes(),
        time.perf_counter() - start,
    )


# ---------------------------------------------------------------------------------------------
# the tier

_SEVERITY = (
    Status.NOT_APPLICABLE, Status.FAILED, Status.ERROR, Status.NOT_PROVABLE, Status.PASSED,
)


def run_theorem(
    impl: Implementation, theorem: str, *, seed: int = 0, cases: int = DEFAULT_CASES
) -> tuple[CheckResult, list[CaseResult]]:
    """Prove ``theorem`` on ``cases`` seeded cases; one CheckResult for the theorem.

    The check fails if any case fails (or errors); it is not provable if any case is and none
    failed; a hang ends the theorem early (the remaining cases would hang too).
    """
    start = time.perf_counter()
    results: list[CaseResult] = []
    for case in generate_cases(theorem, cases, seed):
        result = prove_case(impl, case)
        results.append(result)
        if result.status is Status.ERROR and "did not return within" in result.message:
            break
        if result.status is Status.NOT_APPLICABLE:
            break  # the cells do not apply to this implementation: no case will prove anything
    statuses = {r.status for r in results}
    status = next((s for s in _SEVERITY if s in statuses), Status.PASSED)
    calls = sum(r.calls for r in results)
    bad = next((r for r in results if r.status is status), None)
    repro = (f"spec-verify prove --impl {impl.name} --theorem {theorem} --seed {seed} "
             f"--cases {cases}")
    if status is Status.PASSED and (not results or calls == 0):
        # Nothing was asked of the implementation: "proven" would be a vacuous verdict.
        status = Status.NOT_PROVABLE
        message = (
            f"{THEOREMS[theorem]}: nothing proven ({len(results)} cases, {calls} calls to the "
            "implementation); zero cases or zero calls prove nothing"
        )
    elif status is Status.PASSED:
        message = f"{THEOREMS[theorem]}: proven on {len(results)} cases ({calls} calls)"
    else:
        assert bad is not None
        others = sum(r.status is status for r in results) - 1
        message = bad.message + (f" (and {others} more cases)" if others else "")
        repro = f"spec-verify prove --impl {impl.name} --case {bad.case.name} --seed {seed}"
    skipped = cases - len(results)
    if skipped:
        why = "the cells do not apply" if status is Status.NOT_APPLICABLE else "the hang"
        message += f"; {skipped} cases not run after {why}"
    check = CheckResult(
        tier="exact",
        name=theorem,
        status=status,
        message=message,
        n=len(results),
        details={
            "seed": seed,
            "calls": calls,
            "cases": [r.to_json() for r in results],
        },
        repro=repro,
        seconds=time.perf_counter() - start,
    )
    return check, results


def run_exact_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    cases: int | None = None,
    theorems: Sequence[str] | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> list[CheckResult]:
    """The exact tier: every theorem on ``cases`` seeded cases, one CheckResult per theorem.

    Args:
        impl: the implementation; without the ``injected_uniforms`` capability the tier is one
            skipped result.
        seed: root seed of the generated cases (failures print it in their repro line).
        cases: cases per theorem (the first is the seed's hand example where there is one);
            default ``DEFAULT_CASES``, or ``QUICK_CASES`` with ``quick``.
        theorems: a subset of ``THEOREMS`` (default: all, in order).
        quick: fewer cases, for a fast signal.
        progress: called with one line per theorem as it starts.

    Raises:
        InvalidArgument: an unknown theorem name or a negative number of cases.
    """
    names = list(THEOREMS) if theorems is None else list(theorems)
    unknown = [t for t in names if t not in THEOREMS]
    if unknown:
        raise InvalidArgument("theorems", unknown, f"unknown; choose from {list(THEOREMS)}")
    if cases is None:
        cases = QUICK_CASES if quick else DEFAULT_CASES
    if cases < 0:
        raise InvalidArgument("cases", cases, "must be >= 0")
    if "injected_uniforms" not in impl.capabilities:
        return [_not_applicable(
            f"{impl.name} does not take an injected uniform source (own randomness); the "
            "statistical tier decides", 0, time.perf_counter(),
        )]
    start = time.perf_counter()
    probe = injection_probe(impl, seed)
    if not probe.applies:
        return [_not_applicable(probe.reason + "; the statistical tier decides", probe.calls,
                                start)]
    results = []
    for theorem in names:
        if progress is not None:
            progress(f"exact/{theorem}: {THEOREMS[theorem]} ({cases} cases)")
        check = run_theorem(impl, theorem, seed=seed, cases=cases)[0]
        if check.status is Status.NOT_APPLICABLE:
            return [replace(check, message=check.message + "; the statistical tier decides")]
        results.append(check)
    return results


def _not_applicable(reason: str, calls: int, start: float) -> CheckResult:
    return CheckResult(
        "exact", "injected_uniforms", Status.NOT_APPLICABLE, reason, n=calls,
        seconds=time.perf_counter() - start,
    )


