"""What a spec string names, found without importing or loading it (and without numpy).

``check_spec`` is the first thing ``load_implementation`` and every command do with
``--impl``, so a typo is a usage error in well under a second, with the closest valid name,
before any worker starts. ``resolve_python`` finds a ``python:`` module on ``sys.path`` or in
the current folder, or a ``.py`` file by its path; the worker imports exactly what it found.
"""

from __future__ import annotations

import difflib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spec_verify.errors import UnknownImplementation

__all__ = [
    "SCHEMES",
    "PythonTarget",
    "check_generator",
    "check_mutant",
    "check_spec",
    "resolve_python",
]

# The schemes a spec may start with (each has a loader in adapters._implementations).
SCHEMES = ("python", "ffi", "mutant", "transformers")

# One example per scheme: the fix of a spec that breaks its scheme's rule.
_SCHEME_EXAMPLES = {
    "python": "python:package.module or python:path/to/file.py",
    "ffi": "ffi:path/to/lib.so",
    "mutant": "mutant:s03",
    "transformers": "transformers",
}
_SPEC_FORMS = "reference, python:package.module, python:path/to/file.py, ffi:path/to/lib.so, " \
    "mutant:sNN or transformers"
# The first bytes of a shared object: ELF (Linux, BSD), Mach-O (both byte orders, 32 and 64
# bits, and universal binaries), PE (Windows DLLs).
_LIBRARY_MAGIC = (
    b"\x7fELF", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe", b"MZ",
)  # fmt: skip


@dataclass(frozen=True)
class PythonTarget:
    """Where a ``python:`` spec's module is, found without importing it.

    Attributes:
        module: the module's dotted name (for a file, its stem).
        path: the absolute path of the file when the spec names a file, else "".
        search: a folder the worker appends to ``sys.path`` ("" when the module is found on
            ``sys.path`` as it is): the current folder, or the file's own folder.
    """

    module: str
    path: str = ""
    search: str = ""

    @property
    def target(self) -> str:
        """What the worker imports: the absolute file path, or the dotted name."""
        return self.path or self.module


def _did_you_mean(word: str, choices: Iterable[str], shown: Callable[[str], str] = str) -> str:
    """``did you mean 'x'?`` for the closest of ``choices`` (as ``shown`` spells it), or ""
    when none is close (difflib's ratio below 0.6)."""
    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f"did you mean {shown(close[0])!r}?" if close else ""


def _join(*parts: str) -> str:
    """Parts as one message: after a question ("did you mean 'x'?") the next part starts a new
    sentence, so a question is never followed by "; "."""
    text = ""
    for part in (p for p in parts if p):
        if not text:
            text = part
        elif text.endswith("?"):
            text += " " + part[:1].upper() + part[1:]
        else:
            text += "; " + part
    return text


def _looks_like_file(target: str) -> bool:
    return (target.endswith(".py") or "/" in target or os.sep in target
            or target.startswith("~") or os.path.isfile(target))  # fmt: skip


def _modules_in(folders: Iterable[str]) -> set[str]:
    """The names of the modules and packages directly in ``folders`` (for "did you mean")."""
    import pkgutil

    return {info.name for info in pkgutil.iter_modules([str(f) for f in folders])}


def resolve_python(spec: str, target: str, argument: str = "impl") -> PythonTarget:
    """Find the module or file a ``python:`` spec names, from the current folder as well as
    ``sys.path``, without importing or running any of it. ``sys.path`` comes first (the worker
    appends the current folder, never prepends it), so a folder that happens to hold a
    ``json.py`` or a source checkout of a package cannot shadow what is installed.

    ``target`` is the spec after ``python:``: a dotted module name, or a path to a ``.py``
    file (absolute, or from the current folder; ``./mine.py`` too).

    Raises:
        UnknownImplementation: no such module or file; the message names the closest one.
    """
    if not target:
        raise UnknownImplementation(
            argument, spec, "python: needs a module or a file", _SCHEME_EXAMPLES["python"]
        )
    if _looks_like_file(target):
        return _resolve_file(spec, target, argument)
    parts = target.split(".")
    if not all(part.isidentifier() for part in parts):
        raise UnknownImplementation(
            argument, spec, f"{target!r} is neither a dotted module name nor a .py file",
            _SCHEME_EXAMPLES["python"],
        )  # fmt: skip
    here = os.getcwd()
    search = ""
    found = _find_top(parts[0])
    if found is None:
        found = importlib.machinery.PathFinder.find_spec(parts[0], [here])
        search = here
    if found is None:
        hint = _did_you_mean(parts[0], _modules_in([here, *sys.path]) | set(sys.modules),
                             lambda s: f"python:{s}")  # fmt: skip
        file_hint = f"did you mean 'python:{target}.py'?" if os.path.isfile(target + ".py") else ""
        raise UnknownImplementation(
            argument, spec,
            f"module {parts[0]!r} cannot be imported: it is neither on sys.path nor in the "
            f"current folder ({here})",
            _join(file_hint or hint, "give a module name or a path to a .py file"),
        )  # fmt: skip
    for depth in range(1, len(parts)):
        locations = found.submodule_search_locations
        parent = ".".join(parts[:depth])
        if locations is None:
            raise UnknownImplementation(
                argument, spec, f"{parent!r} is a module, not a package: it has no "
                f"{parts[depth]!r}", f"did you mean 'python:{parent}'?",
            )  # fmt: skip
        name = ".".join(parts[: depth + 1])
        sub = _find_sub(name, list(locations))
        if sub is None:
            known = {m.rpartition(".")[2] for m in sys.modules if m.startswith(parent + ".")}
            prefix = f"python:{parent}."
            hint = _did_you_mean(parts[depth], _modules_in(locations) | known,
                                 prefix.__add__)  # fmt: skip
            raise UnknownImplementation(
                argument, spec, f"package {parent!r} has no module {parts[depth]!r}",
                hint or f"its modules: {', '.join(sorted(_modules_in(locations))) or 'none'}",
            )  # fmt: skip
        found = sub
    return PythonTarget(target, search=search)


