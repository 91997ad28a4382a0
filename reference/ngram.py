"""An n-gram language model (L2.1) with add-k smoothing and back-off to shorter contexts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParams
from .sampling import validate_ids

__all__ = ["NGramLM"]


class NGramLM:
    """Counts of ``order``-grams; ``logprobs(ctx)`` is a smoothed next-token distribution.

    The longest context suffix (at most ``order - 1`` tokens) seen in training decides; its
    counts get ``add_k`` added to every token, so every token has positive probability.
    An unseen context backs off to a shorter suffix, down to the unigram counts.
    """

    def __init__(self, order: int, vocab_size: int, add_k: float = 0.1) -> None:
        if not isinstance(order, int) or order < 1:
            raise InvalidParams("order", order, "must be an integer >= 1")
        if not isinstance(vocab_size, int) or vocab_size < 2:
            raise InvalidParams("vocab_size", vocab_size, "must be an integer >= 2")
        if not add_k > 0:
            raise InvalidParams("add_k", add_k, "must be > 0 so every token keeps a probability")
        self.order = order
        self.vocab_size = vocab_size
        self.add_k = float(add_k)
        self._counts: dict[tuple[int, ...], NDArray[np.float64]] = defaultdict(
            lambda: np.zeros(vocab_size)
        )

    def train(self, sequences: Iterable[Sequence[int]]) -> NGramLM:
        """Count every n-gram of every order up to ``order``; returns self."""
        for seq in sequences:
            ids = validate_ids("sequences", seq, self.vocab_size)
            for end in range(len(ids)):
                for n in range(self.order):
                    if end - n < 0:
                        break
                    self._counts[tuple(ids[end - n : end])][ids[end]] += 1.0
        return self

    def logprobs(self, ctx: Sequence[int]) -> NDArray[np.float64]:
        """Log-probabilities of the next token after ``ctx`` (float64, length V)."""
        ids = validate_ids("ctx", ctx, self.vocab_size)
        for n in range(min(self.order - 1, len(ids)), -1, -1):
            key = tuple(ids[len(ids) - n :]) if n else ()
            if key in self._counts:
                counts = self._counts[key] + self.add_k
                return np.asarray(np.log(counts / counts.sum()), dtype=np.float64)
        return np.full(self.vocab_size, -np.log(self.vocab_size))
