"""Objects across the process boundary, as handles: the Python worker's object protocol.

A Python implementation (``python:``, ``mutant:``, the bundled reference) lives in a worker
process (``_python_worker``); the harness holds ``RemoteObject`` proxies of its module and of
every object its calls return that is not plain data (drafts, models, ``Generation`` records,
its ``SamplingParams``, its PCG32 streams). Harness objects handed to it (uniform sources,
the reference's parameters) go the other way: the worker gets proxies, and each use is a
*callback* the harness answers while it waits. So every tier drives a worker exactly as it
drove the module, while nothing the implementation owns ever runs in the harness.

Frames (``ipc.frames``; values in the ``_codec`` schema, ``{"$h": n}`` an object of the sender,
``{"$o": n}`` one of the receiver):

- requests ``{"kind": "call", "target": n, "attr": name | null, "args": [...], "kwargs":
  {...}}`` (``target.attr(*args, **kwargs)``, or ``target(...)``), ``{"kind": "getattr",
  "target": n, "attr": name}``, ``{"kind": "list", "target": n}`` (``list(target)``);
  from the worker they carry ``"callback": true`` (``WorkerProcess`` serves them);
- answers ``{"kind": "return", "value": v}`` or ``{"kind": "raise", "error": e}``.

Handle 0 on the worker side is the implementation's module.
"""

from __future__ import annotations

import inspect
import itertools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from spec_verify.adapters._codec import (
    NotData,
    decode_error,
    decode_value,
    encode_error,
    encode_value,
)
from spec_verify.ipc.errors import WireError
from spec_verify.ipc.frames import require

__all__ = [
    "Handles",
    "RemoteObject",
    "answer",
    "call_checked",
    "call_method",
    "input_change",
    "request_header",
]

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
    """``fn(*args, **kwargs)`` where the arguments belong to the caller: the callee gets its own
    copies of the array, list and tuple arguments (arrays writable, so an honest ``x /= t`` on
    a copy of its own never fails) and after the call each is compared with the caller's,
    arrays bitwise (NaN payloads and -0.0 count, as the C ABI path compares them). A change
    raises ``_InputChanged`` naming the argument and the first entry that changed: an
    implementation that writes into the logits or the draft probabilities it was given (the
    in-place ``div_`` of vLLM PR #16952) corrupts its caller's buffers in an engine.

    >>> def scale(logits, t):
    ...     logits /= t
    ...     return logits
    >>> try:
    ...     call_checked(scale, [np.array([1.0, 2.0]), 2.0], {}, "verify_draft (round 3)")
    ... except Exception as exc:
    ...     print(str(exc).partition(";")[0])
    modified its input target_logits at [0] (round 3): 1.0 became 0.5 (2 of 2 entries changed)
    """
    owned = [_owned(v) for v in args]
    owned_kwargs = {k: _owned(v) for k, v in kwargs.items()}
    value = fn(*owned, **owned_kwargs)
    befores, afters = [*args, *kwargs.values()], [*owned, *owned_kwargs.values()]
    for i, (before, after) in enumerate(zip(befores, afters, strict=True)):
        # not copied (a source, the parameters, a scalar), or unchanged: the common case, so
        # the names are worked out only for a change
        if before is after or _change(before, after, "") is None:
            continue
        name = _argument_names(fn, label, len(args), kwargs)[i]
        where, what, in_array = _change(before, after, name) or ("", "", False)
        context = label.partition(" ")[2]
        context = f" {context}" if context else ""
        if in_array:
            raise _InputChanged(
                f"modified its input {where}{context}: {what}; inputs belong to the caller and "
                "must not be written: copy before writing (x = x / t, not x /= t)"
            )
        raise _InputChanged(
            f"changed one of its list arguments{context}: {where} {what}; inputs belong to the "
            "caller and must not be modified"
        )
    return value


def input_change(before: Any, after: Any, name: str) -> str | None:
    """How an input named ``name`` changed from ``before`` to ``after``, as ``call_checked``
    words it (``"target_logits at [0, 1]: -inf became -1e+30 (1 of 6 entries changed)"``), or
    None when it did not (arrays bitwise)."""
    change = _change(before, after, name)
    return None if change is None else f"{change[0]}: {change[1]}"


class _InputChanged(Exception):
    """The implementation modified an argument it was given."""


# The contract's names for the arguments of its calls, by method (seed section 4 and
# CONTRACT.md): a message names the argument as the caller knows it, whatever the callee
# calls its parameters.
_CONTRACT_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "verify_draft": ("target_logits", "draft_ids", "draft_probs", "p", "history", "rng",
                     "prompt"),
    "verify_tree": ("target_logits", "parents", "token_ids", "draft_probs", "p", "history",
                    "rng", "prompt"),
    "sampling_distribution": ("logits", "p", "history", "prompt"),
    "propose_and_verify": ("target_logits", "draft_logits", "p", "history", "rng", "prompt",
                           "draft_params"),
    "propose": ("ctx", "k", "rng"),
}  # fmt: skip


