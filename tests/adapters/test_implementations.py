"""Calling a Python implementation: its exit, hang or garbage is one clean failure of that
implementation; a call that hung is not made again; generation runs under a time limit."""

from __future__ import annotations

import time
import types

import numpy as np
import pytest

from spec_verify.cli import main
from spec_verify.errors import ImplementationError
from spec_verify.reference import CacheMismatch, SamplingParams, request_rng
from spec_verify.tiers._drive import GuardedModule
from tests.impls import misbehaving

ROWS = np.log(np.array([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]]))
Q = np.array([[0.25, 0.5, 0.25]])


def _verify(impl):  # type: ignore[no-untyped-def]
    return impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], request_rng(0))


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("exits", "called sys.exit(0); an implementation must not exit"),
        ("float_ids", "'float' object cannot be interpreted as an integer"),
        ("endless_ids", "did not return within 0.3 s"),
    ],
)
def test_garbage_exits_and_endless_results_are_the_implementations_failure(mode, words):
    with pytest.raises(ImplementationError) as info:
        _verify(misbehaving.load(mode, timeout=0.3))
    assert words in str(info.value)


def test_a_call_that_hung_is_not_made_again() -> None:
    impl = misbehaving.load("hangs", timeout=0.3)
    with pytest.raises(ImplementationError, match="did not return"):
        _verify(impl)
    start = time.monotonic()
    with pytest.raises(ImplementationError, match="is not called again: it hung earlier"):
        _verify(impl)
    assert time.monotonic() - start < 0.1


def test_the_gate_fails_an_implementation_that_exits(capsys, tmp_path):
    report = tmp_path / "report.json"
    code = main(
        ["check", "--impl", "python:tests.impls.exits", "--tier", "contract", "--tier", "parity",
         "--quick", "--no-progress", "--json", str(report)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "called sys.exit(0)" in out
    assert report.exists()


def _generation_module(body):  # type: ignore[no-untyped-def]
    module = types.ModuleType("planted_generation")
    module.speculative_generate = body  # type: ignore[attr-defined]
    return module


def test_generation_runs_under_a_time_limit_and_is_not_called_again_after_a_hang():
    def hangs(*args, **kwargs):  # type: ignore[no-untyped-def]
        while True:
            pass

    impl = misbehaving.load("raises")
    guarded = GuardedModule(impl, _generation_module(hangs), timeout=0.3)
    with pytest.raises(ImplementationError, match="speculative_generate did not return"):
        guarded.speculative_generate(None, k=3)
    with pytest.raises(ImplementationError, match="is not called again"):
        guarded.speculative_generate(None, k=3)


def test_generation_passes_keywords_and_the_cache_instruments_verdict_through():
    def checks_cache(target, *, k):  # type: ignore[no-untyped-def]
        if k == 0:
            raise CacheMismatch("cache holds 3 positions but the chunk starts at 2")
        return ("ran", target, k)

    guarded = GuardedModule(misbehaving.load("raises"), _generation_module(checks_cache))
    assert guarded.speculative_generate("t", k=2) == ("ran", "t", 2)
    with pytest.raises(CacheMismatch, match="cache holds 3"):
        guarded.speculative_generate("t", k=0)
