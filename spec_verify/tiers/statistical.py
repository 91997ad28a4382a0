"""The statistical tier: goodness of fit for samplers that draw from their own generator.

The exact tier proves a sampler exact by enumerating the cells of its injected uniforms; a
sampler that draws from its own seeded generator cannot be enumerated, so this tier samples it
and tests the output against the exact target, with declared error rates (the statistics
policy of DESIGN.md):

- every check declares ``delta``, the smallest total-variation distance from the target it
  detects, and ``power``, the probability it does; its sample size is
  ``required_samples(cells, alpha_i, delta, power)`` with ``alpha_i = family_alpha / m``
  (never guessed);
- the checks are G-tests (cells pooled by *expected* counts) of the first emitted token, of the
  emitted tuple of a two-draft round, and of the first tokens of end-to-end
  ``speculative_generate`` on the bundled toy target (``BagLM``), whose exact joint is computed
  by enumeration; of a tree round continued with the target (``verify_tree``, branching 1 to 4,
  depth 1 to 5, siblings repeating a token), whose law is the reference's Fraction path; and an
  exact binomial test of the acceptance rate against ``sum min(p, q)``;
- Holm's step-down procedure across the run keeps the family-wise false-alarm rate at most
  ``family_alpha`` (1e-6 in a gate); Holm rejects whatever Bonferroni at ``alpha_i`` rejects,
  so each check keeps its declared power;
- one root seed (``numpy.random.SeedSequence``) drives every draw of the harness and seeds the
  implementation's own generator; a run is never retried;
- the number of draws and the order of the checks are not constants an implementation can
  count to: each check draws its planned ``n`` plus a seeded extra of up to an eighth of it
  (``PlannedCheck.extra``, never fewer than planned), and the checks run in an order shuffled
  from the seed (``StatisticalPlan.order``); results are reported in registry order;
- optionally a sequential test (an e-process, safe under optional stopping) runs beside each
  check and stops it early on overwhelming evidence; the check's alpha is then split between
  the e-process and the G-test (each at ``alpha_i / 2``), so the false-alarm rate is unchanged.

A token the target gives probability 0 fails its check at once (p-value 0), whatever ``n``.

Entry point: ``run_statistical_tier(impl) -> list[CheckResult]``; ``plan_statistical_tier``
gives the sample sizes without drawing anything.
"""

from __future__ import annotations

import abc
import math
import numbers
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._generation_request import GenerationRequest
from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import ImplementationError, InvalidArgument
from spec_verify.reference.exact import Dist
from spec_verify.results import CheckResult, Status
from spec_verify.stats._binomial import acceptance_rate_test
from spec_verify.stats._gof import g_test
from spec_verify.stats._multiple import holm, holm_thresholds
from spec_verify.stats._power import required_samples
from spec_verify.stats._sequential import SequentialGofTest
from spec_verify.stats._validate import check_int, check_open_unit
from spec_verify.tiers._drive import SampledVerifier, VerifyRequest

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_DELTA",
    "DEFAULT_FAMILY_ALPHA",
    "DEFAULT_POWER",
    "QUICK_DELTA",
    "STATISTICAL_CHECKS",
    "AcceptanceRateCheck",
    "FirstTokenCheck",
    "GenerationCheck",
    "OwnStreamCheck",
    "PlannedCheck",
    "SequenceCheck",
    "StatisticalCheck",
    "StatisticalPlan",
    "TreeAcceptanceCheck",
    "TreeCheck",
    "check_names",
    "plan_statistical_tier",
    "run_statistical_tier",
]

DEFAULT_FAMILY_ALPHA = 1e-6
DEFAULT_DELTA = 0.05
QUICK_DELTA = 0.1
DEFAULT_POWER = 0.99
DEFAULT_BUDGET = 200_000  # draws per check; the largest default plan is about 14,000
TIER = "statistical"
_BATCH = 512  # draws between two looks of the sequential test
_SCHEDULE_KEY = 2**31 - 1  # spawn key of the extras and the order: no check's index
F = Fraction
Sample = Hashable


# --- the checks ------------------------------------------------------------------------------


class _Sampler:
    """Draws outcomes of one check from an implementation, batch by batch."""

    def __init__(self, draw: Callable[[int], list[Sample]]) -> None:
        self.draw = draw


@dataclass(frozen=True)
class StatisticalCheck(abc.ABC):
    """A check of the tier: what it samples, its exact expected law, what it needs.

    Subclasses define ``probabilities`` (outcome -> exact probability, the target's law of the
    outcome) and ``start`` (a sampler of outcomes from an implementation).
    """

    name: str
    description: str

    needs = "verify_draft"  # the capability an implementation must offer
    test = "G-test"

    @abc.abstractmethod
    def probabilities(self) -> dict[Sample, float]:
        """Every outcome the check can see, with its exact probability under the target.

        Outcomes of probability 0 may be listed (they are plotted); any outcome that is not
        listed has probability 0.
        """

    @abc.abstractmethod
    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        """A sampler of i.i.d. outcomes; ``harness`` draws the drafts, ``seeds`` seeds ``impl``."""

    def label(self, outcome: Sample) -> str:
        """How an outcome is named in reports and plots."""
        return str(outcome)


class _SequenceLawCheck(StatisticalCheck):
    """A check whose outcomes are token sequences, with their exact law computed once by the
    subclass (its ``_law``, a cached property), named in reports as the tokens in order."""

    @property
    @abc.abstractmethod
    def _law(self) -> dict[Sample, float]:
        """Each sequence with its exact probability under the target."""

    def probabilities(self) -> dict[Sample, float]:
        return dict(self._law)

    def label(self, outcome: Sample) -> str:
        return " ".join(str(t) for t in outcome)  # type: ignore[attr-defined]


def _logits_from(dist: Sequence[Fraction]) -> NDArray[np.float64]:
    """Logits whose temperature-1 softmax is ``dist`` (``log p``, ``-inf`` for zeros)."""
    with np.errstate(divide="ignore"):
        return np.log(np.array([float(v) for v in dist], dtype=np.float64))


def _floats(dist: Sequence[Fraction]) -> NDArray[np.float64]:
    return np.array([float(v) for v in dist], dtype=np.float64)


def _choose(rng: np.random.Generator, probs: NDArray[np.float64], size: int) -> NDArray[np.intp]:
    """``size`` token ids drawn from ``probs`` (renormalised: float rows sum to 1 +- 1e-16)."""
    return rng.choice(len(probs), size=size, p=probs / probs.sum())