def _argument_names(
    fn: Callable[..., Any], label: str, n: int, kwargs: dict[str, Any]
) -> list[str]:
    """The names of ``n`` positional arguments and of ``kwargs``: the contract's names for its
    calls, else the callee's parameter names, else ``argument i``."""
    method = label.partition(" ")[0]
    names = list(_CONTRACT_ARGUMENTS.get(method, ()))[:n]
    if len(names) < n:
        try:
            params = [
                p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]  # fmt: skip
        except (TypeError, ValueError):  # no signature (a builtin, a proxy)
            params = []
        names += params[len(names) : n]
    names += [f"argument {i}" for i in range(len(names), n)]
    return names + list(kwargs)


def _owned(value: Any) -> Any:
    """A copy the callee may change: arrays (writable), lists and tuples, recursively; other
    objects as they are (uniform sources, parameters, handles)."""
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    if type(value) is list:
        if _plain(value):  # ids, history, prompt: a shallow copy is a full one
            return list(value)
        return [_owned(v) for v in value]
    if type(value) is tuple:
        return tuple(_owned(v) for v in value)
    return value


_SCALARS = (int, float, bool, str, bytes, type(None), np.generic)
_PLAIN = frozenset({int, bool, str})
_WORDS: dict[int, Any] = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _change(before: Any, after: Any, where: str) -> tuple[str, str, bool] | None:
    """Where ``after`` (the callee's copy) differs from ``before`` (the caller's value): the
    place, what changed and whether it is inside an array; None if nothing did.

    Arrays compare bitwise, lists and tuples element by element, plain scalars by type and
    ``repr`` (``-0.0`` is not ``0.0``; a value written back unchanged is no change), anything
    else by identity (the copy holds the same object unless the callee replaced it).
    """
    if isinstance(before, np.ndarray):
        return _array_change(before, after, where)
    if type(before) in (list, tuple):
        return _sequence_change(before, after, where)
    same_scalar = (
        isinstance(before, _SCALARS) and type(after) is type(before) and repr(after) == repr(before)
    )
    if before is after or same_scalar:
        return None
    return where, f"{before!r:.60} became {after!r:.60}", False


def _sequence_change(
    before: list[Any] | tuple[Any, ...], after: Any, where: str
) -> tuple[str, str, bool] | None:
    """``_change`` for a list or a tuple: element by element, the whole shown unless the change
    is inside an array or a nested list."""
    if type(after) is not type(before) or len(after) != len(before):
        return where, f"{_short(before)} became {_short(after)}", False
    if _plain(before) and _plain(after) and _same_plain(before, after):
        return None  # the common case, without a Python loop per element
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        change = _change(b, a, f"{where}[{i}]")
        if change is not None:
            return (
                change
                if change[2] or isinstance(b, (list, tuple))
                else (where, f"{_short(before)} became {_short(after)}", False)
            )
    return None


def _plain(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether every element is an int, a bool or a str (what ids, histories and prompts are)."""
    return all(type(v) in _PLAIN for v in values)


def _same_plain(before: list[Any] | tuple[Any, ...], after: list[Any] | tuple[Any, ...]) -> bool:
    """Equal elements of equal types (``True == 1``, yet a bool written over an int changes it)."""
    return before == after and list(map(type, before)) == list(map(type, after))


def _array_change(before: Any, after: Any, where: str) -> tuple[str, str, bool] | None:
    if not isinstance(after, np.ndarray) or after.shape != before.shape:
        shape = getattr(after, "shape", type(after).__name__)
        return where, f"its shape changed from {before.shape} to {shape}", True
    if after.dtype != before.dtype:
        return where, f"its dtype changed from {before.dtype} to {after.dtype}", True
    if before.dtype.hasobject:
        same = all(a is b for a, b in zip(before.flat, after.flat, strict=True))
        return None if same else (where, "an entry was replaced", True)
    # bitwise, as unsigned words of the item's size where there is one (2.5x faster than bytes)
    word = _WORDS.get(before.dtype.itemsize, np.uint8)
    old = np.ascontiguousarray(before).reshape(-1).view(word)
    new = np.ascontiguousarray(after).reshape(-1).view(word)
    if np.array_equal(old, new):
        return None
    differs = (old != new).reshape(before.size, -1).any(axis=1)
    first = int(np.argmax(differs))
    index = [int(i) for i in np.unravel_index(first, before.shape)]
    was, now = before.reshape(-1)[first].item(), after.reshape(-1)[first].item()
    return (
        f"{where} at {index}",
        f"{was!r} became {now!r} ({int(differs.sum())} of {before.size} entries changed)",
        True,
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