def _find_top(name: str) -> Any:
    """The spec of a top-level module on ``sys.path`` (or built in), or None. A top-level
    name's finders look, they import nothing."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # in sys.modules without a spec: it exists
        return importlib.machinery.ModuleSpec(name, None) if name in sys.modules else None


def _find_sub(name: str, locations: list[str]) -> Any:
    """The spec of submodule ``name`` in its package's ``locations``, from the finders the
    import system would ask (an editable install maps subpackages with its own), or None; the
    package itself is not imported."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            found = find(name, locations)
        except (ImportError, ValueError, TypeError):
            continue
        if found is not None:
            return found
    return None


def _resolve_file(spec: str, target: str, argument: str) -> PythonTarget:
    path = Path(target).expanduser()
    shown = f"{target} (from {os.getcwd()})" if not path.is_absolute() else target
    try:
        absolute = path.resolve(strict=False)
        exists, is_dir = absolute.exists(), absolute.is_dir()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        raise UnknownImplementation(argument, spec, f"{shown} cannot be read ({exc})") from None
    if not exists:
        folder = path.parent if str(path.parent) else Path(".")
        try:
            siblings = [p.name for p in folder.iterdir()
                        if p.suffix == ".py" and p.name != path.name]  # fmt: skip
        except OSError:
            siblings = []
        hint = _did_you_mean(path.name, siblings,
                             lambda s: f"python:{(path.parent / s).as_posix()}")  # fmt: skip
        if not hint and not target.endswith(".py") and path.with_suffix(".py").is_file():
            hint = f"did you mean 'python:{target}.py'?"
        raise UnknownImplementation(
            argument, spec, f"no file {shown}", hint or "give the path of your .py file"
        )
    if is_dir:
        if (absolute / "__init__.py").is_file() and absolute.name.isidentifier():
            return PythonTarget(absolute.name, search=str(absolute.parent))
        raise UnknownImplementation(
            argument, spec, f"{shown} is a folder, not a .py file or a package",
            "give the path of the .py file that defines verify_draft",
        )  # fmt: skip
    if absolute.suffix != ".py":
        raise UnknownImplementation(
            argument, spec, f"{shown} is not a .py file",
            "a python: file is Python source ending in .py; a compiled library is ffi:path",
        )  # fmt: skip
    return PythonTarget(absolute.stem, path=str(absolute), search=str(absolute.parent))


