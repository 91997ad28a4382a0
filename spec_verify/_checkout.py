"""Keep a source checkout from shadowing the installed package.

``python -m pytest`` (and ``python -c`` or ``python -m spec_verify``) run from a clone put the
clone first on ``sys.path``, so ``import spec_verify`` finds the source folder. There the
package is incomplete: ``reference/``, ``properties/`` and ``mutants/`` become
``spec_verify.reference`` and friends only when installed (pyproject's ``package-dir``). An
editable install maps them with its own finder, so the source folder is the package; after a
regular install the installed copy is the package, and the source folder must step aside, or
the tests would run against a package with no reference at all (as tox and distribution
packagers run a suite: install, then test from the source folder).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from pathlib import Path

__all__ = ["installed_copy"]


def _same(entry: str, folder: Path) -> bool:
    try:
        return Path(entry or os.curdir).resolve() == folder
    except OSError:  # an entry that cannot be resolved names no folder of ours
        return False


def installed_copy(package_file: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of the installed ``spec_verify`` when ``package_file`` (the ``__init__`` being
    imported) belongs to a source checkout and a regular install exists elsewhere on
    ``sys.path``; None when ``package_file`` is the installed package itself, or an editable
    install's source (whose finder maps the subpackages), or a bare checkout."""
    here = Path(package_file).resolve().parent
    if (here / "reference").is_dir():  # installed: reference/ was mapped into the package
        return None
    root = here.parent
    if not (root / "reference" / "CONTRACT.md").is_file():
        return None
    others = [entry for entry in sys.path if not _same(entry, root)]
    found = importlib.machinery.PathFinder.find_spec(here.name, others)
    if found is None or found.origin is None:
        return None
    if not (Path(found.origin).resolve().parent / "reference").is_dir():
        return None
    return found
