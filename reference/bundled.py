"""The bundled models: a character tokenizer, a corpus, and target and draft models over it.

Everything is built from seeded weights and the corpus below; nothing downloads.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from .drafts import DraftModel, ModelDraft, NGramDraft, PromptLookupDraft
from .models import AttentionLM, CharTokenizer
from .ngram import NGramLM

__all__ = [
    "BUNDLED_PROMPT",
    "CORPUS",
    "bigram_logits",
    "bundled_draft_model",
    "bundled_drafts",
    "bundled_ngram",
    "bundled_target",
    "bundled_tokenizer",
]

CORPUS = (
    "the cat sat on the mat. the dog sat on the log. a cat and a dog sat in the sun.\n"
    "the sun was warm and the mat was soft, so the cat slept on the mat all day.\n"
    "the dog ran to the log and back to the mat, and the cat woke up and ran too.\n"
    "when the sun set, the cat and the dog went in, and the mat and the log were still.\n"
    "it was a good day for the cat, a good day for the dog, and a good day for the sun.\n"
)

BUNDLED_PROMPT = "the cat sat on the mat. the dog sat on the log. the cat"


def bundled_tokenizer() -> CharTokenizer:
    return CharTokenizer()


def bigram_logits(
    tok: CharTokenizer, text: str = CORPUS, add_k: float = 0.05, weight: float = 1.5
) -> NDArray[np.float64]:
    """``weight * log P(next | current)`` from character bigram counts of ``text``."""
    ids = tok.encode(text)
    counts = np.full((tok.vocab_size, tok.vocab_size), add_k)
    for a, b in itertools.pairwise(ids):
        counts[a, b] += 1.0
    return np.asarray(weight * np.log(counts / counts.sum(axis=1, keepdims=True)))


def _bundled_attention(
    d_model: int, n_layers: int, n_heads: int, seed: int, max_positions: int
) -> AttentionLM:
    tok = bundled_tokenizer()
    return AttentionLM(
        vocab_size=tok.vocab_size,
        d_model=d_model,
        n_layers=n_layers,
        n_heads=n_heads,
        max_positions=max_positions,
        seed=seed,
        logit_scale=1.0,
        bigram_logits=bigram_logits(tok),
    )


def bundled_target(seed: int = 0, max_positions: int = 512) -> AttentionLM:
    """The bundled target: 2 layers, 4 heads, d_model 64, with a corpus bigram head."""
    return _bundled_attention(64, 2, 4, seed, max_positions)


def bundled_draft_model(seed: int = 1, max_positions: int = 512) -> AttentionLM:
    """A smaller draft: 1 layer, 2 heads, d_model 16, the same bigram head."""
    return _bundled_attention(16, 1, 2, seed, max_positions)


def bundled_ngram(order: int = 3) -> NGramLM:
    tok = bundled_tokenizer()
    return NGramLM(order, tok.vocab_size).train([tok.encode(CORPUS)])


def bundled_drafts() -> dict[str, DraftModel]:
    """Fresh instances of the three drafts over the bundled models, by name."""
    return {
        "prompt-lookup": PromptLookupDraft(),
        "n-gram": NGramDraft(bundled_ngram()),
        "model": ModelDraft(bundled_draft_model()),
    }