@dataclass(frozen=True)
class FirstTokenCheck(StatisticalCheck):
    """The first emitted token of ``verify_draft`` with one drafted token follows the target.

    The target is either exact (``target``: Fractions; the logits are ``log p`` at temperature
    1) or given as ``logits`` with sampling ``params``, ``history`` and ``prompt`` (its law is
    then the reference's float64 ``sampling_distribution``, the contract's executable form).
    The draft is ``draft`` (the harness draws ``x ~ q``) or, when ``draft`` is None, a
    deterministic draft cycling through every token id, including those the target rules out.
    """

    target: Dist | None = None
    logits: tuple[float, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    history: tuple[int, ...] = ()
    prompt: tuple[int, ...] = ()
    draft: Dist | None = None

    @cached_property
    def _row(self) -> NDArray[np.float64]:
        return _logits_from(self.target) if self.target is not None else np.array(self.logits)

    @cached_property
    def _p(self) -> tuple[float, ...]:
        if self.target is not None:
            return tuple(float(v) for v in self.target)
        from spec_verify.reference import SamplingParams, sampling_distribution

        dist = sampling_distribution(
            self._row, SamplingParams(**self.params), list(self.history), list(self.prompt)
        )
        return tuple(float(v) for v in dist)

    def probabilities(self) -> dict[Sample, float]:
        return dict(enumerate(self._p))

    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        V = len(self._row)
        rows = np.vstack([self._row, self._row])  # the bonus row never reaches the 1st token
        verify = SampledVerifier(impl, impl.params(**self.params), seeds)
        q = None if self.draft is None else _floats(self.draft).reshape(1, V)
        history, prompt = list(self.history), list(self.prompt)
        calls = 0

        def draw(count: int) -> list[Sample]:
            nonlocal calls
            if q is None:
                xs = [(calls + i) % V for i in range(count)]
            else:
                xs = [int(x) for x in _choose(harness, q[0], count)]
            calls += count
            rounds = verify([VerifyRequest(rows, [x], q, history, prompt) for x in xs])
            return [emitted[0] for emitted, _ in rounds]

        return _Sampler(draw)


@dataclass(frozen=True)
class AcceptanceRateCheck(StatisticalCheck):
    """The share of drafted tokens kept equals ``sum min(p, q)`` (exact binomial test).

    One drafted token per call, ``x ~ q`` drawn by the harness: each call is a Bernoulli trial
    with the exact rate ``sum_v min(p(v), q(v)) = 1 - TV(p, q)``.
    """

    target: Dist = ()
    draft: Dist = ()
    test = "exact binomial"

    @cached_property
    def rate(self) -> Fraction:
        return sum((min(a, b) for a, b in zip(self.target, self.draft, strict=True)), F(0))

    def probabilities(self) -> dict[Sample, float]:
        return {0: float(1 - self.rate), 1: float(self.rate)}

    def label(self, outcome: Sample) -> str:
        return "accepted" if outcome == 1 else "rejected"

    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        row = _logits_from(self.target)
        rows = np.vstack([row, row])
        q = _floats(self.draft).reshape(1, -1)
        verify = SampledVerifier(impl, impl.params(), seeds)

        def draw(count: int) -> list[Sample]:
            xs = _choose(harness, q[0], count)
            rounds = verify([VerifyRequest(rows, [int(x)], q) for x in xs])
            return [accepted for _, accepted in rounds]

        return _Sampler(draw)


@dataclass(frozen=True)
class SequenceCheck(_SequenceLawCheck):
    """The emitted tuple of a round with two drafts follows its exact law (by enumeration).

    Target and draft are exact tables over ``V`` tokens (a distribution after every prefix,
    built from ``table_seed``); the harness draws ``x_1 ~ q()``, ``x_2 ~ q(x_1)`` and passes the
    target's rows after ``()``, ``(x_1,)``, ``(x_1, x_2)``. The law of the emitted tuple is
    ``exact_round`` of the reference's Fraction path: each emitted token follows the target
    given the tokens before it, the first one the target's first row.
    """

    vocab_size: int = 3
    table_seed: int = 0
    m: int = 2

    @cached_property
    def _tables(self) -> tuple[dict[tuple[int, ...], Dist], dict[tuple[int, ...], Dist]]:
        rng = np.random.default_rng(self.table_seed)
        V = self.vocab_size

        def dist(zeros: int) -> Dist:
            weights = rng.integers(1, 6, size=V)
            if zeros:
                weights[rng.choice(V, size=zeros, replace=False)] = 0
            total = int(weights.sum())
            return tuple(F(int(w), total) for w in weights)

        target: dict[tuple[int, ...], Dist] = {}
        draft: dict[tuple[int, ...], Dist] = {}
        prefixes: list[tuple[int, ...]] = [()]
        for depth in range(self.m + 1):
            for prefix in prefixes:
                # some target rows rule tokens out (not over two tokens: rows stay random)
                target[prefix] = dist(zeros=depth % 2 if V > 2 else 0)
                if depth < self.m:
                    draft[prefix] = dist(zeros=(depth + 1) % 2)
            prefixes = [(*prefix, t) for prefix in prefixes for t in range(V)]
        return target, draft

    @cached_property
    def _law(self) -> dict[Sample, float]:
        from spec_verify.reference.exact import exact_round

        target, draft = self._tables
        law = exact_round(target.__getitem__, draft.__getitem__, (), self.m)
        return {seq: float(prob) for seq, prob in sorted(law.items()) if prob}

    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        target, draft = self._tables
        logits = {prefix: _logits_from(dist) for prefix, dist in target.items()}
        q = {prefix: _floats(dist) for prefix, dist in draft.items()}
        verify = SampledVerifier(impl, impl.params(), seeds)

        def request() -> VerifyRequest:
            prefix: tuple[int, ...] = ()
            for _ in range(self.m):
                prefix = (*prefix, int(_choose(harness, q[prefix], 1)[0]))
            rows = np.vstack([logits[prefix[:i]] for i in range(self.m + 1)])
            probs = np.vstack([q[prefix[:i]] for i in range(self.m)])
            return VerifyRequest(rows, list(prefix), probs)

        def draw(count: int) -> list[Sample]:
            return [tuple(emitted) for emitted, _ in verify([request() for _ in range(count)])]

        return _Sampler(draw)


@dataclass(frozen=True)
class ChainLawCheck(SequenceCheck):
    """Everything a round of ``m`` drafts emits, continued with the target's own draws to
    ``m + 1`` tokens, follows the target's law of ``m + 1`` tokens: the LAW claim for chains,
    whatever the rule accepts (token or block verification, sampler-match, another draw order).

    Target and draft are exact tables over ``vocab_size`` tokens after every prefix, as in
    ``SequenceCheck`` (context-dependent: every position has its own row). The harness draws
    the drafts ``x_i ~ q(x_<i)``, or, with ``deterministic``, takes the draft's most likely
    token after each prefix and passes ``draft_probs=None``; it continues the emitted ids with
    the target's rows to ``m + 1`` tokens. A round that emits more than ``m + 1`` ids, or
    rows from the wrong position (a bonus token from another row, one uniform reused across
    positions, a biased block residual), moves this law, not necessarily the first token's.
    """

    deterministic: bool = False

    @cached_property
    def _law(self) -> dict[Sample, float]:
        from spec_verify.reference.exact import exact_target_sequences

        target, _ = self._tables
        law = exact_target_sequences(target.__getitem__, (), self.m + 1)
        return {seq: float(prob) for seq, prob in sorted(law.items()) if prob}

    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        target, draft = self._tables
        logits = {prefix: _logits_from(dist) for prefix, dist in target.items()}
        cdfs = {prefix: _floats(dist) for prefix, dist in target.items()}
        q = {prefix: _floats(dist) for prefix, dist in draft.items()}
        verify = SampledVerifier(impl, impl.params(), seeds)
        length = self.m + 1

        def request() -> VerifyRequest:
            prefix: tuple[int, ...] = ()
            for _ in range(self.m):
                row = q[prefix]
                token = int(np.argmax(row)) if self.deterministic else int(
                    _choose(harness, row, 1)[0]
                )
                prefix = (*prefix, token)
            rows = np.vstack([logits[prefix[:i]] for i in range(self.m + 1)])
            probs = None if self.deterministic else np.vstack(
                [q[prefix[:i]] for i in range(self.m)]
            )
            return VerifyRequest(rows, list(prefix), probs)

        def draw(count: int) -> list[Sample]:
            rounds = verify([request() for _ in range(count)])
            tail = harness.random(size=(count, length))
            # more ids than a round may emit stay as they are: an outcome of law 0
            return [_continued(emitted, tail[i], cdfs, length)
                    for i, (emitted, _) in enumerate(rounds)]

        return _Sampler(draw)


T = TypeVar("T")


@dataclass(frozen=True)
class GenerationCheck(_SequenceLawCheck):
    """End to end: the first ``length`` tokens of ``speculative_generate`` follow the target.

    The target is the bundled toy ``BagLM`` (seed 11, V = 8); the exact joint of its first
    tokens under the sampling ``params`` is enumerated with the reference's float64
    ``sampling_distribution`` (penalties see the tokens generated so far). Each draw is one
    generation with a fresh target and draft and its own ``seed`` (from the root seed), so the
    implementation draws from its own generator, ``request_rng(p.seed)``.
    """

    draft_kind: str = "model"  # "model" (a sampled BagLM draft) or "prompt_lookup"
    alphabet: str = "abcdefg"
    target_seed: int = 11
    draft_seed: int = 99
    prompt: tuple[int, ...] = (1, 2, 3, 1, 2)
    k: int = 3
    length: int = 2
    params: Mapping[str, Any] = field(default_factory=dict)

    needs = "generation"

    def _target(self) -> Any:
        from spec_verify.reference import BagLM

        return BagLM(len(self.alphabet) + 1, seed=self.target_seed)

    @cached_property
    def _law(self) -> dict[Sample, float]:
        from spec_verify.reference import SamplingParams, sampling_distribution

        p = SamplingParams(**self.params)
        law: dict[tuple[int, ...], float] = {(): 1.0}
        for _ in range(self.length):
            grown: dict[tuple[int, ...], float] = {}
            for seq, prob in law.items():
                model = self._target()
                logits = model.forward([*self.prompt, *seq], model.new_cache(), 0)[-1]
                dist = sampling_distribution(logits, p, list(seq), list(self.prompt))
                for token, q in enumerate(dist):
                    if q > 0:
                        grown[(*seq, token)] = prob * float(q)
            law = grown
        return dict(sorted(law.items()))

    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        request = GenerationRequest(
            draft_kind=self.draft_kind, alphabet=self.alphabet, target_seed=self.target_seed,
            draft_seed=self.draft_seed, prompt=self.prompt, k=self.k, length=self.length,
            params=self.params,
        )  # fmt: skip
        seed_stream = np.random.Generator(np.random.PCG64(seeds))

        def draw(count: int) -> list[Sample]:
            seeds_ = [int(s) for s in seed_stream.integers(0, 2**63, size=count, dtype=np.int64)]
            outs = _guarded(impl, "speculative_generate", impl.generate_many, request, seeds_)
            return [tuple(ids) for ids in outs]

        return _Sampler(draw)


def _pick(probs: NDArray[np.float64], u: float) -> int:
    """The inverse CDF of ``probs`` at ``u`` (never a token of probability 0)."""
    cdf = np.cumsum(probs)
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return min(i, int(np.flatnonzero(probs)[-1]))


def _continued(
    emitted: Sequence[int], tail: NDArray[np.float64],
    cdfs: Mapping[tuple[int, ...], NDArray[np.float64]], length: int,
) -> tuple[int, ...]:
    """``emitted`` continued with the target's rows (``cdfs``) at the uniforms ``tail`` up to
    ``length`` tokens (a longer ``emitted`` is returned whole)."""
    out = tuple(int(t) for t in emitted)
    for j in range(len(out), length):
        out = (*out, _pick(cdfs[out], float(tail[j])))
    return out


@dataclass(frozen=True)
class TreeCheck(_SequenceLawCheck):
    """One round of tree verification, continued with the target, follows the target's law.

    The harness draws the draft tree's tokens as ``rule`` says (a node's children i.i.d. from
    its draft row, or without replacement: each from the row renormalised without the tokens
    drawn before), or uses the fixed ``tokens`` with deterministic children (``draft_probs``
    None, one-hot ``q``; siblings may repeat a token); it calls ``verify_tree`` and continues
    the emitted ids with the target's own draws up to ``length`` tokens. The expected law is
    the reference's Fraction path: ``extend_to(exact_tree_round(...))`` (or
    ``exact_tree_verify`` for a fixed tree), which for a lossless rule is the target's joint
    law of ``length`` tokens: a law check, whatever the rule accepts. Target and draft are
    exact tables over ``vocab_size`` tokens, one distribution per prefix, from ``table_seed``.
    """

    shape: tuple[Any, ...] = ()
    rule: str = "with_replacement"
    vocab_size: int = 3
    table_seed: int = 0
    length: int = 2
    tokens: tuple[int, ...] | None = None
    draft_bias: int = 1  # weight multiplier of the draft's first token (siblings repeat it)

    needs = "verify_tree"

    @cached_property
    def _parents(self) -> list[int]:
        from spec_verify.reference.tree_exact import parents_of

        return parents_of(self.shape)

    @cached_property
    def _tables(self) -> tuple[dict[tuple[int, ...], Dist], dict[tuple[int, ...], Dist]]:
        from spec_verify.reference.tree_exact import depth_of

        rng = np.random.default_rng(self.table_seed)
        V = self.vocab_size
        depth = depth_of(self.shape)

        def dist(zeros: int, bias: int = 1) -> Dist:
            weights = rng.integers(1, 6, size=V)
            weights[0] *= bias
            if zeros:
                weights[rng.choice(V, size=zeros, replace=False)] = 0
            total = int(weights.sum())
            return tuple(F(int(w), total) for w in weights)

        target: dict[tuple[int, ...], Dist] = {}
        draft: dict[tuple[int, ...], Dist] = {}
        prefixes: list[tuple[int, ...]] = [()]
        for level in range(max(depth, self.length - 1) + 1):
            for prefix in prefixes:
                # some target rows rule tokens out (not over two tokens: rows stay random)
                target[prefix] = dist(zeros=level % 2 if V > 2 else 0)
                if level < depth:
                    draft[prefix] = dist(zeros=0, bias=self.draft_bias)
            prefixes = [(*prefix, t) for prefix in prefixes for t in range(V)]
        return target, draft

    def _prefixes(self, tokens: Sequence[int]) -> list[tuple[int, ...]]:
        """The path's tokens to each node (root first)."""
        paths: list[tuple[int, ...]] = [()]
        for parent, token in zip(self._parents, tokens, strict=True):
            paths.append((*paths[parent + 1], int(token)))
        return paths

    @cached_property
    def _round_law(self) -> dict[tuple[int, ...], Fraction]:
        """The exact law of one round's emitted ids (the reference's Fraction path)."""
        from spec_verify.reference.tree_exact import exact_tree_round, exact_tree_verify

        target, draft = self._tables
        if self.tokens is None:
            return dict(exact_tree_round(
                target.__getitem__, draft.__getitem__, (), self.shape, self.rule
            ))  # fmt: skip
        rows = [target[prefix] for prefix in self._prefixes(self.tokens)]
        return dict(exact_tree_verify(rows, self._parents, self.tokens, None, self.rule))

    @cached_property
    def _law(self) -> dict[Sample, float]:
        from spec_verify.reference.tree_exact import extend_to

        target, _ = self._tables
        full = extend_to(self._round_law, target.__getitem__, (), self.length)
        return {seq: float(prob) for seq, prob in sorted(full.items()) if prob}

    def _outcome(
        self, emitted: Sequence[int], tail: NDArray[np.float64],
        cdfs: Mapping[tuple[int, ...], NDArray[np.float64]],
    ) -> Sample:
        """The round's emitted ids continued with the target's own draws to ``length``."""
        return _continued(emitted, tail, cdfs, self.length)[: self.length]

    def _draw_tokens(self, u: NDArray[np.float64]) -> list[int]:
        """The draft tree's tokens from one row of harness uniforms (one per node)."""
        _, draft = self._tables
        tokens: list[int] = []
        paths: list[tuple[int, ...]] = [()]
        siblings: dict[int, NDArray[np.float64]] = {}
        for i, parent in enumerate(self._parents):
            row = siblings.get(parent)
            if row is None:
                row = _floats(draft[paths[parent + 1]])
            token = _pick(row, float(u[i]))
            if self.rule == "without_replacement":
                row = row.copy()
                row[token] = 0.0
            siblings[parent] = row
            tokens.append(token)
            paths.append((*paths[parent + 1], token))
        return tokens

    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        from spec_verify.adapters._calls import Call, Draws, UniformPlan
        from spec_verify.tiers._drive import implementation_rng

        target, draft = self._tables
        logits = {prefix: _logits_from(dist) for prefix, dist in target.items()}
        cdfs = {prefix: _floats(dist) for prefix, dist in target.items()}
        q = {prefix: _floats(dist) for prefix, dist in draft.items()}
        params = impl.params()
        n = len(self._parents)
        seeded = impl.batch_stream is Draws.SEEDED
        if seeded:  # one message per batch, each round from the library's stream
            seed_stream = np.random.Generator(np.random.PCG64(seeds))
            rng = None
        else:
            rng = implementation_rng(impl, seeds)

        def request(u: NDArray[np.float64]) -> tuple[Any, list[int], Any]:
            tokens = list(self.tokens) if self.tokens is not None else self._draw_tokens(u)
            paths = self._prefixes(tokens)
            rows = np.vstack([logits[path] for path in paths])
            q_rows = None if self.tokens is not None else [q.get(path) for path in paths]
            return rows, tokens, q_rows

        def finish(emitted: Sequence[int], tail: NDArray[np.float64]) -> Sample:
            return self._outcome(emitted, tail, cdfs)

        def verified(requests: list[tuple[Any, list[int], Any]]) -> list[list[int]]:
            if seeded:
                stream = seed_stream.integers(0, 2**63 - 1, size=len(requests), dtype=np.int64)
                plans = [UniformPlan.seeded(int(seed)) for seed in stream]
            else:
                plans = [UniformPlan.live()] * len(requests)
            calls = [
                Call.tree(rows, self._parents, tokens, q_rows, params, [], [], plan, self.rule)
                for (rows, tokens, q_rows), plan in zip(requests, plans, strict=True)
            ]
            return [o.unwrap(impl.name, "verify_tree")[0] for o in impl.call_many(calls, rng)]

        def draw(count: int) -> list[Sample]:
            u = harness.random(size=(count, max(n, 1)))
            tail = harness.random(size=(count, self.length))
            emitted = verified([request(u[k]) for k in range(count)])
            return [finish(e, tail[k]) for k, e in enumerate(emitted)]

        return _Sampler(draw)


@dataclass(frozen=True)
class TreeAcceptanceCheck(TreeCheck):
    """How many draft nodes a tree round accepts follows the reference's exact law: an
    efficiency check (``spec_verify.profiles``). A lossless tree sampler that accepts less
    than the rule (one that always rejects and samples the target's root row, say) passes
    every law check and fails this one. The round is ``TreeCheck``'s; the outcome is
    ``len(emitted_ids) - 1``, the accepted path's length."""

    @cached_property
    def _law(self) -> dict[Sample, float]:
        law: dict[int, Fraction] = {}
        for emitted, prob in self._round_law.items():
            law[len(emitted) - 1] = law.get(len(emitted) - 1, F(0)) + prob
        return {accepted: float(prob) for accepted, prob in sorted(law.items()) if prob}

    def label(self, outcome: Sample) -> str:
        return f"{outcome} accepted"

    def _outcome(
        self, emitted: Sequence[int], tail: NDArray[np.float64],
        cdfs: Mapping[tuple[int, ...], NDArray[np.float64]],
    ) -> Sample:
        return len(emitted) - 1


@dataclass(frozen=True)
class OwnStreamCheck(_SequenceLawCheck):
    """``propose_and_verify``: the implementation draws the ``k`` drafts itself from the draft
    rows it is given, with its own generator, and verifies them; everything the round emits,
    continued with the target's own draws to ``k + 1`` tokens, follows the target's law.

    The rows are fixed per position (``target[i]`` after any ``i`` tokens, ``draft[i]`` for the
    ``i``-th draft), so the target's law of ``k + 1`` tokens is the product of its rows. The
    check has its own power plan: ``planned_delta`` is the exact TV of noise shared between
    the draft and the verifier on these rows (vLLM PR #47386, fixed in #54282: the draft's
    ``i``-th token drawn with the uniform the verifier then uses as its ``i``-th draw;
    ``spec_verify.tiers._own_stream.coupled_law``), and the plan sizes the sample for it at the
    run's power, whatever (larger) delta the run declares.
    """

    target: tuple[Dist, ...] = ()
    draft: tuple[Dist, ...] = ()
    planned_delta: float = 0.0

    needs = "propose_and_verify"

    @property
    def k(self) -> int:
        return len(self.draft)

    @cached_property
    def _law(self) -> dict[Sample, float]:
        from spec_verify.tiers._own_stream import product_law

        return {seq: float(prob) for seq, prob in product_law(self.target).items()}

    def start(
        self, impl: Implementation, harness: np.random.Generator, seeds: np.random.SeedSequence
    ) -> _Sampler:
        from spec_verify.tiers._drive import implementation_rng

        target = np.vstack([_logits_from(row) for row in self.target])
        draft = np.vstack([_logits_from(row) for row in self.draft])
        rows = [_floats(row) for row in self.target]
        length = self.k + 1
        params = impl.params()
        rng = implementation_rng(impl, seeds)

        def draw(count: int) -> list[Sample]:
            rounds = [(target, draft, (), ())] * count
            emitted = _guarded(impl, "propose_and_verify", impl.propose_many, rounds, params,
                               params, rng)  # fmt: skip
            tail = harness.random(size=(count, length))
            out: list[Sample] = []
            for i, (ids, _) in enumerate(emitted):
                seq = tuple(int(t) for t in ids)
                for j in range(len(seq), length):  # a longer round stays: an outcome of law 0
                    seq = (*seq, _pick(rows[j], float(tail[i, j])))
                out.append(seq)
            return out

        return _Sampler(draw)


def _guarded(impl: Implementation, call: str, fn: Callable[..., T], *args: Any) -> T:
    """An implementation's exception that is not the contract's ``ValueError`` is its failure
    (``ImplementationError``), not the harness's."""
    try:
        return fn(*args)
    except (ValueError, ImplementationError):
        raise
    except Exception as exc:  # the implementation's own bug: report it as such
        raise ImplementationError(impl.name, call, f"raised {type(exc).__name__}: {exc}") from exc


_P_SEED = (F(1, 2), F(1, 8), F(1, 8), F(1, 8), F(1, 8))
_Q_SEED = (F(1, 8), F(1, 2), F(1, 8), F(1, 8), F(1, 8))

STATISTICAL_CHECKS: tuple[StatisticalCheck, ...] = (
    FirstTokenCheck(
        "first_token.sampled_draft",
        "first token of a sampled one-token draft (x ~ q) follows the target p",
        target=_P_SEED,
        draft=_Q_SEED,
    ),
    FirstTokenCheck(
        "first_token.disjoint_supports",
        "draft and target with disjoint supports: every draft is rejected, the output is p",
        target=(F(1, 2), F(1, 2), F(0), F(0), F(0)),
        draft=(F(0), F(0), F(1, 4), F(1, 4), F(1, 2)),
    ),
    FirstTokenCheck(
        "first_token.deterministic_draft",
        "one-hot drafts of every token (including p(x) = 0) give exactly p",
        target=(F(1, 8), F(3, 8), F(0), F(1, 4), F(1, 4)),
        draft=None,
    ),
    FirstTokenCheck(
        "first_token.filters_and_penalties",
        "temperature, top-k, top-p, min-p and the three penalties shape p as the contract says",
        logits=(1.2, 0.3, 2.0, -0.5, 0.9, 1.7, -1.0, 0.0),
        params={
            "temperature": 0.8,
            "top_k": 6,
            "top_p": 0.95,
            "min_p": 0.02,
            "repetition_penalty": 1.2,
            "presence_penalty": 0.3,
            "frequency_penalty": 0.2,
        },
        history=(1, 1, 2),
        prompt=(3,),
        draft=(F(1, 4), F(1, 8), F(1, 8), F(1, 8), F(1, 8), F(1, 8), F(1, 16), F(1, 16)),
    ),
    FirstTokenCheck(
        "first_token.float32_logits_every_processor_cuts",
        "float32-valued logits (what real models emit, widened to float64) under top-k, top-p "
        "and min-p that each cut a token, and a residual of several tokens",
        # float32(2.1), ...: top-k = 7 cuts token 6, top-p = 0.95 then token 4, min-p = 0.15
        # then token 7 (p = 0.047 < 0.15 * 0.346); p > q on tokens 0, 3 and 5.
        logits=(2.0999999046325684, 1.2999999523162842, 0.4000000059604645, 1.899999976158142,
                -0.699999988079071, 0.8999999761581421, -1.600000023841858,
                0.10000000149011612),
        params={"top_k": 7, "top_p": 0.95, "min_p": 0.15},
        draft=(F(1, 16), F(1, 4), F(1, 8), F(1, 16), F(1, 8), F(1, 16), F(1, 8), F(3, 16)),
    ),
    SequenceCheck(
        "sequence.two_drafts",
        "the emitted tuple of a two-draft round follows its exact law (right row per position)",
        vocab_size=3,
        table_seed=5,
        m=2,
    ),
    AcceptanceRateCheck(
        "acceptance_rate",
        "the acceptance rate equals sum min(p, q) = 3/4",
        target=(F(1, 2), F(1, 4), F(1, 8), F(1, 8), F(0)),
        draft=(F(1, 4), F(1, 4), F(1, 4), F(1, 8), F(1, 8)),
    ),
    # Trees (CONTRACT.md section 6): branching 1 to 4, depth 1 to 5, both lossless rules,
    # siblings repeating a token; each law check continues the round with the target.
    TreeCheck(
        "tree.b4_d1_repeats",
        "four siblings drawn with replacement from a draft favouring one token (they often "
        "repeat it): the round continued with the target follows the target's law",
        shape=((), (), (), ()),
        rule="with_replacement",
        vocab_size=4,
        table_seed=21,
        length=2,
        draft_bias=4,
    ),
    TreeCheck(
        "tree.b1_d5_chain",
        "a chain of five sampled drafts verified as a tree: all six emitted positions follow "
        "the target's law",
        shape=((((((),),),),),),
        rule="with_replacement",
        vocab_size=2,
        table_seed=22,
        length=6,
    ),
    TreeCheck(
        "tree.b2_d4_without_replacement",
        "siblings drawn without replacement (two per node, one path to depth 4): four tokens "
        "follow the target's law",
        shape=(((((),),), ()), ((), ())),
        rule="without_replacement",
        vocab_size=3,
        table_seed=23,
        length=4,
    ),
    TreeCheck(
        "tree.b3_d2_deterministic_repeats",
        "a fixed tree of deterministic drafts whose siblings repeat tokens (three root "
        "children 1, 1, 0; two children 2, 2 below the first): three tokens follow the target",
        shape=(((), ()), (), ()),
        rule="with_replacement",
        vocab_size=3,
        table_seed=24,
        length=3,
        tokens=(1, 1, 0, 2, 2),
    ),
    TreeAcceptanceCheck(
        "tree.acceptance_b2_d2",
        "how many nodes a round of a sampled tree (two children per node, depth 2) accepts "
        "follows the rule's exact law (efficiency: a lossless sampler that accepts less fails)",
        shape=(((), ()), ((), ())),
        rule="with_replacement",
        vocab_size=3,
        table_seed=25,
        length=1,
    ),
    GenerationCheck(
        "generation.model_draft",
        "speculative_generate with a sampled model draft: the first two tokens follow the "
        "target's exact joint (the seed's 400-seed test, calibrated)",
        draft_kind="model",
    ),
    GenerationCheck(
        "generation.prompt_lookup_penalties",
        "speculative_generate with prompt lookup, top-k and penalties: the first two tokens "
        "follow the target's exact joint (penalties see the kept drafts)",
        draft_kind="prompt_lookup",
        params={
            "temperature": 0.9,
            "top_k": 5,
            "repetition_penalty": 1.3,
            "presence_penalty": 0.2,
            "frequency_penalty": 0.1,
        },
    ),
    # Chains (last, so that the checks before keep their seed streams): everything a round
    # emits, continued with the target (the LAW claim; the tuple law above is the token
    # rule's and only measures it).
    ChainLawCheck(
        "sequence.law_k2",
        "a round of two sampled drafts, continued with the target: three tokens follow the "
        "target's joint law",
        vocab_size=3,
        table_seed=31,
        m=2,
    ),
    ChainLawCheck(
        "sequence.law_k4",
        "a round of four sampled drafts, continued with the target: five tokens follow the "
        "target's joint law",
        vocab_size=2,
        table_seed=32,
        m=4,
    ),
    ChainLawCheck(
        "sequence.law_k3_deterministic",
        "a round of three deterministic drafts (the draft's argmax, draft_probs None), "
        "continued with the target: four tokens follow the target's joint law",
        vocab_size=3,
        table_seed=33,
        m=3,
        deterministic=True,
    ),
    # Last, so that the checks before keep their seed streams. The rows: noise coupling (the
    # r01 shape) moves the law of three tokens by TV 4/91 = 0.044 (exactly:
    # tests/tiers/test_own_stream.py); the plan is sized for TV 0.04, just below it.
    OwnStreamCheck(
        "own_stream.propose_k2",
        "propose_and_verify draws two drafts from its own stream and verifies them: three "
        "tokens (the round continued with the target) follow the target's joint law; sized "
        "for noise shared between draft and verifier (TV 0.04)",
        target=((F(5, 13), F(4, 13), F(4, 13)), (F(1, 4), F(5, 8), F(1, 8)),
                (F(1, 4), F(1, 3), F(5, 12))),
        draft=((F(3, 7), F(2, 7), F(2, 7)), (F(3, 10), F(3, 10), F(2, 5))),
        planned_delta=0.04,
    ),
)


def check_names() -> list[str]:
    """The names of the built-in checks, in run order."""
    return [check.name for check in STATISTICAL_CHECKS]


# --- the plan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedCheck:
    """One check of a plan: its sample size and the alpha it was planned at.

    ``index`` is the check's position in ``STATISTICAL_CHECKS`` (its seed stream);
    ``skip_reason`` is set when the implementation lacks what the check needs (``n`` is then 0).
    ``n`` is the power plan's sample size; the run draws ``draws = n + extra``, ``extra`` from
    the run's seed, so that a run's call count is not a constant (the plan is still met).
    """

    check: StatisticalCheck
    index: int
    n: int
    alpha: float
    cells: int
    skip_reason: str = ""
    extra: int = 0

    @property
    def draws(self) -> int:
        return self.n + self.extra


@dataclass(frozen=True)
class StatisticalPlan:
    """The sample sizes of a run, computed from ``(cells, alpha_i, delta, power)``."""

    seed: int
    family_alpha: float
    delta: float
    power: float
    budget: int
    sequential: bool
    entries: tuple[PlannedCheck, ...]
    order: tuple[int, ...] = ()  # the active checks' indices in run order (from the seed)

    def total_samples(self) -> int:
        return sum(entry.draws for entry in self.entries)

    def active(self) -> list[PlannedCheck]:
        """The checks that run, in run order."""
        active = {entry.index: entry for entry in self.entries if not entry.skip_reason}
        order = [i for i in self.order if i in active] or list(active)
        return [active[i] for i in order]


def plan_statistical_tier(
    impl: Implementation | None = None,
    *,
    seed: int = 0,
    family_alpha: float = DEFAULT_FAMILY_ALPHA,
    delta: float = DEFAULT_DELTA,
    power: float = DEFAULT_POWER,
    budget: int = DEFAULT_BUDGET,
    checks: Sequence[str] | None = None,
    sequential: bool = False,
) -> StatisticalPlan:
    """Plan a run: which checks run, how many draws each, at which alpha.

    With ``m`` checks that run, each is planned at ``alpha_i = family_alpha / m`` (at
    ``alpha_i / 2`` for its G-test when ``sequential``), with
    ``n = required_samples(cells, alpha_i, delta, power)`` where ``cells`` counts the outcomes
    of positive probability, plus a seeded extra of ``0..n // 8`` draws (within ``budget``),
    and the run order is a permutation of the checks from ``seed``. ``impl=None`` plans as if
    every capability were offered.

    Raises:
        InvalidArgument: ``family_alpha`` or ``power`` outside (0, 1), ``power <= alpha``,
            ``delta`` outside (0, 1], a bad ``seed`` or ``budget``, an unknown check name, or a
            check whose sample size exceeds ``budget`` (the message says what would fit).
    """
    family_alpha = check_open_unit("family_alpha", family_alpha)
    seed = _check_seed(seed)
    budget = check_int("budget", budget, 1)
    selected = _select(checks)
    skip = {index: _skip_reason(impl, check) for index, check in selected if impl is not None}
    active = [index for index, _ in selected if not skip.get(index)]
    m = max(1, len(active))
    alpha_i = family_alpha / m
    entries = []
    for index, check in selected:
        cells = sum(1 for prob in check.probabilities().values() if prob > 0)
        reason = skip.get(index, "")
        if reason:
            entries.append(PlannedCheck(check, index, 0, alpha_i, cells, reason))
            continue
        test_alpha = alpha_i / 2 if sequential else alpha_i
        try:
            n = required_samples(
                max(cells, 2), test_alpha, check_delta(check, delta), power, budget=budget
            )
        except InvalidArgument as error:
            raise InvalidArgument(
                error.argument, error.value, f"check {check.name}: {error.rule}", error.fix
            ) from error
        extras = np.random.default_rng(
            np.random.SeedSequence(seed, spawn_key=(_SCHEDULE_KEY, index))
        )
        extra = min(int(extras.integers(0, n // 8 + 1)), budget - n)
        entries.append(PlannedCheck(check, index, n, alpha_i, cells, extra=extra))
    shuffle = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_SCHEDULE_KEY,)))
    order = tuple(int(active[i]) for i in shuffle.permutation(len(active)))
    return StatisticalPlan(
        seed=seed,
        family_alpha=family_alpha,
        delta=float(delta),
        power=float(power),
        budget=budget,
        sequential=bool(sequential),
        entries=tuple(entries),
        order=order,
    )


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidArgument("seed", seed, "must be an integer >= 0", "e.g. seed=0")
    return int(seed)


def _select(checks: Sequence[str] | None) -> list[tuple[int, StatisticalCheck]]:
    indexed = list(enumerate(STATISTICAL_CHECKS))
    if checks is None:
        return indexed
    if isinstance(checks, str):
        raise InvalidArgument("checks", checks, "must be a list of check names", f"[{checks!r}]")
    known = {check.name: (index, check) for index, check in indexed}
    unknown = [name for name in checks if name not in known]
    if unknown or not checks:
        raise InvalidArgument(
            "checks",
            list(checks),
            f"unknown check names {unknown}" if unknown else "selects no check",
            f"choose from {sorted(known)}",
        )
    return sorted(known[name] for name in dict.fromkeys(checks))


def _skip_reason(impl: Implementation, check: StatisticalCheck) -> str:
    if check.needs not in impl.capabilities:
        return f"{impl.name} does not offer {check.needs}"
    return ""


# --- observing and judging -------------------------------------------------------------------


@dataclass(frozen=True)
class _Observation:
    """What one check saw: the p-value Holm judges, and the evidence for the report."""

    pvalue: float
    statistic: float
    n: int
    details: dict[str, Any]
    summary: str  # the statistic and the evidence, without the verdict
    problem: str = ""  # set when the implementation crashed or rejected valid input


def _seed_sequences(seed: int, index: int) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    harness, impl = np.random.SeedSequence(seed, spawn_key=(index,)).spawn(2)
    return harness, impl


def _draw_outcomes(
    impl: Implementation, plan: StatisticalPlan, entry: PlannedCheck
) -> tuple[list[Sample], SequentialGofTest | None]:
    """Draw the planned outcomes, stopping early if the sequential test rejects."""
    harness_seq, impl_seq = _seed_sequences(plan.seed, entry.index)
    sampler = entry.check.start(impl, np.random.Generator(np.random.PCG64(harness_seq)), impl_seq)
    cells = list(entry.check.probabilities())
    index_by_outcome = {outcome: i for i, outcome in enumerate(cells)}
    sequential = None
    if plan.sequential:
        probs = [*entry.check.probabilities().values(), 0.0]  # last: any unlisted outcome
        sequential = SequentialGofTest(probs, alpha=entry.alpha / 2)
    outcomes: list[Sample] = []
    while len(outcomes) < entry.draws:
        batch = sampler.draw(min(_BATCH, entry.draws - len(outcomes)))
        outcomes.extend(batch)
        if sequential is not None:
            idx = [index_by_outcome.get(outcome, len(cells)) for outcome in batch]
            if sequential.update_many(np.array(idx, dtype=np.int64)):
                break
    return outcomes, sequential


def observe(
    outcomes: Sequence[Sample],
    check: StatisticalCheck,
    alpha: float,
    sequential: SequentialGofTest | None = None,
) -> _Observation:
    """Test ``outcomes`` against the check's exact law at ``alpha`` (before Holm)."""
    law = check.probabilities()
    cells = list(law)
    extra = sorted({o for o in outcomes if o not in law}, key=repr)  # probability 0
    all_cells = cells + extra
    index_by_outcome = {outcome: i for i, outcome in enumerate(all_cells)}
    counts = np.zeros(len(all_cells), dtype=np.int64)
    for outcome in outcomes:
        counts[index_by_outcome[outcome]] += 1
    probs = [*law.values(), *([0.0] * len(extra))]
    n = len(outcomes)
    details: dict[str, Any] = {
        "test": check.test,
        "cells": [check.label(o) for o in all_cells],
        "observed": [int(c) for c in counts],
        "expected": [n * float(v) for v in probs],
    }
    g_alpha = alpha / 2 if sequential is not None else alpha
    if isinstance(check, AcceptanceRateCheck):
        accepted = int(counts[all_cells.index(1)]) if 1 in law else 0
        rate_result = acceptance_rate_test(accepted, n, check.rate, g_alpha)
        pvalue, statistic = rate_result.pvalue, rate_result.statistic
        details.update(
            expected_rate=str(check.rate),
            observed_rate=statistic,
            interval=[rate_result.ci_low, rate_result.ci_high],
            interval_level=1 - g_alpha,
        )
        summary = (
            f"accepted {accepted} of {n} (rate {statistic:.4g}, exact "
            f"{rate_result.ci_low:.4g}..{rate_result.ci_high:.4g} interval); expected "
            f"{check.rate} = {float(check.rate):.4g}; binomial p={pvalue:.3g}"
        )
    else:
        try:
            gof = g_test(counts, probs, g_alpha)
        except InvalidArgument:
            if sequential is None or not sequential.rejected:
                raise
            gof = None  # stopped too early for the G-test: the e-process decides
        if gof is None:
            pvalue, statistic = 1.0, math.nan
            summary = f"stopped early after n={n} draws"
        else:
            pvalue, statistic = gof.pvalue, gof.statistic
            details.update(
                df=gof.df,
                pooled=[check.label(all_cells[i]) for i in gof.pooled],
                observed_tv=gof.total_variation(),
            )
            summary = _gof_summary(gof, check, all_cells)
    if sequential is not None:
        seq = sequential.result()
        e_pvalue = seq.pvalue
        details["sequential"] = {
            "alpha": seq.alpha,
            "e_value": seq.e_value,
            "max_e_value": seq.max_e_value,
            "stopped_at": seq.stopped_at,
        }
        summary += f"; e-process max E={seq.max_e_value:.4g}" + (
            f", stopped at n={seq.stopped_at}" if seq.stopped_at is not None else ""
        )
        pvalue = min(1.0, 2 * min(pvalue, e_pvalue))  # Bonferroni over the two looks
    return _Observation(pvalue, statistic, n, details, summary)


def _gof_summary(gof: Any, check: StatisticalCheck, cells: list[Sample]) -> str:
    text = f"G={gof.statistic:.4g} on {gof.df} df, p={gof.pvalue:.3g}, n={gof.n}"
    if gof.zero_probability_tokens:
        seen = ", ".join(
            f"{check.label(cells[t])} ({gof.observed[t]}x)" for t in gof.zero_probability_tokens
        )
        return f"{text}; outcomes the target gives probability 0 were produced: {seen}"
    if gof.deviations:
        worst = gof.deviations[0]
        text += (
            f"; largest deviation: {check.label(cells[worst.token])} observed "
            f"{worst.observed}, expected {worst.expected:.1f}"
        )
    return text


def run_statistical_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    family_alpha: float = DEFAULT_FAMILY_ALPHA,
    delta: float | None = None,
    power: float = DEFAULT_POWER,
    budget: int = DEFAULT_BUDGET,
    checks: Sequence[str] | None = None,
    sequential: bool = False,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    **options: Any,
) -> list[CheckResult]:
    """Run the statistical tier against ``impl``; one ``CheckResult`` per check.

    Valid for any implementation whose draws are independent across calls given their seeds
    (each call gets fresh drafts; generations get their own seeds). Under a correct sampler
    the probability that any check fails is at most ``family_alpha`` (Holm across the run;
    each G-test trusts its chi-square limit, see ``spec_verify.stats._gof``); a check whose outcome
    law is at total variation ``delta`` or more from the target fails with probability at
    least ``power`` (up to the same approximation).

    Args:
        impl: the implementation under test (``verify_draft``; ``generation`` for the
            end-to-end checks, which are skipped without it).
        seed: the root seed of every draw (``numpy.random.SeedSequence``); same seed, same run.
        family_alpha: family-wise false-alarm rate of the run (1e-6 in a gate).
        delta: the smallest total-variation distance each check detects (default 0.05, or
            0.1 when ``quick``: a quarter of the draws).
        power: the probability each check detects a sampler at distance ``delta``.
        budget: the most draws one check may take (an error says what fits if it is exceeded).
        checks: names of the checks to run (default all, see ``check_names()``); the family is
            the checks that run.
        sequential: also run an e-process beside each check and stop it early once it rejects.
        quick: plan for ``delta = 0.1`` unless ``delta`` is given.
        progress: called with one line per check as it starts.

    Returns:
        One result per selected check, in run order, ``tier="statistical"``; each declares
        ``alpha`` (its planned share of ``family_alpha``) and, in ``details``, ``delta``,
        ``power``, ``family_alpha``, the Holm threshold, and observed vs expected counts.

    Raises:
        InvalidArgument: a bad argument, or a plan beyond ``budget`` (see
            ``plan_statistical_tier``).
    """
    if delta is None:
        delta = QUICK_DELTA if quick else DEFAULT_DELTA
    plan = plan_statistical_tier(
        impl,
        seed=seed,
        family_alpha=family_alpha,
        delta=delta,
        power=power,
        budget=budget,
        checks=checks,
        sequential=sequential,
    )
    observations: dict[int, _Observation] = {}
    seconds: dict[int, float] = {}
    for entry in plan.active():
        if progress is not None:
            progress(f"statistical: {entry.check.name} ({entry.draws:,} draws)")
        started = time.perf_counter()
        observations[entry.index] = _observe_safely(impl, plan, entry)
        seconds[entry.index] = time.perf_counter() - started
    order = list(observations)
    pvalues = [observations[i].pvalue for i in order]
    rejected = dict(zip(order, holm(pvalues, plan.family_alpha), strict=True))
    thresholds = dict(zip(order, holm_thresholds(pvalues, plan.family_alpha), strict=True))
    results = []
    for entry in plan.entries:
        if entry.skip_reason:
            results.append(_skipped(impl, plan, entry))
            continue
        obs = observations[entry.index]
        results.append(
            _result(
                impl,
                plan,
                entry,
                obs,
                rejected[entry.index],
                thresholds[entry.index],
                seconds[entry.index],
            )
        )
    return results


