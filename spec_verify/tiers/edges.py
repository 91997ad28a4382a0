"""Edge uniforms: what must hold for *every* uniform, checked at the uniforms that break it.

Statistics cannot see an event of probability 2^-24 per draw, yet generators return such
values: a float32 generator (``torch.rand`` on float32, numpy's ``random(dtype=float32)``)
returns exactly ``0.0`` with probability 2^-24 per draw, and 53-bit generators return
``1 - 2^-53``. A sampler that accepts a draft with ``u <= p(x)/q(x)`` accepts a token the target
rules out (``p(x) = 0``) whenever ``u`` is exactly 0.0; an inverse-CDF sample whose float
cumulative sum ends below ``1 - 2^-53`` falls off the end onto a zero-probability token. So this
tier drives every implementation that takes injected uniforms with the values in
``EDGE_UNIFORMS``, the same value at every draw and one draw at a time (the others at 0.5), on
rounds where the target rules tokens out (top-k, top-p and min-p cuts, drafted tokens with
``p(x) = 0``), and asserts for each call:

- no emitted token has target probability 0 at its position (accepted draft, resampled token or
  bonus), the target being the reference's ``sampling_distribution`` after the kept drafts;
- every id is in ``[0, V)``;
- the counts are consistent: ``0 <= n_accepted <= m``, ``len(emitted) == n_accepted + 1``, and
  the kept prefix is the drafts.

An implementation that draws its own uniforms is not driven by these values: the check does not
apply (the report says so), and the statistical tier, which cannot see a 1-in-2^24 event,
is all the evidence there is.
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
from spec_verify.uniforms import ScriptedUniforms

__all__ = ["EDGE_CASES", "EDGE_UNIFORMS", "EdgeCase", "run_edge_tier"]

EDGE_UNIFORMS: tuple[float, ...] = (
    0.0,
    2.0**-53,
    2.0**-24,
    0.5,
    1.0 - 2.0**-24,
    1.0 - 2.0**-53,
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

    @property
    def m(self) -> int:
        return len(self.draft_ids)

    @property
    def V(self) -> int:  # noqa: N802 - the seed's notation for the vocabulary size
        return len(self.target_logits[0])


_ROW = (3.0, 2.0, 1.0, -1.0, -2.0)
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
)  # fmt: skip


def _scripts(m: int) -> list[tuple[str, tuple[float, ...]]]:
    """Every edge value at every draw (2m + 1 of them), and one draw at a time."""
    draws = 2 * m + 1
    scripts = [(f"all draws {u!r}", (u,) * draws) for u in EDGE_UNIFORMS]
    for j in range(draws):
        for u in EDGE_UNIFORMS:
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
    """The edge-uniform check: one ``CheckResult`` (``edges/uniforms``).

    Not applicable when the implementation does not take injected uniforms (own randomness).
    ``seed`` and ``quick`` do not change it: the cases and the values are fixed.
    """
    start = time.perf_counter()
    if "injected_uniforms" not in impl.capabilities:
        return [CheckResult(
            "edges", "uniforms", Status.NOT_APPLICABLE,
            f"{impl.name} draws its own uniforms: the edge values "
            f"({', '.join(repr(u) for u in EDGE_UNIFORMS)}) cannot be fed to it, and an event of "
            "probability 2^-24 per draw is invisible to statistics; the edge check did not apply",
        )]  # fmt: skip
    calls = 0
    failures: list[str] = []
    for case in EDGE_CASES:
        if progress is not None:
            progress(f"edges: {case.name}")
        for label, script in _scripts(case.m):
            calls += 1
            try:
                emitted, n = _call(impl, case, script)
            except (ValueError, ImplementationError) as exc:
                failures.append(f"{case.name}, {label}: raised {type(exc).__name__}: {exc}")
                continue
            problem = _problem(case, emitted, n)
            if problem:
                failures.append(f"{case.name}, {label}: {problem}")
    seconds = time.perf_counter() - start
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        return [CheckResult(
            "edges", "uniforms", Status.FAILED, failures[0] + more, n=calls,
            details={"failures": failures[:50], "edge_uniforms": list(EDGE_UNIFORMS)},
            seconds=seconds,
        )]  # fmt: skip
    return [CheckResult(
        "edges", "uniforms", Status.PASSED,
        f"no zero-probability token, ids in range and consistent counts at every edge uniform "
        f"({calls} calls over {len(EDGE_CASES)} rounds)", n=calls, seconds=seconds,
    )]  # fmt: skip
