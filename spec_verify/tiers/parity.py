"""The parity tier: the same decisions as the reference on shared logits and the same stream.

A port keeps parity when, case by case, it emits the same ids, keeps the same number of drafts
and draws the same number of uniforms as ``spec_verify.reference`` (the contract's draw order),
returns the same sampling distributions (within a few ulps), the same prompt-lookup drafts and
the same PCG32 uniforms for the same seed.

Cases are generated from one integer each, ``case_seed`` (``seed * 1_000_000 + i``), so a
failure replays with ``spec-verify check --impl SPEC --tier parity --case-seed N``; before it is
reported, a failing case is shrunk (fewer drafts, a smaller vocabulary, default parameters,
simpler logits) as long as it keeps failing, and the smallest one is printed.

An implementation with a ``batch`` method (the FFI adapter) gets the cases in batches, and the
reference's side is computed while the worker computes; any other is called case by case.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.errors import ImplementationError
from spec_verify.reference import (
    PromptLookupDraft,
    SamplingParams,
    request_rng,
    sampling_distribution,
)
from spec_verify.reference import verify_draft as reference_verify_draft
from spec_verify.reference.pcg32 import Pcg32
from spec_verify.results import CheckResult, Status

__all__ = [
    "DEFAULT_CASES",
    "QUICK_CASES",
    "ULP_TOLERANCE",
    "Outcome",
    "VerifyCase",
    "case_seeds",
    "lookup_case",
    "run_parity_tier",
    "shrink",
    "verify_case",
]

DEFAULT_CASES = 10_000
QUICK_CASES = 2_000
ULP_TOLERANCE = 4  # np.exp and libm's exp may differ by an ulp; sums then by a few
BIG_V_EVERY = 200  # one case in this many has a vocabulary over 8,192
HUGE_V_EVERY = 1000  # and one in this many a real model's (32,000 to 151,936)
_CHUNK = 400  # cases per message to the FFI worker
_PARAM_DEFAULTS: dict[str, Any] = {
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}

Progress = Callable[[str], None]


# ---- cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifyCase:
    """One ``verify_draft`` case; ``uniforms`` is the shared stream (the first ``2m + 1`` of
    ``request_rng(stream_seed(case_seed))``, a full 64-bit seed), ``own_stream`` asks an FFI
    library to draw them itself from that seed."""

    case_seed: int
    target_logits: NDArray[np.float64]
    draft_ids: tuple[int, ...]
    draft_probs: NDArray[np.float64] | None
    params: dict[str, Any]
    history: tuple[int, ...]
    prompt: tuple[int, ...]
    uniforms: tuple[float, ...]
    own_stream: bool = False
    note: str = ""

    @property
    def m(self) -> int:
        return len(self.draft_ids)

    @property
    def stream_seed(self) -> int:
        return stream_seed(self.case_seed)

    @property
    def V(self) -> int:  # noqa: N802 -- the seed's notation
        return int(self.target_logits.shape[1])

    @property
    def greedy(self) -> bool:
        return bool(self.params.get("temperature", 1.0) == 0)

    def sampling_params(self) -> SamplingParams:
        return SamplingParams(**self.params)

    def size(self) -> tuple[int, ...]:
        """What shrinking minimises, most important first."""
        changed = sum(1 for k, v in self.params.items() if _PARAM_DEFAULTS.get(k) != v)
        return (
            self.m,
            self.V,
            changed,
            len(self.history) + len(self.prompt),
            int(self.draft_probs is not None),
            _logits_complexity(self.target_logits),
            int(self.own_stream),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "case_seed": self.case_seed,
            "V": self.V,
            "m": self.m,
            "draft_ids": list(self.draft_ids),
            "draft_probs": None if self.draft_probs is None else _floats(self.draft_probs),
            "params": {k: v for k, v in self.params.items() if _PARAM_DEFAULTS.get(k) != v},
            "history": list(self.history),
            "prompt": list(self.prompt),
            "target_logits": _floats(self.target_logits),
            "uniforms": list(self.uniforms) if not self.greedy else [],
            "own_stream": self.own_stream,
        }

    def describe(self) -> str:
        data = self.to_json()
        lines = [
            f"V={self.V}, m={self.m}, draft_ids={list(self.draft_ids)}, "
            f"params={data['params'] or 'defaults'}"
            + (f", history={list(self.history)}" if self.history else "")
            + (f", prompt={list(self.prompt)}" if self.prompt else ""),
        ]
        if self.V <= 16:
            lines.append(f"target_logits={data['target_logits']}")
            if self.draft_probs is not None:
                lines.append(f"draft_probs={data['draft_probs']}")
        else:
            lines.append(f"target_logits: shape {self.target_logits.shape} (see the JSON report)")
            if self.draft_probs is not None:
                lines.append("draft_probs: a sampled draft (see the JSON report)")
        if not self.greedy:
            source = "the library's own request_rng" if self.own_stream else "injected"
            lines.append(
                f"uniforms ({source}, request_rng({self.stream_seed})): {data['uniforms']}"
            )
        return "\n".join(lines)


def _floats(array: NDArray[np.float64]) -> list[Any]:
    return [[_json_float(v) for v in row] for row in np.asarray(array).tolist()]


def _json_float(value: float) -> Any:
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    return value


def _logits_complexity(rows: NDArray[np.float64]) -> int:
    finite = rows[np.isfinite(rows)]
    if finite.size == 0:
        return 0
    if np.array_equal(finite, np.round(finite)):
        return 0
    if np.array_equal(finite, np.round(finite, 1)):
        return 1
    return 2


def case_seeds(seed: int, n: int) -> list[int]:
    """The case seeds of a run: ``seed * 1_000_000 + i``."""
    return [seed * 1_000_000 + i for i in range(n)]


def _pick(rng: np.random.Generator, weights: dict[Any, float]) -> Any:
    keys = list(weights)
    probs = np.array([weights[k] for k in keys], dtype=float)
    return keys[int(rng.choice(len(keys), p=probs / probs.sum()))]


def _vocab(rng: np.random.Generator, case_seed: int) -> int:
    if case_seed % HUGE_V_EVERY == HUGE_V_EVERY - 1:  # real vocabularies: 32k to 152k
        return int(rng.choice([32_000, 50_257, 151_936]))
    if case_seed % BIG_V_EVERY == BIG_V_EVERY - 1:
        return int(rng.integers(8193, 9001))
    band = _pick(rng, {"tiny": 0.55, "small": 0.3, "medium": 0.13, "large": 0.02})
    low, high = {"tiny": (2, 9), "small": (9, 65), "medium": (65, 513), "large": (513, 2049)}[band]
    return int(rng.integers(low, high))


def _logit_rows(rng: np.random.Generator, rows: int, V: int) -> NDArray[np.float64]:
    style = _pick(rng, {"normal": 0.45, "ties": 0.3, "banned": 0.15, "peaked": 0.1})
    if style == "ties":  # small integers: many exact ties (tie rules, top-k/top-p at a tie)
        out = rng.integers(-2, 3, size=(rows, V)).astype(np.float64)
    elif style == "peaked":
        out = rng.normal(0.0, 1.0, size=(rows, V))
        out[np.arange(rows), rng.integers(0, V, size=rows)] += rng.uniform(3, 12)
    else:
        out = rng.normal(0.0, float(rng.choice([0.5, 1.5, 4.0])), size=(rows, V))
    if style == "banned" and V > 1:
        mask = rng.random((rows, V)) < 0.3
        mask[np.arange(rows), rng.integers(0, V, size=rows)] = False  # a finite entry per row
        out[mask] = -np.inf
    return out


def _params(rng: np.random.Generator, V: int) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if rng.random() < 0.25:
        params["temperature"] = 0.0
    elif rng.random() < 0.08:  # tiny but positive: still sampling, not greedy
        params["temperature"] = float(rng.choice([1e-5, 1e-4, 1e-3, 5e-3]))
    elif rng.random() < 0.5:
        params["temperature"] = float(np.round(rng.uniform(0.2, 2.0), 3))
    else:
        params["temperature"] = 1.0
    params["top_k"] = int(rng.integers(1, V + 2)) if rng.random() < 0.35 else 0
    params["top_p"] = float(np.round(rng.uniform(0.05, 1.0), 3)) if rng.random() < 0.35 else 1.0
    params["min_p"] = float(np.round(rng.uniform(0.0, 0.5), 3)) if rng.random() < 0.25 else 0.0
    penalised = rng.random() < 0.35
    params["repetition_penalty"] = (
        float(np.round(rng.uniform(0.5, 2.5), 3)) if penalised and rng.random() < 0.6 else 1.0
    )
    params["presence_penalty"] = (
        float(np.round(rng.uniform(-1.0, 2.0), 3)) if penalised and rng.random() < 0.5 else 0.0
    )
    params["frequency_penalty"] = (
        float(np.round(rng.uniform(-1.0, 2.0), 3)) if penalised and rng.random() < 0.5 else 0.0
    )
    return params


def _contexts(rng: np.random.Generator, V: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """History and prompt: mostly short; one case in ten long (up to 300 tokens, over a few
    tokens so they repeat), where a penalty that only looks at a recent window differs."""
    if rng.random() < 0.1:
        alphabet = min(V, int(rng.integers(1, 6)))
        lengths = rng.integers(65, 301, size=2)
        return (
            tuple(int(t) for t in rng.integers(0, alphabet, size=int(lengths[0]))),
            tuple(int(t) for t in rng.integers(0, alphabet, size=int(lengths[1]))),
        )
    return (
        tuple(int(t) for t in rng.integers(0, V, size=int(rng.integers(0, 9)))),
        tuple(int(t) for t in rng.integers(0, V, size=int(rng.integers(0, 9)))),
    )


def _softmax(row: NDArray[np.float64]) -> NDArray[np.float64]:
    finite = np.isfinite(row)
    e = np.where(finite, np.exp(row - np.max(row[finite])), 0.0)
    return np.asarray(e / e.sum())


def stream_seed(case_seed: int) -> int:
    """The PCG32 seed of a case's uniforms: a bijective 64-bit mix of ``case_seed``, so own
    streams are exercised with seeds across all 64 bits (a port that drops the high half of
    the seed differs here), and every case has its own."""
    return (case_seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64


def verify_case(case_seed: int) -> VerifyCase:
    """The ``verify_draft`` case of ``case_seed`` (a pure function of it)."""
    rng = np.random.default_rng([case_seed, 0x5EED])
    V = _vocab(rng, case_seed)
    big = V > 8192  # few drafts: the case's rows cost V each
    m = int(rng.integers(0, 3)) if big else int(_pick(rng, dict.fromkeys(range(7), 1.0)))
    logits = _logit_rows(rng, m + 1, V)
    params = _params(rng, V)
    if V > 16_384 and rng.random() < 0.6:  # a real vocabulary with exact ties at the top-k cut
        logits = rng.integers(-2, 3, size=(m + 1, V)).astype(np.float64)
        params["top_k"] = int(rng.integers(1, 4096))
    history, prompt = _contexts(rng, V)
    drafting = _pick(rng, {"deterministic": 0.45, "sampled": 0.55})
    ids: list[int] = []
    q_rows: list[NDArray[np.float64]] = []
    for i in range(m):
        # A draft near the target (high acceptance) or a noisy one (early rejections).
        closeness = float(rng.choice([0.0, 0.5, 2.0]))
        base = np.where(np.isfinite(logits[i]), logits[i], -30.0)
        noisy = closeness * base + rng.normal(0.0, 1.0, size=V)
        if rng.random() < 0.3 and V > 2:  # zeros in q (tokens the draft cannot propose)
            banned = rng.random(V) < 0.3
            banned[int(np.argmax(noisy))] = False
            noisy[banned] = -np.inf
        q = _softmax(noisy)
        if drafting == "sampled":
            x = int(rng.choice(V, p=q))
        elif rng.random() < 0.5:
            x = int(np.argmax(base))
        else:
            x = int(rng.integers(0, V))
        q_rows.append(q)
        ids.append(x)
    draft_probs = np.array(q_rows).reshape(m, V) if drafting == "sampled" else None
    stream = request_rng(stream_seed(case_seed))
    uniforms = tuple(stream.random() for _ in range(2 * m + 1))
    return VerifyCase(
        case_seed=case_seed,
        target_logits=logits,
        draft_ids=tuple(ids),
        draft_probs=draft_probs,
        params=params,
        history=history,
        prompt=prompt,
        uniforms=uniforms,
        own_stream=bool(case_seed % 2),
    )


@dataclass(frozen=True)
class LookupCase:
    case_seed: int
    ctx: tuple[int, ...]
    k: int
    max_ngram: int
    min_ngram: int


def lookup_case(case_seed: int) -> LookupCase:
    """A prompt-lookup case: a short context over a small alphabet (so n-grams repeat), or
    one in ten a long one whose suffix occurs only far back."""
    rng = np.random.default_rng([case_seed, 0x100C])
    alphabet = int(rng.integers(1, 6))
    if rng.random() < 0.1:  # a long context whose only match is far back (no recent window)
        head = [int(t) for t in rng.integers(0, alphabet, size=int(rng.integers(1, 8)))]
        filler = [alphabet + int(t) for t in rng.integers(0, 50, size=int(rng.integers(70, 300)))]
        tail = head[-int(rng.integers(1, len(head) + 1)) :]
        ctx = tuple(head + filler + tail)
    else:
        ctx = tuple(int(t) for t in rng.integers(0, alphabet, size=int(rng.integers(0, 40))))
    max_ngram = int(rng.integers(1, 6))
    min_ngram = int(rng.integers(1, max_ngram + 1))
    return LookupCase(case_seed, ctx, int(rng.integers(0, 9)), max_ngram, min_ngram)


# ---- running cases -------------------------------------------------------------------------

# ("ok", value, n_drawn | None) or ("err", exception, n_drawn | None)
Outcome = tuple[str, Any, "int | None"]


class _Script:
    """A scripted uniform source that counts its draws; drawing past the script raises."""

    def __init__(self, uniforms: Sequence[float]) -> None:
        self.uniforms = list(uniforms)
        self.drawn = 0

    def random(self) -> float:
        if self.drawn >= len(self.uniforms):
            self.drawn += 1
            raise _DrewPastScript(
                f"drew uniform #{self.drawn}; the contract allows {len(self.uniforms)} here"
            )
        self.drawn += 1
        return self.uniforms[self.drawn - 1]


class _DrewPastScript(AssertionError):
    pass


def _reference_verify(case: VerifyCase) -> Outcome:
    script = _Script(case.uniforms if not case.greedy else ())
    try:
        result = reference_verify_draft(
            case.target_logits,
            list(case.draft_ids),
            case.draft_probs,
            case.sampling_params(),
            list(case.history),
            script,
            list(case.prompt),
        )
    except ValueError as exc:
        return ("err", exc, script.drawn)
    return ("ok", (list(result[0]), int(result[1])), script.drawn)


def _params_for(impl: Any, fields: dict[str, Any]) -> Any:
    make = getattr(impl, "params", None)
    return make(**fields) if callable(make) else SamplingParams(**fields)


def _impl_verify_one(impl: Any, case: VerifyCase) -> Outcome:
    script = _Script(case.uniforms if not case.greedy else ())
    try:
        result = impl.verify_draft(
            case.target_logits,
            list(case.draft_ids),
            case.draft_probs,
            _params_for(impl, case.params),
            list(case.history),
            script,
            list(case.prompt),
        )
    except (ValueError, ImplementationError) as exc:
        return ("err", exc, script.drawn)
    except Exception as exc:  # an implementation object that does not guard its calls
        error = ImplementationError(
            impl.name, "verify_draft", f"raised {type(exc).__name__}: {exc}"
        )
        return ("err", error, script.drawn)
    try:
        return ("ok", (list(result[0]), int(result[1])), script.drawn)
    except (TypeError, ValueError, IndexError) as exc:
        error = ImplementationError(impl.name, "verify_draft", f"returned {result!r} ({exc})")
        return ("err", error, script.drawn)


def _ffi_verify_call(impl: Any, case: VerifyCase) -> tuple[str, dict[str, Any], Any]:
    if case.greedy:
        source: Any = ("forbid",)
    elif case.own_stream:
        source = ("seed", case.stream_seed)
    else:
        source = ("list", list(case.uniforms))
    call: tuple[str, dict[str, Any], Any] = impl.verify_call(
        case.target_logits, case.draft_ids, case.draft_probs, case.sampling_params(),
        case.history, case.prompt, source,
    )  # fmt: skip
    return call


def _normalise_ffi(case: VerifyCase, outcome: Any) -> Outcome:
    kind, value, drawn = outcome
    known = None if (case.own_stream and not case.greedy) else int(drawn)
    if kind == "ok":
        return ("ok", (list(value[0]), int(value[1])), known)
    return ("err", value, known)


def _same(expected: Outcome, actual: Outcome) -> bool:
    if expected[0] != actual[0]:
        return False
    if expected[0] == "err":
        return isinstance(actual[1], ValueError) and not isinstance(actual[1], ImplementationError)
    if expected[1] != actual[1]:
        return False
    return actual[2] is None or expected[2] == actual[2]


def _show(outcome: Outcome) -> str:
    kind, value, drawn = outcome
    draws = "" if drawn is None else f", {drawn} uniforms drawn"
    if kind == "ok":
        return f"emitted {value[0]}, n_accepted {value[1]}{draws}"
    return f"raised {type(value).__name__}: {value}{draws}"


class _Runner:
    """Runs verify cases through an implementation: batched for the FFI adapter."""

    def __init__(self, impl: Any) -> None:
        self.impl = impl
        self.batched = callable(getattr(impl, "batch", None)) and hasattr(impl, "verify_call")

    def one(self, case: VerifyCase) -> Outcome:
        if self.batched:
            [outcome] = self.impl.batch([_ffi_verify_call(self.impl, case)])
            return _normalise_ffi(case, outcome)
        return _impl_verify_one(self.impl, case)

    def many(self, cases: Sequence[VerifyCase], while_waiting: Callable[[], None]) -> list[Outcome]:
        if not self.batched:
            while_waiting()
            return [_impl_verify_one(self.impl, case) for case in cases]
        calls = [_ffi_verify_call(self.impl, case) for case in cases]
        outcomes = self.impl.batch(calls, while_waiting=while_waiting)
        return [_normalise_ffi(c, o) for c, o in zip(cases, outcomes, strict=True)]


# ---- shrinking -----------------------------------------------------------------------------


def _candidates(case: VerifyCase) -> Iterator[VerifyCase]:
    """Simpler variants of ``case``, roughly most-simplifying first."""
    for m in range(case.m):  # fewer drafts: keep rows 0..m (row m is the bonus row)
        yield replace(
            case,
            draft_ids=case.draft_ids[:m],
            target_logits=case.target_logits[: m + 1].copy(),
            draft_probs=None if case.draft_probs is None else case.draft_probs[:m].copy(),
            uniforms=case.uniforms[: 2 * m + 1],
        )
    V = case.V
    size = V // 2
    while size >= 1:
        for start in range(0, V, size):
            smaller = _drop_tokens(case, set(range(start, min(V, start + size))))
            if smaller is not None:
                yield smaller
        size //= 2
    for name, default in _PARAM_DEFAULTS.items():
        if name != "temperature" and case.params.get(name, default) != default:
            yield replace(case, params={**case.params, name: default})
    if not case.greedy and case.params.get("temperature") != 1.0:
        yield replace(case, params={**case.params, "temperature": 1.0})
    if case.history:
        yield replace(case, history=())
        yield replace(case, history=case.history[: len(case.history) // 2])
    if case.prompt:
        yield replace(case, prompt=())
        yield replace(case, prompt=case.prompt[: len(case.prompt) // 2])
    if case.draft_probs is not None:
        yield replace(case, draft_probs=None)
    for decimals in (0, 1):
        rounded = np.round(case.target_logits, decimals)
        if not np.array_equal(rounded, case.target_logits):
            yield replace(case, target_logits=rounded)
    if case.own_stream:
        yield replace(case, own_stream=False)


def _drop_tokens(case: VerifyCase, dropped: set[int]) -> VerifyCase | None:
    V = case.V
    if len(dropped) >= V or any(x in dropped for x in case.draft_ids):
        return None
    keep = [t for t in range(V) if t not in dropped]
    new_id = {t: i for i, t in enumerate(keep)}
    rows = case.target_logits[:, keep]
    if not np.isfinite(rows).any(axis=1).all():
        return None
    probs = None
    if case.draft_probs is not None:
        probs = case.draft_probs[:, keep]
        sums = probs.sum(axis=1, keepdims=True)
        if (sums <= 0).any():
            return None
        probs = probs / sums
    return replace(
        case,
        target_logits=rows.copy(),
        draft_ids=tuple(new_id[x] for x in case.draft_ids),
        draft_probs=probs,
        history=tuple(new_id[t] for t in case.history if t in new_id),
        prompt=tuple(new_id[t] for t in case.prompt if t in new_id),
    )


def shrink(
    case: VerifyCase,
    fails: Callable[[VerifyCase], bool],
    *,
    budget_seconds: float = 20.0,
    max_tries: int = 3000,
) -> VerifyCase:
    """The smallest variant of a failing ``case`` that still fails (greedy, to a fixpoint).

    ``fails(candidate)`` must be True for ``case``; a candidate on which the reference itself
    raises is never taken (it would be another failure).
    """
    deadline = time.monotonic() + budget_seconds
    tries = 0
    improved = True
    while improved and time.monotonic() < deadline and tries < max_tries:
        improved = False
        for candidate in _candidates(case):
            tries += 1
            if tries > max_tries or time.monotonic() > deadline:
                break
            if candidate.size() >= case.size():
                continue
            if _reference_verify(candidate)[0] != "ok":
                continue
            if fails(candidate):
                case = candidate
                improved = True
                break
    return case


# ---- the checks ----------------------------------------------------------------------------


@dataclass
class _Tally:
    n: int = 0
    failures: list[tuple[Any, str]] = field(default_factory=list)
    crashed: ImplementationError | None = None


def _repro(impl: Any, seed: int, case_seed: int | None = None) -> str:
    from spec_verify.runner import repro_command

    return repro_command(impl.name, ["parity"], seed=seed, case_seed=case_seed)


def _check_verify(
    impl: Any,
    seeds: Sequence[int],
    seed: int,
    progress: Progress | None,
) -> CheckResult:
    start = time.perf_counter()
    runner = _Runner(impl)
    acceptance: dict[int, list[int]] = {}
    first: tuple[VerifyCase, Outcome, Outcome] | None = None
    mismatches = 0
    crash: tuple[ImplementationError, int] | None = None
    broken: tuple[ImplementationError, VerifyCase] | None = None
    done = 0
    for begin in range(0, len(seeds), _CHUNK):
        cases = [verify_case(s) for s in seeds[begin : begin + _CHUNK]]
        expected: list[Outcome] = []

        def reference_side(batch: list[VerifyCase] = cases, out: list[Outcome] = expected) -> None:
            out.extend(_reference_verify(c) for c in batch)

        try:
            actual = runner.many(cases, reference_side)
        except ImplementationError as exc:
            crash = (exc, _find_crash(runner, cases))
            break
        for case, want, got in zip(cases, expected, actual, strict=True):
            if isinstance(got[1], ImplementationError) and broken is None:
                broken = (got[1], case)
            if not _same(want, got):
                mismatches += 1
                if first is None:
                    first = (case, want, got)
            elif want[0] == "ok" and not case.greedy and case.m:
                acceptance.setdefault(case.m, []).append(int(want[1][1]))
        done += len(cases)
        if progress:
            progress(f"parity: verify_draft {done}/{len(seeds)} cases")
    seconds = time.perf_counter() - start
    details: dict[str, Any] = {
        "cases": done,
        "mismatches": mismatches,
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
            repro=_repro(impl, seed, crash_seed),
            seconds=seconds,
        )
    if first is None:
        return CheckResult(
            "parity",
            "verify_draft",
            Status.PASSED,
            (
                f"case {seeds[0]}: the same ids, accepted count and draw count as the reference"
                if len(seeds) == 1
                else f"{done} cases (greedy and sampled, deterministic and sampled drafts, "
                "filters and penalties, V from 2 to over 8192): the same ids, accepted counts "
                "and draw counts as the reference"
            ),
            n=done,
            details=details,
            seconds=seconds,
        )
    case, want, got = first

    def fails(candidate: VerifyCase) -> bool:
        try:
            return not _same(_reference_verify(candidate), runner.one(candidate))
        except ImplementationError:
            return False

    if progress:
        progress(f"parity: shrinking the failing case {case.case_seed}")
    small = shrink(case, fails)
    small_want, small_got = _reference_verify(small), runner.one(small)
    details.update(
        case_seed=case.case_seed,
        shrunk_case=small.to_json(),
        expected=_show(small_want),
        actual=_show(small_got),
    )
    status = Status.ERROR if broken is not None and broken[1] is case else Status.FAILED
    message = (
        f"{mismatches} of {done} cases differ from the reference; the first, case "
        f"{case.case_seed}, shrunk to:\n{small.describe()}\n"
        f"  reference: {_show(small_want)}\n  implementation: {_show(small_got)}"
    )
    return CheckResult(
        "parity",
        "verify_draft",
        status,
        message,
        n=done,
        details=details,
        repro=_repro(impl, seed, case.case_seed),
        seconds=seconds,
    )


def _find_crash(runner: _Runner, cases: Sequence[VerifyCase]) -> int:
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
    impl: Any, seeds: Sequence[int], seed: int, progress: Progress | None
) -> CheckResult:
    start = time.perf_counter()
    cases = [verify_case(s) for s in seeds]
    calls: list[tuple[NDArray[np.float64], dict[str, Any], list[int], list[int]]] = []
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
        calls.append((row, case.params, history, list(case.prompt)))
    actual: list[Any] = []
    if callable(getattr(impl, "batch", None)) and hasattr(impl, "params_tuple"):
        try:
            outcomes = []
            for begin in range(0, len(calls), _CHUNK):
                chunk = [
                    (
                        "sampling_distribution",
                        {
                            "logits": row,
                            "params": impl.params_tuple(SamplingParams(**p)),
                            "history": h,
                            "prompt": pr,
                        },
                        None,
                    )
                    for row, p, h, pr in calls[begin : begin + _CHUNK]
                ]
                outcomes.extend(impl.batch(chunk))
        except ImplementationError as exc:
            return CheckResult(
                "parity",
                "sampling_distribution",
                Status.ERROR,
                str(exc),
                repro=_repro(impl, seed),
                seconds=time.perf_counter() - start,
            )
        actual = [value for _, value, _ in outcomes]
    else:
        for row, p, h, pr in calls:
            try:
                actual.append(impl.sampling_distribution(row, _params_for(impl, p), h, pr))
            except (ValueError, ImplementationError) as exc:
                actual.append(exc)
    worst = 0.0
    first: tuple[VerifyCase, str] | None = None
    bad = 0
    for case, want, got in zip(cases, expected, actual, strict=True):
        problem = ""
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
            else:
                ulps = _ulps(want, probs)
                worst = max(worst, ulps)
                if ulps > ULP_TOLERANCE:
                    i = int(np.argmax(np.abs(want - probs)))
                    problem = (
                        f"id {i}: {probs[i]!r}, the reference {want[i]!r} ({ulps:.0f} ulps apart)"
                    )
        if problem:
            bad += 1
            if first is None:
                first = (case, problem)
    if progress:
        progress(f"parity: sampling_distribution {len(cases)} cases")
    seconds = time.perf_counter() - start
    details = {"cases": len(cases), "mismatches": bad, "max_ulps": worst}
    if first is None:
        return CheckResult(
            "parity",
            "sampling_distribution",
            Status.PASSED,
            f"{len(cases)} rows: the same distributions as the reference within "
            f"{ULP_TOLERANCE} ulps (largest difference {worst:.0f} ulps)",
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


def _is_contract_error(value: Any) -> bool:
    return isinstance(value, ValueError) and not isinstance(value, ImplementationError)


def _brief(value: Any) -> str:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return "a distribution"


def _check_lookup(
    impl: Any, seeds: Sequence[int], seed: int, progress: Progress | None
) -> CheckResult:
    start = time.perf_counter()
    cases = [lookup_case(s) for s in seeds]
    expected = [
        PromptLookupDraft(c.max_ngram, c.min_ngram).propose(list(c.ctx), c.k, None)[0]
        for c in cases
    ]
    try:
        if callable(getattr(impl, "batch", None)):
            outcomes = []
            for begin in range(0, len(cases), _CHUNK):
                chunk = [
                    (
                        "prompt_lookup",
                        {
                            "ctx": list(c.ctx),
                            "k": c.k,
                            "max_ngram": c.max_ngram,
                            "min_ngram": c.min_ngram,
                        },
                        None,
                    )
                    for c in cases[begin : begin + _CHUNK]
                ]
                outcomes.extend(impl.batch(chunk))
            actual: list[Any] = [value for _, value, _ in outcomes]
        else:
            actual = []
            for c in cases:
                try:
                    actual.append(impl.prompt_lookup(list(c.ctx), c.k, c.max_ngram, c.min_ngram))
                except (ValueError, ImplementationError) as exc:
                    actual.append(exc)
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


def _check_pcg32(impl: Any, seed: int, quick: bool) -> CheckResult:
    start = time.perf_counter()
    rng = np.random.default_rng([seed, 0x9C632])
    seeds = list(_PCG_SEEDS) + [int(s) for s in rng.integers(0, 2**63, size=8 if quick else 32)]
    n = 257
    try:
        if hasattr(impl, "pcg32_u32"):
            vector = impl.pcg32_u32(42, 54, len(_PCG_VECTOR))
            if tuple(vector) != _PCG_VECTOR:
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
    impl: Any,
    *,
    seed: int = 0,
    quick: bool = False,
    n_cases: int | None = None,
    case_seed: int | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> list[CheckResult]:
    """The parity tier's checks for ``impl`` (those its capabilities allow).

    Args:
        seed: the root seed (case seeds are ``seed * 1_000_000 + i``).
        quick: 2,000 ``verify_draft`` cases instead of 10,000.
        n_cases: an explicit number of ``verify_draft`` cases.
        case_seed: replay this one case (every check runs on it alone).
    """
    capabilities: frozenset[str] = getattr(impl, "capabilities", frozenset())
    n = n_cases if n_cases is not None else (QUICK_CASES if quick else DEFAULT_CASES)
    seeds = [case_seed] if case_seed is not None else case_seeds(seed, n)
    side = [case_seed] if case_seed is not None else case_seeds(seed, max(1, n // 5))
    results: list[CheckResult] = []
    if "verify_draft" in capabilities and "injected_uniforms" in capabilities:
        results.append(_check_verify(impl, seeds, seed, progress))
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
    return results
