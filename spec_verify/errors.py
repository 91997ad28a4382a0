"""One base exception for the whole project; user errors also inherit the matching builtin.

Every error carries its data as attributes and pickles (errors cross process boundaries:
worker processes of the FFI adapter, the grader's mutant runs).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BudgetExhausted",
    "ImplementationError",
    "InvalidArgument",
    "InvalidDistribution",
    "SpecVerifyError",
    "UnknownImplementation",
]


class SpecVerifyError(Exception):
    """Base class of every error this project raises on purpose.

    ``sandbox``: set on the error a worker's failed load raises, to what its sandbox held
    (``_sandbox.Protections`` as JSON) when the implementation's code ran; None when no code of
    the implementation ran (the harness refused the spec first).
    """

    sandbox: dict[str, Any] | None = None


class InvalidArgument(SpecVerifyError, ValueError):
    """An argument breaks a rule: names the argument, its value, the rule and the fix."""

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


class InvalidDistribution(InvalidArgument):
    """A probability vector that is negative, non-finite or does not sum to one."""


class UnknownImplementation(InvalidArgument):
    """An implementation spec string that names nothing loadable."""


class ImplementationError(SpecVerifyError):
    """The implementation under test crashed, hung or returned garbage.

    This is a verdict on the implementation, never on the harness: checks catch it and report
    a failed check, and the run goes on.
    """

    def __init__(self, impl: str, call: str, reason: str) -> None:
        self.impl = impl
        self.call = call
        self.reason = reason
        super().__init__(f"{impl}: {call} {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.impl, self.call, self.reason))


class BudgetExhausted(BaseException):
    """A call was not made, or was stopped, because the run's whole-time budget ran out
    (``spec-verify check --budget``).

    A ``BaseException``, like ``KeyboardInterrupt``: it must pass through every tier's
    ``except Exception`` (which would count it as one more failing case) up to the runner,
    which reports the unfinished tier as ERROR, never as a pass or as the implementation's
    wrong answers.
    """

    def __init__(self, impl: str, call: str, budget: float | None = None) -> None:
        shown = f" of {budget:g} s" if budget is not None else ""
        self.impl = impl
        self.call = call
        self.budget = budget
        self.reason = (
            f"was not run: the run's budget{shown} is exhausted (raise --budget, or use --quick)"
        )
        super().__init__(f"{impl}: {call} {self.reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.impl, self.call, self.budget))


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
