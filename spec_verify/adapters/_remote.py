"""Objects across the process boundary, as handles: the Python worker's object protocol.

A Python implementation (``python:``, ``mutant:``, the bundled reference) lives in a worker
process (``_python_worker``); the harness holds ``RemoteObject`` proxies of its module and of
every object its calls return that is not plain data (drafts, models, ``Generation`` records,
its ``SamplingParams``, its PCG32 streams). Harness objects handed to it (uniform sources,
the reference's parameters) go the other way: the worker gets proxies, and each use is a
*callback* the harness answers while it waits. So every tier drives a worker exactly as it
drove the module, while nothing the implementation owns ever runs in the harness.

Frames (``_wire``; values in the ``_codec`` schema, ``{"$h": n}`` an object of the sender,
``{"$o": n}`` one of the receiver):

- requests ``{"kind": "call", "target": n, "attr": name | null, "args": [...], "kwargs":
  {...}}`` (``target.attr(*args, **kwargs)``, or ``target(...)``), ``{"kind": "getattr",
  "target": n, "attr": name}``, ``{"kind": "list", "target": n}`` (``list(target)``);
  from the worker they carry ``"callback": true`` (``WorkerProcess`` serves them);
- answers ``{"kind": "return", "value": v}`` or ``{"kind": "raise", "error": e}``.

Handle 0 on the worker side is the implementation's module.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any

from spec_verify.adapters._codec import (
    NotData,
    decode_error,
    decode_value,
    encode_error,
    encode_value,
)
from spec_verify.adapters._wire import WireError, require

__all__ = ["Handles", "RemoteObject", "answer", "call_checked", "call_method", "request_header"]

INPUT_CHANGED = "_InputChanged"  # the error type name of a changed input

# Names a proxy never forwards: Python's own probing (copy, pickle, numpy, pytest's repr) must
# not become a call into the implementation.
_LOCAL_NAMES = frozenset(
    {"__array__", "__array_interface__", "__array_struct__", "__deepcopy__", "__copy__",
     "__getstate__", "__reduce__", "__reduce_ex__", "__fspath__", "__index__", "__len__",
     "__iter__", "__next__", "_ipython_display_", "__class_getitem__"}
)  # fmt: skip


class Handles:
    """One side's table of exported objects (number -> object) and the peer's proxies.

    ``send(request)`` delivers a request frame to the peer and returns its answer frame
    (serving nested requests meanwhile); ``RemoteObject`` calls go through it.
    """

    def __init__(
        self,
        send: Callable[[dict[str, Any], dict[str, Any]], Any],
        on_error: Callable[[Exception, dict[str, Any]], Exception] | None = None,
    ) -> None:
        self._send = send
        self._on_error = on_error
        self._objects: dict[int, Any] = {}
        self._numbers: dict[int, int] = {}  # id(object) -> number (the object is kept alive)
        self._next = itertools.count(16)  # 0-15 are reserved for well-known objects

    def add(self, obj: Any, number: int | None = None) -> int:
        key = id(obj)
        if key in self._numbers:
            return self._numbers[key]
        number = next(self._next) if number is None else number
        self._objects[number] = obj
        self._numbers[key] = number
        return number

    def get(self, number: int) -> Any:
        try:
            return self._objects[number]
        except KeyError:
            raise WireError(f"no object with handle {number}") from None

    def export(self, value: Any) -> dict[str, int]:
        if isinstance(value, RemoteObject) and value._handles is self:
            return {"$o": value._number}
        return {"$h": self.add(value)}

    def resolve(self, tag: str, number: int) -> Any:
        if tag == "$o":
            return self.get(number)
        return RemoteObject(self, number)

    def encode(self, value: Any, arrays: dict[str, Any]) -> Any:
        return encode_value(value, arrays, self.export)

    def decode(self, data: Any, arrays: dict[str, Any]) -> Any:
        return decode_value(data, arrays, self.resolve)

    def request(self, header: dict[str, Any], arrays: dict[str, Any]) -> Any:
        """Send a request, return the answer's value or raise its error."""
        reply, reply_arrays = self._send(header, arrays)
        kind = reply.get("kind")
        if kind == "return":
            return self.decode(reply.get("value"), reply_arrays)
        if kind == "raise":
            error = decode_error(reply.get("error"))
            raise error if self._on_error is None else self._on_error(error, header)
        raise WireError(f"an answer of kind {kind!r:.40}")


