"""Edge uniforms: what must hold for *every* uniform, checked at the uniforms that break it.

Statistics cannot see an event of probability 2^-24 per draw, yet generators return such
values: a float32 generator (``torch.rand`` on float32, numpy's ``random(dtype=float32)``)
returns exactly ``0.0`` with probability 2^-24 per draw, and 53-bit generators return
``1 - 2^-53``; ``curand_uniform`` draws on ``(0, 1]`` and returns exactly ``1.0``. A sampler
that accepts a draft with ``u <= p(x)/q(x)`` on ``[0, 1)`` accepts a token the target rules
out (``p(x) = 0``) whenever ``u`` is exactly 0.0; one that accepts with ``u < p(x)/q(x)`` on
``(0, 1]`` rejects a draft with ``p(x) = q(x)`` at ``u = 1.0`` and then samples an all-zero
residual (FlashInfer's chain kernel read an uninitialised id there); an inverse-CDF sample
whose float cumulative sum ends below ``1 - 2^-53`` falls off the end onto a zero-probability
token. So this tier drives every implementation that takes injected uniforms with the edge
values of the interval it declares (``EDGE_UNIFORMS`` for the contract's ``[0, 1)``,
``EDGE_UNIFORMS_OPEN_CLOSED`` for ``(0, 1]``, declared by the capability
``uniforms_open_closed``), the same value at every draw and one draw at a time (the others at
0.5), on rounds where the target rules tokens out (top-k, top-p and min-p cuts, drafted tokens
with ``p(x) = 0``) and rounds where the draft equals the target (``p = q``: the residual
``max(p - q, 0)`` is all zero), and checks each call:

- ``edges/uniforms`` (the law): no emitted token has target probability 0 at its position
  (accepted draft, resampled token or bonus), the target being the reference's
  ``sampling_distribution`` after the kept drafts; every id is in ``[0, V)``; the counts are
  consistent: ``0 <= n_accepted <= m``, ``len(emitted) == n_accepted + 1``, and the kept
  prefix is the drafts;
- ``edges/certain_acceptance`` (efficiency): no draft is rejected where ``p(x) >= q(x)``, where
  acceptance has probability 1 and every ``u`` of the interval accepts. Where ``p = q`` a
  rejection is lossless only if the empty residual falls back to ``p``; the law check above
  judges the token it emits, this one the rejection.

An implementation that draws its own uniforms is not driven by these values: the checks do not
apply (the report says so), and the statistical tier, which cannot see a 1-in-2^24 event,
is all the evidence there is. docs/edge-uniforms.md works through the bugs these catch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import ImplementationError
from spec_verify.results import CheckResult, Status
from spec_verify.tiers._boundary import BOUNDARY_TOLERANCE
from spec_verify.uniforms import ScriptedUniforms, UniformInterval, uniform_interval

__all__ = [
    "EDGE_CASES",
    "EDGE_UNIFORMS",
    "EDGE_UNIFORMS_OPEN_CLOSED",
    "EdgeCase",
    "edge_uniforms",
    "run_edge_tier",
]

EDGE_UNIFORMS: tuple[float, ...] = (  # the contract's [0, 1)
    0.0,
    2.0**-53,
    2.0**-24,
    0.5,
    1.0 - 2.0**-24,
    1.0 - 2.0**-53,
)
EDGE_UNIFORMS_OPEN_CLOSED: tuple[float, ...] = (  # (0, 1], curand_uniform's
    2.0**-53,
    2.0**-24,
    0.5,
    1.0 - 2.0**-24,
    1.0 - 2.0**-53,
    1.0,
)
_MIDDLE = 0.5  # the other draws while one draw takes an edge value


@dataclass(frozen=True)
class EdgeCase:
    """One round whose target rules tokens out."""

    name: str
    target_logits: tuple[tuple[float, ...], ...]
    draft_ids: tuple[int, ...]
    draft_probs: tuple[tuple[float, ...], ...] | None
    params: dict[str, Any]
    history: tuple[int, ...] = ()
    # Every row's kept logits are equal and there are no penalties: its probabilities are
    # powers of two that any port computes exactly (exp(0) = 1), so p(x) = q(x) holds for the
    # port too, and acceptance there is certain for it as for the reference.
    exact: bool = False

    @property
    def m(self) -> int:
        return len(self.draft_ids)

    @property
    def V(self) -> int:  # noqa: N802 - the seed's notation for the vocabulary size
        return len(self.target_logits[0])


_ROW = (3.0, 2.0, 1.0, -1.0, -2.0)
_INF = float("inf")
_EVEN = (-_INF, 0.0, 0.0, 0.0, 0.0, -_INF)  # p = 1/4 at ids 1..4, exactly
_EVEN_Q = (0.0, 0.25, 0.25, 0.25, 0.25, 0.0)
_POINT = (-_INF, 1.5, -_INF, -_INF)
_TIE = (1.0, 1.0, 1.0, 1.0, 0.0)  # top_k = 2 keeps ids 0 and 1, 1/2 each
EDGE_CASES: tuple[EdgeCase, ...] = (
    # top-k 2 cuts tokens 2..4; the draft proposes token 3 (p = 0, q > 0): it must be rejected
    # whatever u_accept is, 0.0 included, and the resample must land on tokens 0 or 1
    EdgeCase("drafted_token_cut_by_top_k", (_ROW, _ROW), (3,), ((0.1, 0.1, 0.1, 0.6, 0.1),),
             {"top_k": 2}),
    # the highest ids are cut: an inverse CDF that runs off the end lands on a cut token
    EdgeCase("last_tokens_cut_by_top_p", (_ROW, _ROW, _ROW), (0, 1),
             ((0.2, 0.2, 0.2, 0.2, 0.2), (0.5, 0.1, 0.1, 0.2, 0.1)), {"top_p": 0.9}),
    # min-p cut, and a deterministic draft of a cut token
    EdgeCase("deterministic_draft_cut_by_min_p", (_ROW, _ROW), (4,), None, {"min_p": 0.2}),
    # two drafts, the second cut; penalties see the first
    EdgeCase("second_draft_cut", (_ROW, (0.0, 4.0, 3.0, 2.0, 1.0), _ROW), (0, 4),
             ((0.4, 0.3, 0.1, 0.1, 0.1), (0.05, 0.05, 0.1, 0.2, 0.6)),
             {"top_k": 3, "repetition_penalty": 1.3}, (1, 2)),
    # p = q at both drafts (tokens 0 and 5 ruled out): acceptance is certain and the residual
    # all zero; a garbage id from it (0, or V) has target probability 0 or is out of range
    EdgeCase("draft_equals_target", (_EVEN, _EVEN, _EVEN), (2, 4), (_EVEN_Q, _EVEN_Q), {},
             exact=True),
    # a deterministic draft of a point-mass target: p = q = one-hot, any other id is ruled out
    EdgeCase("deterministic_draft_on_a_point_mass", (_POINT, _POINT), (1,), None, {},
             exact=True),
    # p = q after a top-k cut of a tie; token 0 is kept here, so only the rejection shows
    EdgeCase("draft_equals_target_after_top_k", (_TIE, _TIE), (1,),
             ((0.5, 0.5, 0.0, 0.0, 0.0),), {"top_k": 2}, exact=True),
)  # fmt: skip


def edge_uniforms(interval: UniformInterval) -> tuple[float, ...]:
    """The edge values fed to an implementation whose uniforms lie in ``interval``.

    >>> edge_uniforms(UniformInterval.OPEN_CLOSED)[-1]
    1.0
    >>> edge_uniforms(UniformInterval.CLOSED_OPEN)[0]
    0.0
    """
    if interval is UniformInterval.OPEN_CLOSED:
        return EDGE_UNIFORMS_OPEN_CLOSED
    return EDGE_UNIFORMS


def _scripts(m: int, values: Sequence[float]) -> list[tuple[str, tuple[float, ...]]]:
    """Every edge value at every draw (2m + 1 of them), and one draw at a time."""
    draws = 2 * m + 1
    scripts = [(f"all draws {u!r}", (u,) * draws) for u in values]
    for j in range(draws):
        for u in values:
            if u != _MIDDLE:
                script = tuple(u if i == j else _MIDDLE for i in range(draws))
                scripts.append((f"draw {j} = {u!r}", script))
    return scripts


def _target(case: EdgeCase, position: int, kept: Sequence[int]) -> NDArray[np.float64]:
    from spec_verify.reference import SamplingParams, sampling_distribution

    row = np.array(case.target_logits[position], dtype=np.float64)
    p = SamplingParams(**{"temperature": 1.0, **case.params})
    return np.asarray(sampling_distribution(row, p, [*case.history, *kept], []), dtype=np.float64)


def _problem(case: EdgeCase, emitted: Any, n: Any) -> str | None:
    """What must hold for every uniform, or None."""
    if not isinstance(n, int) or not 0 <= n <= case.m or len(emitted) != n + 1:
        return f"returned {list(emitted)} with n_accepted={n!r} for m={case.m} drafts"
    bad = [t for t in emitted if not 0 <= t < case.V]
    if bad:
        return f"ids out of [0, {case.V}): {bad}"
    if list(emitted[:n]) != list(case.draft_ids[:n]):
        return f"the kept prefix {list(emitted[:n])} is not the drafts {list(case.draft_ids[:n])}"
    for position, token in enumerate(emitted):
        if _target(case, position, emitted[:position])[token] == 0.0:
            role = "accepted draft" if position < n else (
                "bonus token" if n == case.m else "resampled token"
            )
            return (f"emitted {list(emitted)}: the {role} {token} at position {position} has "
                    "target probability 0")
    return None


def _certain(case: EdgeCase, position: int) -> tuple[float, float] | None:
    """``(p(x), q(x))`` at ``position`` when acceptance there is certain for every port, else
    None: ``p(x) >= q(x)`` exactly on an exact case, by more than the boundary tolerance
    otherwise (a port's p may be a few ulps off the reference's, CONTRACT.md section 3)."""
    x = case.draft_ids[position]
    p = float(_target(case, position, case.draft_ids[:position])[x])
    q = 1.0 if case.draft_probs is None else float(case.draft_probs[position][x])
    if p >= q and (case.exact or p - q > BOUNDARY_TOLERANCE * p):
        return p, q
    return None


def _rejection_problem(
    case: EdgeCase, emitted: list[int], n: int, interval: UniformInterval
) -> str | None:
    """A rejection where acceptance is certain, or None (``_problem`` found the call sound)."""
    if n >= case.m:
        return None
    certain = _certain(case, n)
    if certain is None:
        return None
    p, q = certain
    x = case.draft_ids[n]
    return (f"emitted {emitted}: rejected draft {x} at position {n}, where p(x) = {p!r} >= "
            f"q(x) = {q!r}: acceptance is certain, every u in {interval.value} accepts it"
            + (" (p = q: the residual max(p - q, 0) is all zero)" if p == q else ""))


def _call(impl: Implementation, case: EdgeCase, script: tuple[float, ...]) -> tuple[Any, Any]:
    params = impl.params(**{"temperature": 1.0, **case.params})
    draft_probs = None if case.draft_probs is None else np.array(case.draft_probs, dtype=np.float64)
    source = ScriptedUniforms(script, then=_MIDDLE)
    emitted, n = impl.verify_draft(
        np.array(case.target_logits, dtype=np.float64), list(case.draft_ids), draft_probs,
        params, list(case.history), source, [],
    )  # fmt: skip
    return [int(t) for t in emitted], n


def run_edge_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    quick: bool = False,
    progress: Any = None,
    **options: Any,
) -> list[CheckResult]:
    """The edge-uniform checks: ``edges/uniforms`` (the law) and ``edges/certain_acceptance``.

    The values are those of the interval the implementation declares (``uniform_interval``).
    Not applicable when the implementation does not take injected uniforms (own randomness).
    ``seed`` and ``quick`` do not change it: the cases and the values are fixed.
    """
    start = time.perf_counter()
    interval = uniform_interval(impl.capabilities)
    values = edge_uniforms(interval)
    shown = ", ".join(repr(u) for u in values)
    if "injected_uniforms" not in impl.capabilities:
        why = (f"{impl.name} draws its own uniforms: the edge values ({shown}) cannot be fed to "
               "it, and an event of probability 2^-24 per draw is invisible to statistics; the "
               "edge check did not apply")
        return [CheckResult("edges", "uniforms", Status.NOT_APPLICABLE, why),
                CheckResult("edges", "certain_acceptance", Status.NOT_APPLICABLE, why)]
    calls = judged = 0
    failures: list[str] = []
    rejections: list[str] = []
    for case in EDGE_CASES:
        if progress is not None:
            progress(f"edges: {case.name}")
        for label, script in _scripts(case.m, values):
            calls += 1
            try:
                emitted, n = _call(impl, case, script)
            except (ValueError, ImplementationError) as exc:
                failures.append(f"{case.name}, {label}: raised {type(exc).__name__}: {exc}")
                continue
            problem = _problem(case, emitted, n)
            if problem:
                failures.append(f"{case.name}, {label}: {problem}")
            stopped = isinstance(n, int) and 0 <= n <= case.m and len(emitted) == n + 1
            if stopped and list(emitted[:n]) == list(case.draft_ids[:n]):
                judged += 1  # where it stopped is known, whatever it emitted there
                rejection = _rejection_problem(case, emitted, n, interval)
                if rejection:
                    rejections.append(f"{case.name}, {label}: {rejection}")
    seconds = time.perf_counter() - start
    details = {"uniform_interval": interval.value, "edge_uniforms": list(values)}
    return [
        _result("uniforms", failures, calls, seconds, details,
                f"no zero-probability token, ids in range and consistent counts at every edge "
                f"uniform of {interval.value} ({calls} calls over {len(EDGE_CASES)} rounds)"),
        _result("certain_acceptance", rejections, judged, 0.0, details,
                f"every draft with p(x) >= q(x) was accepted at every edge uniform of "
                f"{interval.value}, p = q rounds included ({judged} of {calls} calls judged"
                + ("" if judged == calls else "; the others raised or returned inconsistent "
                   "counts, and edges/uniforms fails them") + ")"),
    ]  # fmt: skip


def _result(
    name: str,
    failures: list[str],
    n: int,
    seconds: float,
    details: dict[str, Any],
    passed: str,
) -> CheckResult:
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        return CheckResult(
            "edges", name, Status.FAILED, failures[0] + more, n=n,
            details={"failures": failures[:50], **details}, seconds=seconds,
        )  # fmt: skip
    return CheckResult("edges", name, Status.PASSED, passed, n=n, details=details,
                       seconds=seconds)  # fmt: skip
