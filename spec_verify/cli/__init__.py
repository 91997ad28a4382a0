"""The ``spec-verify`` command: one module per sub-command, imported only when it runs.

``--help`` imports no numpy or scipy (a test checks it).
"""

from spec_verify._exports import check_exports
from spec_verify.cli._main import build_parser, main

__all__ = ["build_parser", "main"]

check_exports(__name__, __all__, globals())
