"""Usage errors, said once: ``spec-verify CMD: error: OPTION VALUE: rule; fix``.

Every command reports a bad argument through ``usage_line`` and exits ``ExitCode.USAGE_ERROR``
before any work (no worker started, no report printed). The library's errors name their
argument as the API spells it (``impl``, ``n``); each command maps those names to its options.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["EXIT_CODES_IN_ONE_LINE", "usage_line"]

# The epilog of each command's --help (``spec-verify --help`` has the table, ``_main``).
EXIT_CODES_IN_ONE_LINE = (
    "exit codes: 0 passed, 1 failed (a verdict on the implementation), 2 usage error (nothing "
    "was checked), 3 internal error, 130 interrupted."
)


def usage_line(
    command: str, error: Any, option_by_argument: Mapping[str, str] | None = None
) -> str:
    """One line for an ``InvalidArgument``: the option, its value, the rule, then the fix.

    >>> from spec_verify.errors import InvalidArgument
    >>> usage_line("check", InvalidArgument("impl", "pyhton:x", "unknown scheme 'pyhton'",
    ...            "did you mean 'python:x'?"), {"impl": "--impl"})
    "spec-verify check: error: --impl 'pyhton:x': unknown scheme 'pyhton'; did you mean 'python:x'?"
    """
    argument = getattr(error, "argument", None)
    if argument is None:
        return f"spec-verify {command}: error: {error}"
    option = (option_by_argument or {}).get(argument, argument)
    value = getattr(error, "value", "")
    shown = repr(value) if isinstance(value, str) else str(value)
    if len(shown) > 120:  # an array or a long path: the rule is what matters
        shown = shown[:117] + "..."
    text = f"{option} {shown}: {error.rule}"
    if getattr(error, "fix", ""):
        text += f"; {error.fix}"
    return f"spec-verify {command}: error: {text}"
