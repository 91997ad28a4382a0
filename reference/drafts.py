"""Drafts: n-gram, prompt lookup, and a smaller model with its own KV cache.

``propose(ctx, k, rng)`` returns ``(ids, probs)``: at most ``k`` drafted ids and, for a sampled
draft, the ``(len(ids), V)`` distributions they were drawn from; ``probs=None`` means a
deterministic draft (one-hot q). ``rng=None`` asks for the greedy guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParams
from .kv import KVCache
from .models import LanguageModel
from .ngram import NGramLM
from .sampling import UniformSource, argmax_lowest, sample

__all__ = ["DraftModel", "ModelDraft", "NGramDraft", "PromptLookupDraft", "check_k"]


class DraftModel(Protocol):
    """A draft: ``propose(ctx, k, rng)`` returns up to ``k`` drafted ids and, for a sampling
    draft, the ``(m, V)`` rows they were drawn from (None for a deterministic draft)."""

    def propose(
        self, ctx: Sequence[int], k: int, rng: UniformSource | None
    ) -> tuple[list[int], NDArray[np.float64] | None]: ...


def check_k(k: object) -> int:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise InvalidParams("k", k, "must be an integer >= 0 (0 is plain decoding)")
    return int(k)


def _softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    e = np.exp(logits - np.max(logits))
    return np.asarray(e / np.cumsum(e)[-1])


class NGramDraft:
    """Drafts from an ``NGramLM``: its argmax chain, or samples from its distributions."""

    def __init__(self, lm: NGramLM) -> None:
        if not isinstance(lm, NGramLM):
            raise InvalidParams("lm", lm, "must be an NGramLM")
        self.lm = lm

    def propose(
        self, ctx: Sequence[int], k: int, rng: UniformSource | None
    ) -> tuple[list[int], NDArray[np.float64] | None]:
        k = check_k(k)
        ids: list[int] = []
        rows: list[NDArray[np.float64]] = []
        context = list(ctx)
        for _ in range(k):
            dist = _softmax(self.lm.logprobs(context))
            token = argmax_lowest(dist) if rng is None else sample(dist, rng)
            ids.append(token)
            rows.append(dist)
            context.append(token)
        if rng is None:
            return ids, None
        return ids, np.array(rows).reshape(len(ids), self.lm.vocab_size)


class PromptLookupDraft:
    """Copy what followed the most recent earlier occurrence of the context's last n-gram.

    Longest n-gram first (``max_ngram`` down to ``min_ngram``), most recent occurrence first,
    at most ``k`` tokens. Deterministic: ``probs`` is None.

    >>> PromptLookupDraft().propose([1, 2, 3, 9, 1, 2], 3, None)
    ([3, 9, 1], None)
    """

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1) -> None:
        for name, value in (("max_ngram", max_ngram), ("min_ngram", min_ngram)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidParams(name, value, "must be an integer >= 1")
        if min_ngram > max_ngram:
            raise InvalidParams("min_ngram", min_ngram, f"must be <= max_ngram={max_ngram}")
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def propose(
        self, ctx: Sequence[int], k: int, rng: UniformSource | None
    ) -> tuple[list[int], NDArray[np.float64] | None]:
        k = check_k(k)
        tokens = list(ctx)
        if k == 0:
            return [], None
        L = len(tokens)
        for n in range(min(self.max_ngram, L - 1), self.min_ngram - 1, -1):
            tail = tokens[L - n :]
            for start in range(L - n - 1, -1, -1):
                if tokens[start : start + n] == tail:
                    return tokens[start + n : start + n + k], None
        return [], None


class ModelDraft:
    """A smaller model that drafts with its own KV cache, kept in step with the context.

    Before proposing, the cache is truncated to the longest prefix it shares with ``ctx`` (one
    short of all of it, so the last token is fed again for fresh logits) and the rest of ``ctx``
    is fed. Greedy proposals equal fresh greedy decoding of the draft model.
    """

    def __init__(
        self, model: LanguageModel, temperature: float = 1.0, kv_dtype: Any = np.float32
    ) -> None:
        if not temperature >= 0:
            raise InvalidParams("temperature", temperature, "must be >= 0")
        self.model = model
        self.temperature = float(temperature)
        self.cache: KVCache = model.new_cache(kv_dtype)

    def _sync(self, ctx: list[int]) -> NDArray[np.float64]:
        shared = 0
        for a, b in zip(self.cache.tokens, ctx, strict=False):
            if a != b:
                break
            shared += 1
        shared = min(shared, len(ctx) - 1)
        self.cache.truncate(shared)
        logits = self.model.forward(ctx[shared:], self.cache, shared)
        return np.asarray(logits[-1])

    def propose(
        self, ctx: Sequence[int], k: int, rng: UniformSource | None
    ) -> tuple[list[int], NDArray[np.float64] | None]:
        k = check_k(k)
        context = list(ctx)
        if not context:
            raise InvalidParams("ctx", context, "a model draft needs at least one context token")
        k = min(k, self.model.max_positions - len(context))
        if k <= 0:
            return [], None
        logits = self._sync(context)
        ids: list[int] = []
        rows: list[NDArray[np.float64]] = []
        for i in range(k):
            if rng is None or self.temperature == 0:
                dist = np.zeros(self.model.vocab_size)
                dist[argmax_lowest(logits)] = 1.0
                token = argmax_lowest(logits)
            else:
                dist = _softmax(logits / self.temperature)
                token = sample(dist, rng)
            ids.append(token)
            rows.append(dist)
            if i + 1 < k:
                logits = self.model.forward([token], self.cache, self.cache.length)[-1]
        if rng is None:
            return ids, None
        return ids, np.array(rows)
