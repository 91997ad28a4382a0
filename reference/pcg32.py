"""PCG32 (O'Neill's XSH-RR 64/32), the request stream every port must reproduce bit for bit.

Seeding follows ``pcg32_srandom_r``; one uniform is one 32-bit output times 2**-32.

>>> rng = Pcg32(42, 54)
>>> [hex(rng.next_u32()) for _ in range(3)]
['0xa15c02b7', '0x7b47f409', '0xba1d3330']
"""

from __future__ import annotations

from .errors import InvalidParams

__all__ = ["MULTIPLIER", "REQUEST_STREAM", "Pcg32", "request_rng"]

MULTIPLIER = 6364136223846793005
REQUEST_STREAM = 54  # the initseq of every request stream
_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1
_TO_UNIT = 1.0 / 4294967296.0  # 2**-32: exact, so random() < 1 always


class Pcg32:
    """A PCG32 generator; ``random()`` makes it a uniform source."""

    __slots__ = ("_inc", "_state")

    def __init__(self, initstate: int, initseq: int = REQUEST_STREAM) -> None:
        for name, value in (("initstate", initstate), ("initseq", initseq)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _MASK64:
                raise InvalidParams(name, value, "must be an integer in [0, 2**64)")
        self._state = 0
        self._inc = ((initseq << 1) | 1) & _MASK64
        self._step()
        self._state = (self._state + initstate) & _MASK64
        self._step()

    def _step(self) -> None:
        self._state = (self._state * MULTIPLIER + self._inc) & _MASK64

    def next_u32(self) -> int:
        """The next 32-bit output."""
        old = self._state
        self._step()
        xorshifted = (((old >> 18) ^ old) >> 27) & _MASK32
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & _MASK32

    def random(self) -> float:
        """A uniform in [0, 1): ``next_u32() * 2**-32``."""
        return self.next_u32() * _TO_UNIT

    def __repr__(self) -> str:
        return f"Pcg32(state={self._state:#x}, inc={self._inc:#x})"


def request_rng(seed: int) -> Pcg32:
    """The request stream for ``seed``: ``Pcg32(initstate=seed, initseq=REQUEST_STREAM)``."""
    return Pcg32(seed, REQUEST_STREAM)
