"""The transport's value and exception codec: its registration hook, and what stays refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from spec_verify.ipc.codec import (
    NotData,
    RemoteValueError,
    decode_error,
    decode_value,
    encode_error,
    encode_value,
    register_error,
    register_value,
)
from spec_verify.ipc.errors import RemoteError, WireError


@dataclass(frozen=True)
class Point:
    x: int
    y: int


def _point(fields: Any) -> Point:
    if not (isinstance(fields, dict) and set(fields) == {"x", "y"}):
        raise WireError("a point without exactly x and y")
    return Point(**fields)


class Refused(Exception):
    def __init__(self, argument: str, value: object, rule: str) -> None:
        super().__init__(f"{argument}={value!r}: {rule}")
        self.argument, self.value, self.rule = argument, value, rule


register_value(Point, "$test-point", lambda p: {"x": p.x, "y": p.y}, _point)
register_error(Refused, ("argument", "rule"), data="value")


def test_a_registered_record_crosses_by_value_and_is_rebuilt_by_its_validator() -> None:
    arrays: dict[str, Any] = {}
    data = encode_value((Point(1, 2), np.arange(3)), arrays)
    assert data["$t"][0] == {"$test-point": {"$d": [["x", 1], ["y", 2]]}}
    back = decode_value(data, arrays)
    assert back[0] == Point(1, 2) and np.array_equal(back[1], np.arange(3))
    with pytest.raises(WireError, match="exactly x and y"):  # a forged record
        decode_value({"$test-point": {"$d": [["x", 1]]}}, {})


def test_an_unregistered_type_does_not_cross_and_its_tag_is_refused() -> None:
    class Other:
        pass

    with pytest.raises(NotData, match="Other"):
        encode_value(Other(), {})
    with pytest.raises(WireError, match="not a value"):
        decode_value({"$nobody": 1}, {})


def test_a_tag_can_be_registered_once_and_never_over_the_schema_s_own() -> None:
    with pytest.raises(ValueError, match="taken"):
        register_value(Point, "$test-point", lambda p: {}, _point)
    with pytest.raises(ValueError, match="taken"):
        register_value(Point, "$t", lambda p: {}, _point)
    with pytest.raises(ValueError, match="registered already"):
        register_error(Refused, ("argument",))


def test_a_registered_error_crosses_with_its_fields_any_other_as_text() -> None:
    error = decode_error(encode_error(Refused("k", [1, 2], "must be short")))
    assert type(error) is Refused and (error.argument, error.value, error.rule) == (
        "k", [1, 2], "must be short")  # fmt: skip
    other = decode_error(encode_error(ValueError("bad input")))
    assert type(other) is RemoteValueError and isinstance(other, RemoteError)
    assert (other.type_name, other.message) == ("ValueError", "bad input")
    with pytest.raises(WireError, match="unknown error type"):  # a type name never registered
        decode_error({"type": "SystemExit"})


@pytest.mark.parametrize("data", [
    {"$s": [1]}, {"$fs": [1]}, {"$b": "a0"}, {"$rg": [0, 3, 1]}, {"$c": [1.0, 2.0]},
    {"$fr": ["1", "3"]}, {"$sl": [None, 2, None]}, {"$el": 0}, {"$i": "1" * 30},
    {"$g": ["<f2", "0000"]}, {"$ar": ["a0", "<f2", [1]]}, {"$dt": "<f2"},
    {"$ty": "builtins.object"}, {"$h": [1, "key"]},
])  # fmt: skip
def test_the_check_workers_schema_refuses_the_grader_s_wide_tags(data: Any) -> None:
    arrays = {"a0": np.zeros(2, np.uint8)}
    with pytest.raises(WireError):
        decode_value(data, arrays, lambda tag, body: body)
    decode_value(data, arrays, lambda tag, body: body, wide=True)  # the control: wide reads it


@pytest.mark.parametrize("value", [{1}, b"x", 1 + 2j, slice(1), np.complex64(1), object])
def test_the_check_workers_schema_sends_no_wide_value(value: Any) -> None:
    with pytest.raises(NotData):
        encode_value(value, {})
    encode_value(value, {}, wide=True)  # the control: the grader's schema carries it
