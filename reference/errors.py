"""The reference's own errors (it imports nothing from the harness).

Each subclasses ``ValueError`` (or ``TypeError``) so callers can catch the builtin, carries its
data as attributes, and pickles. The message reads: argument, value, rule, fix.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ContextTooLong",
    "ContractError",
    "InvalidDraft",
    "InvalidLogits",
    "InvalidParams",
    "InvalidPrompt",
    "InvalidTree",
]


class ContractError(ValueError):
    """An argument breaks the contract of seed section 4."""

    def __init__(self, argument: str, value: Any, rule: str, fix: str = "") -> None:
        self.argument = argument
        self.value = value
        self.rule = rule
        self.fix = fix
        text = f"{argument}={_short(value)}: {rule}"
        if fix:
            text += f"; {fix}"
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.argument, self.value, self.rule, self.fix))


class InvalidLogits(ContractError):
    """Target logits with the wrong shape, NaN, or no finite entry."""


class InvalidDraft(ContractError):
    """Draft ids or draft probabilities that break the rules (shape, range, q(x) = 0)."""


class InvalidTree(InvalidDraft):
    """A draft tree with a cycle, an orphan, a parent after its child, a token out of range, or
    siblings that repeat a token where the rule forbids it (the message names the node)."""


class InvalidParams(ContractError):
    """Sampling parameters out of range, or k < 0."""


class InvalidPrompt(ContractError):
    """An empty prompt, ids out of range."""


class ContextTooLong(InvalidPrompt):
    """A prompt that leaves the model no position to generate into."""


def _short(value: Any, limit: int = 80) -> str:
    if not isinstance(value, type) and hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<array shape={tuple(value.shape)} dtype={value.dtype}>"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
