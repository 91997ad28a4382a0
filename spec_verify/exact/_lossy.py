"""Lossy verification rules as implementations under test, and their bias measured exactly.

Researchers trade exactness for acceptance. Each rule here is an ``Implementation`` (it takes
an injected uniform source and keeps the contract's draw order: per position ``u_accept`` then
``u_resample``, one draw for the bonus), so the cell enumerator measures its exact output
distribution like any other sampler's; ``measure`` reports both sides of the trade:

- the first token's distribution over ``x ~ q`` as ``Fraction``s,
- its total-variation distance to the target ``p`` (0 exactly for an exact rule),
- the acceptance rate, against the exact rule's ``a = sum min(p, q)``.

Rules:

- ``typical`` (Medusa's typical acceptance, Cai et al. 2024): keep ``x`` when
  ``p(x) > min(epsilon, delta * exp(-H(p)))``, no uniform involved; a rejected position emits
  a token sampled from ``p``.
- ``ensemble``: rejection sampling against the mixture ``m = w p + (1 - w) q`` instead of
  ``p`` (accept when ``u q(x) < m(x)``, resample from ``max(0, m - q)``, which is proportional
  to the residual of ``p``): the output is exactly ``m``, so ``TV = (1 - w) TV(p, q)``.
- ``confidence``: a draft confident enough (``q(x) >= tau``) is kept unchecked; otherwise the
  exact rule applies.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import NDArray

from spec_verify.errors import InvalidArgument
from spec_verify.exact._cells import Dist, Round, check_dist, enumerate_round, format_fraction
from spec_verify.uniforms import results_or_raised

if TYPE_CHECKING:  # the engine takes any implementation; it imports no adapter
    from spec_verify.adapters import Implementation

__all__ = [
    "LOSSY_RULES",
    "ConfidenceThreshold",
    "EnsembleVerification",
    "LossyImplementation",
    "LossyReport",
    "TypicalAcceptance",
    "lossy_rule",
    "measure",
]

Row = NDArray[np.float64]


class LossyImplementation:
    """Base of the lossy rules: the contract's loop, with ``accept`` and ``resample`` to vary.

    It has the methods of the ``Implementation`` protocol that the exact engine calls
    (``params``, ``breakpoint_hints``, ``verify_draft``, ``sampling_distribution``) without
    subclassing it, since the engine imports no adapter; its capabilities are ``verify_draft``,
    ``injected_uniforms`` and ``sampling_distribution``.
    """

    name = "lossy"
    capabilities = frozenset({"verify_draft", "injected_uniforms", "sampling_distribution"})

    def accept(self, p: Row, q: Row, x: int, u_accept: float) -> bool:
        return bool(u_accept * q[x] < p[x])

    def resample(self, p: Row, q: Row, u_resample: float) -> int:
        from spec_verify.reference.rejection import residual
        from spec_verify.reference.sampling import sample_with

        return int(sample_with(residual(p, q), u_resample))

    def params(self, **fields: Any) -> Any:
        from spec_verify.reference import SamplingParams

        return SamplingParams(**fields)

    def breakpoint_hints(self, rnd: Any) -> list[Fraction]:
        """Exact thresholds of the rule for this round (the enumerator snaps to them)."""
        return []

    def verify_draft(
        self,
        target_logits: Row,
        draft_ids: Sequence[int],
        draft_probs: Row | None,
        p: Any,
        history: Sequence[int],
        rng: Any,
        prompt: Sequence[int] = (),
    ) -> tuple[list[int], int]:
        from spec_verify.reference import sample, sampling_distribution

        rows = np.asarray(target_logits, dtype=np.float64)
        V = rows.shape[1]
        kept: list[int] = []
        for i, x in enumerate(draft_ids):
            p_i = sampling_distribution(rows[i], p, [*history, *kept], list(prompt))
            if draft_probs is None:
                q_i = np.zeros(V)
                q_i[x] = 1.0
            else:
                q_i = np.asarray(draft_probs, dtype=np.float64)[i]
            u_accept = rng.random()
            u_resample = rng.random()
            if self.accept(p_i, q_i, int(x), u_accept):
                kept.append(int(x))
                continue
            return [*kept, self.resample(p_i, q_i, u_resample)], len(kept)
        last = sampling_distribution(rows[len(draft_ids)], p, [*history, *kept], list(prompt))
        return [*kept, sample(last, rng)], len(kept)

    def verify_scripted_many(
        self, target_logits: Row, draft_ids: Sequence[int], draft_probs: Row | None, p: Any,
        history: Sequence[int], prompt: Sequence[int], sources: Sequence[Any],
    ) -> list[Any]:
        """``verify_draft`` once per scripted source, each its result or what it raised."""
        return results_or_raised(
            lambda source: self.verify_draft(
                target_logits, draft_ids, draft_probs, p, history, source, prompt
            ),
            sources,
        )

    def sampling_distribution(
        self, logits: Row, p: Any, history: Sequence[int] = (), prompt: Sequence[int] = ()
    ) -> Row:
        from spec_verify.reference import sampling_distribution

        return np.asarray(sampling_distribution(logits, p, history, prompt), dtype=np.float64)

    def prompt_lookup(
        self, ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
    ) -> list[int]:
        from spec_verify.reference import PromptLookupDraft

        ids, _ = PromptLookupDraft(max_ngram, min_ngram).propose(list(ctx), k, None)
        return [int(t) for t in ids]

    def pcg32_uniforms(self, seed: int, n: int) -> list[float]:
        from spec_verify.reference import request_rng

        rng = request_rng(seed)
        return [rng.random() for _ in range(n)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _fraction(name: str, value: object, low: Fraction, high: Fraction) -> Fraction:
    try:
        out = Fraction(str(value))
    except (ValueError, ZeroDivisionError) as exc:
        raise InvalidArgument(name, value, f"must be a number ({exc})") from exc
    if not low <= out <= high:
        raise InvalidArgument(name, value, f"must be in [{low}, {high}]")
    return out


class TypicalAcceptance(LossyImplementation):
    """Medusa's typical acceptance: keep ``x`` iff ``p(x) > min(epsilon, delta exp(-H(p)))``."""

    def __init__(self, epsilon: object = "0.09", delta: object = "0.3") -> None:
        self.epsilon = float(_fraction("epsilon", epsilon, Fraction(0), Fraction(1)))
        self.delta = float(_fraction("delta", delta, Fraction(0), Fraction(10)))
        self.name = f"lossy:typical(epsilon={epsilon}, delta={delta})"

    def accept(self, p: Row, q: Row, x: int, u_accept: float) -> bool:
        positive = p[p > 0]
        entropy = float(-np.sum(positive * np.log(positive)))
        return bool(p[x] > min(self.epsilon, self.delta * math.exp(-entropy)))

    def resample(self, p: Row, q: Row, u_resample: float) -> int:
        from spec_verify.reference.sampling import sample_with

        return int(sample_with(p, u_resample))


