"""Small bundled models: the seed's ``BagLM`` and a real attention model with a KV cache.

Both compute each row on its own in float64 (the attention model reads K/V back from the cache
in the cache's dtype), so scoring one token or five in a pass cannot change a bit: greedy
speculative output must equal plain greedy output exactly. Both check on every call that the
cache holds exactly the positions before the chunk, and log every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from .errors import ContextTooLong, InvalidParams, InvalidPrompt
from .kv import KVCache, cache_dims
from .sampling import validate_ids

__all__ = [
    "AttentionLM",
    "BagLM",
    "CacheMismatch",
    "CharTokenizer",
    "LanguageModel",
    "Tokenizer",
]


class CacheMismatch(AssertionError):
    """A model was called with a cache that does not hold exactly the positions before the chunk."""


class LanguageModel(Protocol):
    """What generation needs of a model."""

    vocab_size: int
    max_positions: int

    def new_cache(self, kv_dtype: Any = np.float32) -> KVCache: ...

    def forward(self, ids: Sequence[int], cache: KVCache, start: int) -> NDArray[np.float64]:
        """Logits ``(len(ids), V)`` for ``ids`` at positions ``start, start + 1, ...``."""
        ...


class Tokenizer(Protocol):
    """Text to ids and back over a vocabulary of ``vocab_size`` ids (stop strings need it)."""

    vocab_size: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class CharTokenizer:
    """One character per token; id 0 is ``<eos>`` and decodes to nothing.

    >>> tok = CharTokenizer()
    >>> tok.decode(tok.encode("the cat"))
    'the cat'
    """

    DEFAULT_ALPHABET = " etaoinshrdlucmfwypvbgkjqxz.,'\n"

    def __init__(self, alphabet: str = DEFAULT_ALPHABET) -> None:
        if len(set(alphabet)) != len(alphabet) or not alphabet:
            raise InvalidParams(
                "alphabet", alphabet, "must be non-empty with no repeated character"
            )
        self.alphabet = alphabet
        self.eos_id = 0
        self.vocab_size = len(alphabet) + 1
        self._id_by_char = {c: i + 1 for i, c in enumerate(alphabet)}

    def __repr__(self) -> str:
        return f"CharTokenizer({self.alphabet!r})"

    def encode(self, text: str) -> list[int]:
        unknown = sorted(set(text) - set(self._id_by_char))
        if unknown:
            raise InvalidPrompt("text", text, f"has characters outside the alphabet: {unknown}")
        return [self._id_by_char[c] for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        ids = validate_ids("ids", ids, self.vocab_size)
        return "".join(self.alphabet[i - 1] for i in ids if i != self.eos_id)


class _CheckedModel:
    """Shared call checks and the call log (start position and chunk of every pass)."""

    vocab_size: int
    max_positions: int
    n_layers: int
    n_heads: int
    head_dim: int

    def __init__(self) -> None:
        self.call_log: list[tuple[int, tuple[int, ...]]] = []

    def new_cache(self, kv_dtype: Any = np.float32) -> KVCache:
        return KVCache(cache_dims(self), kv_dtype)

    def _check_call(self, ids: Sequence[int], cache: KVCache, start: int) -> list[int]:
        chunk = validate_ids("ids", ids, self.vocab_size)
        if not chunk:
            raise InvalidParams("ids", list(ids), "a pass needs at least one token")
        if cache.length != start or len(cache.tokens) != start:
            raise CacheMismatch(
                f"cache holds {cache.length} positions but the chunk starts at {start}: "
                "the cache must hold exactly the positions before the chunk"
            )
        if start + len(chunk) > self.max_positions:
            raise ContextTooLong(
                "ids",
                list(ids),
                f"positions {start}..{start + len(chunk) - 1} exceed max_positions="
                f"{self.max_positions}",
            )
        self.call_log.append((start, tuple(chunk)))
        return chunk


class BagLM(_CheckedModel):
    """The seed's toy target: row-independent float64 logits from a bag of earlier tokens.

    Row ``t`` (after tokens ``0..t``) is ``A[tok_t] + mean(B[tok_0..tok_t])``: a bigram term
    and a context term, so a stale cache (rejected drafts left in) changes the logits.
    """

    n_layers = 0
    n_heads = 1
    head_dim = 1

    def __init__(
        self, vocab_size: int = 8, seed: int = 0, max_positions: int = 256, sharpness: float = 2.0
    ) -> None:
        super().__init__()
        if not isinstance(vocab_size, int) or vocab_size < 2:
            raise InvalidParams("vocab_size", vocab_size, "must be an integer >= 2")
        self.vocab_size = vocab_size
        self.max_positions = max_positions
        rng = np.random.default_rng(seed)
        self.bigram = rng.normal(0.0, sharpness, (vocab_size, vocab_size))
        self.context = rng.normal(0.0, sharpness / 2, (vocab_size, vocab_size))

    def forward(self, ids: Sequence[int], cache: KVCache, start: int) -> NDArray[np.float64]:
        chunk = self._check_call(ids, cache, start)
        rows = np.empty((len(chunk), self.vocab_size))
        bag = np.zeros(self.vocab_size)
        for token in cache.tokens:
            bag += self.context[token]
        for i, token in enumerate(chunk):
            bag += self.context[token]
            rows[i] = self.bigram[token] + bag / (start + i + 1)
            cache.commit(token)
        return rows


def _rms_norm(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(x / np.sqrt(np.mean(x * x) + 1e-6), dtype=np.float64)


def _gelu(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


class AttentionLM(_CheckedModel):
    """A small pre-norm transformer with seeded weights and a real per-layer KV cache.

    Tokens are processed one at a time inside a pass (vector-matrix products only), so the
    logits of a position do not depend on how the positions were chunked into passes.
    """

    def __init__(
        self,
        vocab_size: int = 32,
        d_model: int = 32,
        n_layers: int = 2,
        n_heads: int = 2,
        max_positions: int = 256,
        seed: int = 0,
        logit_scale: float = 3.0,
        bigram_logits: NDArray[np.float64] | None = None,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise InvalidParams("n_heads", n_heads, f"must divide d_model={d_model}")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.max_positions = max_positions
        self.logit_scale = logit_scale
        if bigram_logits is not None and np.shape(bigram_logits) != (vocab_size, vocab_size):
            raise InvalidParams(
                "bigram_logits", bigram_logits, f"must be ({vocab_size}, {vocab_size})"
            )
        # An optional fixed bigram head (log-probabilities from a corpus) makes the random
        # network's output text-like without training; attention still shapes every row.
        self.bigram_logits = None if bigram_logits is None else np.asarray(bigram_logits, float)
        rng = np.random.default_rng(seed)
        scale = 1.0 / np.sqrt(d_model)
        self.embed = rng.normal(0.0, 1.0, (vocab_size, d_model))
        self.pos = rng.normal(0.0, 0.5, (max_positions, d_model))
        self.layers = [
            {
                "wq": rng.normal(0.0, scale, (d_model, d_model)),
                "wk": rng.normal(0.0, scale, (d_model, d_model)),
                "wv": rng.normal(0.0, scale, (d_model, d_model)),
                "wo": rng.normal(0.0, scale, (d_model, d_model)),
                "w1": rng.normal(0.0, scale, (d_model, 4 * d_model)),
                "w2": rng.normal(0.0, scale / 2, (4 * d_model, d_model)),
            }
            for _ in range(n_layers)
        ]

    def forward(self, ids: Sequence[int], cache: KVCache, start: int) -> NDArray[np.float64]:
        chunk = self._check_call(ids, cache, start)
        rows = np.empty((len(chunk), self.vocab_size))
        for i, token in enumerate(chunk):
            rows[i] = self._one_position(token, start + i, cache)
            cache.commit(token)
        return rows

    def _one_position(self, token: int, position: int, cache: KVCache) -> NDArray[np.float64]:
        H, hd = self.n_heads, self.head_dim
        x = self.embed[token] + self.pos[position]
        for layer, w in enumerate(self.layers):
            h = _rms_norm(x)
            q = (h @ w["wq"]).reshape(H, hd)
            cache.write(layer, position, (h @ w["wk"]).reshape(H, hd), (h @ w["wv"]).reshape(H, hd))
            keys = cache.keys[layer][:, : position + 1, :].astype(np.float64)
            values = cache.values[layer][:, : position + 1, :].astype(np.float64)
            scores = np.einsum("hd,htd->ht", q, keys) / np.sqrt(hd)
            scores = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights = scores / scores.sum(axis=1, keepdims=True)
            attended = np.einsum("ht,htd->hd", weights, values).reshape(-1)
            x = x + attended @ w["wo"]
            x = x + _gelu(_rms_norm(x) @ w["w1"]) @ w["w2"]
        logits = self.logit_scale * (self.embed @ _rms_norm(x)) / np.sqrt(self.d_model)
        if self.bigram_logits is not None:
            logits = logits + self.bigram_logits[token]
        return np.asarray(logits)