def _check_library(spec: str, target: str, argument: str = "impl") -> None:
    """An ``ffi:`` path that names an existing shared object (by its first bytes).

    Raises:
        UnknownImplementation: no path, no such file, a folder, or not a shared object.
    """
    if not target:
        raise UnknownImplementation(argument, spec, "ffi: needs a path", _SCHEME_EXAMPLES["ffi"])
    path = Path(target).expanduser()
    shown = f"{target} (from {os.getcwd()})" if not path.is_absolute() else target
    try:
        if path.is_symlink() and not path.exists():
            raise UnknownImplementation(
                argument, spec, f"{shown} cannot be read: it is a symbolic link that leads "
                "nowhere (a loop, or a missing target)", "give the path of the library itself",
            )  # fmt: skip
        if not path.exists():
            folder = path.parent if str(path.parent) else Path(".")
            try:
                libraries = [p.name for p in folder.iterdir()
                             if p.suffix in (".so", ".dylib", ".dll") and p.name != path.name]
            except OSError:
                libraries = []
            hint = _did_you_mean(path.name, libraries,
                                 lambda s: f"ffi:{(path.parent / s).as_posix()}")  # fmt: skip
            raise UnknownImplementation(
                argument, spec, f"no such file: {shown}",
                hint or "build the library first (it is a shared object: cc -shared -fPIC ...)",
            )  # fmt: skip
        if path.is_dir():
            raise UnknownImplementation(
                argument, spec, f"{shown} is a folder", "give the path of the shared library"
            )
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError as exc:  # unreadable, a symlink loop
        raise UnknownImplementation(
            argument, spec, f"{shown} cannot be read ({exc.strerror or exc})"
        ) from None
    if not head.startswith(_LIBRARY_MAGIC):
        kind = "Python source (use python:" + target + ")" if path.suffix == ".py" else \
            f"a file starting with {head!r}"
        raise UnknownImplementation(
            argument, spec, f"{shown} is not a loadable shared library: it is {kind}",
            "build a shared library exporting spec_verify.h's symbols "
            "(cc -shared -fPIC -o libmine.so mine.c) and give its path",
        )  # fmt: skip


def check_spec(spec: Any, argument: str = "impl") -> None:
    """Check that a spec string names something loadable, quickly and without starting a
    worker or importing the implementation: the scheme, that a ``python:`` module or file and
    an ``ffi:`` library exist (the library is a shared object), a ``mutant:`` id. What only
    loading can tell (a module that fails to import, has no ``verify_draft``, a library
    without the symbols) is left to ``load_implementation``.

    Raises:
        UnknownImplementation: the spec names nothing loadable; the message gives the rule and
            the closest valid name.
    """
    if not isinstance(spec, str) or not spec:
        raise UnknownImplementation(argument, spec, "must be a non-empty string", _SPEC_FORMS)
    if spec in ("reference", "transformers", "vllm"):
        return
    scheme, sep, rest = spec.partition(":")
    if not sep or scheme not in SCHEMES:
        raise UnknownImplementation(
            argument, spec, f"unknown scheme {scheme!r}" if sep else "names no scheme",
            _join(_scheme_hint(spec, scheme, rest, bool(sep)), f"use {_SPEC_FORMS}"),
        )  # fmt: skip
    if scheme == "python":
        resolve_python(spec, rest, argument)
    elif scheme == "ffi":
        _check_library(spec, rest, argument)
    elif scheme == "mutant":
        check_mutant(spec, rest, argument)


def _scheme_hint(spec: str, scheme: str, rest: str, has_scheme: bool) -> str:
    if has_scheme:
        return _did_you_mean(scheme, [*SCHEMES, "reference"], lambda s: f"{s}:{rest}")
    if spec.endswith(".py") or os.path.isfile(spec + ".py"):
        return f"did you mean 'python:{spec}'?"
    if spec.endswith((".so", ".dylib", ".dll")):
        return f"did you mean 'ffi:{spec}'?"
    named = _did_you_mean(spec, ["reference", "transformers", "vllm"])
    if named:
        return named
    if all(part.isidentifier() for part in spec.split(".")):
        return f"did you mean 'python:{spec}'?"
    return ""


def check_mutant(spec: str, rest: str, argument: str) -> None:
    from spec_verify.mutants.catalogue import CATALOGUE, UnknownMutant, mutant_by_id

    try:
        mutant_by_id(rest)
    except UnknownMutant as exc:
        ids = [m.id for m in CATALOGUE]
        short = rest[:1] + "0" + rest[1:]  # s3 for s03
        hint = (f"did you mean 'mutant:{short}'?" if len(rest) == 2 and short in ids
                else _did_you_mean(rest, ids, lambda s: f"mutant:{s}"))  # fmt: skip
        raise UnknownImplementation(argument, spec, exc.rule, _join(hint, exc.fix)) from None


def check_generator(spec: Any, argument: str) -> None:
    """A ``compare`` generator: ``python:module:function`` or ``python:path/to/file.py:function``
    whose module or file exists (the function is looked up by the worker that imports it).

    Raises:
        UnknownImplementation: not of that form, or the module or file is nowhere.
    """
    target, sep, function = "", "", ""
    if isinstance(spec, str) and spec.startswith("python:"):
        target, sep, function = spec[len("python:") :].rpartition(":")
    if not (sep and target and function.isidentifier()):
        raise UnknownImplementation(
            argument, spec,
            "must name a generator as python:module:function or python:file.py:function",
            "e.g. python:mygen:speculative, a function taking a seed and returning token ids",
        )  # fmt: skip
    resolve_python(spec, target, argument)
