"""Calling a Python implementation: its exit, hang or garbage is one clean failure of that
implementation; a call that hung is not made again; generation runs under a time limit."""

from __future__ import annotations

import ast
import shutil
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import spec_verify
import spec_verify.properties
from spec_verify.adapters import AbiImplementation, Implementation
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


# ---- the one protocol ------------------------------------------------------------------------


class _Minimal(Implementation):
    """Only verify_draft: every other method keeps the protocol's default."""

    name = "python:minimal"
    capabilities = frozenset({"verify_draft"})

    def verify_draft(self, *args: object, **kwargs: object) -> tuple[list[int], int]:
        return [0], 0


def test_every_optional_method_has_a_default() -> None:
    impl = _Minimal()
    assert impl.params(temperature=0.5) == SamplingParams(temperature=0.5)
    assert impl.request_rng(1) is None
    assert impl.generation_module() is None
    assert impl.own_attribute("PromptLookupDraft") is None
    assert impl.pcg32_u32(42, 54, 3) is None
    assert impl.call_guarded("f", 1.0, lambda x: x + 1, 1) == 2
    impl.close()
    with pytest.raises(ImplementationError, match="is not offered"):
        impl.sampling_distribution(ROWS[0], SamplingParams())
    with pytest.raises(ImplementationError, match="is not offered"):
        impl.prompt_lookup([1, 2, 1], 2)
    with pytest.raises(ImplementationError, match="is not offered"):
        impl.pcg32_uniforms(0, 2)


def test_an_implementation_must_define_verify_draft() -> None:
    class Empty(Implementation):
        name = "empty"

    with pytest.raises(TypeError, match="verify_draft"):
        Empty()  # type: ignore[abstract]


def test_only_the_c_abi_adapter_takes_raw_abi_calls(reference) -> None:
    from spec_verify.adapters import Draws, FfiImplementation

    assert issubclass(FfiImplementation, Implementation)
    assert isinstance(FfiImplementation("/nonexistent.so"), AbiImplementation)
    assert FfiImplementation("/nonexistent.so").batch_stream is Draws.SEEDED
    assert isinstance(reference, Implementation)
    assert reference.batch_stream is Draws.LIVE
    assert not isinstance(reference, AbiImplementation)
    assert not isinstance(_Minimal(), AbiImplementation)


def test_the_python_adapter_answers_from_its_module(reference) -> None:
    assert reference.generation_module() is not None
    assert reference.own_attribute("PromptLookupDraft") is not None
    assert reference.own_attribute("no_such_name") is None
    rng = reference.request_rng(7)
    assert rng is not None and rng.random() == request_rng(7).random()


def test_run_checks_refuses_an_object_that_is_no_implementation() -> None:
    from spec_verify.errors import InvalidArgument
    from spec_verify.runner import run_checks

    with pytest.raises(InvalidArgument, match=r"subclass spec_verify\.adapters\.Implementation"):
        run_checks(object())  # type: ignore[arg-type]


_PACKAGE = Path(spec_verify.__file__).resolve().parent
_CALLERS = [
    # tree.py (issue 9's tier, landed beside this test) still builds params by probing: to do
    *sorted(p for p in (_PACKAGE / "tiers").glob("*.py") if p.name != "tree.py"),
    *sorted(Path(spec_verify.properties.__file__).resolve().parent.glob("*.py")),
    _PACKAGE / "runner.py",
]
assert len(_CALLERS) > 10  # the globs found the tiers and the properties
_IMPL_NAMES = {"impl", "loaded", "spec_impl", "self.impl"}


@pytest.mark.parametrize("path", _CALLERS, ids=lambda p: p.name)
def test_tiers_never_probe_an_implementation_by_attribute(path: Path) -> None:
    """Every hook is a real method of the protocol: getattr/hasattr on an implementation in a
    tier would hide a missing method until the one run that needs it."""
    probes = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "hasattr"}
            and node.args
            and ast.unparse(node.args[0]) in _IMPL_NAMES
        ):
            probes.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert not probes, probes


# --- reading a spec: what it names, found without importing it ------------------------------


