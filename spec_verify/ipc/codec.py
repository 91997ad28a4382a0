"""Values and exceptions as wire data (the message schema that ``frames`` carry).

A value becomes JSON plus named arrays: ``None``, bools, ints, floats and strings as they
are; lists as lists; everything else as a one-key tagged object (``{"$t": [...]}`` a tuple,
``{"$d": [[k, v], ...]}`` a dict, ``{"$a": "name"}`` an array in the frame's arrays,
``{"$h": n}`` a handle to an object held by the sender, ``{"$o": n}`` one held by the
receiver; ``{"$dt": "<f8"}`` a numpy dtype; ``{"$ty": "float32"}`` a plain type by name). A
value that is none of these cannot cross: ``NotData``. Decoding accepts only these shapes and
raises ``WireError`` on anything else; it never builds an object of a type the message names.

The registration hook is how a caller adds its own data-only types without this package
knowing them (``spec_verify.adapters._codec`` registers the contract's): ``register_value``
makes a frozen record type cross by value as ``{tag: fields}``, rebuilt by a function that
validates the fields; ``register_error`` makes an exception type cross with named text fields
(and at most one data field), rebuilt by calling the type with them. Every other exception
crosses as its type name and message (``RemoteError`` and its ``ValueError``,
``AssertionError`` and ``AttributeError`` kinds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from spec_verify.ipc.errors import RemoteError, WireError
from spec_verify.ipc.frames import DTYPES

__all__ = [
    "ArrayTable",
    "NotData",
    "RemoteAssertionError",
    "RemoteAttributeError",
    "RemoteValueError",
    "decode_error",
    "decode_value",
    "encode_error",
    "encode_value",
    "register_error",
    "register_value",
]

_MAX_DEPTH = 24


@dataclass(frozen=True)
class _ValueType:
    kind: type
    tag: str
    fields: Callable[[Any], dict[str, Any]]
    build: Callable[[Any], Any]


@dataclass(frozen=True)
class _ErrorType:
    kind: type[Exception]
    texts: tuple[str, ...]  # fields that cross as text, in the constructor's order
    data: str | None  # the one field that crosses as a value (repr when it cannot), or None
    subclasses: bool  # also for subclasses, under this type's name


_VALUES_BY_TYPE: dict[type, _ValueType] = {}
_VALUES_BY_TAG: dict[str, _ValueType] = {}
_ERRORS: dict[str, _ErrorType] = {}


def register_value(
    kind: type, tag: str, fields: Callable[[Any], dict[str, Any]], build: Callable[[Any], Any]
) -> None:
    """Let objects of exactly ``kind`` cross by value as ``{tag: fields(obj)}``.

    ``build`` gets the decoded fields (any value, from a possibly hostile peer) and returns
    the object or raises ``WireError``. The fields are encoded without handles.
    """
    if not tag.startswith("$") or tag in _RESERVED or tag in _VALUES_BY_TAG:
        raise ValueError(f"tag {tag!r} is taken or does not start with '$'")
    entry = _ValueType(kind, tag, fields, build)
    _VALUES_BY_TYPE[kind] = entry
    _VALUES_BY_TAG[tag] = entry


def register_error(
    kind: type[Exception],
    texts: tuple[str, ...],
    *,
    data: str | None = None,
    subclasses: bool = False,
) -> None:
    """Let exceptions of ``kind`` cross as their fields, rebuilt as ``kind(*fields)``.

    The constructor takes the ``texts`` fields (each sent as ``str``) in order, and ``data``
    (sent as a value, or its repr) after the first text field when given, as the project's
    errors do: ``kind(argument, value, rule, fix)``. With ``subclasses``, a subclass crosses
    as ``kind`` itself.
    """
    if kind.__name__ in _ERRORS or kind.__name__ == "other":
        raise ValueError(f"an error type named {kind.__name__!r} is registered already")
    _ERRORS[kind.__name__] = _ErrorType(kind, texts, data, subclasses)


class NotData(TypeError):
    """A value of a type that cannot cross the wire."""


class RemoteValueError(RemoteError, ValueError):
    """A ``ValueError`` of the implementation's own type (the contract's 'clear error' on bad
    input, from an implementation with its own exception classes)."""


class RemoteAssertionError(RemoteError, AssertionError):
    """An ``AssertionError`` on the other side (the reference models' ``CacheMismatch``)."""


class RemoteAttributeError(RemoteError, AttributeError):
    """An ``AttributeError`` on the other side (so ``hasattr`` on a proxy works)."""


# ---- values -----------------------------------------------------------------------------

Export = Callable[[Any], dict[str, int]]  # an object -> {"$h": n} or {"$o": n}
Resolve = Callable[[str, int], Any]  # ("$h" | "$o", n) -> the object or a proxy of it


class ArrayTable(dict[str, Any]):
    """A frame's arrays by name that sends each array object once: ``encode_value`` names an
    array it has already put here by its first name (a batch whose calls share one input).
    The table holds every array it names, so no ``id`` is reused while it is filled."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[int, str] = {}


def encode_value(  # noqa: PLR0911 -- one return per kind of value
    value: Any, arrays: dict[str, Any], export: Export | None = None, _depth: int = 0
) -> Any:
    """``value`` as JSON data; arrays go into ``arrays`` under fresh names. Objects of other
    types are handed to ``export`` (which returns their handle tag) or raise ``NotData``."""
    if _depth > _MAX_DEPTH:
        raise NotData(f"a value nested deeper than {_MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, float, str)):
        if type(value) not in (bool, int, float, str, type(None)):  # int/str subclasses
            return encode_value(_plain(value), arrays, export, _depth)
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fiub" and value.dtype.itemsize in (1, 4, 8):
            index = arrays.names if isinstance(arrays, ArrayTable) else None
            if index is not None and id(value) in index:
                return {"$a": index[id(value)]}
            name = f"a{len(arrays)}"
            arrays[name] = value
            if index is not None:
                index[id(value)] = name
            return {"$a": name}
    elif isinstance(value, np.generic) and value.dtype.kind in "fiub":
        return value.item()
    elif isinstance(value, np.dtype) and value.kind in "fiub":
        return {"$dt": value.str}
    elif isinstance(value, type) and value in _TYPES.values():
        return {"$ty": next(k for k, v in _TYPES.items() if v is value)}
    elif type(value) in _VALUES_BY_TYPE:  # a registered record: by value, not a handle
        entry = _VALUES_BY_TYPE[type(value)]
        return {entry.tag: encode_value(entry.fields(value), arrays, None, _depth + 1)}
    elif type(value) is list:
        if all(type(v) in _SCALARS for v in value):  # the common case, without recursion
            return list(value)
        return [encode_value(v, arrays, export, _depth + 1) for v in value]
    elif type(value) is tuple:
        return {"$t": [encode_value(v, arrays, export, _depth + 1) for v in value]}
    elif type(value) is dict:
        return {
            "$d": [
                [encode_value(k, arrays, export, _depth + 1),
                 encode_value(v, arrays, export, _depth + 1)]
                for k, v in value.items()
            ]
        }  # fmt: skip
    if export is None:
        raise NotData(f"a {type(value).__name__} cannot cross the process boundary")
    return export(value)


_SCALARS = frozenset({int, float, str, bool, type(None)})
# Types that cross by name (used as dtype= arguments, or compared with isinstance).
_TYPES: dict[str, type] = {
    "int": int, "float": float, "bool": bool, "str": str,
    "float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32,
    "uint32": np.uint32, "uint64": np.uint64, "uint8": np.uint8, "bool_": np.bool_,
}  # fmt: skip
_RESERVED = frozenset({"$t", "$d", "$a", "$h", "$o", "$dt", "$ty", "$r"})


def _plain(value: Any) -> Any:
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def decode_value(  # noqa: PLR0911 -- one return per kind of value
    data: Any, arrays: dict[str, Any], resolve: Resolve | None = None, _depth: int = 0
) -> Any:
    """The value ``encode_value`` encoded (tuples, dicts, arrays, handles via ``resolve``).

    Raises:
        WireError: anything that is not a value of this schema.
    """
    if _depth > _MAX_DEPTH:
        raise WireError(f"a value nested deeper than {_MAX_DEPTH}")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        if all(type(v) in _SCALARS for v in data):
            return data
        return [decode_value(v, arrays, resolve, _depth + 1) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "$t" and isinstance(body, list):
            return tuple(decode_value(v, arrays, resolve, _depth + 1) for v in body)
        if tag == "$d" and isinstance(body, list):
            out = {}
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise WireError("a dict entry is not [key, value]")
                key = decode_value(pair[0], arrays, resolve, _depth + 1)
                try:
                    out[key] = decode_value(pair[1], arrays, resolve, _depth + 1)
                except TypeError as exc:
                    raise WireError(f"a dict key is not hashable: {exc}") from None
            return out
        if tag == "$dt" and isinstance(body, str) and body in DTYPES:
            return np.dtype(body)
        if tag in _VALUES_BY_TAG:
            return _VALUES_BY_TAG[tag].build(decode_value(body, arrays, None, _depth + 1))
        if tag == "$ty" and isinstance(body, str) and body in _TYPES:
            return _TYPES[body]
        if tag == "$a" and isinstance(body, str):
            if body not in arrays:
                raise WireError(f"the value names array {body!r:.40}, which the frame lacks")
            return arrays[body]
        if tag in ("$h", "$o") and type(body) is int and resolve is not None:
            return resolve(tag, body)
    raise WireError(f"not a value of the wire schema: {data!r:.80}")


# ---- errors -----------------------------------------------------------------------------


def _field(value: Any) -> Any:
    """An error's field as JSON data (its repr when it is anything else)."""
    try:
        encoded = encode_value(value, {}, None)
    except NotData:
        return {"$r": repr(value)[:2000]}
    return encoded if not _has_arrays(encoded) else {"$r": repr(value)[:2000]}


def _has_arrays(data: Any) -> bool:
    if isinstance(data, list):
        return any(_has_arrays(v) for v in data)
    if isinstance(data, dict):
        return "$a" in data or any(_has_arrays(v) for v in data.values())
    return False


def _registered(exc: BaseException) -> _ErrorType | None:
    for entry in _ERRORS.values():
        if type(exc) is entry.kind or (entry.subclasses and isinstance(exc, entry.kind)):
            return entry
    return None


def encode_error(exc: BaseException) -> dict[str, Any]:
    """An exception as data: a registered type with its fields, anything else as its type
    name and message (``value_error`` says whether it is a ``ValueError``)."""
    name = type(exc).__name__
    entry = _registered(exc)
    if entry is not None:
        fields = exc.__dict__
        out: dict[str, Any] = {"type": entry.kind.__name__}
        out.update({key: str(fields.get(key, "")) for key in entry.texts})
        if entry.data is not None:
            out[entry.data] = _field(fields.get(entry.data))
        return out
    try:
        message = str(exc)
    except Exception:  # a hostile __str__
        message = "(its message could not be read)"
    return {
        "type": "other",
        "name": name[:200],
        "message": message[:4000],
        "value_error": isinstance(exc, ValueError),
        "assertion": isinstance(exc, AssertionError),
        "attribute": isinstance(exc, AttributeError),
    }


def _text(error: dict[str, Any], key: str) -> str:
    value = error.get(key, "")
    if not isinstance(value, str):
        raise WireError(f"error field {key!r} is not text")
    return value


def decode_error(error: Any) -> Exception:
    """The exception ``encode_error`` described (never of a type that is not registered or
    ``RemoteError``).

    Raises:
        WireError: not an error of this schema.
    """
    if not isinstance(error, dict) or not isinstance(error.get("type"), str):
        raise WireError(f"not an error of the wire schema: {error!r:.80}")
    kind = error["type"]
    entry = _ERRORS.get(kind)
    if entry is not None:
        texts = [_text(error, key) for key in entry.texts]
        if entry.data is None:
            return entry.kind(*texts)
        value = error.get(entry.data)
        if isinstance(value, dict) and set(value) == {"$r"}:
            shown: Any = str(value["$r"])
        else:
            shown = decode_value(value, {}, None)
        return entry.kind(texts[0], shown, *texts[1:])
    if kind == "other":
        cls2: type[RemoteError] = RemoteError
        if error.get("value_error") is True:
            cls2 = RemoteValueError
        elif error.get("assertion") is True:
            cls2 = RemoteAssertionError
        elif error.get("attribute") is True:
            cls2 = RemoteAttributeError
        return cls2(_text(error, "name"), _text(error, "message"))
    raise WireError(f"unknown error type {kind!r:.40}")
