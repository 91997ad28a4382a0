"""Argument checks shared by the statistics: each returns the checked value or raises
``InvalidArgument`` naming the argument, its value, the rule and an example of a valid one.

>>> check_open_unit("alpha", 1e-6)
1e-06
>>> check_int("n", 2.5, 1)
Traceback (most recent call last):
...
spec_verify.errors.InvalidArgument: n=2.5: must be an integer; e.g. n=1
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from spec_verify.errors import InvalidArgument

__all__ = ["check_int", "check_open_unit", "check_real"]


def check_int(name: str, value: Any, minimum: int) -> int:
    """An integer (not a bool, not a float) at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgument(name, value, "must be an integer", f"e.g. {name}={max(minimum, 1)}")
    if value < minimum:
        raise InvalidArgument(name, value, f"must be at least {minimum}")
    return int(value)


def check_real(name: str, value: Any) -> float:
    """A finite real number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(name, value, "must be a real number")
    result = float(value)
    if not math.isfinite(result):
        raise InvalidArgument(name, value, "must be finite")
    return result


def check_open_unit(name: str, value: Any) -> float:
    """A probability strictly between 0 and 1 (alpha, power)."""
    result = check_real(name, value)
    if not 0 < result < 1:
        example = "0.99" if name == "power" else "1e-6"
        raise InvalidArgument(name, value, "must be in (0, 1)", f"e.g. {name}={example}")
    return result