def test_a_python_spec_is_found_on_sys_path_then_in_the_current_folder(tmp_path, monkeypatch):
    from spec_verify._specs import resolve_python

    (tmp_path / "mine.py").write_text("raise SystemExit('imported!')\n")  # never run here
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("raise SystemExit('imported!')\n")
    (tmp_path / "pkg" / "sampler.py").write_text("")
    monkeypatch.chdir(tmp_path)
    found = resolve_python("python:mine", "mine")
    assert (found.module, found.path, found.search) == ("mine", "", str(tmp_path))
    assert resolve_python("python:pkg.sampler", "pkg.sampler").search == str(tmp_path)
    on_path = resolve_python("python:json.decoder", "json.decoder")
    assert (on_path.module, on_path.search) == ("json.decoder", "")  # sys.path: nothing added
    file = resolve_python("python:./mine.py", "./mine.py")
    assert (file.module, file.path, file.search) == (
        "mine", str(tmp_path / "mine.py"), str(tmp_path))
    assert file.target == str(tmp_path / "mine.py")
    assert "pkg" not in sys.modules and "mine" not in sys.modules  # nothing was imported


def test_a_file_loads_in_process_and_in_the_worker(tmp_path, monkeypatch):
    from spec_verify.adapters import load_implementation

    shutil.copy(Path(__file__).parents[2] / "examples" / "minimal_sampler.py",
                tmp_path / "my_sampler.py")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    for in_process in (True, False):
        impl = load_implementation("python:my_sampler.py", in_process=in_process)
        try:
            assert impl.name == "python:my_sampler.py"
            assert "verify_draft" in impl.capabilities
            emitted, n = _verify(impl)
            assert len(emitted) == n + 1
        finally:
            impl.close()
    sys.modules.pop("my_sampler", None)
    if str(tmp_path) in sys.path:  # the in-process load appended it, as the worker does
        sys.path.remove(str(tmp_path))


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("", "must be a non-empty string"),
        ("pyhton:x", "unknown scheme 'pyhton'; did you mean 'python:x'?"),
        ("ffii:lib.so", "did you mean 'ffi:lib.so'?"),
        ("mutnt:s03", "did you mean 'mutant:s03'?"),
        ("refrence", "names no scheme; did you mean 'reference'?"),
        ("lib.so", "did you mean 'ffi:lib.so'?"),
        ("python:", "python: needs a module or a file"),
        ("python:no_such_module_here", "'no_such_module_here' cannot be imported"),
        ("python:json.nope", "package 'json' has no module 'nope'"),
        ("python:json.decoder.x", "'json.decoder' is a module, not a package"),
        ("python:1abc", "neither a dotted module name nor a .py file"),
        ("python:/nonexistent/x.py", "no file /nonexistent/x.py"),
        ("ffi:/nonexistent/lib.so", "no such file: /nonexistent/lib.so"),
        ("ffi:/etc", "is a folder"),
        ("mutant:s3", "did you mean 'mutant:s03'?"),
    ],
)
def test_a_spec_that_names_nothing_is_refused_with_the_closest_name(spec, words) -> None:
    from spec_verify._specs import check_spec
    from spec_verify.errors import UnknownImplementation

    with pytest.raises(UnknownImplementation) as info:
        check_spec(spec)
    assert words in str(info.value)
    assert info.value.argument == "impl" and info.value.value == spec
    assert str(info.value).count(words) == 1


def test_a_symlink_loop_and_a_text_library_are_refused(tmp_path) -> None:
    from spec_verify._specs import check_spec
    from spec_verify.errors import UnknownImplementation

    loop = tmp_path / "loop.so"
    loop.symlink_to(loop)
    with pytest.raises(UnknownImplementation, match="cannot be read"):
        check_spec(f"ffi:{loop}")
    text = tmp_path / "libtext.so"
    text.write_text("not a library")
    with pytest.raises(UnknownImplementation, match="not a loadable shared library"):
        check_spec(f"ffi:{text}")
    py_loop = tmp_path / "loop.py"
    py_loop.symlink_to(py_loop)
    with pytest.raises(UnknownImplementation, match="cannot be read"):
        check_spec(f"python:{py_loop}")
    elf = tmp_path / "libfake.so"
    elf.write_bytes(b"\x7fELF" + bytes(12))
    check_spec(f"ffi:{elf}")  # looks like one: the loader decides the rest
