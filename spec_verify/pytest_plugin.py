"""The pytest plugin (entry point ``pytest11``): ``--spec-impl=SPEC`` and ready fixtures.

The library is imported lazily (inside fixtures and hooks), so registering the plugin costs a
test session nothing when its options are not used.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["pytest_addoption", "spec_impl"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spec-verify", "speculative sampler verification")
    group.addoption(
        "--spec-impl",
        action="store",
        default="reference",
        metavar="SPEC",
        help="implementation under test: reference, python:pkg.mod, ffi:lib.so, mutant:s03",
    )


@pytest.fixture(scope="session")
def spec_impl(request: pytest.FixtureRequest) -> Any:
    """The implementation under test, loaded from ``--spec-impl``."""
    from .implementations import load_implementation

    return load_implementation(request.config.getoption("--spec-impl"))
