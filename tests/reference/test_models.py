"""The bundled models: chunking never changes a bit, the cache check bites, truncation works."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.reference import (
    AttentionLM,
    BagLM,
    CacheMismatch,
    CharTokenizer,
    ContextTooLong,
    InvalidParams,
    KVCache,
    cache_dims,
)
from spec_verify.reference.bundled import bundled_draft_model, bundled_target, bundled_tokenizer


@pytest.mark.parametrize(
    "make", [lambda: BagLM(8, seed=1), lambda: AttentionLM(8, seed=1)], ids=["BagLM", "AttentionLM"]
)
def test_one_pass_or_many_gives_identical_rows(make):
    ids = [1, 5, 2, 7, 3, 3, 0, 6]
    whole = make()
    rows = whole.forward(ids, whole.new_cache(), 0)
    split = make()
    cache = split.new_cache()
    parts = [
        split.forward(ids[:3], cache, 0),
        split.forward(ids[3:4], cache, 3),
        split.forward(ids[4:], cache, 4),
    ]
    assert np.array_equal(rows, np.concatenate(parts))


@pytest.mark.parametrize(
    "make", [lambda: BagLM(8), lambda: AttentionLM(8)], ids=["BagLM", "AttentionLM"]
)
def test_a_cache_that_is_not_exactly_the_prefix_is_refused(make):
    model = make()
    cache = model.new_cache()
    model.forward([1, 2, 3], cache, 0)
    with pytest.raises(CacheMismatch):
        model.forward([4], cache, 2)  # stale: the cache holds 3 positions
    cache.truncate(2)
    model.forward([4], cache, 2)
    assert cache.tokens == [1, 2, 4]


def test_rollback_restores_the_rows_of_a_fresh_pass():
    model = AttentionLM(8, seed=2)
    cache = model.new_cache()
    model.forward([1, 2, 3, 4, 5], cache, 0)
    cache.truncate(2)
    after = model.forward([6, 7], cache, 2)
    fresh_model = AttentionLM(8, seed=2)
    fresh = fresh_model.forward([1, 2, 6, 7], fresh_model.new_cache(), 0)[2:]
    assert np.array_equal(after, fresh)


def test_cache_dims_and_dtype():
    model = AttentionLM(8, d_model=16, n_layers=3, n_heads=4, max_positions=32)
    assert cache_dims(model) == (3, 4, 32, 4)
    cache = model.new_cache(np.float16)
    assert cache.keys[0].dtype == np.float16 and len(cache.keys) == 3
    with pytest.raises(InvalidParams, match="kv_dtype"):
        KVCache(cache_dims(model), np.int32)
    with pytest.raises(InvalidParams, match="n"):
        cache.truncate(1)


def test_positions_beyond_the_model_raise():
    model = BagLM(4, max_positions=4)
    with pytest.raises(ContextTooLong, match="max_positions"):
        model.forward([1, 2, 3, 1, 2], model.new_cache(), 0)


def test_tokenizer_round_trip_and_eos():
    tok = CharTokenizer("ab")
    assert tok.encode("abba") == [1, 2, 2, 1]
    assert tok.decode([1, 0, 2]) == "ab"
    with pytest.raises(ValueError, match="text"):
        tok.encode("abc")


def test_bundled_models_share_the_tokenizer():
    tok = bundled_tokenizer()
    assert bundled_target().vocab_size == bundled_draft_model().vocab_size == tok.vocab_size
