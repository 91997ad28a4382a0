"""The parity tier: the same decisions as the reference on shared logits and the same stream.

A port keeps parity when, case by case, it emits the same ids, keeps the same number of drafts
and draws the same number of uniforms as ``spec_verify.reference`` (the contract's draw order),
returns the same sampling distributions (within a few ulps), the same prompt-lookup drafts and
the same PCG32 uniforms for the same seed.

Cases (``_cases.py``) are generated from one integer each, ``case_seed`` (``seed * 1_000_000
+ i``), so a failure replays with ``spec-verify check --impl SPEC --tier parity --case-seed N``;
before it is reported, a failing case is shrunk (``_shrink.py``: fewer drafts, a smaller
vocabulary, default parameters, simpler logits) as long as it keeps failing, and the smallest
one is printed.

The cases go to ``Implementation.call_many`` in batches, and the reference's side is computed
while the implementation computes (an adapter with a worker sends a batch in one message).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._calls import Call, CallOutcome, Draws, UniformPlan
from spec_verify.adapters._implementations import AbiImplementation, Implementation
from spec_verify.errors import ImplementationError
from spec_verify.reference import (
    PromptLookupDraft,
    sampling_distribution,
)
from spec_verify.reference.pcg32 import Pcg32
from spec_verify.repro import repro_command
from spec_verify.results import CheckResult, Progress, Status
from spec_verify.tiers._abi_steps import check_abi_steps, check_status_names
from spec_verify.tiers._boundary import BOUNDARY_TOLERANCE, decision_tie, filter_tie
from spec_verify.tiers._cases import (
    ParityCase,
    case_seeds,
    lookup_case,
    reference_outcome,
    verify_case,
)
from spec_verify.tiers._rules import check_rule, rule_label, rule_outcome
from spec_verify.tiers._shrink import shrink
from spec_verify.tiers._thread_safety import check_thread_safety

__all__ = [
    "BOUNDARY_TOLERANCE",
    "DEFAULT_CASES",
    "QUICK_CASES",
    "ULP_TOLERANCE",
    "run_parity_tier",
]

DEFAULT_CASES = 10_000
QUICK_CASES = 2_000
ULP_TOLERANCE = 4  # exp may differ by an ulp (CONTRACT.md 2.5); sums and quotients by a few
_CHUNK = 400  # cases per message to the FFI worker


def _plan(impl: Implementation, case: ParityCase) -> UniformPlan:
    """A case's uniforms: none when greedy, the library's own stream for an ``own_stream``
    case of an implementation that runs seeded rounds (the C ABI's), else its uniforms."""
    if case.greedy:
        return UniformPlan.forbidden()
    if case.own_stream and impl.batch_stream is Draws.SEEDED:
        return UniformPlan.seeded(case.stream_seed)
    return UniformPlan.scripted(case.uniforms)


def _same(expected: CallOutcome, actual: CallOutcome) -> bool:
    if expected.outcome is not actual.outcome:
        return False
    if not expected.is_ok:
        return _is_contract_error(actual.value)
    if expected.value != actual.value:
        return False
    return actual.drawn is None or expected.drawn == actual.drawn


def _show(outcome: CallOutcome) -> str:
    draws = "" if outcome.drawn is None else f", {outcome.drawn} uniforms drawn"
    if outcome.is_ok:
        return f"emitted {outcome.value[0]}, n_accepted {outcome.value[1]}{draws}"
    return f"raised {type(outcome.value).__name__}: {outcome.value}{draws}"


class _Runner:
    """Runs verify cases through ``call_many``: in batches, the reference's side computed
    while the implementation computes (an adapter with a worker sends a batch at once)."""

    def __init__(self, impl: Implementation) -> None:
        self.impl = impl

    def one(self, case: ParityCase) -> CallOutcome:
        [outcome] = self.many([case], lambda: None)
        return outcome

    def many(
        self, cases: Sequence[ParityCase], while_waiting: Callable[[], None]
    ) -> list[CallOutcome]:
        impl = self.impl
        outcomes: list[CallOutcome | None] = []
        calls: list[Call] = []
        for case in cases:
            try:
                p = impl.params(**case.params)
            except (ValueError, ImplementationError) as exc:
                outcomes.append(CallOutcome.err(exc, 0))
                continue
            plan = _plan(impl, case)
            calls.append(Call.verify(case.target_logits, list(case.draft_ids), case.draft_probs,
                                     p, list(case.history), list(case.prompt), plan))  # fmt: skip
            outcomes.append(None)
        answered = iter(impl.call_many(calls, while_waiting=while_waiting))
        done = [o if o is not None else next(answered) for o in outcomes]
        # the library's own stream draws what it draws: its count is not the reference's
        return [
            CallOutcome(o.outcome, o.value, None) if _plan(impl, c).draws is Draws.SEEDED else o
            for c, o in zip(cases, done, strict=True)
        ]


# ---- the checks ----------------------------------------------------------------------------


def _repro(impl: Implementation, seed: int, case_seed: int | None = None,
           rule: str = "token") -> str:
    return repro_command(impl.name, ["parity"], seed=seed, case_seed=case_seed, rule=rule)


def _expected(case: ParityCase, rule: str) -> CallOutcome:
    """What the rule's reference does on ``case`` (the contract's for the token rule)."""
    return reference_outcome(case) if rule == "token" else rule_outcome(case, rule)


def _check_verify(
    impl: Implementation,
    seeds: Sequence[int],
    seed: int,
    progress: Progress | None,
    rule: str = "token",
) -> CheckResult:
    start = time.perf_counter()
    runner = _Runner(impl)
    versus = rule_label(rule)
    acceptance: dict[int, list[int]] = {}
    first: tuple[ParityCase, CallOutcome, CallOutcome] | None = None
    mismatches = 0
    crash: tuple[ImplementationError, int] | None = None
    broken: tuple[ImplementationError, ParityCase] | None = None
    ties: list[dict[str, Any]] = []
    done = 0
    for begin in range(0, len(seeds), _CHUNK):
        cases = [verify_case(s) for s in seeds[begin : begin + _CHUNK]]
        expected: list[CallOutcome] = []

        def reference_side(
            batch: list[ParityCase] = cases, out: list[CallOutcome] = expected
        ) -> None:
            out.extend(_expected(c, rule) for c in batch)

        try:
            actual = runner.many(cases, reference_side)
        except ImplementationError as exc:
            crash = (exc, _find_crash(runner, cases))
            break
        for case, want, got in zip(cases, expected, actual, strict=True):
            if isinstance(got.value, ImplementationError) and broken is None:
                broken = (got.value, case)
            if not _same(want, got):
                # the boundary analysis knows the token rule's decisions only
                tie = _decision_tie(case, want, got) if rule == "token" else ""
                if tie:
                    ties.append({"case_seed": case.case_seed, "reason": tie})
                    continue
                mismatches += 1
                if first is None:
                    first = (case, want, got)
            elif want.is_ok and not case.greedy and case.m:
                acceptance.setdefault(case.m, []).append(int(want.value[1]))
        done += len(cases)
        if progress:
            progress(f"parity: verify_draft {done}/{len(seeds)} cases")
    seconds = time.perf_counter() - start
    details: dict[str, Any] = {
        "cases": done,
        "mismatches": mismatches,
        "boundary_ties": ties,
        "acceptance_by_m": {
            str(m): {"cases": len(v), "mean_accepted": float(np.mean(v))}
            for m, v in sorted(acceptance.items())
        },
        "cases_per_second": done / seconds if seconds > 0 else None,
    }
    if crash is not None:
        crash_error, crash_seed = crash
        details["case_seed"] = crash_seed
        return CheckResult(
            "parity",
            "verify_draft",
            Status.ERROR,
            f"the implementation failed on case {crash_seed}: {crash_error}",
            n=done,
            details=details,
            repro=_repro(impl, seed, crash_seed, rule),
            seconds=seconds,
        )
    if first is None:
        return CheckResult(
            "parity",
            "verify_draft",
            Status.PASSED,
            (
                f"case {seeds[0]}: the same ids, accepted count and draw count as {versus}"
                if len(seeds) == 1
                else f"{done} cases (greedy and sampled, deterministic and sampled drafts, "
                "filters and penalties, V from 2 to 262,144, edge cases: exact top-p and "
                "min-p thresholds, top-k ties at the cut, histories past 1,024 tokens): the "
                f"same ids, accepted counts and draw counts as {versus}"
            )
            + _ties_note(ties),
            n=done,
            details=details,
            seconds=seconds,
        )
    case, want, got = first

    def fails(candidate: ParityCase) -> bool:
        try:
            return not _same(_expected(candidate, rule), runner.one(candidate))
        except ImplementationError:
            return False

    if progress:
        progress(f"parity: shrinking the failing case {case.case_seed}")
    small = shrink(case, fails)
    small_want, small_got = _expected(small, rule), runner.one(small)
    details.update(
        case_seed=case.case_seed,
        shrunk_case=small.to_json(),
        expected=_show(small_want),
        actual=_show(small_got),
    )
    status = Status.ERROR if broken is not None and broken[1] is case else Status.FAILED
    message = (
        f"{mismatches} of {done} cases differ from {versus}; the first, case "
        f"{case.case_seed}, shrunk to:\n{small.describe()}\n"
        f"  {'reference' if rule == 'token' else rule}: {_show(small_want)}\n"
        f"  implementation: {_show(small_got)}"
    )
    return CheckResult(
        "parity",
        "verify_draft",
        status,
        message,
        n=done,
        details=details,
        repro=_repro(impl, seed, case.case_seed, rule),
        seconds=seconds,
    )


def _decision_tie(case: ParityCase, want: CallOutcome, got: CallOutcome) -> str:
    """Why a differing sampled case is a boundary tie ('' if it is not one).

    Only a well-formed result can tie (an error or a crash never does); the reference's run
    must make a decision within ``BOUNDARY_TOLERANCE`` of flipping (see ``_boundary``), and
    the implementation's output must agree with the reference's before that decision's row.
    """
    if case.greedy or not want.is_ok or not got.is_ok:
        return ""
    tie = decision_tie(
        case.target_logits, case.draft_ids, case.draft_probs, case.sampling_params(),
        case.history, case.prompt, case.uniforms, int(want.value[1]),
    )  # fmt: skip
    if tie is None:
        return ""
    row, reason = tie
    ids, n_accepted = got.value
    if n_accepted < row or list(ids[:row]) != list(want.value[0][:row]):
        return ""
    return f"row {row}: {reason}"


def _ties_note(ties: Sequence[dict[str, Any]]) -> str:
    if not ties:
        return ""
    first = ties[0]
    return (
        f"; {len(ties)} boundary tie(s) where a decision lies within {BOUNDARY_TOLERANCE:.1e} "
        f"of flipping and the implementation decided otherwise (allowed by CONTRACT.md 3; "
        f"first: case {first['case_seed']}, {first['reason']}; all in the report's details)"
    )


def _find_crash(runner: _Runner, cases: Sequence[ParityCase]) -> int:
    """The seed of the case that crashed a batch (one by one; the first crash ends it)."""
    for case in cases:
        try:
            runner.one(case)
        except ImplementationError:
            return case.case_seed
    return cases[0].case_seed


def _ulps(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    scale = np.spacing(np.maximum(np.abs(a), np.abs(b)))
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(a == b, 0.0, np.abs(a - b) / scale)
    return float(np.max(diff)) if diff.size else 0.0


def _check_distributions(
    impl: Implementation, seeds: Sequence[int], seed: int, progress: Progress | None
) -> CheckResult:
    start = time.perf_counter()
    cases = [verify_case(s) for s in seeds]
    calls: list[Call | BaseException] = []
    expected: list[Any] = []
    for case in cases:
        row = case.target_logits[0]
        history = [*case.history, *case.draft_ids[:1]]
        try:
            expected.append(
                sampling_distribution(row, case.sampling_params(), history, list(case.prompt))
            )
        except ValueError as exc:
            expected.append(exc)
        try:
            calls.append(Call.distribution(row, impl.params(**case.params), history,
                                           list(case.prompt)))  # fmt: skip
        except (ValueError, ImplementationError) as exc:  # its parameters refuse the case
            calls.append(exc)
    try:
        actual = _values(impl, calls)
    except ImplementationError as exc:
        return CheckResult(
            "parity",
            "sampling_distribution",
            Status.ERROR,
            str(exc),
            repro=_repro(impl, seed),
            seconds=time.perf_counter() - start,
        )
    worst = 0.0
    first: tuple[ParityCase, str] | None = None
    bad = 0
    differing = 0  # rows with any entry an ulp or more from the reference's
    ties: list[dict[str, Any]] = []
    for case, want, got in zip(cases, expected, actual, strict=True):
        problem = ""
        tieable = False  # a different support or more ulps: a filter boundary could explain it
        if isinstance(want, Exception) or isinstance(got, Exception):
            if not (isinstance(want, ValueError) and _is_contract_error(got)):
                problem = f"reference: {_brief(want)}; implementation: {_brief(got)}"
        else:
            probs = np.asarray(got, dtype=np.float64)
            if probs.shape != want.shape:
                problem = f"shape {probs.shape}, expected {want.shape}"
            elif not np.array_equal(probs > 0, want > 0):
                differ = np.flatnonzero((probs > 0) != (want > 0))[:8].tolist()
                problem = f"the support differs at ids {differ}"
                tieable = True
            else:
                ulps = _ulps(want, probs)
                worst = max(worst, ulps)
                differing += ulps > 0
                if ulps > ULP_TOLERANCE:
                    tieable = True
                    i = int(np.argmax(np.abs(want - probs)))
                    problem = (
                        f"id {i}: {probs[i]!r}, the reference {want[i]!r} ({ulps:.0f} ulps apart)"
                    )
        if tieable:
            tie = filter_tie(
                case.target_logits[0], case.sampling_params(),
                [*case.history, *case.draft_ids[:1]], list(case.prompt),
            )  # fmt: skip
            if tie:
                ties.append({"case_seed": case.case_seed, "reason": tie, "problem": problem})
                continue
        if problem:
            bad += 1
            if first is None:
                first = (case, problem)
    if progress:
        progress(f"parity: sampling_distribution {len(cases)} cases")
    seconds = time.perf_counter() - start
    details = {
        "cases": len(cases),
        "mismatches": bad,
        "max_ulps": worst,
        "rows_differing_by_an_ulp_or_more": differing,
        "boundary_ties": ties,
    }
    if first is None:
        return CheckResult(
            "parity",
            "sampling_distribution",
            Status.PASSED,
            f"{len(cases)} rows: the same distributions as the reference within "
            f"{ULP_TOLERANCE} ulps; {differing} rows ({differing / max(1, len(cases)):.1%}) "
            f"differ by an ulp or more (largest {worst:.0f} ulps; exp may differ by an ulp, "
            "CONTRACT.md 2.5)" + _ties_note(ties),
            n=len(cases),
            details=details,
            seconds=seconds,
        )
    case, problem = first
    details["case_seed"] = case.case_seed
    return CheckResult(
        "parity",
        "sampling_distribution",
        Status.FAILED,
        f"{bad} of {len(cases)} rows differ; case {case.case_seed} (row 0, V={case.V}, "
        f"params {case.to_json()['params'] or 'defaults'}): {problem}",
        n=len(cases),
        details=details,
        repro=_repro(impl, seed, case.case_seed),
        seconds=seconds,
    )


def _values(impl: Implementation, calls: Sequence[Call | BaseException]) -> list[Any]:
    """Each call's value or exception, ``_CHUNK`` calls per ``call_many`` (an exception in
    ``calls`` stands for itself: the call could not be made)."""
    made = [c for c in calls if isinstance(c, Call)]
    values = iter([o.value for begin in range(0, len(made), _CHUNK)
                   for o in impl.call_many(made[begin : begin + _CHUNK])])  # fmt: skip
    return [next(values) if isinstance(c, Call) else c for c in calls]


def _is_contract_error(value: Any) -> bool:
    return isinstance(value, ValueError) and not isinstance(value, ImplementationError)


def _brief(value: Any) -> str:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return "a distribution"


def _check_lookup(
    impl: Implementation, seeds: Sequence[int], seed: int, progress: Progress | None
) -> CheckResult:
    start = time.perf_counter()
    cases = [lookup_case(s) for s in seeds]
    expected = [
        PromptLookupDraft(c.max_ngram, c.min_ngram).propose(list(c.ctx), c.k, None)[0]
        for c in cases
    ]
    calls: list[Call | BaseException] = [
        Call.lookup(list(c.ctx), c.k, c.max_ngram, c.min_ngram) for c in cases
    ]
    try:
        actual = _values(impl, calls)
    except ImplementationError as exc:
        return CheckResult(
            "parity",
            "prompt_lookup",
            Status.ERROR,
            str(exc),
            repro=_repro(impl, seed),
            seconds=time.perf_counter() - start,
        )
    if progress:
        progress(f"parity: prompt_lookup {len(cases)} cases")
    bad = [
        (c, want, got)
        for c, want, got in zip(cases, expected, actual, strict=True)
        if isinstance(got, BaseException) or list(got) != list(want)
    ]
    seconds = time.perf_counter() - start
    if not bad:
        return CheckResult(
            "parity",
            "prompt_lookup",
            Status.PASSED,
            f"{len(cases)} contexts: the same drafts as the reference (most recent occurrence, "
            "longest n-gram first, at most k)",
            n=len(cases),
            seconds=seconds,
        )
    c, want, got = min(bad, key=lambda item: (len(item[0].ctx), item[0].k))
    shown = _brief(got) if isinstance(got, BaseException) else got
    return CheckResult(
        "parity",
        "prompt_lookup",
        Status.FAILED,
        f"{len(bad)} of {len(cases)} drafts differ; the shortest: ctx={list(c.ctx)}, k={c.k}, "
        f"max_ngram={c.max_ngram}, min_ngram={c.min_ngram}: got {shown}, "
        f"the reference {want}",
        n=len(cases),
        details={"case_seed": c.case_seed, "mismatches": len(bad)},
        repro=_repro(impl, seed, c.case_seed),
        seconds=seconds,
    )


_PCG_SEEDS = (0, 1, 42, 54, 2**32 - 1, 2**32, 2**63, 2**64 - 1)
_PCG_VECTOR = (0xA15C02B7, 0x7B47F409, 0xBA1D3330, 0x83D2F293, 0xBFA4784B, 0xCBED606E)


def _check_pcg32(impl: Implementation, seed: int, quick: bool) -> CheckResult:
    start = time.perf_counter()
    rng = np.random.default_rng([seed, 0x9C632])
    seeds = list(_PCG_SEEDS) + [int(s) for s in rng.integers(0, 2**63, size=8 if quick else 32)]
    n = 257
    try:
        vector = impl.pcg32_u32(42, 54, len(_PCG_VECTOR))
        if vector is not None and tuple(vector) != _PCG_VECTOR:
            return CheckResult(
                "parity",
                "pcg32",
                Status.FAILED,
                f"Pcg32(42, 54) gives {[hex(v) for v in vector]}; CONTRACT.md section 1 "
                f"says {[hex(v) for v in _PCG_VECTOR]}",
                repro=_repro(impl, seed),
                seconds=time.perf_counter() - start,
            )
        for s in seeds:
            got = impl.pcg32_uniforms(s, n)
            reference = Pcg32(s, 54)
            want = [reference.random() for _ in range(n)]
            if list(got) != want:
                i = next(
                    (j for j, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                    min(len(got), n),
                )
                return CheckResult(
                    "parity",
                    "pcg32",
                    Status.FAILED,
                    f"request_rng({s}): uniform #{i} is "
                    f"{got[i] if i < len(got) else 'missing'}, the reference "
                    f"{want[i] if i < n else 'none'}",
                    details={"seed": s, "index": i},
                    repro=_repro(impl, seed),
                    seconds=time.perf_counter() - start,
                )
    except (ValueError, ImplementationError) as exc:
        return CheckResult(
            "parity",
            "pcg32",
            Status.ERROR,
            str(exc),
            repro=_repro(impl, seed),
            seconds=time.perf_counter() - start,
        )
    return CheckResult(
        "parity",
        "pcg32",
        Status.PASSED,
        f"{len(seeds)} request streams, {n} uniforms each, bit for bit (and the Pcg32(42, 54) "
        "vector)",
        n=len(seeds) * n,
        seconds=time.perf_counter() - start,
    )


def run_parity_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    quick: bool = False,
    n_cases: int | None = None,
    case_seed: int | None = None,
    progress: Progress | None = None,
    rule: str = "token",
    **options: Any,
) -> list[CheckResult]:
    """The parity tier's checks for ``impl`` (those its capabilities allow).

    Args:
        seed: the root seed (case seeds are ``seed * 1_000_000 + i``).
        quick: 2,000 ``verify_draft`` cases instead of 10,000.
        n_cases: an explicit number of ``verify_draft`` cases.
        case_seed: replay this one case (every check runs on it alone).
        rule: whose decisions ``verify_draft`` is compared with (``tiers._rules``): the
            token rule's reference, or the block or sampler-match rule module's. The other
            checks (distributions, lookup, PCG32, trees, the C ABI's steps) every rule shares.
    """
    capabilities = impl.capabilities
    n = n_cases if n_cases is not None else (QUICK_CASES if quick else DEFAULT_CASES)
    seeds = [case_seed] if case_seed is not None else case_seeds(seed, n)
    side = [case_seed] if case_seed is not None else case_seeds(seed, max(1, n // 5))
    results: list[CheckResult] = []
    run = options.get("run")
    if check_rule(rule) in ("kseq", "rrs"):  # K chains (CONTRACT.md section 12)
        from spec_verify.profiles import not_applicable_in
        from spec_verify.tiers._multidraft_rules import check_multidraft_parity

        results.append(check_multidraft_parity(impl, rule, seed=seed, quick=quick,
                                               progress=progress))
        results.extend(r for r in (not_applicable_in(run, "parity", "verify_draft"),
                                   not_applicable_in(run, "parity", "verify_tree"))
                       if r is not None)
    elif "verify_draft" in capabilities and "injected_uniforms" in capabilities:
        results.append(_check_verify(impl, seeds, seed, progress, check_rule(rule)))
    elif "verify_draft" in capabilities:
        results.append(
            CheckResult("parity", "verify_draft", Status.SKIPPED, "needs injected uniforms")
        )
    if "sampling_distribution" in capabilities:
        results.append(_check_distributions(impl, side, seed, progress))
    if "prompt_lookup" in capabilities:
        results.append(_check_lookup(impl, side, seed, progress))
    if "pcg32" in capabilities and case_seed is None:
        results.append(_check_pcg32(impl, seed, quick))
    if case_seed is None and rule not in ("kseq", "rrs"):
        from spec_verify.tiers.tree import check_tree_parity

        tree = check_tree_parity(impl, seed=seed, quick=quick, progress=progress)
        if tree is not None:  # implementations with verify_tree (CONTRACT.md section 6)
            results.append(tree)
    if isinstance(impl, AbiImplementation):
        # the C ABI's one-step functions (sv_sample, sv_speculative_step), called directly
        steps = [case_seed] if case_seed is not None else case_seeds(seed, max(1, n // 20))
        results.extend(
            check_abi_steps(impl, steps, seed, progress, lambda s: _repro(impl, seed, s))
        )
        if case_seed is None:  # the same calls alone, then on several threads at once
            results.append(check_status_names(impl, lambda: _repro(impl, seed)))
            results.append(
                check_thread_safety(impl, seed, progress, lambda: _repro(impl, seed))
            )
    return results
