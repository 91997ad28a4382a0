"""Every doctest in the installed package runs (the seed's hand examples are doctests)."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

# Entry scripts run on import; they hold no doctests.
_NOT_IMPORTED = ("__main__", "_worker", "_ffi_worker")


# reference/, properties/ and mutants/ install under spec_verify from their own folders
# (package-dir), which an editable install does not show on spec_verify.__path__: walk each.
_ROOTS = ("spec_verify", "spec_verify.reference", "spec_verify.properties", "spec_verify.mutants")


def _optional(name: str) -> bool:
    """An implementation module whose extra is not installed (``--impl vllm`` without vLLM)."""
    return name == "spec_verify.adapters._vllm" and importlib.util.find_spec("vllm") is None


def _modules() -> list[str]:
    names = set(_ROOTS)
    for root in _ROOTS:
        package = importlib.import_module(root)
        for info in pkgutil.walk_packages(package.__path__, f"{root}."):
            if info.name.rsplit(".", 1)[-1] not in _NOT_IMPORTED and not _optional(info.name):
                names.add(info.name)
    return sorted(names)


MODULES = _modules()


def test_the_walk_finds_every_package() -> None:
    for package in ("reference", "properties", "mutants", "exact", "stats", "tiers", "adapters"):
        assert f"spec_verify.{package}" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed in {name}"
