"""Parity of the C ABI's one-step functions: ``sv_sample`` and ``sv_speculative_step``.

``sv_verify_draft`` is built from these two, but a port may implement them separately (and a
caller may use them alone), so the parity tier calls them directly with the uniforms where a
``<`` and a ``<=`` part ways: the partial sums of the distribution themselves (``u == c[k]``
must give the next token of positive probability), the float just below them, the edge
uniforms (0.0, 2^-53, 2^-24, 1 - 2^-24, 1 - 2^-53), and for the step an ``u_accept`` with
``u_accept * q[x] == p[x]`` exactly (dyadic ``p`` and ``q``: the contract rejects). A few
invalid calls (a uniform of 1.0 or NaN, ``q[x] = 0``, an id out of range) must be refused as
the reference refuses them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters import STATUS_NAMES
from spec_verify.adapters._calls import CallOutcome
from spec_verify.errors import ImplementationError
from spec_verify.reference.rejection import residual
from spec_verify.reference.rejection import speculative_step as reference_step
from spec_verify.reference.sampling import sample as reference_sample
from spec_verify.results import CheckResult, Progress, Status

__all__ = ["EDGE_UNIFORMS", "StepCase", "check_abi_steps", "check_status_names", "step_cases"]

EDGE_UNIFORMS = (0.0, 2.0**-53, 2.0**-24, 0.5, 1.0 - 2.0**-24, 1.0 - 2.0**-53)
_CHUNK = 400  # calls per message to the FFI worker


@dataclass(frozen=True)
class StepCase:
    """One call of ``sample`` (``q`` is None) or ``speculative_step``."""

    case_seed: int
    p: NDArray[np.float64]
    q: NDArray[np.float64] | None
    x: int
    u: float  # sample's uniform, or the step's u_accept
    u_resample: float = 0.0

    @property
    def method(self) -> str:
        return "sample" if self.q is None else "speculative_step"

    def call(self) -> tuple[str, dict[str, Any], None]:
        """The batch call for the FFI worker."""
        if self.q is None:
            return ("sample", {"dist": self.p, "u": self.u}, None)
        kwargs = {"p": self.p, "q": self.q, "x": self.x, "u_accept": self.u}
        return ("speculative_step", {**kwargs, "u_resample": self.u_resample}, None)

    def describe(self) -> str:
        small = self.p.shape[0] <= 16
        rows = f"p={self.p.tolist()}" if small else f"V={self.p.shape[0]}"
        if self.q is None:
            return f"sample({rows}, u={self.u!r})"
        rows += f", q={self.q.tolist()}" if small else ""
        return (
            f"speculative_step({rows}, x={self.x}, u_accept={self.u!r}, "
            f"u_resample={self.u_resample!r})"
        )


class _Fixed:
    def __init__(self, u: float) -> None:
        self.u = u

    def random(self) -> float:
        return self.u


def _distribution(rng: np.random.Generator, V: int) -> NDArray[np.float64]:
    """Dyadic (exact partial sums) half the time, else random with zeros; at least two
    positive entries, so a partial sum lies strictly inside (0, 1)."""
    dyadic = rng.random() < 0.5
    if dyadic:
        weights = rng.integers(0, 5, size=V).astype(np.float64)
    else:
        weights = rng.random(V) * (rng.random(V) < 0.7)
    for t in rng.permutation(V)[:2]:
        weights[t] = max(weights[t], 1.0)
    if dyadic:
        total = 2.0 ** math.ceil(math.log2(weights.sum()))
        weights[int(np.flatnonzero(weights)[-1])] += total - weights.sum()
    return np.asarray(weights / weights.sum(), dtype=np.float64)


def _edges(rng: np.random.Generator, dist: NDArray[np.float64]) -> list[float]:
    """Uniforms on the inverse CDF's edges for ``dist``: partial sums and the floats below."""
    sums = [float(c) for c in np.cumsum(dist) if 0.0 < c < 1.0]
    picked = [float(s) for s in rng.choice(sums, size=min(2, len(sums)), replace=False)]
    return [*picked, *(math.nextafter(s, 0.0) for s in picked)]


def step_cases(case_seed: int) -> list[StepCase]:
    """The ``sample`` and ``speculative_step`` calls of one case seed (a pure function)."""
    rng = np.random.default_rng([case_seed, 0x57E9])
    V = int(rng.integers(2, 17)) if rng.random() < 0.8 else int(rng.integers(17, 2049))
    p = _distribution(rng, V)
    q = _distribution(rng, V)
    cases = [StepCase(case_seed, p, None, 0, u) for u in (*EDGE_UNIFORMS, *_edges(rng, p))]
    cases.append(StepCase(case_seed, p, None, 0, float(rng.random())))
    support = np.flatnonzero(q > 0)
    x = int(rng.choice(support))
    accepts = [float(rng.random()), *EDGE_UNIFORMS]
    ratio = float(p[x] / q[x])
    if ratio < 1.0 and ratio * q[x] == p[x]:  # exactly on the boundary: rejected
        accepts.append(ratio)
    d = residual(p, q)
    resamples = [*EDGE_UNIFORMS, *_edges(rng, d)]
    for u_accept in accepts:
        u_resample = resamples[int(rng.integers(0, len(resamples)))]
        cases.append(StepCase(case_seed, p, q, x, u_accept, u_resample))
    # invalid calls: both must refuse them
    zero = np.flatnonzero(q == 0)
    cases += [
        StepCase(case_seed, p, None, 0, 1.0),
        StepCase(case_seed, p, None, 0, math.nan),
        StepCase(case_seed, p, q, x, 1.0, 0.5),
        StepCase(case_seed, p, q, V, 0.5, 0.5),
    ]
    if zero.size:
        cases.append(StepCase(case_seed, p, q, int(zero[0]), 0.5, 0.5))
    return cases


