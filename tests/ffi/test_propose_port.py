"""The Rust port's ``sv_propose_and_verify`` (CONTRACT.md section 14): the port draws its own
drafts from the draft rows and verifies them. On scripted uniforms it emits exactly what the
reference's ``propose_and_verify`` emits (the reference's draw order); on its own PCG32
stream it passes ``statistical/own_stream.propose_k2``, and the build whose draft shares the
verifier's noise (vLLM PR #47386, fixed in #54282) fails it."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.reference import InvalidLogits, InvalidParams, SamplingParams, propose_and_verify
from spec_verify.results import Status
from spec_verify.tiers.statistical import run_statistical_tier
from spec_verify.uniforms import ScriptedUniforms

CHECK = "own_stream.propose_k2"
COUPLED = "bug_draft_shares_verifier_noise"
TARGET = np.log([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6], [0.1, 0.8, 0.1]])
DRAFT = np.log([[0.3, 0.3, 0.4], [0.6, 0.2, 0.2]])
# (target params, draft params or None): sampled, penalised and cut, greedy draft, greedy target
PARAMS = [
    (SamplingParams(), None),
    (SamplingParams(temperature=0.7, top_k=2, presence_penalty=0.4, repetition_penalty=1.3),
     SamplingParams(temperature=1.3, top_p=0.9, frequency_penalty=0.5)),
    (SamplingParams(), SamplingParams(temperature=0)),
    (SamplingParams(temperature=0), SamplingParams()),
]


def _replayed(impl, target, draft, p, q, history, scripts):
    calls = [impl.propose_call(target, draft, p, q, history, [1], ("list", s)) for s in scripts]
    return [("ok", tuple(o.value), o.drawn) if o.is_ok else ("err", o.value, o.drawn)
            for o in impl.batch(calls)]  # fmt: skip


@pytest.mark.rust
def test_the_port_exports_declares_and_offers_it(port):
    assert "sv_propose_and_verify" in port.optional_symbols
    assert port.declared is not None and port.declared["propose_and_verify"] is True
    assert "propose_and_verify" in port.capabilities


@pytest.mark.rust
@pytest.mark.parametrize(("p", "q"), PARAMS)
@pytest.mark.parametrize("k", [0, 1, 2])
def test_on_scripted_uniforms_it_emits_what_the_reference_emits(port, p, q, k):
    rng = np.random.default_rng(k)
    scripts = [[float(u) for u in rng.random(3 * k + 1)] for _ in range(200)]
    target, draft = TARGET[: k + 1], DRAFT[:k].reshape(k, 3)
    got = _replayed(port, target, draft, p, q, [2, 0], scripts)
    for script, (kind, value, drawn) in zip(scripts, got, strict=True):
        source = ScriptedUniforms(script)
        expected = propose_and_verify(target, draft, p, [2, 0], source, [1], q)
        assert (kind, value, drawn) == ("ok", tuple(expected), source.drawn), script


@pytest.mark.rust
def test_bad_input_is_the_contracts_error_naming_the_argument(port):
    p = SamplingParams()
    call = port.propose_call(TARGET, DRAFT, p, SamplingParams(top_p=1.0), [], [], ("forbid",))
    call[1]["draft_params"] = (1.0, 0, 0.0, 0.0, 1.0, 0.0, 0.0)  # top_p = 0: out of range
    [outcome] = port.batch([call])
    error, drawn = outcome.value, outcome.drawn
    assert not outcome.is_ok and isinstance(error, InvalidParams) and drawn == 0
    assert "draft_params.top_p" in str(error), error
    bad = TARGET.copy()
    bad[2, 1] = np.nan  # the bonus row: the port finds it before drafting
    [outcome] = port.batch([port.propose_call(bad, DRAFT, p, None, [], [], ("forbid",))])
    error, drawn = outcome.value, outcome.drawn
    assert not outcome.is_ok and isinstance(error, InvalidLogits) and drawn == 0
    assert "target_logits row 2" in str(error), error
    with pytest.raises(InvalidLogits, match="must be \\(k \\+ 1, V\\)"):
        port.propose_many([(TARGET[:2], DRAFT, (), ())], p, p, np.random.default_rng(0))


@pytest.mark.rust
def test_rounds_on_the_librarys_own_stream_are_reproducible_from_the_source(port):
    p = SamplingParams()

    def run(seed):
        return port.propose_many([(TARGET, DRAFT, (), ())] * 300, p, p,
                                 np.random.default_rng(seed))  # fmt: skip

    first = run(1)
    assert first == run(1) and first != run(2)
    assert all(len(ids) == n + 1 <= 3 for ids, n in first)


@pytest.mark.rust
@pytest.mark.slow  # 14,556 rounds each (the check's own plan, TV 0.04 at power 0.99): 15 s
@pytest.mark.parametrize(("variant", "status"), [((), Status.PASSED),
                                                 ((COUPLED,), Status.FAILED)])
def test_own_stream_passes_the_port_and_fails_its_noise_coupling(rust_builds, variant, status):
    """Alpha: the run's family alpha (1e-6, Holm); power 0.99 at TV 0.04, below the coupling's
    exact TV of 4/91 on the check's rows (tests/tiers/test_own_stream.py)."""
    impl = load_implementation(f"ffi:{rust_builds[variant]}")
    try:
        [result] = run_statistical_tier(impl, checks=[CHECK])
    finally:
        impl.close()
    assert result.status is status, result.message
    assert "power 0.99" in result.message


def test_a_library_without_the_symbol_does_not_offer_it(c_libs):
    impl = load_implementation(f"ffi:{c_libs['segfault']}")
    try:
        assert "propose_and_verify" not in impl.capabilities
        [result] = run_statistical_tier(impl, checks=[CHECK])
    finally:
        impl.close()
    assert result.status is Status.NOT_APPLICABLE or result.status is Status.SKIPPED, result