def _observe_safely(
    impl: Implementation, plan: StatisticalPlan, entry: PlannedCheck
) -> _Observation:
    """Observe one check; a crash or a rejected valid input is the implementation's failure
    (p-value 0, so Holm counts it as rejected and the other checks keep their thresholds)."""
    try:
        outcomes, sequential = _draw_outcomes(impl, plan, entry)
        return observe(outcomes, entry.check, entry.alpha, sequential)
    except ImplementationError as error:
        problem = f"the implementation failed: {error}"
    except ValueError as error:
        problem = f"the implementation rejected valid input: {type(error).__name__}: {error}"
    return _Observation(0.0, math.nan, 0, {"test": entry.check.test}, problem, problem=problem)


def _repro(impl: Implementation, plan: StatisticalPlan, name: str) -> str:
    options = [f"--spec-impl={impl.name}", f"--spec-seed={plan.seed}"]
    if plan.family_alpha != DEFAULT_FAMILY_ALPHA:
        options.append(f"--spec-alpha={plan.family_alpha:g}")
    if plan.delta != DEFAULT_DELTA:
        options.append(f"--spec-delta={plan.delta:g}")
    if plan.power != DEFAULT_POWER:
        options.append(f"--spec-power={plan.power:g}")
    if plan.sequential:
        options.append("--spec-sequential")
    return (
        "pytest --pyargs spec_verify.properties.test_statistics "
        + " ".join(options)
        + f" -k '{name}'"
    )


