"""Running a reference module's doctests, here and under the grader's proxy.

In-process the doctests must exist and pass. Under the grader (``spec-verify grade`` and the
kill matrix, ``mutants/_proxy.py``), ``spec_verify.reference`` is a proxy of another process
that carries no text of the reference: no docstrings, so no doctests (docs/grading.md, what
cannot be proxied, says why). There the test is skipped, by name and reason, instead of
passing on zero examples; ``tests/test_doctests.py`` runs every doctest in-process.
"""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest


def served_by_the_grader(module: ModuleType) -> bool:
    """A proxy module of the grader: built in memory, it has no ``__file__``."""
    return getattr(module, "__file__", None) is None


def check_doctests(module: ModuleType) -> None:
    if served_by_the_grader(module):
        pytest.skip(f"{module.__name__} is the grader's proxy: no docstrings, no doctests "
                    "(docs/grading.md)")
    result = doctest.testmod(module)
    assert result.attempted > 0, f"{module.__name__} has no doctests"
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed"
