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

``wide=True`` is the grader's handle RPC (``spec_verify.mutants._rpc``), whose peer is a
student's suite using the reference as it would in-process: besides the above, sets
(``$s``), frozensets (``$fs``), bytes (``$b``, a ``|u1`` array), ranges (``$rg``), complex
numbers (``$c``), fractions (``$fr``), slices (``$sl``), ``...`` (``$el``), ints beyond 64
bits (``$i``), numpy scalars of their own type (``$g``), arrays of any plain numeric dtype
and rank (``$ar``: their bytes as a ``|u1`` array, dtype and shape beside), every numeric
dtype and the scalar and builtin value types of ``TYPES``; a handle ``{"$h": [n, key]}``
carries the key of its class. ``encode_error``/``decode_error`` with ``wide`` carry an
exception's arguments and public attributes as values too. Without ``wide`` these tags are
refused, so the check workers' schema is what it was.
"""

from __future__ import annotations

import builtins
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, overload

import numpy as np

from spec_verify.ipc.errors import RemoteError, WireError
from spec_verify.ipc.frames import DTYPES

__all__ = [
    "TYPES",
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
_MAX_ITEMS = 1 << 20  # elements of one container (wide), either way
_WIDE_DTYPE = re.compile(r"[<>|=][biufc][0-9]{1,2}")  # a plain numeric dtype of any width


@dataclass(frozen=True)
class _ValueType:
    kind: type
    tag: str
    fields: Callable[[Any], dict[str, Any]]
    build: Callable[[Any], Any]
    wide: bool  # the schema it belongs to: the check workers' or the grader's


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
    kind: type,
    tag: str,
    fields: Callable[[Any], dict[str, Any]],
    build: Callable[[Any], Any],
    *,
    wide: bool = False,
) -> None:
    """Let objects of exactly ``kind`` cross by value as ``{tag: fields(obj)}``.

    ``build`` gets the decoded fields (any value, from a possibly hostile peer) and returns
    the object or raises ``WireError``. The fields are encoded without handles. The type
    crosses in one schema only: the check workers' (``wide=False``) or the grader's.
    """
    taken = _VALUES_BY_TAG.get(tag)
    if taken is not None and taken.kind is not kind and _same_name(taken.kind, kind):
        # its module was imported again: the new class replaces the old
        del _VALUES_BY_TYPE[taken.kind], _VALUES_BY_TAG[tag]
    if not tag.startswith("$") or tag in _RESERVED or tag in _VALUES_BY_TAG:
        raise ValueError(f"tag {tag!r} is taken or does not start with '$'")
    entry = _ValueType(kind, tag, fields, build, wide)
    _VALUES_BY_TYPE[kind] = entry
    _VALUES_BY_TAG[tag] = entry


def _same_name(one: type, other: type) -> bool:
    return (one.__module__, one.__qualname__) == (other.__module__, other.__qualname__)


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
Resolve = Callable[[str, Any], Any]  # ("$h" | "$o", n) -> the object or a proxy of it


class ArrayTable(dict[str, Any]):
    """A frame's arrays by name that sends each array object once: ``encode_value`` names an
    array it has already put here by its first name (a batch whose calls share one input).
    The table holds every array it names, so no ``id`` is reused while it is filled."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[int, str] = {}