class EnsembleVerification(LossyImplementation):
    """Rejection sampling against ``m = w p + (1 - w) q``: the output is exactly ``m``."""

    def __init__(self, w: object = "1/2") -> None:
        self.w = _fraction("w", w, Fraction(0), Fraction(1))
        self.name = f"lossy:ensemble(w={self.w})"

    def accept(self, p: Row, q: Row, x: int, u_accept: float) -> bool:
        w = float(self.w)
        return bool(u_accept * q[x] < w * p[x] + (1 - w) * q[x])

    def breakpoint_hints(self, rnd: Any) -> list[Fraction]:
        out = []
        for i, x in enumerate(rnd.draft_ids):
            p, q = rnd.p_rows[i][x], rnd.q(i)[x]
            out.append(min(Fraction(1), (self.w * p + (1 - self.w) * q) / q))
        return out


class ConfidenceThreshold(LossyImplementation):
    """Keep a draft token unchecked when ``q(x) >= tau``; otherwise the exact rule."""

    def __init__(self, tau: object = "1/2") -> None:
        self.tau = _fraction("tau", tau, Fraction(0), Fraction(1))
        self.name = f"lossy:confidence(tau={self.tau})"

    def accept(self, p: Row, q: Row, x: int, u_accept: float) -> bool:
        return bool(q[x] >= float(self.tau)) or super().accept(p, q, x, u_accept)


LOSSY_RULES: dict[str, type[LossyImplementation]] = {
    "typical": TypicalAcceptance,
    "ensemble": EnsembleVerification,
    "confidence": ConfidenceThreshold,
}


def lossy_rule(spec: str) -> LossyImplementation:
    """A rule from ``NAME`` or ``NAME:key=value,...``, e.g. ``ensemble:w=1/4``.

    Raises:
        InvalidArgument: an unknown rule or parameter.

    >>> lossy_rule("ensemble:w=1/4").name
    'lossy:ensemble(w=1/4)'
    """
    name, _, rest = spec.partition(":")
    rule = LOSSY_RULES.get(name)
    if rule is None:
        raise InvalidArgument("lossy", spec, f"unknown rule {name!r}",
                              f"choose from {', '.join(LOSSY_RULES)}")
    fields: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise InvalidArgument("lossy", spec, f"parameter {item!r} is not key=value")
        fields[key.strip()] = value.strip()
    try:
        return rule(**fields)
    except TypeError as exc:
        raise InvalidArgument("lossy", spec, f"bad parameters ({exc})") from exc


