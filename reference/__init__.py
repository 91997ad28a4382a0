"""The reference speculative sampler: the seed contract, standalone (``spec_verify.reference``).

It imports nothing from the harness: it is an implementation like any other, and the mutant
catalogue is made from its source. ``CONTRACT.md`` beside this file pins what the seed leaves
open (PCG32 seeding, filter order, ties, draw order).
"""

from .drafts import DraftModel, ModelDraft, NGramDraft, PromptLookupDraft
from .errors import (
    ContextTooLong,
    ContractError,
    InvalidDraft,
    InvalidLogits,
    InvalidParams,
    InvalidPrompt,
    InvalidTree,
)
from .generate import Generation, generate, speculative_generate
from .kv import KVCache, cache_dims
from .models import AttentionLM, BagLM, CacheMismatch, CharTokenizer, LanguageModel, Tokenizer
from .ngram import NGramLM
from .pcg32 import REQUEST_STREAM, Pcg32, request_rng
from .propose import propose_and_verify
from .rejection import residual, speculative_step
from .sampling import (
    SamplingParams,
    UniformSource,
    sample,
    sampling_distribution,
    token_logprobs,
)
from .tree import verify_tree
from .verify import verify_draft

__all__ = [
    "REQUEST_STREAM",
    "AttentionLM",
    "BagLM",
    "CacheMismatch",
    "CharTokenizer",
    "ContextTooLong",
    "ContractError",
    "DraftModel",
    "Generation",
    "InvalidDraft",
    "InvalidLogits",
    "InvalidParams",
    "InvalidPrompt",
    "InvalidTree",
    "KVCache",
    "LanguageModel",
    "ModelDraft",
    "NGramDraft",
    "NGramLM",
    "Pcg32",
    "PromptLookupDraft",
    "SamplingParams",
    "Tokenizer",
    "UniformSource",
    "cache_dims",
    "generate",
    "propose_and_verify",
    "request_rng",
    "residual",
    "sample",
    "sampling_distribution",
    "speculative_generate",
    "speculative_step",
    "token_logprobs",
    "verify_draft",
    "verify_tree",
]