def request_header(
    handles: Handles, kind: str, target: int, attr: str | None, args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    arrays: dict[str, Any] = {}
    header: dict[str, Any] = {"kind": kind, "target": target, "attr": attr}
    if kind == "call":
        header["args"] = handles.encode(list(args), arrays)
        header["kwargs"] = handles.encode(dict(kwargs or {}), arrays)
    return header, arrays


class RemoteObject:
    """A proxy of an object the peer holds: attribute reads, calls, ``len``, indexing and
    iteration are requests to the peer (answers that are plain data come back as data)."""

    __slots__ = ("_handles", "_number")

    def __init__(self, handles: Handles, number: int) -> None:
        object.__setattr__(self, "_handles", handles)
        object.__setattr__(self, "_number", number)

    def _request(self, kind: str, attr: str | None, *args: Any, **kwargs: Any) -> Any:
        header, arrays = request_header(self._handles, kind, self._number, attr, args, kwargs)
        return self._handles.request(header, arrays)

    def __getattr__(self, name: str) -> Any:
        if name in _LOCAL_NAMES or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return self._request("getattr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a remote object's attributes are read-only ({name})")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._request("call", None, *args, **kwargs)

    def _call_method(self, attr: str, *args: Any, **kwargs: Any) -> Any:
        return self._request("call", attr, *args, **kwargs)

    def __len__(self) -> int:
        return operator.index(self._request("call", "__len__"))

    def __getitem__(self, key: Any) -> Any:
        return self._request("call", "__getitem__", key)

    def __iter__(self) -> Any:
        return iter(self._request("list", None))

    def __repr__(self) -> str:
        return f"<remote object {self._number}>"


def call_method(obj: Any, attr: str, *args: Any, **kwargs: Any) -> Any:
    """``obj.attr(*args, **kwargs)``; on a ``RemoteObject`` one request instead of two (the
    attribute read and the call)."""
    if isinstance(obj, RemoteObject):
        return obj._call_method(attr, *args, **kwargs)
    return getattr(obj, attr)(*args, **kwargs)


def answer(
    handles: Handles,
    request: dict[str, Any],
    arrays: dict[str, Any],
    contain: tuple[type[BaseException], ...] = (Exception,),
    check_inputs: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Serve one request on this side: the answer frame. Failures of the types in ``contain``
    become error answers (the worker contains ``BaseException``: an implementation's
    ``SystemExit`` or ``KeyboardInterrupt`` is its failure); a protocol breach raises
    ``WireError``. With ``check_inputs``, list arguments changed by the call are an error."""
    out: dict[str, Any] = {}
    try:
        kind = require(request, "kind", str)
        target = handles.get(require(request, "target", int))
        attr = request.get("attr")
        if attr is not None and not isinstance(attr, str):
            raise WireError("attr is not a string")
        if kind == "getattr":
            value = getattr(target, str(attr))
        elif kind == "list":
            value = list(target)
        elif kind == "call":
            args = handles.decode(request.get("args"), arrays)
            kwargs = handles.decode(request.get("kwargs"), arrays)
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise WireError("args or kwargs of the wrong type")
            fn = target if attr is None else getattr(target, attr)
            if check_inputs:
                value = call_checked(fn, args, kwargs, attr or "the call")
            else:
                value = fn(*args, **kwargs)
        else:
            raise WireError(f"a request of kind {kind!r:.40}")
        return {"kind": "return", "value": handles.encode(value, out)}, out
    except WireError:
        raise
    except NotData as exc:
        return {"kind": "raise", "error": encode_error(TypeError(str(exc)))}, {}
    except contain as exc:  # the callee's failure is an answer, not ours
        return {"kind": "raise", "error": encode_error(exc)}, {}


def call_checked(
    fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], label: str
) -> Any:
    """``fn(*args, **kwargs)`` where the arguments belong to the caller: a write into an input
    array (they arrive read-only) or a change to a list argument raises ``_InputChanged``."""
    before = _snapshot(args, kwargs)
    try:
        value = fn(*args, **kwargs)
    except ValueError as exc:
        if "read-only" in str(exc):
            raise _InputChanged(
                f"{label} wrote into an input array; inputs are read-only ({exc})"
            ) from None
        raise
    if before != _snapshot(args, kwargs):
        raise _InputChanged(
            f"{label} changed one of its list arguments; inputs belong to the caller and must "
            "not be modified"
        )
    return value


class _InputChanged(Exception):
    """The implementation modified an argument it was given."""


def _snapshot(args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    """Copies of the list arguments (arrays arrive read-only and need none)."""
    return [list(v) for v in (*args, *kwargs.values()) if isinstance(v, list)]
