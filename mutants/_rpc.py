"""Objects across a socket: a small symmetric RPC over the data-only wire format.

The grader serves the graded sampler from one process (``_sampler.py``) to the suite's process
(``_proxy.py``). Either side may hold objects of the other: the suite holds the reference's
drafts, models, caches and results as *handles*; the reference holds the suite's callbacks (its
uniform source, a draft or model it wrote) the same way. Plain data travels by value: None,
bools, ints, floats, strings, bytes, lists, tuples, dicts, sets, ranges, complex numbers,
fractions, slices, numpy arrays and scalars of plain dtypes, numeric numpy dtypes and scalar
types and the builtin value types (by name, from one table). Everything else travels as a
reference to the side that owns it, and calls, attribute reads and writes, and the few
builtins in ``BUILTINS`` on a reference go back to that side.

One conversation, strictly alternating: a side sends a request and serves the peer's nested
requests (callbacks) until its own reply arrives. Frames are ``spec_verify.ipc.frames``'s
buffered fast path (JSON header plus raw arrays; never pickle); values and exceptions are
``spec_verify.ipc.codec``'s wide schema; errors are ``spec_verify.ipc.errors``. A side never
sends code, tracebacks or source: an exception travels as its type, its arguments and its
public attributes.

What a peer may ask of the *serving* side is limited (``Endpoint.restricted``): no attribute
whose name starts with ``_`` (so no ``__code__``, ``__globals__``, ``__loader__``, module
internals), only the builtins of ``BUILTINS``.
"""

from __future__ import annotations

import copy
import operator
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

from spec_verify.ipc.codec import (
    NotData,
    decode_error,
    decode_value,
    encode_error,
    encode_value,
    register_value,
    text_of,
)
from spec_verify.ipc.errors import (
    FrameError,
    FrameTooLarge,
    PeerClosed,
    ProtocolError,
    RemoteError,
    WireError,
)
from spec_verify.ipc.frames import BufferedReader, encode_frame

__all__ = [
    "BUILTINS", "Endpoint", "FrameError", "FrameTooLarge", "PeerClosed", "ProtocolError",
    "Remote", "RemoteError", "pickle_handle",
]



def _call(function: Any, *args: Any, **kwargs: Any) -> Any:
    return function(*args, **kwargs)


# The builtins a peer may apply to an object of ours, by name.
BUILTINS: Mapping[str, Callable[..., Any]] = {
    "call": _call, "len": len, "iter": iter, "next": next, "bool": bool, "hash": hash,
    "repr": repr, "str": str, "getitem": operator.getitem, "setitem": operator.setitem,
    "delitem": operator.delitem, "contains": operator.contains, "eq": operator.eq,
    "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge, "copy": copy.copy, "deepcopy": copy.deepcopy, "int": int,
    "float": float, "index": operator.index,
}

# Dunder methods that forward to the owner's builtin of the same meaning.
DUNDERS: Mapping[str, str] = {
    "__len__": "len", "__iter__": "iter", "__next__": "next", "__bool__": "bool",
    "__hash__": "hash", "__str__": "str", "__getitem__": "getitem",
    "__setitem__": "setitem", "__delitem__": "delitem", "__contains__": "contains",
    "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge", "__call__": "call", "__int__": "int", "__float__": "float",
    "__index__": "index",
}