def _reference(case: StepCase) -> CallOutcome:
    try:
        if case.q is None:
            return CallOutcome.ok(reference_sample(case.p, _Fixed(case.u)))
        token, accepted = reference_step(case.p, case.q, case.x, case.u, case.u_resample)
        return CallOutcome.ok((int(token), bool(accepted)))
    except ValueError as exc:
        return CallOutcome.err(exc)


def _agree(want: CallOutcome, got: CallOutcome) -> bool:
    if not want.is_ok:
        return not got.is_ok and _is_contract_error(got.value)
    if not got.is_ok:
        return False
    value = got.value
    if isinstance(want.value, tuple):
        return (int(value[0]), bool(value[1])) == want.value
    return bool(int(value) == want.value)


def _is_contract_error(value: Any) -> bool:
    return isinstance(value, ValueError) and not isinstance(value, ImplementationError)


def _show(outcome: CallOutcome) -> str:
    if outcome.is_ok:
        return f"returned {outcome.value!r}"
    return f"raised {type(outcome.value).__name__}: {outcome.value}"


def check_abi_steps(
    impl: Any,
    seeds: Sequence[int],
    seed: int,
    progress: Progress | None,
    repro: Callable[[int | None], str],
) -> list[CheckResult]:
    """One result per function (``sample``, ``speculative_step``) for a batch-capable impl."""
    start = time.perf_counter()
    cases = [c for s in seeds for c in step_cases(s)]
    try:
        outcomes: list[Any] = []
        for begin in range(0, len(cases), _CHUNK):
            outcomes.extend(impl.batch([c.call() for c in cases[begin : begin + _CHUNK]]))
    except ImplementationError as exc:
        seconds = time.perf_counter() - start
        return [
            CheckResult("parity", name, Status.ERROR, str(exc), repro=repro(None), seconds=seconds)
            for name in ("sample", "speculative_step")
        ]
    if progress:
        progress(f"parity: sample and speculative_step {len(cases)} calls")
    results = []
    for name in ("sample", "speculative_step"):
        mine = [(c, o) for c, o in zip(cases, outcomes, strict=True) if c.method == name]
        bad = []
        for case, got in mine:
            want = _reference(case)
            if not _agree(want, got):
                bad.append((case, want, got))
        seconds = time.perf_counter() - start
        if not bad:
            results.append(
                CheckResult(
                    "parity",
                    name,
                    Status.PASSED,
                    f"{len(mine)} calls (partial sums as uniforms, the floats below them, the "
                    "edge uniforms, invalid calls): the same answers as the reference",
                    n=len(mine),
                    seconds=seconds,
                )
            )
            continue
        case, want, got = min(bad, key=lambda item: item[0].p.shape[0])
        broken = isinstance(got.value, ImplementationError)
        results.append(
            CheckResult(
                "parity",
                name,
                Status.ERROR if broken else Status.FAILED,
                f"{len(bad)} of {len(mine)} calls differ from the reference; case "
                f"{case.case_seed}: {case.describe()}\n  reference: {_show(want)}\n"
                f"  implementation: {_show(got)}",
                n=len(mine),
                details={"case_seed": case.case_seed, "mismatches": len(bad)},
                repro=repro(case.case_seed),
                seconds=seconds,
            )
        )
    return results


def check_status_names(impl: Any, repro: Callable[[], str]) -> CheckResult:
    """``sv_status_name`` names every code of the header, and ``SV_E_UNKNOWN`` any other."""
    start = time.perf_counter()
    codes = [*sorted(STATUS_NAMES), 1, -10, 12_345, -(2**31)]
    try:
        outcomes = impl.batch([("status_name", {"status": code}, None) for code in codes])
    except ImplementationError as exc:
        return CheckResult(
            "parity", "status_name", Status.ERROR, str(exc), repro=repro(),
            seconds=time.perf_counter() - start,
        )  # fmt: skip
    wrong = [
        (code, STATUS_NAMES.get(code, "SV_E_UNKNOWN"), got)
        for code, got in zip(codes, outcomes, strict=True)
        if not got.is_ok or got.value != STATUS_NAMES.get(code, "SV_E_UNKNOWN")
    ]
    seconds = time.perf_counter() - start
    if not wrong:
        return CheckResult(
            "parity",
            "status_name",
            Status.PASSED,
            f"{len(codes)} codes: the header's names, SV_E_UNKNOWN for the others",
            n=len(codes),
            seconds=seconds,
        )
    code, want, got = wrong[0]
    return CheckResult(
        "parity",
        "status_name",
        Status.FAILED,
        f"{len(wrong)} of {len(codes)} codes misnamed; sv_status_name({code}) gave "
        f"{_show(got)}, the header says {want!r}",
        n=len(codes),
        repro=repro(),
        seconds=seconds,
    )