def check_delta(check: StatisticalCheck, delta: float) -> float:
    """The TV a check is sized for in a run planned at ``delta``: its own ``planned_delta``
    (the TV of the bug it is there for) when that is smaller."""
    own = float(getattr(check, "planned_delta", 0.0))
    return min(delta, own) if own else delta


def _declared(plan: StatisticalPlan, entry: PlannedCheck) -> dict[str, Any]:
    return {
        "family_alpha": plan.family_alpha,
        "delta": check_delta(entry.check, plan.delta),
        "power": plan.power,
        "planned_alpha": entry.alpha,
        "required_samples": entry.n,
        "draws": entry.draws,  # the plan's n plus the run's seeded extra
        "cells": entry.cells,
        "seed": plan.seed,
        "description": entry.check.description,
    }


def _skipped(impl: Implementation, plan: StatisticalPlan, entry: PlannedCheck) -> CheckResult:
    declared = _declared(plan, entry)
    return CheckResult(
        tier=TIER,
        name=entry.check.name,
        status=Status.SKIPPED,
        message=f"skipped: {entry.skip_reason}",
        alpha=entry.alpha,
        n=0,
        details={key: declared[key] for key in ("family_alpha", "delta", "power", "seed")},
    )


def _result(
    impl: Implementation,
    plan: StatisticalPlan,
    entry: PlannedCheck,
    obs: _Observation,
    rejected: bool,
    threshold: float,
    seconds: float,
) -> CheckResult:
    details = {**_declared(plan, entry), **obs.details, "holm_threshold": threshold}
    guarantee = (
        f"detects TV >= {check_delta(entry.check, plan.delta):g} with power {plan.power:g} "
        f"at family alpha "
        f"{plan.family_alpha:g}"
    )
    if obs.problem:
        status, message = Status.ERROR, obs.problem
    elif rejected:
        status = Status.FAILED
        message = (
            f"not the target (p={obs.pvalue:.3g} < Holm threshold "
            f"{threshold:.3g}): {obs.summary}; {guarantee}"
        )
    else:
        status = Status.PASSED
        message = (
            f"consistent with the target (p={obs.pvalue:.3g} >= Holm "
            f"threshold {threshold:.3g}): {obs.summary}; {guarantee}"
        )
    return CheckResult(
        tier=TIER,
        name=entry.check.name,
        status=status,
        message=message,
        statistic=None if math.isnan(obs.statistic) else obs.statistic,
        pvalue=obs.pvalue,
        alpha=entry.alpha,
        n=obs.n,
        details=details,
        repro="" if status is Status.PASSED else _repro(impl, plan, entry.check.name),
        seconds=seconds,
    )