@dataclass(frozen=True)
class LossyReport:
    """What a rule costs and gains on one position, exactly.

    Attributes:
        rule: the rule's name.
        p, q: target and draft rows.
        output: the first token's distribution over ``x ~ q``.
        tv: total-variation distance between ``output`` and ``p``.
        acceptance: the rule's probability of keeping the draft token.
        exact_acceptance: the exact rule's, ``sum min(p, q)``.
        complete: whether every enumeration completed (else the numbers are partial).
        calls: calls into the rule.
    """

    rule: str
    p: Dist
    q: Dist
    output: Dist
    tv: Fraction
    acceptance: Fraction
    exact_acceptance: Fraction
    complete: bool
    calls: int
    reason: str = ""

    @property
    def gained(self) -> Fraction:
        """Acceptance gained over the exact rule (negative: lost)."""
        return self.acceptance - self.exact_acceptance

    def render(self) -> str:
        def row(d: Dist) -> str:
            return "[" + ", ".join(map(format_fraction, d)) + "]"

        lines = [
            f"lossy rule {self.rule}",
            f"  target p            {row(self.p)}",
            f"  draft q             {row(self.q)}",
            f"  output (x ~ q)      {row(self.output)}",
            f"  TV(output, p)       {self.tv} = {float(self.tv):.6g}",
            f"  acceptance          {self.acceptance} = {float(self.acceptance):.6g} "
            f"(exact rule {self.exact_acceptance} = {float(self.exact_acceptance):.6g}; "
            f"gained {self.gained} = {float(self.gained):+.6g})",
        ]
        if not self.complete:
            lines.append(f"  incomplete: {self.reason}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "p": [format_fraction(v) for v in self.p],
            "q": [format_fraction(v) for v in self.q],
            "output": [format_fraction(v) for v in self.output],
            "tv": format_fraction(self.tv),
            "acceptance": format_fraction(self.acceptance),
            "exact_acceptance": format_fraction(self.exact_acceptance),
            "gained": format_fraction(self.gained),
            "complete": self.complete,
            "calls": self.calls,
            "reason": self.reason,
        }


def measure(rule: LossyImplementation, p: Sequence[object], q: Sequence[object]) -> LossyReport:
    """The exact first-token distribution of ``rule`` over ``x ~ q``, its TV to ``p`` and its
    acceptance rate, by cell enumeration (one round with one draft per ``x``; the bonus row
    is ``p``).

    Raises:
        InvalidDistribution: ``p`` or ``q`` is not a distribution, or their lengths differ.

    >>> r = measure(EnsembleVerification("1/2"), ["1/2", "1/4", "1/4"], ["1/4", "1/2", "1/4"])
    >>> str(r.tv), str(r.acceptance), str(r.exact_acceptance)
    ('1/8', '7/8', '3/4')
    """
    p_row, q_row = check_dist(p, "p"), check_dist(q, "q")
    if len(p_row) != len(q_row):
        from spec_verify.errors import InvalidDistribution

        raise InvalidDistribution(
            "q", [str(v) for v in q_row],
            f"has {len(q_row)} entries and p has {len(p_row)}", "p and q must have length V",
        )
    output: dict[int, Fraction] = defaultdict(Fraction)
    acceptance = Fraction(0)
    calls = 0
    complete, reason = True, ""
    for x, qx in enumerate(q_row):
        if not qx:
            continue
        # a lossy rule has every method the engine calls; it does not subclass Implementation
        # because the engine imports no adapter
        driven = cast("Implementation", rule)
        enumeration = enumerate_round(driven, Round((p_row, p_row), (x,), (q_row,)))
        calls += enumeration.calls
        if not enumeration.complete:
            complete, reason = False, f"x = {x}: {enumeration.reason}"
        for leaf in enumeration.leaves:
            output[leaf.emitted[0]] += qx * leaf.weight
            if leaf.n_accepted:
                acceptance += qx * leaf.weight
    out = tuple(output.get(t, Fraction(0)) for t in range(len(p_row)))
    tv = sum((abs(a - b) for a, b in zip(out, p_row, strict=True)), Fraction(0)) / 2
    exact = sum((min(a, b) for a, b in zip(p_row, q_row, strict=True)), Fraction(0))
    return LossyReport(rule.name, p_row, q_row, out, tv, acceptance, exact, complete, calls,
                       reason)
