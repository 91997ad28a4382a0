"""Parity cases: everything a verify_draft call needs, generated from one integer.

``verify_case(case_seed)`` builds a case (vocabulary, logits, drafts, parameters, history,
prompt, uniforms) reproducibly from its seed, with the rare shapes that planted ports slipped
through (real vocabularies, long penalised histories, tiny temperatures) mixed in at fixed
rates; ``lookup_case`` does the same for prompt lookup. ``reference_outcome`` runs the reference
on a case with its scripted uniforms, counting the draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._calls import CallOutcome
from spec_verify.reference import (
    SamplingParams,
    request_rng,
)
from spec_verify.reference import verify_draft as reference_verify_draft
from spec_verify.tiers._edge_cases import boundary_case, boundary_kind
from spec_verify.uniforms import ScriptedUniforms

__all__ = [
    "BIG_V_EVERY",
    "HUGE_V_EVERY",
    "PARAM_DEFAULTS",
    "LookupCase",
    "ParityCase",
    "case_seeds",
    "lookup_case",
    "reference_outcome",
    "stream_seed",
    "verify_case",
]

BIG_V_EVERY = 200  # one case in this many has a vocabulary over 8,192
HUGE_V_EVERY = 1000  # and one in this many a real model's (32,000 to 262,144)
PARAM_DEFAULTS: dict[str, Any] = {
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}



@dataclass(frozen=True)
class ParityCase:
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
        changed = sum(1 for k, v in self.params.items() if PARAM_DEFAULTS.get(k) != v)
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
            "params": {k: v for k, v in self.params.items() if PARAM_DEFAULTS.get(k) != v},
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
            + (f", history={_ids_text(self.history)}" if self.history else "")
            + (f", prompt={_ids_text(self.prompt)}" if self.prompt else "")
            + (f" ({self.note})" if self.note else ""),
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


def _ids_text(ids: tuple[int, ...], limit: int = 24) -> str:
    if len(ids) <= limit:
        return str(list(ids))
    head = ", ".join(str(t) for t in ids[: limit // 2])
    tail = ", ".join(str(t) for t in ids[-limit // 2 :])
    return f"[{head}, ... {len(ids) - limit} more ..., {tail}] ({len(ids)} tokens)"


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
    if case_seed % HUGE_V_EVERY == HUGE_V_EVERY - 1:  # real vocabularies: 32k to 262k
        return int(rng.choice([32_000, 50_257, 151_936, 262_144]))
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


def verify_case(case_seed: int) -> ParityCase:
    """The ``verify_draft`` case of ``case_seed`` (a pure function of it); one case in
    ``BOUNDARY_EVERY`` of each boundary kind sits on a rule's edge (``_edge_cases``)."""
    rng = np.random.default_rng([case_seed, 0x5EED])
    kind = boundary_kind(case_seed)
    if kind is not None:
        edge = boundary_case(rng, kind)
        stream = request_rng(stream_seed(case_seed))
        return ParityCase(
            case_seed=case_seed,
            target_logits=edge.target_logits,
            draft_ids=edge.draft_ids,
            draft_probs=edge.draft_probs,
            params=edge.params,
            history=edge.history,
            prompt=edge.prompt,
            uniforms=tuple(stream.random() for _ in range(2 * len(edge.draft_ids) + 1)),
            own_stream=bool(case_seed % 2),
            note=f"boundary case: {kind}",
        )
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
    return ParityCase(
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



def reference_outcome(case: ParityCase) -> CallOutcome:
    script = ScriptedUniforms(case.uniforms if not case.greedy else ())
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
        return CallOutcome.err(exc, script.drawn)
    return CallOutcome.ok((list(result[0]), int(result[1])), script.drawn)

