"""The package's faces: sorted ``__all__`` that names what exists, and a light top level."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = [
    "spec_verify",
    "spec_verify.adapters",
    "spec_verify.cli",
    "spec_verify.endtoend",
    "spec_verify.exact",
    "spec_verify.mutants",
    "spec_verify.properties",
    "spec_verify.reference",
    "spec_verify.stats",
    "spec_verify.tiers",
]


def isort_style(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then CamelCase, then the rest, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_names_what_exists(name):
    module = importlib.import_module(name)
    assert list(module.__all__) == sorted(module.__all__, key=isort_style)
    for attribute in module.__all__:
        assert hasattr(module, attribute), f"{name}.{attribute}"


def test_importing_the_reference_does_not_import_scipy_or_sympy():
    code = (
        "import sys, spec_verify.reference; "
        "print(sorted(m for m in ('scipy', 'sympy', 'hypothesis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_building_the_cli_parser_imports_no_numpy_or_scipy():
    """``spec-verify --help`` stays cheap: every sub-command's module is light until it runs."""
    code = (
        "import sys; from spec_verify.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('numpy', 'scipy', 'sympy', 'hypothesis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_runs_and_lists_every_command():
    out = subprocess.run(
        [sys.executable, "-m", "spec_verify.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for command in ("check", "prove", "grade", "power", "mutants", "demo"):
        assert command in out.stdout


def test_importing_the_top_level_is_light_and_its_names_load_on_use():
    code = (
        "import sys, spec_verify; heavy = 'numpy' in sys.modules; "
        "spec_verify.run_checks; print(heavy, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_every_package_in_the_tree_is_installed():
    """pyproject lists packages by hand: a new subpackage missing there is absent from a
    regular (non-editable) install although every editable test passes."""
    import pathlib

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = pathlib.Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        "spec_verify." + ".".join(init.parent.relative_to(root / "spec_verify").parts)
        for init in (root / "spec_verify").rglob("__init__.py")
    }
    found = {name.rstrip(".") for name in found}
    assert found - listed == set(), f"add to [tool.setuptools] packages: {sorted(found - listed)}"


@pytest.mark.parametrize("package", ["spec_verify.exact", "spec_verify.stats"])
def test_the_engines_import_no_tier_and_no_adapter(package):
    """DESIGN.md's dependency directions: exact/ and stats/ stand alone."""
    code = (
        f"import sys, {package}; "
        "print(sorted(m for m in sys.modules if m.startswith(('spec_verify.tiers', "
        "'spec_verify.adapters', 'spec_verify.runner'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _public_callables():
    import inspect

    for name in PACKAGES:
        module = importlib.import_module(name)
        for attribute in module.__all__:
            value = getattr(module, attribute)
            if inspect.isclass(value) or inspect.isfunction(value):
                yield f"{name}.{attribute}", value


# Ids by name only: a function's repr holds its address, which differs between xdist workers.
@pytest.mark.parametrize(
    ("name", "value"), [pytest.param(n, v, id=n) for n, v in _public_callables()]
)
def test_every_public_function_and_class_has_a_docstring(name, value):
    assert (value.__doc__ or "").strip(), f"{name} has no docstring"
