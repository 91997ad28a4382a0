"""The ``ffi:`` adapter: calls in a worker process, crashes and hangs as ImplementationError,
uniform sources across the process boundary, batches."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from spec_verify.adapters._calls import CallOutcome
from spec_verify.adapters._ffi_adapter import FfiImplementation
from spec_verify.adapters._implementations import Implementation
from spec_verify.adapters._loader import load_implementation
from spec_verify.errors import ImplementationError, UnknownImplementation
from spec_verify.reference import InvalidLogits, SamplingParams, request_rng, verify_draft
from spec_verify.uniforms import ScriptedUniforms, TooManyDraws

ROWS = np.log([[0.5, 0.25, 0.25], [0.2, 0.3, 0.5]])
Q = np.array([[0.25, 0.5, 0.25]])
GREEDY = SamplingParams(temperature=0)


def _greedy_call(impl):
    return impl.verify_draft(ROWS, [1], None, GREEDY, [], None)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("not_a_library", "not a loadable shared library"),
        ("abi_v1", "reports ABI version 1; this harness speaks version 2"),
        ("missing_symbols", "does not export sv_verify_draft, sv_prompt_lookup"),
    ],
)
def test_loader_refuses_with_a_clear_message(c_libs, name, words):
    with pytest.raises(UnknownImplementation, match=words):
        load_implementation(f"ffi:{c_libs[name]}")


def test_a_library_that_crashes_while_loading(c_libs):
    with pytest.raises(UnknownImplementation, match="could not be loaded: it crashed with SIGSEGV"):
        load_implementation(f"ffi:{c_libs['crash_at_load']}")


def test_declared_capabilities_are_taken_and_unknown_bits_ignored(c_libs):
    impl = load_implementation(f"ffi:{c_libs['sampled_only']}")
    try:
        assert impl.declared is not None and impl.declared["greedy"] is False
        assert "greedy" not in impl.capabilities
        assert "injected_uniforms" not in impl.capabilities
        assert impl.capabilities >= {"verify_draft", "sampling_distribution", "pcg32"}
    finally:
        impl.close()


def test_a_library_without_the_query_offers_what_it_exports(c_libs):
    impl = load_implementation(f"ffi:{c_libs['segfault']}")
    try:
        assert impl.declared is None
        assert impl.capabilities >= {"verify_draft", "greedy", "injected_uniforms"}
    finally:
        impl.close()


def test_a_declaration_that_contradicts_the_symbols_is_refused(c_libs):
    with pytest.raises(UnknownImplementation, match="SV_CAP_VERIFY_TREE is set but the library"):
        load_implementation(f"ffi:{c_libs['caps_tree_mismatch']}")


# Bits 8, 9 and 10 against their optional symbols, both ways: (library, what is said).
_RULE_BIT_MISMATCHES = [
    ("caps_block_claimed", "SV_CAP_VERIFY_BLOCK is set but the library does not export "
     "sv_verify_block"),
    ("caps_block_unclaimed", "SV_CAP_VERIFY_BLOCK is clear but the library exports "
     "sv_verify_block"),
    ("caps_sampler_match_claimed", "SV_CAP_VERIFY_SAMPLER_MATCH is set but the library does "
     "not export sv_verify_sampler_match"),
    ("caps_sampler_match_unclaimed", "SV_CAP_VERIFY_SAMPLER_MATCH is clear but the library "
     "exports sv_verify_sampler_match"),
    ("caps_propose_claimed", "SV_CAP_PROPOSE_AND_VERIFY is set but the library does not "
     "export sv_propose_and_verify"),
    ("caps_propose_unclaimed", "SV_CAP_PROPOSE_AND_VERIFY is clear but the library exports "
     "sv_propose_and_verify"),
]


@pytest.mark.parametrize(("name", "said"), _RULE_BIT_MISMATCHES)
def test_a_rule_bit_that_contradicts_its_symbol_is_refused(c_libs, name, said):
    with pytest.raises(UnknownImplementation) as info:
        load_implementation(f"ffi:{c_libs[name]}")
    message = str(info.value)
    assert said in message, message
    cap = said.split()[0]
    assert f"set {cap} exactly when" in message, message  # the fix, naming the bit


@pytest.mark.parametrize(("name", "said"), _RULE_BIT_MISMATCHES[:2])
def test_check_reports_a_rule_bit_mismatch_as_the_failed_load(c_libs, capsys, name, said):
    """As every library that cannot be loaded (ARCHITECTURE.md, run phase 1): one failed
    ``load/load`` check whose line names the bit, the symbol and the fix; no tier runs."""
    from spec_verify.cli._main import main
    from spec_verify.results import ExitCode

    code = main(["check", "--impl", f"ffi:{c_libs[name]}", "--tier", "contract"])
    out = capsys.readouterr().out
    assert code == ExitCode.FAILED, out
    [line] = [row for row in out.splitlines() if row.startswith("FAIL load/load: ")]
    cap = said.split()[0]
    assert said in line and f"set {cap} exactly when" in line, line
    assert "contract/" not in out


def test_declared_capabilities_decide_what_applies(c_libs):
    from spec_verify.runner import run_checks

    report = run_checks(f"ffi:{c_libs['sampled_only']}", tiers=["greedy", "exact"], quick=True,
                        profile="lossless")  # fmt: skip
    statuses = {(r.tier, r.status.value) for r in report.results}
    assert statuses <= {("greedy", "not_applicable"), ("exact", "not_applicable"),
                        ("greedy", "skipped"), ("exact", "skipped")}, statuses  # fmt: skip


def test_loader_without_a_path_or_file(tmp_path):
    with pytest.raises(UnknownImplementation, match="needs a path"):
        load_implementation("ffi:")
    with pytest.raises(UnknownImplementation, match="no such file"):
        load_implementation(f"ffi:{tmp_path / 'missing.so'}")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("segfault", "crashed with SIGSEGV"),
        ("abort", "crashed with SIGABRT.*planted: assertion failed in verify_draft"),
    ],
)
def test_a_crash_is_an_implementation_error_and_the_worker_restarts(c_libs, name, words):
    impl = load_implementation(f"ffi:{c_libs[name]}")
    try:
        with pytest.raises(ImplementationError, match=words) as info:
            _greedy_call(impl)
        assert info.value.call == "verify_draft"
        # A fresh worker serves the next call: the stub's prompt lookup works.
        assert impl.prompt_lookup([1, 2, 1], 2) == []
        with pytest.raises(ImplementationError, match=words):
            _greedy_call(impl)
    finally:
        impl.close()


def test_a_hang_is_killed_after_the_time_limit_and_not_called_again(c_libs):
    impl = load_implementation(f"ffi:{c_libs['hang']}")
    assert isinstance(impl, FfiImplementation)
    impl.timeout = 0.5
    try:
        start = time.monotonic()
        with pytest.raises(ImplementationError, match=r"did not return within 0.5 s"):
            _greedy_call(impl)
        assert time.monotonic() - start < 5
        start = time.monotonic()
        with pytest.raises(ImplementationError, match="not called again: it hung"):
            _greedy_call(impl)
        assert time.monotonic() - start < 0.5
        assert impl.pcg32_uniforms(42, 1) == [request_rng(42).random()]
    finally:
        impl.close()


@pytest.mark.parametrize(
    ("name", "words"),
    [("overflow", "wrote past the end of out_ids"), ("bad_ids", r"returned ids out of \[0, 3\)")],
)
def test_garbage_is_an_implementation_error(c_libs, name, words):
    impl = load_implementation(f"ffi:{c_libs[name]}")
    try:
        with pytest.raises(ImplementationError, match=words):
            _greedy_call(impl)
    finally:
        impl.close()


@pytest.fixture
def impl(port):
    return port


@pytest.mark.rust
class TestPort:
    def test_protocol_and_capabilities(self, impl):
        assert isinstance(impl, Implementation)
        impl.start()
        assert impl.declared is not None  # the port answers sv_capabilities
        assert {k for k, v in impl.declared.items() if v} == {
            "injected_uniforms", "greedy", "sampling_distribution", "prompt_lookup", "pcg32",
            "verify_tree", "propose_and_verify",
        }  # fmt: skip
        assert impl.capabilities >= {"verify_draft", "injected_uniforms", "pcg32"}
        assert "generation" not in impl.capabilities
        assert impl.params(top_k=2) == SamplingParams(top_k=2)

    def test_any_uniform_source_in_the_contracts_order(self, impl):
        class Recording:
            def __init__(self):
                self.stream = request_rng(11)
                self.values = []

            def random(self):
                self.values.append(self.stream.random())
                return self.values[-1]

        for m in range(4):
            rows = np.random.default_rng(m).normal(size=(m + 1, 5))
            ids = list(range(m))
            source, twin = Recording(), Recording()
            got = impl.verify_draft(rows, ids, None, SamplingParams(), [], source)
            want = verify_draft(rows, ids, None, SamplingParams(), [], twin)
            assert got == want
            assert source.values == twin.values
            assert impl.last_uniforms_drawn == len(twin.values)

    @pytest.mark.parametrize("make", [lambda: np.random.default_rng(5), lambda: random.Random(5),
                                      lambda: request_rng(5)])  # fmt: skip
    def test_copyable_sources_end_in_the_same_state(self, impl, make):
        source, twin = make(), make()
        for _ in range(20):
            got = impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], source)
            assert got == verify_draft(ROWS, [1], Q, SamplingParams(), [], twin)
        assert source.random() == twin.random()

    @pytest.mark.parametrize("script", [(0.3, 0.9), (0.99, 0.2, 0.6), (0.99,)])
    def test_a_scripted_source_crosses_as_data_and_keeps_its_count(self, impl, script):
        """ScriptedUniforms go with the request (one round trip, not one per draw) and end as
        a call in this process would leave them."""
        source, twin = ScriptedUniforms(script, then=0.5), ScriptedUniforms(script, then=0.5)
        source.drawn = twin.drawn = 0
        got = impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], source)
        assert got == verify_draft(ROWS, [1], Q, SamplingParams(), [], twin)
        assert source.drawn == twin.drawn

    def test_a_scripted_sources_limit_is_too_many_draws(self, impl):
        with pytest.raises(TooManyDraws):
            impl.verify_draft(ROWS, [1], Q, SamplingParams(), [],
                              ScriptedUniforms((), then=0.99, limit=1))  # fmt: skip
        with pytest.raises(ImplementationError, match="only 1 were scripted"):
            impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], ScriptedUniforms((0.99,)))

    def test_a_raising_source_is_reported_as_a_python_impl_would(self, impl):
        class Exhausted:
            def random(self):
                raise AssertionError("no more uniforms")

        class Invalid:
            def random(self):
                raise ValueError("bad source")

        with pytest.raises(ImplementationError, match="raised AssertionError: no more") as info:
            impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], Exhausted())
        assert isinstance(info.value.__cause__, AssertionError)
        with pytest.raises(ValueError, match="bad source"):
            impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], Invalid())

    def test_contract_errors_cross_the_boundary(self, impl):
        with pytest.raises(InvalidLogits) as info:
            impl.verify_draft(np.full((2, 3), np.nan), [1], Q, SamplingParams(), [], None)
        assert info.value.argument == "target_logits"
        with pytest.raises(ValueError, match="rng"):
            impl.verify_draft(ROWS, [1], Q, SamplingParams(), [], None)

    def test_batch(self, impl):
        calls = [
            ("verify_draft", {"target_logits": ROWS, "draft_ids": [1], "draft_probs": Q,
                              "params": impl.params_tuple(SamplingParams())},
             ("list", [0.9, 0.1, 0.5])),
            ("verify_draft", {"target_logits": ROWS, "draft_ids": [1], "draft_probs": Q,
                              "params": impl.params_tuple(SamplingParams())}, ("list", [0.9])),
            ("prompt_lookup", {"ctx": [1, 2, 1], "k": 2, "max_ngram": 3, "min_ngram": 1}, None),
        ]  # fmt: skip
        first, second, third = impl.batch(calls)
        assert first == CallOutcome.ok(tuple(verify_draft(ROWS, [1], Q, SamplingParams(), [],
                                       iter_uniforms([0.9, 0.1, 0.5]))), 2)  # fmt: skip
        assert not second.is_ok and "only 1 were scripted" in str(second.value)
        assert third == CallOutcome.ok([2, 1], 0)


def iter_uniforms(values):
    class Source:
        def __init__(self):
            self.values = list(values)

        def random(self):
            return self.values.pop(0)

    return Source()


@pytest.mark.rust
def test_the_worker_imports_spec_verify_from_where_the_harness_did(rust_port, tmp_path,
                                                                   monkeypatch):
    # A source checkout's spec_verify/ in the working directory must not shadow the package
    # the harness runs from (the worker used to start with ``-m``, cwd first on its path).
    shadow = tmp_path / "spec_verify"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('the shadowing copy was imported')\n")
    monkeypatch.chdir(tmp_path)
    impl = load_implementation(f"ffi:{rust_port}")
    try:
        stream = request_rng(42)
        assert impl.pcg32_uniforms(42, 3) == [stream.random() for _ in range(3)]
    finally:
        impl.close()


@pytest.mark.rust
@pytest.mark.parametrize("limit", [None, 2])
def test_a_scripted_batch_equals_the_calls_one_by_one(port, limit):
    from tests.adapters.test_scripted_many import _batched, _one_by_one, _round, _scripts

    local = load_implementation("reference", in_process=True)
    args, scripts = _round(), _scripts(600)  # more than one batch (512 calls)
    want = _one_by_one(local, args, scripts, limit)
    assert _one_by_one(port, args, scripts, limit) == want
    assert _batched(port, args, scripts, limit) == want


def test_a_batch_is_cut_into_frames_under_the_wires_limit():
    from spec_verify.adapters._ffi_adapter import _frames

    big = np.zeros((5, 1_000_000))  # 40 MB: two fit in a 64 MB frame only when they are one
    calls = [("verify_draft", {"t": big}, None)] * 3 + [
        ("verify_draft", {"t": np.zeros((5, 1_000_000)), "q": np.zeros(2)}, None),
        ("verify_draft", {"t": np.zeros((5, 1_000_000))}, None),
    ]
    assert [len(f) for f in _frames(calls)] == [3, 1, 1]
    many = [("pcg32_u32", {"x": np.zeros(2)}, None) for _ in range(5000)]
    assert [len(f) for f in _frames(many)] == [4096, 904]  # at most 4,096 arrays a frame
    assert _frames([]) == []


@pytest.mark.rust
def test_a_batch_in_several_frames_answers_as_one(port, monkeypatch):
    import spec_verify.adapters._ffi_adapter as adapter

    rng = np.random.default_rng(4)
    calls = []
    for seed in range(12):
        logits = rng.normal(size=(3, 50))
        probs = np.exp(logits[:2]) / np.exp(logits[:2]).sum(axis=1, keepdims=True)
        calls.append(port.verify_call(logits, [1, 2], probs, SamplingParams(), [], [],
                                      ("seed", seed)))
    whole = port.batch(calls)
    monkeypatch.setattr(adapter, "_FRAME_BYTES", 3000)  # about two calls per frame
    assert len(adapter._frames(calls)) >= 5
    assert port.batch(calls) == whole
