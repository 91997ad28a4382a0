"""The reference as source files: where it lives, its text, and the canary built from it.

``mutants/`` knows the reference only as source (DESIGN.md): the files are found through the
import system's spec without executing the package, read as text, and every run (clean, canary,
mutant) gets a full copy of the tree, changed or not.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

from spec_verify.errors import SpecVerifyError

__all__ = ["CANARY_MESSAGE", "canary_sources", "reference_dir", "reference_sources"]

REFERENCE_PACKAGE = "spec_verify.reference"
CANARY_MESSAGE = "canary run: every function of the reference raises"

# Appended to every module of the canary copy. It replaces each function and method defined in
# the module (exceptions excepted) by one that raises, so any test that calls the reference
# fails, then removes itself. RuntimeError, not ValueError: a suite that expects the contract's
# ValueErrors must not pass the canary by accident.
_CANARY_EPILOGUE = f'''

def _canary_disable(namespace):
    import functools
    import inspect

    def disabled(function):
        @functools.wraps(function)
        def raiser(*args, **kwargs):
            raise RuntimeError({CANARY_MESSAGE!r})

        return raiser

    module = namespace["__name__"]
    for name, value in list(namespace.items()):
        if getattr(value, "__module__", None) != module:
            continue
        if inspect.isfunction(value):
            namespace[name] = disabled(value)
        elif inspect.isclass(value) and not issubclass(value, BaseException):
            for attribute, member in list(vars(value).items()):
                if inspect.isfunction(member):
                    setattr(value, attribute, disabled(member))


_canary_disable(globals())
del _canary_disable
'''


def reference_dir() -> Path:
    """The folder of the installed ``spec_verify.reference`` package (not imported)."""
    spec = importlib.util.find_spec(REFERENCE_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise SpecVerifyError(f"{REFERENCE_PACKAGE} is not installed as a package")
    return Path(locations[0])


def reference_sources(directory: Path | None = None) -> dict[str, str]:
    """Every file of the reference package (relative name -> text), caches left out."""
    root = reference_dir() if directory is None else directory
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and "__pycache__" not in relative.parts and path.suffix != ".pyc":
            out[relative.as_posix()] = path.read_text(encoding="utf-8")
    if "__init__.py" not in out:
        raise SpecVerifyError(f"{root} holds no __init__.py: not the reference package")
    return out


def canary_sources(sources: Mapping[str, str]) -> dict[str, str]:
    """The canary: the same files, every function and method of every module raising."""
    return {
        name: text + _CANARY_EPILOGUE if name.endswith(".py") else text
        for name, text in sources.items()
    }
