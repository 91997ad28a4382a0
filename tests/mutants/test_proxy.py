"""The proxy of the graded sampler: every public name, the same behaviour, nothing to read.

A served sampler runs in a forked child (``_sampler.serve``, as in a graded run); this process
builds proxy modules from it without installing them (the test process keeps its own
reference, which the tests compare the proxy with).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import pickle
import socket
import sys
from types import ModuleType

import numpy as np
import pytest

import spec_verify.reference as real
from spec_verify.ipc.frames import send_message
from spec_verify.mutants import _rpc
from spec_verify.mutants._proxy import connect
from spec_verify.mutants._rpc import Endpoint, ProtocolError, Remote
from spec_verify.mutants._source import canary_sources, reference_sources


def _serve(sources, private=False):
    near, far = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the served child: never returns into pytest
        code = 0
        try:
            near.close()
            from spec_verify.mutants._sampler import serve

            serve(far)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    far.close()
    send_message(near, {"sources": dict(sources), "private": private})
    return near, pid


@pytest.fixture(scope="module")
def served():
    sock, pid = _serve(reference_sources())
    builder = connect(sock)
    yield builder
    sock.close()
    os.waitpid(pid, 0)


@pytest.fixture(scope="module")
def ref(served) -> ModuleType:
    return served.module("spec_verify.reference")


class Uniforms:
    """The suite's own uniform source: called back from the sampler's process."""

    def __init__(self, *values):
        self.values = list(values)
        self.calls = 0

    def random(self):
        self.calls += 1
        return self.values.pop(0)


def test_every_public_name_of_every_module_is_served(served):
    import importlib

    described = served.description["modules"]
    for name in sorted(described):
        module = importlib.import_module(name)
        proxy = served.module(name)
        assert sorted(proxy.__all__) == sorted(module.__all__), name
        for attribute in module.__all__:
            assert hasattr(proxy, attribute), (name, attribute)
    assert "spec_verify.reference.verify" in described


def test_functions_answer_like_the_reference(ref):
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    greedy = ref.SamplingParams(temperature=0)
    assert ref.verify_draft(rows, [2, 1], None, greedy, [], None) == ([2, 0], 1)
    logits = np.log(np.array([[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]]))
    q = np.array([[0.25, 0.5, 0.25]])
    rng = Uniforms(0.7, 0.4)
    assert ref.verify_draft(logits, [1], q, ref.SamplingParams(), [], rng) == ([0], 0)
    assert rng.calls == 2  # the suite's callback, called from the other process
    dist = ref.sampling_distribution([0.0, 1.0, 2.0], ref.SamplingParams(top_k=2))
    assert isinstance(dist, np.ndarray)
    assert dist.tolist() == real.sampling_distribution(
        [0.0, 1.0, 2.0], real.SamplingParams(top_k=2)).tolist()


def test_objects_live_there_and_travel_as_handles(ref):
    served_rng, local = ref.request_rng(2024), real.request_rng(2024)
    assert isinstance(served_rng, ref.Pcg32)
    assert [served_rng.random() for _ in range(5)] == [local.random() for _ in range(5)]
    tok = ref.CharTokenizer("abcdefg")
    model = ref.BagLM(tok.vocab_size, seed=11)
    assert (model.vocab_size, ref.BagLM.n_layers) == (8, 0)
    p = ref.SamplingParams(temperature=0, max_tokens=12)
    out = ref.speculative_generate(model, ref.PromptLookupDraft(), tok, [1, 2, 3, 1, 2], p, k=3)
    plain = real.generate(real.BagLM(8, seed=11), real.CharTokenizer("abcdefg"),
                          [1, 2, 3, 1, 2], real.SamplingParams(temperature=0, max_tokens=12))
    assert (out.ids, out.text, out.finish_reason) == (plain.ids, plain.text, plain.finish_reason)
    assert out.stats["target_calls"] >= 1
    cache = model.new_cache()
    assert cache.length == 0 and isinstance(cache, ref.KVCache)


def test_dataclasses_keep_their_fields_equality_and_hash(ref):
    p = ref.SamplingParams(temperature=0.5, top_k=2)
    assert dataclasses.is_dataclass(p)
    assert [f.name for f in dataclasses.fields(p)] == [
        f.name for f in dataclasses.fields(real.SamplingParams)]
    changed = dataclasses.replace(p, top_k=3)
    assert (changed.top_k, changed.temperature, p.top_k) == (3, 0.5, 2)
    assert p == ref.SamplingParams(temperature=0.5, top_k=2)
    assert hash(p) == hash(ref.SamplingParams(temperature=0.5, top_k=2))
    assert p.greedy is False and ref.SamplingParams.temperature == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.top_k = 5


def test_exceptions_arrive_as_the_reference_s_classes(ref):
    rows = np.zeros((3, 3))
    with pytest.raises(ref.InvalidLogits, match="target_logits") as info:
        ref.verify_draft(rows, [2, 1, 0], None, ref.SamplingParams(temperature=0), [], None)
    assert isinstance(info.value, ValueError) and isinstance(info.value, ref.ContractError)
    assert info.value.argument == "target_logits"
    with pytest.raises(real.InvalidLogits) as expected:
        real.verify_draft(rows, [2, 1, 0], None, real.SamplingParams(temperature=0), [], None)
    assert str(info.value) == str(expected.value)
    made = ref.InvalidDraft("draft_probs", 1, "must be a matrix")
    assert str(made) == str(real.InvalidDraft("draft_probs", 1, "must be a matrix"))
    import copy
    import pickle
    import sys

    module = ModuleType("spec_verify.reference.errors")  # where pickle looks the class up
    module.InvalidLogits = ref.InvalidLogits
    saved = sys.modules.get(module.__name__)
    sys.modules[module.__name__] = module
    try:
        again = pickle.loads(pickle.dumps(info.value))
    finally:
        sys.modules[module.__name__] = saved
    assert type(again) is ref.InvalidLogits and str(again) == str(info.value)
    assert again.argument == "target_logits"
    assert str(copy.copy(info.value)) == str(info.value)


@contextlib.contextmanager
def _classes_found_by_pickle(*classes):
    """Make pickle find proxy classes under their module names (the suite's process has the
    proxy in ``sys.modules``; this test process keeps the real reference there)."""
    saved = {}
    for cls in classes:
        module = ModuleType(cls.__module__)
        setattr(module, cls.__qualname__, cls)
        saved[cls.__module__] = sys.modules.get(cls.__module__)
        sys.modules[cls.__module__] = module
    try:
        yield
    finally:
        for name, module in saved.items():
            sys.modules[name] = module


def test_an_exception_holding_a_served_object_pickles(ref):
    # regression (issue 11): tests/reference/test_bad_arguments.py pickles every bad-argument
    # error; "generate tok" carries the tokenizer in its ``value`` attribute, a served object,
    # and the kill matrix's clean run failed through the proxy ("cannot be pickled")
    tok = ref.CharTokenizer("abc")
    with pytest.raises(ref.ContractError, match="tok") as info:
        ref.generate(ref.BagLM(5), tok, [1], ref.SamplingParams())
    kind = type(info.value)
    with _classes_found_by_pickle(kind):
        clone = pickle.loads(pickle.dumps(info.value))
    assert type(clone) is kind and str(clone) == str(info.value)
    assert isinstance(clone.value, ref.CharTokenizer) and clone.value is not tok
    assert repr(clone.value) == repr(tok) == repr(real.CharTokenizer("abc"))
    assert clone.value.vocab_size == tok.vocab_size


def test_a_served_object_pickles_as_a_copy_made_when_pickled(ref):
    rng = ref.request_rng(7)
    data = pickle.dumps(rng)
    first = rng.random()  # after pickling: the pickle froze the state before this draw
    again, other = pickle.loads(data), pickle.loads(data)
    assert again is not rng and again is not other  # each load is a fresh object
    assert again.random() == other.random() == first
    local = real.request_rng(7)
    assert first == local.random()
    key = max(_rpc._PICKLED)
    frozen = _rpc._PICKLED.pop(key)  # as in another process: nothing to unpickle from
    try:
        with pytest.raises(pickle.UnpicklingError, match="process that pickled it"):
            pickle.loads(data)
    finally:
        _rpc._PICKLED[key] = frozen


def test_numpy_dtypes_and_scalar_types_travel_by_value(ref):
    # regression (issue 11): model.new_cache(np.float16) sent np.float16 as a handle and the
    # sampler's numpy could not convert it ("Could not convert ... to a NumPy dtype")
    model = ref.AttentionLM(8, d_model=16, n_layers=3, n_heads=4, max_positions=32)
    for dtype in (np.float16, np.float32, np.dtype("float16"), float):
        cache = model.new_cache(dtype)
        assert cache.keys[0].dtype == np.dtype(dtype), dtype
    with pytest.raises(ref.InvalidParams, match="kv_dtype"):
        ref.KVCache((3, 4, 32, 4), np.int32)


def test_a_callback_s_own_exception_comes_home(ref):
    logits = np.log(np.array([[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]]))
    rng = Uniforms(0.7)  # one uniform short
    with pytest.raises(IndexError, match="pop from empty list") as info:
        ref.verify_draft(logits, [1], np.array([[0.25, 0.5, 0.25]]), ref.SamplingParams(), [],
                         rng)
    assert type(info.value) is IndexError


def test_a_suite_s_subclass_and_protocol_are_called_back(ref):
    class Counting(ref.BagLM):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.passes = 0

        def forward(self, ids, cache, start):
            self.passes += 1
            return super().forward(ids, cache, start)

    class NoDraft(ref.DraftModel):
        def propose(self, ctx, k, rng):
            return [], None

    tok = ref.CharTokenizer("abcdefg")
    target = Counting(tok.vocab_size, seed=11)
    p = ref.SamplingParams(temperature=0, max_tokens=5)
    out = ref.speculative_generate(target, NoDraft(), tok, [1, 2, 3], p, k=3)
    assert target.passes == out.stats["target_calls"] == 5  # one pass per token: no drafts


def test_no_reference_code_in_the_proxy(ref, served):
    for name in ref.__all__:
        value = getattr(ref, name)
        code = getattr(value, "__code__", None)
        if code is not None:
            assert code.co_filename.endswith("_proxy.py"), name
        assert value.__doc__ is None or isinstance(value, (int, str, float)), name
    with pytest.raises(AttributeError, match="public"):
        served.module("spec_verify.reference.sampling").sample_with  # noqa: B018


def test_the_serving_side_refuses_private_attributes(served):
    endpoint = served.endpoint
    handle = served.description["modules"]["spec_verify.reference.verify"]["names"][
        "verify_draft"]["object"]
    for name in ("__code__", "__globals__", "_check_draft_probs"):
        with pytest.raises(AttributeError, match="public attributes only"):
            endpoint.getattr(handle, name)
    with pytest.raises(Exception, match="unknown builtin"):
        endpoint.builtin("exec", "print(1)")


def test_the_canary_raises_through_the_proxy():
    sock, pid = _serve(canary_sources(reference_sources()))
    try:
        ref = connect(sock).module("spec_verify.reference")
        with pytest.raises(RuntimeError, match="canary"):
            ref.SamplingParams()
    finally:
        sock.close()
        os.waitpid(pid, 0)


def test_plain_values_round_trip():
    a, b = socket.socketpair()
    left, right = Endpoint(a), Endpoint(b)
    from fractions import Fraction

    values = [None, True, 3, -(2**70), 0.1, float("nan"), float("-inf"), -0.0, "s", b"\x00b",
              [1, [2]], (1, 2), {"a": 1, 2: (3,)}, {1, 2}, frozenset({3}), range(1, 9, 2),
              1 + 2j, Fraction(1, 3), slice(1, None, 2), Ellipsis,
              np.arange(6, dtype=np.float16).reshape(2, 3), np.int64(7), np.float32(0.5),
              np.array([True, False]), np.float16, np.int64, np.bool_, np.longlong, float,
              int, np.dtype("<f4"), np.dtype("bool")]
    arrays: dict[str, object] = {}
    data = [left.encode(v, arrays) for v in values]
    back = [right.decode(d, arrays) for d in data]
    for sent, got in zip(values, back, strict=True):
        assert type(got) is type(sent)
        if isinstance(sent, np.ndarray):
            assert got.dtype == sent.dtype and np.array_equal(got, sent)
        elif isinstance(sent, float) and math.isnan(sent):
            assert math.isnan(got)
        else:
            assert got == sent
    assert str(back[7]) == "-0.0"
    handle = right.decode(left.encode(object(), {}), {})
    assert isinstance(handle, Remote)


@pytest.mark.parametrize("data", [
    {"$o": 999}, {"$ar": ["raw", "|O8", [1]]}, {"$ar": ["raw", "<f8", [2]]}, {"$nope": 0},
    {"$b": "missing"}, {"$ty": "os.system"}, {"$ty": "builtins.eval"}, {"$dt": "|O8"},
    {"$dt": 3}, {"$h": ["1", None]}, {"$fr": ["1", "0"]}, {"$i": "x"}, {"$g": ["<f8", "00"]},
])
def test_malformed_values_are_refused(data):
    a, _ = socket.socketpair()
    with pytest.raises(ProtocolError):
        Endpoint(a).decode(data, {"raw": np.zeros(8, np.uint8)})


def test_private_names_only_for_the_project_s_own_tests():
    # a graded suite gets each module's __all__; run_mutants (our own tests of internals)
    # asks for every name, still without any private attribute of a served object
    sock, pid = _serve(reference_sources(), private=True)
    try:
        builder = connect(sock)
        sampling = builder.module("spec_verify.reference.sampling")
        assert sampling.__all__ == real.sampling.__all__
        private = sorted(n for n, v in vars(real.sampling).items()
                         if n.startswith("_") and not n.startswith("__") and callable(v)
                         and not isinstance(v, type))
        assert private and all(hasattr(sampling, n) for n in private)
        entry = builder.description["modules"]["spec_verify.reference.sampling"]["names"][
            private[0]]
        with pytest.raises(AttributeError, match="public attributes only"):
            builder.endpoint.getattr(entry["object"], "__code__")
    finally:
        sock.close()
        os.waitpid(pid, 0)


def test_a_precompiled_tree_is_not_compiled_again(monkeypatch):
    import importlib

    from spec_verify.mutants import _load, _sampler

    sources = reference_sources()
    compiled: dict = {}
    monkeypatch.setattr(_sampler, "_COMPILED", compiled)
    python = [name for name in sources if name.endswith(".py")]
    files = [[name, text] for name, text in sources.items()]
    # a text that does not compile is left to its run; malformed entries are ignored
    assert _sampler.precompile([*files, *files, ["bad.py", "def ("], "junk", [1, 2]]) == len(
        python)

    def refuse(*args, **kwargs):
        raise AssertionError("a precompiled text was compiled again")

    monkeypatch.setattr(_load._TreeLoader, "source_to_code", refuse)
    try:
        package = _load.load_source_tree("_spec_verify_precompiled_test", sources,
                                         _sampler.ORIGIN, compiled)
        for name in python:
            if name != "__init__.py":
                module = importlib.import_module(f"{package.__name__}.{name[:-3]}")
                assert module.__all__ == importlib.import_module(
                    f"spec_verify.reference.{name[:-3]}").__all__
        assert package.SamplingParams().temperature == 1.0
        with pytest.raises(AssertionError, match="compiled again"):  # negative control
            _load.load_source_tree("_spec_verify_not_precompiled_test", sources,
                                   _sampler.ORIGIN)
    finally:
        for name in [n for n in sys.modules if n.startswith(("_spec_verify_precompiled_test",
                                                             "_spec_verify_not_precompiled"))]:
            del sys.modules[name]


def test_the_proxy_imports_neither_the_reference_nor_the_adapters():
    # The suite's fork server preloads the proxy once; an import of the reference in it is
    # rolled back, and then every run imported the proxy itself: spec_verify.adapters (whose
    # __init__ imports the installed reference) and some thirty modules compiled per run.
    import subprocess

    code = ("import sys; import spec_verify.mutants._proxy; "
            "print(sorted(n for n in sys.modules if n.startswith(('spec_verify.reference', "
            "'spec_verify.adapters'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.stdout.strip() == "[]", out.stdout