class Remote:
    """A generic handle on an object of the peer (one without a richer proxy class)."""

    __slots__ = ("__weakref__", "_sv_endpoint", "_sv_id")

    _sv_endpoint: Endpoint
    _sv_id: int

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_sv_") or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return self._sv_endpoint.getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_sv_"):
            object.__setattr__(self, name, value)
        else:
            self._sv_endpoint.setattr(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._sv_endpoint.request({"op": "delattr", "name": name}, [self])

    def __repr__(self) -> str:
        return str(self._sv_endpoint.builtin("repr", self))

    def __del__(self) -> None:
        endpoint = getattr(self, "_sv_endpoint", None)
        number = getattr(self, "_sv_id", None)
        if endpoint is not None and number is not None:
            endpoint.forget(number)

    def __copy__(self) -> Any:
        return self._sv_endpoint.builtin("copy", self)

    def __deepcopy__(self, memo: Any) -> Any:
        return self._sv_endpoint.builtin("deepcopy", self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return pickle_handle(self, self)


# Handles pickled in this process: key -> a copy of the peer's object, made when it was pickled
# (what ``pickle.dumps`` freezes in-process); ``pickle.loads`` copies it again, so every load
# is a fresh object, as in-process. The key is meaningless in any other process.
_PICKLED: dict[int, Any] = {}


def pickle_handle(handle: Any, target: Any) -> tuple[Any, ...]:
    """``__reduce_ex__`` of a handle: pickle, then unpickle in this process, works as it does
    in-process (a reference exception holding a served object in an attribute pickles; a suite
    may check that it does). ``target`` is what requests name (the handle itself, or the served
    object of a suite's subclass)."""
    endpoint = handle._sv_endpoint
    frozen = endpoint.builtin("deepcopy", target)
    key = len(_PICKLED) + 1
    _PICKLED[key] = frozen
    return (_unpickle_handle, (key,))


def _unpickle_handle(key: int) -> Any:
    frozen = _PICKLED.get(key)
    if frozen is None:
        import pickle

        raise pickle.UnpicklingError(
            "this pickle holds an object of the graded sampler's process: it unpickles in the "
            "process that pickled it only (docs/grading.md, what cannot be proxied)")
    return frozen._sv_endpoint.builtin("deepcopy", frozen)


def _forwarding_dunder(dunder: str, builtin: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any) -> Any:
        return self._sv_endpoint.builtin(builtin, self, *args)

    method.__name__ = dunder
    return method


for _dunder, _builtin in DUNDERS.items():
    setattr(Remote, _dunder, _forwarding_dunder(_dunder, _builtin))


class _Method:
    """A method of a peer's object, bound to it (one round trip per call)."""

    __slots__ = ("name", "target")

    def __init__(self, target: Any, name: str) -> None:
        self.target = target
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target._sv_endpoint.call_method(self.target, self.name, args, kwargs)

    def __repr__(self) -> str:
        return f"<remote method {self.name}>"


class Endpoint:
    """One side of the conversation.

    Args:
        sock: the connected socket.
        restricted: refuse the peer attribute names starting with ``_`` (the serving side).
        make_proxy: ``(endpoint, id, class_key) -> object``: the local handle on a peer
            object (default: a ``Remote``); the proxy package passes its proxy classes.
        class_key: ``object -> str | None``: a key for the class of an object of ours,
            sent with its handle so the peer can pick a richer proxy class.
        local_class: ``object -> bool``: whether a local object is a handle of ours on the
            peer's object (sent back as the peer's own reference).
    """

    def __init__(self, sock: socket.socket, *, restricted: bool = False,
                 make_proxy: Callable[[Endpoint, int, str | None], Any] | None = None,
                 class_key: Callable[[Any], str | None] | None = None,
                 exception_class: Callable[[str], type[BaseException] | None] | None = None,
                 exception_key: Callable[[type[BaseException]], str | None] | None = None,
                 ) -> None:
        self.sock = sock
        self._frames = BufferedReader(sock)
        self.restricted = restricted
        self._make_proxy = make_proxy or _make_remote
        self._class_key = class_key or (lambda value: None)
        self._exception_class = exception_class or (lambda key: None)
        self._exception_key = exception_key or (lambda kind: None)
        self._exports: dict[int, Any] = {}  # our objects the peer holds: id -> object
        self._export_ids: dict[int, int] = {}  # id(object) -> export id
        self._next_export = 1
        self._imports: dict[int, Any] = {}  # the peer's objects: id -> our handle (weak)
        self._released: list[int] = []  # handles dropped here, told to the peer next time
        self._lock = threading.RLock()  # re-entrant: a handle's __del__ may run inside _send
        self._methods: set[tuple[int, str]] = set()  # (import id, name) known to be methods
        self.handlers: dict[str, Callable[[dict[str, Any], list[Any]], Any]] = {}
        # Local stand-ins for the peer's objects: handle types (their instances carry
        # ``_sv_id``) and long-lived aliases (proxy classes and functions: id -> peer id).
        self.handle_types: set[type] = {Remote}
        self.aliases: dict[int, tuple[Any, int]] = {}

    # ---- handles -------------------------------------------------------------------------

    def export(self, value: Any) -> int:
        key = id(value)
        found = self._export_ids.get(key)
        if found is not None and self._exports.get(found) is value:
            return found
        number = self._next_export
        self._next_export += 1
        self._exports[number] = value
        self._export_ids[key] = number
        return number

    def forget(self, number: int) -> None:
        """Our handle on the peer's object ``number`` is gone (called from ``__del__``)."""
        with self._lock:
            self._released.append(number)
            self._imports.pop(number, None)

    def adopt(self, number: int, handle: Any) -> None:
        """Make ``handle`` the local stand-in for the peer's object ``number``."""
        import weakref

        self._imports[number] = weakref.ref(handle)

    def _handle(self, number: int, key: str | None) -> Any:
        import weakref

        found = self._imports.get(number)
        if found is not None:
            obj = found()
            if obj is not None:
                return obj
        with self._lock:
            if number in self._released:  # it came back before we told the peer
                self._released.remove(number)
        obj = self._make_proxy(self, number, key)
        self._imports[number] = weakref.ref(obj)
        return obj

    def peer_id(self, value: Any) -> int | None:
        """The peer's handle number when ``value`` stands here for one of its objects."""
        kind = type(value)
        if kind in self.handle_types:
            if kind is Remote:
                number = object.__getattribute__(value, "_sv_id")
            else:
                number = object.__getattribute__(value, "__dict__").get("_sv_id")
            return number if isinstance(number, int) else None
        alias = self.aliases.get(id(value))
        return alias[1] if alias is not None and alias[0] is value else None

    # ---- values --------------------------------------------------------------------------

    def encode(self, value: Any, arrays: dict[str, Any]) -> Any:
        """``value`` as JSON data (the codec's wide schema), its arrays put in ``arrays``."""
        try:
            return encode_value(value, arrays, self._export_tag, wide=True)
        except NotData as exc:  # too deep or too long: this request's failure, not the stream's
            raise ProtocolError(str(exc)) from None

    def _export_tag(self, value: Any) -> dict[str, Any]:
        number = self.peer_id(value)
        if number is not None:
            return {"$o": number}
        return {"$h": [self.export(value), self._class_key(value)]}

    def decode(self, data: Any, arrays: dict[str, Any]) -> Any:
        """The value ``data`` (from ``encode`` on the peer) stands for."""
        try:
            return decode_value(data, arrays, self._resolve, wide=True)
        except ProtocolError:
            raise
        except WireError as exc:  # a malformed value: answered, the stream is still in step
            raise ProtocolError(str(exc)) from None

    def _resolve(self, tag: str, body: Any) -> Any:
        if tag == "$o":
            if body not in self._exports:
                raise ProtocolError(f"no object of ours has the handle {body!r:.40}")
            return self._exports[body]
        number, key = body
        return self._handle(number, key)

    # ---- exceptions ----------------------------------------------------------------------

    def encode_exception(self, error: BaseException, arrays: dict[str, Any]) -> dict[str, Any]:
        encoded = encode_error(error, lambda value: self._encode_lenient(value, arrays))
        encoded.update(mine=self.export(error), key=self._exception_key(type(error)))
        return encoded

    def _encode_lenient(self, value: Any, arrays: dict[str, Any]) -> Any:
        names = set(arrays)
        try:
            return self.encode(value, arrays)
        except ProtocolError:
            for name in set(arrays) - names:
                del arrays[name]
            return text_of(value, 20000)

    def decode_exception(self, data: Any, arrays: dict[str, Any]) -> BaseException:
        if not isinstance(data, dict):
            return ProtocolError("a malformed exception")
        if "yours" in data:  # one of ours, raised by a callback we served: the original
            number = data["yours"]
            found = self._exports.get(number) if isinstance(number, int) else None
            return (
                found
                if isinstance(found, BaseException)
                else ProtocolError("an unknown exception handle")
            )
        try:
            error = decode_error(
                data, lambda value: self.decode(value, arrays), self._exception_class
            )
        except WireError as exc:
            return ProtocolError(str(exc))
        number = data.get("mine")
        if isinstance(number, int) and not isinstance(error, RemoteError):
            # so that the same exception, handed back to the peer, is its original
            object.__setattr__(error, "_sv_peer_id", number)
        return error

    # ---- the conversation ----------------------------------------------------------------

    def _send(self, header: dict[str, Any], arrays: dict[str, Any]) -> None:
        with self._lock:
            released, self._released = self._released, []
        header["rel"] = released
        frame = encode_frame(header, arrays)
        try:
            self.sock.sendall(frame)
        except OSError as exc:
            raise PeerClosed(f"the peer is gone ({exc})") from exc

    def _receive(self) -> tuple[dict[str, Any], dict[str, Any]]:
        header, received = self._frames.read()
        arrays = {name: array.copy() for name, array in received.items()}  # the peer's own
        released = header.get("rel")
        if isinstance(released, list):
            for number in released:
                if isinstance(number, int):
                    value = self._exports.pop(number, None)
                    if value is not None and self._export_ids.get(id(value)) == number:
                        del self._export_ids[id(value)]
        return header, arrays

    def request(self, header: dict[str, Any], values: list[Any]) -> Any:
        """Send a request with ``values`` (encoded), serve the peer until its reply."""
        arrays: dict[str, Any] = {}
        header["k"] = "req"
        header["v"] = [self.encode(v, arrays) for v in values]
        self._send(header, arrays)
        while True:
            message, data = self._receive()
            kind = message.get("k")
            if kind == "req":
                self.serve_one(message, data)
            elif kind == "ok":
                return self.decode(message.get("v"), data)
            elif kind == "err":
                raise self.decode_exception(message.get("e"), data)
            else:
                raise ProtocolError(f"unknown message kind {kind!r:.40}")

    def serve_forever(self) -> None:
        """Serve the peer's requests until it closes the connection."""
        while True:
            try:
                message, data = self._receive()
            except PeerClosed:
                return
            if message.get("k") != "req":
                raise ProtocolError("expected a request")
            self.serve_one(message, data)

    def serve_one(self, message: dict[str, Any], data: dict[str, Any]) -> None:
        arrays: dict[str, Any] = {}
        try:
            values = self.decode(message.get("v"), data)
            if not isinstance(values, list):
                raise ProtocolError("a request's values must be a list")
            result = self._dispatch(message, values)
            reply = {"k": "ok", "v": self.encode(result, arrays)}
        except MemoryError:
            raise
        except BaseException as error:
            if isinstance(error, FrameError) and not isinstance(error, ProtocolError):
                raise  # the stream is broken: nothing can be answered on it
            if isinstance(error, (KeyboardInterrupt, SystemExit)) and not self.restricted:
                raise
            arrays = {}
            peer = getattr(error, "_sv_peer_id", None)
            encoded = {"yours": peer} if isinstance(peer, int) else self.encode_exception(
                error, arrays)
            reply = {"k": "err", "e": encoded}
        self._send(reply, arrays)

    def _dispatch(self, message: dict[str, Any], values: list[Any]) -> Any:  # noqa: PLR0911
        op = message.get("op")
        name = message.get("name")
        if op in self.handlers:
            return self.handlers[op](message, values)
        named = op in ("getattr", "setattr", "delattr", "method")
        if named and (not isinstance(name, str) or (self.restricted and name.startswith("_"))):
            raise AttributeError(f"{name!r:.60}: the graded sampler's process serves "
                                 "public attributes only")
        if op == "getattr":
            value = getattr(values[0], name)  # type: ignore[arg-type]
            if _is_bound_method(value, values[0]):
                return _MethodMarker()
            return value
        if op == "setattr":
            setattr(values[0], name, values[1])  # type: ignore[arg-type]
            return None
        if op == "delattr":
            delattr(values[0], name)  # type: ignore[arg-type]
            return None
        if op == "method":
            target, args, kwargs = values
            return getattr(target, name)(*args, **kwargs)  # type: ignore[arg-type]
        if op == "builtin":
            function = BUILTINS.get(name) if isinstance(name, str) else None
            if function is None:
                raise ProtocolError(f"unknown builtin {name!r:.40}")
            args, kwargs = values[:-1], values[-1]
            return function(*args, **kwargs)
        raise ProtocolError(f"unknown operation {op!r:.40}")

    # ---- what a handle does --------------------------------------------------------------

    def getattr(self, target: Any, name: str) -> Any:
        if (target._sv_id, name) in self._methods:
            return _Method(target, name)
        value = self.request({"op": "getattr", "name": name}, [target])
        if isinstance(value, _MethodMarker):
            self._methods.add((target._sv_id, name))
            return _Method(target, name)
        return value

    def setattr(self, target: Any, name: str, value: Any) -> None:
        self._methods.discard((target._sv_id, name))
        self.request({"op": "setattr", "name": name}, [target, value])

    def call_method(self, target: Any, name: str, args: Any, kwargs: Any) -> Any:
        return self.request({"op": "method", "name": name}, [target, list(args), dict(kwargs)])

    def builtin(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.request({"op": "builtin", "name": name}, [*args, dict(kwargs)])


class _MethodMarker:
    """Sent for an attribute that is a bound method: the peer calls it by name."""


register_value(_MethodMarker, "$m", lambda marker: {}, lambda fields: _MethodMarker(), wide=True)


def _is_bound_method(value: Any, target: Any) -> bool:
    return getattr(value, "__self__", None) is target and callable(value) and not isinstance(
        target, type)


def _make_remote(endpoint: Endpoint, number: int, key: str | None) -> Remote:
    handle = Remote.__new__(Remote)
    object.__setattr__(handle, "_sv_endpoint", endpoint)
    object.__setattr__(handle, "_sv_id", number)
    return handle
