"""Load an implementation from one spec string.

Specs: ``reference`` (the bundled reference), ``python:package.module`` or
``python:path/to/file.py`` (a module defining ``verify_draft`` and optionally more contract names:
docs/implementing.md), ``ffi:path/to/lib.so`` (a shared library exporting the C ABI of
``spec_verify.h``), ``mutant:s03`` (the reference with one planted bug). ``spec_verify._specs``
reads a spec before anything loads. The protocol the loaded object follows is
``_implementations.py``'s; this module sits above it and the adapters.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

from spec_verify._specs import PythonTarget, check_mutant, check_spec, resolve_python
from spec_verify.adapters._implementations import (
    DECLARATION,
    Implementation,
    PythonImplementation,
)
from spec_verify.errors import InvalidArgument, UnknownImplementation

__all__ = ["load_implementation", "load_python"]

# scheme -> "module:function" of the adapter that loads it (imported lazily).
_LOADERS = {
    "python": "spec_verify.adapters._loader:load_python",
    "ffi": "spec_verify.adapters._ffi_adapter:load_ffi",
    "mutant": "spec_verify.mutants._load:load_mutant",
    "transformers": "spec_verify.adapters._transformers:load_transformers",
}


def load_python(spec: str, module_name: str) -> Implementation:
    """Import a ``python:`` module or file into this process (``in_process=True``)."""
    found = resolve_python(spec, module_name)
    if found.search and found.search not in sys.path:
        sys.path.append(found.search)  # as the worker does: the current folder, or the file's
    try:
        module = _import(found)
    except ImportError as exc:
        raise UnknownImplementation(
            "impl", spec, f"importing {found.target!r} failed ({exc})",
            "fix the import error in the module (run python -c 'import <module>' to see it)",
        ) from exc  # fmt: skip
    try:
        host = PythonImplementation(spec, module)
    except InvalidArgument as exc:  # its SPEC_VERIFY_CAPABILITIES is malformed
        raise _malformed_declaration(spec, exc) from exc
    if not hasattr(module, "verify_draft") and not hasattr(module, "verify_tree"):
        return _as_kernel(host, set(dir(module)), found.target)
    return host


def _import(found: PythonTarget) -> ModuleType:
    """The module ``found`` names: imported by name, or executed from its file (registered
    under its stem, or a private name when that is taken, so dataclasses and pickling work)."""
    if not found.path:
        return importlib.import_module(found.module)
    name = found.module if found.module not in sys.modules else f"_spec_verify_file_{found.module}"
    file_spec = importlib.util.spec_from_file_location(name, found.path)
    if file_spec is None or file_spec.loader is None:
        raise ImportError(f"{found.path} cannot be loaded as Python source")
    module = importlib.util.module_from_spec(file_spec)
    sys.modules[name] = module
    try:
        file_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _malformed_declaration(spec: str, exc: InvalidArgument) -> UnknownImplementation:
    """A load error for a malformed ``SPEC_VERIFY_CAPABILITIES``, said once (``exc`` already
    names the declaration)."""
    return UnknownImplementation(
        "impl", spec, f"{DECLARATION}: {exc.rule} ({exc.value!r:.80})", exc.fix
    )


def _as_kernel(host: Any, names: set[str] | frozenset[str], target: str) -> Implementation:
    """A module without ``verify_draft``: its declared batched kernel (``_kernel.py``), or a
    load error saying what a module must offer.

    Raises:
        UnknownImplementation: neither ``verify_draft`` nor a declared kernel.
    """
    from spec_verify.adapters._kernel import KERNEL_DECLARATION, KernelImplementation

    if KERNEL_DECLARATION not in names:
        host.close()
        raise UnknownImplementation(
            "impl",
            host.name,
            f"module {target!r} has no verify_draft (nor verify_tree)",
            "define verify_draft(target_logits, draft_ids, draft_probs, p, history, rng, prompt) "
            f"(docs/implementing.md), or declare a batched rejection kernel: "
            f"{KERNEL_DECLARATION} = 'function_name' (docs/tutorial-own-sampler.md)",
        )
    kernel = getattr(host.module, KERNEL_DECLARATION)
    if not isinstance(kernel, str) or kernel not in names:
        host.close()
        raise UnknownImplementation(
            "impl", host.name, f"{KERNEL_DECLARATION} = {kernel!r} names no function of the module",
            f"set {KERNEL_DECLARATION} to the kernel's name, e.g. 'rejection_sample'",
        )  # fmt: skip
    declared = getattr(host.module, DECLARATION) if DECLARATION in names else None
    return KernelImplementation(host, kernel, declared)


def _load_in_worker(spec: str, kind: str, target: str) -> Implementation:
    """``reference``, ``python:`` and ``mutant:`` in a worker process (never imported here)."""
    from spec_verify.adapters._python_adapter import WorkerImplementation

    search = ""
    if kind == "python":
        found = resolve_python(spec, target)
        target, search = found.target, found.search
    elif kind == "mutant":
        check_mutant(spec, target, "impl")
    try:
        impl = WorkerImplementation(spec, kind, target, search=search)
    except UnknownImplementation:
        raise  # the worker's own load error, said once
    except InvalidArgument as exc:  # its SPEC_VERIFY_CAPABILITIES is malformed
        raise _malformed_declaration(spec, exc) from exc
    if "verify_draft" not in impl.names and "verify_tree" not in impl.names:
        return _as_kernel(impl, impl.names, target)
    return impl


_VLLM_KERNEL = "spec_verify.adapters._vllm"
_VLLM_START_TIMEOUT = 300.0  # vLLM's import takes 15-65 s on 2 cores


def _load_vllm(spec: str) -> Implementation:
    """``vllm``: the installed vLLM's rejection sampler, as a kernel in a worker (``_vllm.py``)."""
    from spec_verify.adapters._python_adapter import WorkerImplementation

    if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("torch") is None:
        raise UnknownImplementation(
            "impl", spec, "needs vLLM's CPU build and torch installed",
            "pip install 'spec-verify[vllm]' (about 3.5 GB)",
        )
    impl = WorkerImplementation(
        spec, "python", _VLLM_KERNEL, start_timeout=_VLLM_START_TIMEOUT
    )
    return _as_kernel(impl, impl.names, _VLLM_KERNEL)


def load_implementation(spec: str, *, in_process: bool = False) -> Implementation:
    """Load an implementation from its spec string (see the module docstring).

    ``reference``, ``python:`` and ``mutant:`` are served from a worker process
    (``_python_adapter``) and ``ffi:`` from its own: the harness never imports or loads them,
    so nothing they do can change its verdict (docs/threat-model.md). ``in_process=True``
    imports a Python implementation into this process instead: for benchmarks of the worker's
    cost and for tests that look inside an implementation, never for a verdict.

    Raises:
        UnknownImplementation: the spec names nothing loadable; the message says why and the fix.
    """
    check_spec(spec)
    if spec == "reference":
        if in_process:
            return load_python(spec, "spec_verify.reference")
        return _load_in_worker(spec, "reference", "")
    if spec == "vllm":
        return _load_vllm(spec)
    scheme, _, rest = spec.partition(":")
    if spec == "transformers":
        scheme = "transformers"  # the bare name: transformers' sampler with torch's own generator
    if scheme in ("python", "mutant") and not in_process:
        return _load_in_worker(spec, scheme, rest)
    module_name, _, function = _LOADERS[scheme].partition(":")
    try:
        loader = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as exc:
        raise UnknownImplementation(
            "impl", spec, f"the {scheme}: adapter is unavailable ({exc})"
        ) from exc
    impl: Implementation = loader(spec, rest)
    return impl
