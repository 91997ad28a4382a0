"""The Rust port for a benchmark: the library given on the command line, or built with cargo."""

from __future__ import annotations

import argparse
from typing import Any

from spec_verify.adapters._loader import load_implementation


def add_port_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lib", help="the port's shared library (default: build it)")


def load_port(lib: str | None) -> Any:
    """The ``ffi:`` implementation of ``lib``, building the clean port when it is None."""
    if lib is None:
        from spec_verify.adapters._rust_build import build_port

        lib = str(build_port())
    return load_implementation(f"ffi:{lib}")
