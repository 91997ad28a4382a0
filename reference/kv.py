"""KV cache (L8.2): per-layer keys and values for the positions a model has seen.

``truncate(n)`` is speculative decoding's rollback: rejected drafts leave no trace.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParams

__all__ = ["KVCache", "cache_dims"]


class _HasDims(Protocol):
    n_layers: int
    n_heads: int
    head_dim: int
    max_positions: int


def cache_dims(model: _HasDims) -> tuple[int, int, int, int]:
    """``(layers, heads, max_positions, head_dim)``: the shape of one of K or V per layer."""
    return (model.n_layers, model.n_heads, model.max_positions, model.head_dim)


class KVCache:
    """Keys and values of the cached positions, and the token ids that produced them.

    Attributes:
        length: how many positions are cached (the next position to write).
        tokens: the ids at the cached positions (models without K/V, like BagLM, read these).
    """

    def __init__(self, dims: tuple[int, int, int, int], dtype: Any = np.float32) -> None:
        layers, heads, max_positions, head_dim = dims
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise InvalidParams("kv_dtype", dtype, "must be a floating dtype (float16/32/64)")
        self.max_positions = max_positions
        shape = (heads, max_positions, head_dim)
        self.keys: list[NDArray[Any]] = [np.zeros(shape, self.dtype) for _ in range(layers)]
        self.values: list[NDArray[Any]] = [np.zeros(shape, self.dtype) for _ in range(layers)]
        self.length = 0
        self.tokens: list[int] = []

    def write(self, layer: int, position: int, key: NDArray[Any], value: NDArray[Any]) -> None:
        """Store one position's ``(heads, head_dim)`` key and value for ``layer``."""
        self.keys[layer][:, position, :] = key
        self.values[layer][:, position, :] = value

    def commit(self, token: int) -> None:
        """Mark one more position as cached (after every layer wrote it)."""
        if self.length >= self.max_positions:
            raise InvalidParams(
                "position", self.length, f"the cache holds at most {self.max_positions} positions"
            )
        self.tokens.append(token)
        self.length += 1

    def truncate(self, n: int) -> None:
        """Keep the first ``n`` positions; the rest are forgotten (and overwritten later)."""
        if not isinstance(n, int) or not 0 <= n <= self.length:
            raise InvalidParams("n", n, f"must be an integer in [0, length={self.length}]")
        self.length = n
        del self.tokens[n:]

    def __repr__(self) -> str:
        return f"KVCache(length={self.length}, layers={len(self.keys)}, dtype={self.dtype})"
