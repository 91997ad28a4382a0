"""``mutant:s03`` in process: the mutated reference loaded as a separate, private package.

The gate (``spec-verify check --impl mutant:s03``) drives implementations in its own process,
so the mutated source is compiled from memory under a private package name
(``_spec_verify_mutant_s03``) next to the real ``spec_verify.reference``, which stays
untouched. The reference uses relative imports only, so its modules import each other inside
the private package. Tracebacks and ``inspect`` show the mutated lines (the loader serves the
source).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Mapping, Sequence
from types import CodeType, ModuleType

from spec_verify.adapters._implementations import PythonImplementation
from spec_verify.errors import UnknownImplementation

from ._source import reference_sources
from .catalogue import UnknownMutant, apply_mutant, mutant_by_id

__all__ = ["PRIVATE_PREFIX", "compile_source", "load_mutant", "load_source_tree", "tree_filename"]

PRIVATE_PREFIX = "_spec_verify_mutant_"


class _TreeLoader(importlib.abc.SourceLoader):
    """Serves one module's source text from memory (no bytecode cache on disk; ``compiled``,
    when given, maps ``(filename, text)`` to the code ``compile_source`` made of that text)."""

    def __init__(self, filename: str, text: str,
                 compiled: Mapping[tuple[str, str], CodeType] | None = None) -> None:
        self.filename = filename
        self.text = text
        self.compiled = compiled

    def get_code(self, fullname: str) -> CodeType | None:
        code = self.compiled.get((self.filename, self.text)) if self.compiled else None
        return code if code is not None else super().get_code(fullname)

    def get_filename(self, fullname: str) -> str:
        return self.filename

    def get_data(self, path: str) -> bytes:
        return self.text.encode("utf-8")


class _TreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``package`` and its submodules in a ``{relative file: text}`` tree."""

    def __init__(self, package: str, sources: Mapping[str, str], origin: str,
                 compiled: Mapping[tuple[str, str], CodeType] | None = None) -> None:
        self.package = package
        self.sources = dict(sources)
        self.origin = origin
        self.compiled = compiled

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.package:
            relative, package = "__init__.py", True
        elif fullname.startswith(self.package + "."):
            parts = fullname[len(self.package) + 1 :].split(".")
            module_file = "/".join(parts) + ".py"
            package_file = "/".join(parts) + "/__init__.py"
            package = package_file in self.sources
            relative = package_file if package else module_file
        else:
            return None
        if relative not in self.sources:
            return None
        filename = tree_filename(self.origin, relative)
        loader = _TreeLoader(filename, self.sources[relative], self.compiled)
        spec = importlib.machinery.ModuleSpec(fullname, loader, origin=filename, is_package=package)
        spec.has_location = True  # __file__ = the pseudo path, so tracebacks name the file
        if package:
            spec.submodule_search_locations = [filename.rsplit("/", 1)[0]]
        return spec


def compile_source(filename: str, text: str) -> CodeType:
    """The code of one module's text, exactly as ``_TreeLoader`` would compile it on import
    (``SourceLoader.source_to_code``: the text's bytes, ``exec``, no inherited flags)."""
    code: CodeType = compile(text.encode("utf-8"), filename, "exec", dont_inherit=True,
                             optimize=-1)
    return code


def tree_filename(origin: str, relative: str) -> str:
    """The file name a tree's module gets (its ``__file__``, its code's ``co_filename``)."""
    return f"{origin}/{relative}"


def load_source_tree(package: str, sources: Mapping[str, str], origin: str,
                     compiled: Mapping[tuple[str, str], CodeType] | None = None) -> ModuleType:
    """Import ``sources`` as the package ``package`` (idempotent for the same name).

    The finder stays on ``sys.meta_path`` so that submodules the package does not import
    itself (``exact``, ``bundled``) can be imported later; it answers only for ``package``.
    ``compiled`` (``(filename, text) -> code`` from ``compile_source``) spares compiling a
    text again: the grader's sampler process compiles every tree of a grading once.
    """
    if package in sys.modules:
        return sys.modules[package]
    if not any(isinstance(f, _TreeFinder) and f.package == package for f in sys.meta_path):
        sys.meta_path.insert(0, _TreeFinder(package, sources, origin, compiled))
    return importlib.import_module(package)


def load_mutant(spec: str, rest: str) -> PythonImplementation:
    """The implementation ``mutant:<id>``: the reference with that mutant's changes.

    Raises:
        UnknownImplementation: ``rest`` is not a catalogue id.
    """
    try:
        mutant = mutant_by_id(rest)
    except UnknownMutant as exc:
        raise UnknownImplementation("impl", spec, exc.rule, exc.fix) from None
    sources = apply_mutant(mutant, reference_sources())
    module = load_source_tree(PRIVATE_PREFIX + mutant.id, sources, f"<mutant {mutant.id}>")
    return PythonImplementation(spec, module)
