"""Check your own speculative sampler: a numpy example with no model to download.

A bigram target and a bigram draft over ``VOCAB`` tokens (fixed random logit tables), and four
generators for ``spec-verify compare`` (each takes a seed and returns the new token ids):

- ``plain``: sampling from the target, one token at a time;
- ``speculative``: draft ``LENGTH`` tokens, accept each with probability ``min(1, p/q)``,
  on rejection resample from ``(p - q)+`` and continue from the target: lossless;
- ``speculative_biased``: the same with the planted bug of resampling from ``p`` instead of
  the residual ``(p - q)+`` after a rejection (the output over-weights tokens the draft
  already proposed too often);
- ``next_token_logits``: the target as a function of the prefix, for the exact law.

    spec-verify compare python:examples/bigram_speculative.py:speculative \\
        python:examples/bigram_speculative.py:plain --vocab 4 --length 3 --delta 0.2
"""

from __future__ import annotations

import numpy as np

VOCAB = 4
LENGTH = 3
PROMPT = (0,)

_TARGET = np.random.default_rng(2024).normal(scale=1.5, size=(VOCAB, VOCAB))
_DRAFT = _TARGET + np.random.default_rng(7).normal(scale=1.5, size=(VOCAB, VOCAB))


def _softmax(row: np.ndarray) -> np.ndarray:
    e = np.exp(row - row.max())
    return e / e.sum()


def next_token_logits(prefix: tuple[int, ...]) -> np.ndarray:
    """The target's logits after ``prefix`` (a bigram: only the last token matters)."""
    return _TARGET[prefix[-1]]


def _p(prefix: list[int]) -> np.ndarray:
    return _softmax(_TARGET[prefix[-1]])


def _q(prefix: list[int]) -> np.ndarray:
    return _softmax(_DRAFT[prefix[-1]])


def plain(seed: int) -> list[int]:
    """Plain sampling from the target."""
    rng = np.random.default_rng(seed)
    out = list(PROMPT)
    for _ in range(LENGTH):
        out.append(int(rng.choice(VOCAB, p=_p(out))))
    return out[len(PROMPT) :]


def _speculative(seed: int, *, residual: bool) -> list[int]:
    rng = np.random.default_rng(seed)
    out = list(PROMPT)
    while len(out) - len(PROMPT) < LENGTH:
        drafts: list[int] = []
        for _ in range(LENGTH - (len(out) - len(PROMPT))):
            drafts.append(int(rng.choice(VOCAB, p=_q(out + drafts))))
        for x in drafts:
            p, q = _p(out), _q(out)
            if rng.random() < min(1.0, p[x] / q[x]):
                out.append(x)
                continue
            law = np.maximum(p - q, 0.0) if residual else p
            out.append(int(rng.choice(VOCAB, p=law / law.sum())))
            break  # the next round drafts again from the corrected prefix
    return out[len(PROMPT) : len(PROMPT) + LENGTH]


def speculative(seed: int) -> list[int]:
    """A lossless speculative sampler."""
    return _speculative(seed, residual=True)


def speculative_biased(seed: int) -> list[int]:
    """The planted bug: after a rejection, resample from p instead of (p - q)+."""
    return _speculative(seed, residual=False)