def encode_value(  # noqa: PLR0911 -- one return per kind of value
    value: Any,
    arrays: dict[str, Any],
    export: Export | None = None,
    _depth: int = 0,
    *,
    wide: bool = False,
) -> Any:
    """``value`` as JSON data; arrays go into ``arrays`` under fresh names. Objects of other
    types are handed to ``export`` (which returns their handle tag) or raise ``NotData``.
    ``wide``: the grader's larger schema (the module's docstring)."""
    if _depth > _MAX_DEPTH:
        raise NotData(f"a value nested deeper than {_MAX_DEPTH}: send it flatter")
    kind = type(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        if kind not in (bool, int, float, str, type(None)):  # int/str subclasses
            if wide and isinstance(value, np.generic):  # np.float64 is a float
                return {"$g": [value.dtype.str, value.tobytes().hex()]}
            if wide:  # an IntEnum, a str subclass: the grader's peer holds it by handle
                return _export(value, export)
            return encode_value(_plain(value), arrays, export, _depth)
        if wide and type(value) is int and not -(2**63) <= value < 2**64:
            return {"$i": str(value)}
        return value
    if isinstance(value, np.ndarray):
        if (
            value.dtype.kind in "fiub"
            and value.dtype.itemsize in (1, 4, 8)
            and (not wide or (value.dtype.str in DTYPES and value.ndim <= _MAX_NDIM))
        ):
            index = arrays.names if isinstance(arrays, ArrayTable) else None
            if index is not None and id(value) in index:
                return {"$a": index[id(value)]}
            name = f"a{len(arrays)}"
            arrays[name] = value
            if index is not None:
                index[id(value)] = name
            return {"$a": name}
        if wide and kind is np.ndarray and _WIDE_DTYPE.fullmatch(value.dtype.str):
            name = f"a{len(arrays)}"
            arrays[name] = np.frombuffer(np.ascontiguousarray(value).tobytes(), np.uint8)
            return {"$ar": [name, value.dtype.str, [int(n) for n in value.shape]]}
    elif isinstance(value, np.generic) and value.dtype.kind in ("fiubc" if wide else "fiub"):
        if wide:
            return {"$g": [value.dtype.str, value.tobytes().hex()]}
        return value.item()
    elif isinstance(value, np.dtype) and (
        _WIDE_DTYPE.fullmatch(value.str) if wide else value.kind in "fiub"
    ):
        return {"$dt": value.str}
    elif kind is type and value in _TYPE_NAMES and (wide or value in _NARROW_TYPES):
        return {"$ty": _TYPE_NAMES[value]}
    elif kind in _VALUES_BY_TYPE and _VALUES_BY_TYPE[kind].wide == wide:  # by value
        entry = _VALUES_BY_TYPE[kind]
        return {entry.tag: encode_value(entry.fields(value), arrays, None, _depth + 1, wide=wide)}
    elif kind is list:
        _check_size(value, wide)
        if all(type(v) in _SCALARS for v in value) and (  # the common case, without recursion
            not wide or all(-(2**63) <= v < 2**64 for v in value if type(v) is int)
        ):
            return list(value)
        return [encode_value(v, arrays, export, _depth + 1, wide=wide) for v in value]
    elif kind is tuple:
        _check_size(value, wide)
        return {"$t": [encode_value(v, arrays, export, _depth + 1, wide=wide) for v in value]}
    elif kind is dict:
        _check_size(value, wide)
        return {
            "$d": [
                [encode_value(k, arrays, export, _depth + 1, wide=wide),
                 encode_value(v, arrays, export, _depth + 1, wide=wide)]
                for k, v in value.items()
            ]
        }  # fmt: skip
    elif wide:
        wide_tag = _WIDE_KINDS.get(kind)
        if wide_tag is not None:
            return {wide_tag: _wide_body(value, arrays, export, _depth)}
        if value is Ellipsis:
            return {"$el": 0}
    return _export(value, export)


def _export(value: Any, export: Export | None) -> Any:
    if export is None:
        raise NotData(f"a {type(value).__name__} cannot cross the process boundary")
    return export(value)


def _check_size(value: Any, wide: bool) -> None:
    if wide and len(value) > _MAX_ITEMS:
        raise NotData(f"a {type(value).__name__} of {len(value)} items is too long")


_WIDE_KINDS: dict[type, str] = {
    set: "$s",
    frozenset: "$fs",
    bytes: "$b",
    range: "$rg",
    complex: "$c",
    Fraction: "$fr",
    slice: "$sl",
}


def _wide_body(value: Any, arrays: dict[str, Any], export: Export | None, depth: int) -> Any:
    """The body of one of ``_WIDE_KINDS``' values."""
    if isinstance(value, (set, frozenset)):
        _check_size(value, True)
        return [encode_value(v, arrays, export, depth + 1, wide=True) for v in value]
    if isinstance(value, bytes):
        name = f"a{len(arrays)}"
        arrays[name] = np.frombuffer(value, np.uint8)
        return name
    if isinstance(value, range):
        return [value.start, value.stop, value.step]
    if isinstance(value, complex):
        return [value.real, value.imag]
    if isinstance(value, Fraction):
        return [str(value.numerator), str(value.denominator)]
    assert isinstance(value, slice)
    return [
        encode_value(v, arrays, export, depth + 1, wide=True)
        for v in (value.start, value.stop, value.step)
    ]


_SCALARS = frozenset({int, float, str, bool, type(None)})
_MAX_NDIM = 4  # frames' default limit; a wide array of more dimensions goes as "$ar"
# Types that cross by name (used as dtype= arguments, or compared with isinstance): numpy's
# scalar types of plain dtypes and the builtin value types. Both sides hold the same table,
# so a name never names anything else.
TYPES: Mapping[str, type] = {
    **{f"numpy.{np.dtype(code).type.__name__}": np.dtype(code).type
       for code in "?bBhHiIlLqQefdgFDG"},
    **{f"builtins.{kind.__name__}": kind
       for kind in (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset,
                    object)},
}  # fmt: skip
_TYPE_NAMES: Mapping[type, str] = {kind: name for name, kind in TYPES.items()}
# The check workers' types (without ``wide``).
_NARROW_TYPES = frozenset(
    {
        int,
        float,
        bool,
        str,
        np.float64,
        np.float32,
        np.int64,
        np.int32,
        np.uint32,
        np.uint64,
        np.uint8,
        np.bool_,
    }
)
_RESERVED = frozenset(
    {
        "$t",
        "$d",
        "$a",
        "$h",
        "$o",
        "$dt",
        "$ty",
        "$r",
        "$s",
        "$fs",
        "$b",
        "$rg",
        "$c",
        "$fr",
        "$sl",
        "$el",
        "$i",
        "$g",
        "$ar",
    }
)


def _plain(value: Any) -> Any:
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def decode_value(  # noqa: PLR0911 -- one return per kind of value
    data: Any,
    arrays: dict[str, Any],
    resolve: Resolve | None = None,
    _depth: int = 0,
    *,
    wide: bool = False,
) -> Any:
    """The value ``encode_value`` encoded (tuples, dicts, arrays, handles via ``resolve``;
    with ``wide`` the grader's larger schema).

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
        return [decode_value(v, arrays, resolve, _depth + 1, wide=wide) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "$t" and isinstance(body, list):
            return tuple(decode_value(v, arrays, resolve, _depth + 1, wide=wide) for v in body)
        if tag == "$d" and isinstance(body, list):
            out = {}
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise WireError("a dict entry is not [key, value]")
                key = decode_value(pair[0], arrays, resolve, _depth + 1, wide=wide)
                try:
                    out[key] = decode_value(pair[1], arrays, resolve, _depth + 1, wide=wide)
                except TypeError as exc:
                    raise WireError(f"a dict key is not hashable: {exc}") from None
            return out
        if (
            tag == "$dt"
            and isinstance(body, str)
            and (_WIDE_DTYPE.fullmatch(body) if wide else body in DTYPES)
        ):
            return np.dtype(body)
        if tag in _VALUES_BY_TAG and _VALUES_BY_TAG[tag].wide == wide:
            return _VALUES_BY_TAG[tag].build(
                decode_value(body, arrays, None, _depth + 1, wide=wide)
            )
        if (
            tag == "$ty"
            and isinstance(body, str)
            and body in TYPES
            and (wide or TYPES[body] in _NARROW_TYPES)
        ):
            return TYPES[body]
        if tag == "$a" and isinstance(body, str):
            if body not in arrays:
                raise WireError(f"the value names array {body!r:.40}, which the frame lacks")
            return arrays[body]
        if tag == "$o" and type(body) is int and resolve is not None:
            return resolve(tag, body)
        if (
            tag == "$h"
            and resolve is not None
            and (
                type(body) is int
                or (
                    wide
                    and isinstance(body, list)
                    and len(body) == 2
                    and type(body[0]) is int
                    and (body[1] is None or isinstance(body[1], str))
                )
            )
        ):
            return resolve(tag, body)
        if wide and tag in _WIDE_TAGS:
            try:
                return _decode_wide(tag, body, arrays, resolve, _depth)
            except (TypeError, ValueError, ArithmeticError) as exc:  # int("x"), Fraction(1, 0)
                raise WireError(f"a malformed {tag} value: {exc}") from None
    raise WireError(f"not a value of the wire schema: {data!r:.80}")


_WIDE_TAGS = frozenset({"$s", "$fs", "$b", "$rg", "$c", "$fr", "$sl", "$el", "$i", "$g", "$ar"})


def _decode_wide(  # noqa: PLR0911 -- one return per kind of value
    tag: str, body: Any, arrays: dict[str, Any], resolve: Resolve | None, depth: int
) -> Any:
    if tag == "$el":
        return Ellipsis
    if tag == "$i" and isinstance(body, str):
        return int(body)
    if tag == "$b" and isinstance(body, str):
        return bytes(_raw_bytes(arrays, body))
    if tag == "$g" and _items(body, 2) and isinstance(body[1], str):
        kind = _numeric_dtype(body[0])
        raw = bytes.fromhex(body[1])
        if len(raw) != kind.itemsize:
            raise WireError("a scalar of the wrong size")
        return np.frombuffer(raw, dtype=kind)[0]
    if tag == "$ar" and _items(body, 3):
        name, dtype, shape = body
        kind = _numeric_dtype(dtype)
        if not (
            isinstance(shape, list)
            and len(shape) <= 32
            and all(type(n) is int and n >= 0 for n in shape)
        ):
            raise WireError("a malformed array shape")
        raw = _raw_bytes(arrays, name)
        count = 1
        for n in shape:
            count *= n
        if count * kind.itemsize != raw.size:
            raise WireError("an array's bytes do not match its shape")
        return np.frombuffer(raw.tobytes(), dtype=kind).reshape(shape).copy()
    if not isinstance(body, list) or len(body) > _MAX_ITEMS:
        raise WireError(f"a {tag} value that is not a list")
    if tag in ("$s", "$fs"):
        items = [decode_value(v, arrays, resolve, depth + 1, wide=True) for v in body]
        return set(items) if tag == "$s" else frozenset(items)
    if tag == "$sl" and len(body) == 3:
        return slice(*(decode_value(v, arrays, resolve, depth + 1, wide=True) for v in body))
    if tag == "$rg" and len(body) == 3 and all(type(v) is int for v in body):
        return range(*body)
    if tag == "$c" and len(body) == 2 and all(type(v) in (int, float) for v in body):
        return complex(float(body[0]), float(body[1]))
    if tag == "$fr" and len(body) == 2 and all(isinstance(v, str) for v in body):
        return Fraction(int(body[0]), int(body[1]))
    raise WireError(f"a malformed {tag} value")


def _items(body: Any, n: int) -> bool:
    return isinstance(body, list) and len(body) == n


def _numeric_dtype(text: Any) -> np.dtype[Any]:
    if not (isinstance(text, str) and _WIDE_DTYPE.fullmatch(text)):
        raise WireError(f"dtype {text!r:.20} is not a plain numeric dtype")
    return np.dtype(text)


def _raw_bytes(arrays: dict[str, Any], name: Any) -> Any:
    raw = arrays.get(name) if isinstance(name, str) else None
    if not (isinstance(raw, np.ndarray) and raw.dtype == np.uint8 and raw.ndim == 1):
        raise WireError(f"raw bytes {name!r:.40} that the frame lacks")
    return raw


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


def encode_error(exc: BaseException, wide: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """An exception as data: a registered type with its fields, anything else as its type
    name and message (``value_error`` says whether it is a ``ValueError``).

    ``wide`` (the grader's RPC: a value's encoder that never fails, text at worst): no
    registered type; the module, the builtin bases, the arguments and the public attributes
    go too, so ``decode_error(..., wide=...)`` rebuilds an exception of the same kind."""
    name = type(exc).__name__
    entry = None if wide is not None else _registered(exc)
    if entry is not None:
        fields = exc.__dict__
        out: dict[str, Any] = {"type": entry.kind.__name__}
        out.update({key: str(fields.get(key, "")) for key in entry.texts})
        if entry.data is not None:
            out[entry.data] = _field(fields.get(entry.data))
        return out
    out = {
        "type": "other",
        "name": name[:200],
        "message": text_of(exc, 4000),
        "value_error": isinstance(exc, ValueError),
        "assertion": isinstance(exc, AssertionError),
        "attribute": isinstance(exc, AttributeError),
    }
    if wide is not None:
        kind = type(exc)
        public = {k: v for k, v in getattr(exc, "__dict__", {}).items() if not k.startswith("_")}
        out.update(
            name=kind.__qualname__,
            module=kind.__module__,
            message=text_of(exc, 20000),
            bases=[c.__qualname__ for c in kind.__mro__ if c.__module__ == "builtins"],
            args=wide(list(exc.args)),
            attributes={k: wide(v) for k, v in public.items()},
        )
    return out


def text_of(value: Any, limit: int) -> str:
    """``str(value)``, cut to ``limit`` characters; a hostile ``__str__`` gives a placeholder."""
    try:
        text = str(value)
    except Exception:
        return f"<{type(value).__name__}: its text could not be read>"
    return text if len(text) <= limit else text[:limit] + "..."


def _text(error: dict[str, Any], key: str) -> str:
    value = error.get(key, "")
    if not isinstance(value, str):
        raise WireError(f"error field {key!r} is not text")
    return value


@overload
def decode_error(error: Any) -> Exception: ...
@overload
def decode_error(
    error: Any,
    wide: Callable[[Any], Any],
    lookup: Callable[[str], type[BaseException] | None] | None = None,
) -> BaseException: ...
def decode_error(
    error: Any,
    wide: Callable[[Any], Any] | None = None,
    lookup: Callable[[str], type[BaseException] | None] | None = None,
) -> BaseException:
    """The exception ``encode_error`` described (never of a type that is not registered or
    ``RemoteError``).

    ``wide`` (the grader's RPC: a value's decoder) rebuilds an exception of the grader's
    schema: of the class ``lookup`` gives for its ``key``, else of its own type when that is
    an exception of ``builtins``, ``dataclasses`` or ``numpy`` (never ``SystemExit``,
    ``KeyboardInterrupt``, ``GeneratorExit``), else of a new subclass of its first builtin
    exception base, else ``RemoteError``; with its arguments and public attributes.

    Raises:
        WireError: not an error of this schema.
    """
    if not isinstance(error, dict) or not isinstance(error.get("type"), str):
        raise WireError(f"not an error of the wire schema: {error!r:.80}")
    kind = error["type"]
    if wide is not None:
        return _decode_wide_error(error, wide, lookup or (lambda key: None))
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


_SAFE_EXCEPTION_MODULES = ("builtins", "dataclasses", "numpy")


def _decode_wide_error(
    data: dict[str, Any],
    decode: Callable[[Any], Any],
    lookup: Callable[[str], type[BaseException] | None],
) -> BaseException:
    kind = _wide_exception_type(data, lookup)
    args = decode(data.get("args"))
    error = kind.__new__(kind)
    error.args = tuple(args) if isinstance(args, list) else (str(args),)
    attributes = data.get("attributes")
    if isinstance(attributes, dict):
        for name, value in attributes.items():
            if isinstance(name, str) and not name.startswith("_"):
                try:
                    setattr(error, name, decode(value))
                except (AttributeError, TypeError, WireError):
                    continue
    if isinstance(error, RemoteError):
        error.type_name = f"{data.get('module')}.{data.get('name')}"
        error.message = str(data.get("message"))
        error.args = (f"{error.type_name}: {error.message}",)
    return error


def _wide_exception_type(
    data: dict[str, Any], lookup: Callable[[str], type[BaseException] | None]
) -> type[BaseException]:
    key = data.get("key")
    if isinstance(key, str):
        found = lookup(key)
        if found is not None:
            return found
    module, name = data.get("module"), data.get("name")
    if (
        isinstance(module, str)
        and isinstance(name, str)
        and module.split(".")[0] in (_SAFE_EXCEPTION_MODULES)
    ):
        try:
            target: Any = importlib.import_module(module)
            for part in name.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError):
            target = None
        if (
            isinstance(target, type)
            and issubclass(target, BaseException)
            and not issubclass(target, (SystemExit, KeyboardInterrupt, GeneratorExit))
        ):
            return target
    bases = data.get("bases")
    for base in bases if isinstance(bases, list) else []:
        found_base = getattr(builtins, str(base), None)
        if isinstance(found_base, type) and issubclass(found_base, Exception):
            return type(str(name), (found_base,), {"__module__": str(module)})
    return RemoteError
