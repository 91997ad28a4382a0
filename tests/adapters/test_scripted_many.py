"""``verify_scripted_many`` (the exact engine's batches of scripted calls) gives what the same
calls give one by one, in process, through the Python worker and through the FFI worker: the
same results, the same draw counts, and each call's own failure as its entry."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.errors import ImplementationError
from spec_verify.uniforms import ScriptedUniforms, TooManyDraws


def _round(seed: int = 3, m: int = 3, V: int = 12):
    """A round whose drafts are often kept (the draft rows are the target's, tempered)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(m + 1, V))
    probs = np.exp(0.8 * logits[:m])
    probs /= probs.sum(axis=1, keepdims=True)
    ids = [int(rng.choice(V, p=row)) for row in probs]
    return logits, ids, probs


def _scripts(n: int, seed: int = 9) -> list[tuple[float, ...]]:
    rng = np.random.default_rng(seed)
    return [tuple(float(u) for u in rng.uniform(0.2, 0.95, size=int(rng.integers(0, 8))))
            for _ in range(n)]


def _one_by_one(impl, args, scripts, limit=None):
    logits, ids, probs = args
    out = []
    for script in scripts:
        source = ScriptedUniforms(script, then=0.6, limit=limit)
        try:
            value: object = impl.verify_draft(logits, ids, probs, impl.params(), [2], source, [1])
        except (Exception, TooManyDraws) as exc:
            value = type(exc)
        out.append((value, source.drawn))
    return out


def _batched(impl, args, scripts, limit=None):
    logits, ids, probs = args
    sources = [ScriptedUniforms(s, then=0.6, limit=limit) for s in scripts]
    results = impl.verify_scripted_many(logits, ids, probs, impl.params(), [2], [1], sources)
    return [
        (type(r) if isinstance(r, BaseException) else r, s.drawn)
        for r, s in zip(results, sources, strict=True)
    ]


@pytest.fixture(scope="module")
def local():
    return load_implementation("reference", in_process=True)


@pytest.fixture(scope="module")
def worker():
    impl = load_implementation("reference")
    yield impl
    impl.close()


@pytest.mark.parametrize("limit", [None, 2])  # 2: calls that keep a draft pass the limit
def test_the_worker_batch_equals_the_calls_one_by_one(local, worker, limit) -> None:
    args, scripts = _round(), _scripts(600)  # more than one request's worth (512)
    want = _one_by_one(local, args, scripts, limit)
    assert _batched(worker, args, scripts, limit) == want
    assert _batched(local, args, scripts, limit) == want
    if limit:
        assert any(value is TooManyDraws for value, _ in want)


def test_a_batch_reports_each_calls_own_failure() -> None:
    impl = load_implementation("python:tests.impls.scripted_faults")
    try:
        args = _round(V=5)
        scripts = [(0.01,), (0.07,), (0.12,), (0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5), (0.17,)]
        got = _batched(impl, args, scripts, limit=40)
        kinds = (ImplementationError, ValueError, ImplementationError)
        assert all(issubclass(v, k) for (v, _), k in zip(got, kinds, strict=False))
        assert not issubclass(got[0][0], ValueError)
        assert isinstance(got[3][0], tuple)  # the reference's answer
        assert got[4] == (TooManyDraws, 41)  # counted as a direct call counts it
        assert [drawn for _, drawn in got[:3]] == [1, 1, 1]
    finally:
        impl.close()


def test_a_crash_fails_the_whole_batch_and_the_worker_restarts() -> None:
    impl = load_implementation("python:tests.impls.scripted_faults")
    try:
        args = _round(V=5)
        with pytest.raises(ImplementationError, match=r"exit|died|ended"):
            _batched(impl, args, [(0.5,) * 7, (0.97,), (0.5,) * 7])
        assert isinstance(_batched(impl, args, [(0.5,) * 7])[0][0], tuple)
    finally:
        impl.close()
