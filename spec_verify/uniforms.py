"""Uniform sources for driving an implementation: scripted, counting, and none at all.

Any object with ``random() -> float`` in ``[0, 1)`` is a uniform source (the contract). An
implementation may instead declare that the uniforms it consumes lie in ``(0, 1]``, the
convention of CUDA's ``curand_uniform`` that FlashInfer's kernels draw with, by the capability
``uniforms_open_closed`` (``UniformInterval``, ``uniform_interval``): the edge tier then feeds it
``1.0`` and never ``0.0``. These are the sources the tiers use, offered to test authors too:

- ``ScriptedUniforms(script, then=..., limit=...)`` returns ``script`` in order; past its end
  it returns ``then``, or raises ``DrewPastScript`` when ``then`` is None (a draw the contract
  does not allow); ``limit`` caps all draws with ``TooManyDraws``, a ``BaseException`` so an
  implementation's ``except Exception`` cannot swallow it. It counts ``drawn``.
- ``CountingUniforms(source)`` wraps any source and counts its draws.
- ``NoDraws(what)`` raises on any draw (greedy verification draws nothing).

>>> source = ScriptedUniforms((0.25, 0.75), then=0.5)
>>> [source.random() for _ in range(3)], source.drawn
([0.25, 0.75, 0.5], 3)
>>> strict = ScriptedUniforms((0.1,))
>>> strict.random()
0.1
>>> strict.random()
Traceback (most recent call last):
...
spec_verify.uniforms.DrewPastScript: drew uniform #2; the script allows 1 here
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TypeVar

__all__ = [
    "OPEN_CLOSED",
    "CountingUniforms",
    "DrewPastScript",
    "NoDraws",
    "ScriptedUniforms",
    "TooManyDraws",
    "UniformInterval",
    "results_or_raised",
    "uniform_interval",
]

T = TypeVar("T")
Item = TypeVar("Item")


# The capability by which an implementation declares that its uniforms lie in (0, 1].
OPEN_CLOSED = "uniforms_open_closed"


class UniformInterval(str, enum.Enum):
    """Where the uniforms an implementation consumes lie: the contract's ``[0, 1)`` or
    ``(0, 1]`` (``curand_uniform``). Correct samplers differ between the two only in their
    comparisons: ``u < p(x)/q(x)`` accepts on ``[0, 1)``, ``u <= p(x)/q(x)`` on ``(0, 1]``; each
    accepts with probability ``min(1, p(x)/q(x))`` and never a token with ``p(x) = 0``.

    >>> UniformInterval.OPEN_CLOSED.contains(1.0), UniformInterval.CLOSED_OPEN.contains(1.0)
    (True, False)
    >>> uniform_interval({"verify_draft", OPEN_CLOSED})
    <UniformInterval.OPEN_CLOSED: '(0, 1]'>
    """

    CLOSED_OPEN = "[0, 1)"
    OPEN_CLOSED = "(0, 1]"

    def contains(self, u: float) -> bool:
        """Whether ``u`` lies in this interval."""
        if self is UniformInterval.CLOSED_OPEN:
            return 0.0 <= u < 1.0
        return 0.0 < u <= 1.0


def uniform_interval(capabilities: Collection[str]) -> UniformInterval:
    """The interval an implementation with ``capabilities`` declares (``[0, 1)`` unless it
    offers ``OPEN_CLOSED``)."""
    if OPEN_CLOSED in capabilities:
        return UniformInterval.OPEN_CLOSED
    return UniformInterval.CLOSED_OPEN


class DrewPastScript(AssertionError):
    """An implementation drew more uniforms than the contract allows for its input."""


class TooManyDraws(BaseException):
    """A draw past a hard limit; a BaseException so the implementation cannot swallow it."""


class ScriptedUniforms:
    """``random()`` returns the script in order, then ``then`` (or raises); counts ``drawn``."""

    __slots__ = ("drawn", "limit", "script", "then")

    def __init__(
        self, script: Sequence[float] = (), *, then: float | None = None, limit: int | None = None
    ) -> None:
        self.script = tuple(script)
        self.then = then
        self.limit = limit
        self.drawn = 0

    def random(self) -> float:
        i = self.drawn
        self.drawn += 1
        if self.limit is not None and self.drawn > self.limit:
            raise TooManyDraws
        if i < len(self.script):
            return self.script[i]
        if self.then is None:
            raise DrewPastScript(
                f"drew uniform #{self.drawn}; the script allows {len(self.script)} here"
            )
        return self.then

    def as_data(self) -> list[Any]:
        """Its state as data, ``[script, then, limit, drawn]``: how a worker is sent it (one
        round trip for the call instead of one per draw)."""
        return [[float(u) for u in self.script], self.then, self.limit, self.drawn]

    def __repr__(self) -> str:
        return f"ScriptedUniforms({list(self.script)!r}, then={self.then!r}, drawn={self.drawn})"


def results_or_raised(call: Callable[[Item], T], items: Iterable[Item]) -> list[T | BaseException]:
    """``call(item)`` for each item, in order: its value, or the exception it raised
    (``TooManyDraws`` included: a batch of scripted calls reports each call's own end).

    >>> results_or_raised(lambda x: 1 / x, [1, 0])
    [1.0, ZeroDivisionError('division by zero')]
    """
    out: list[T | BaseException] = []
    for item in items:
        try:
            out.append(call(item))
        except (Exception, TooManyDraws) as exc:
            out.append(exc)
    return out


class CountingUniforms:
    """A uniform source that counts its draws (it wraps any other source).

    >>> import random
    >>> source = CountingUniforms(random.Random(0))
    >>> _ = source.random(), source.random()
    >>> source.drawn
    2
    """

    __slots__ = ("_source", "drawn")

    def __init__(self, source: Any) -> None:
        self._source = source
        self.drawn = 0

    def random(self) -> float:
        self.drawn += 1
        value: float = float(self._source.random())
        return value

    def __repr__(self) -> str:
        return f"CountingUniforms(drawn={self.drawn})"


class NoDraws:
    """A source that must not be drawn from: greedy verification draws nothing."""

    __slots__ = ("what",)

    def __init__(self, what: str = "greedy verification") -> None:
        self.what = what

    def random(self) -> float:
        raise DrewPastScript(f"{self.what} drew a uniform; it must draw none")
