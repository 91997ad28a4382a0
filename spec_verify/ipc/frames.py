"""The data-only wire format between the harness and an untrusted process.

Everything that crosses between the harness and a worker (which runs the implementation under
test) or a suite's proxy (the grader) is a *frame*: plain data, never code. The peer may be
hostile, so the reader trusts nothing: every length is bounded before anything is allocated,
every field is checked, and reading has a deadline on a monotonic clock. Nothing is ever
unpickled, unmarshalled or evaluated (the pickle docs' own warning: unpickling runs code).

A frame on the stream::

    magic   4 bytes   b"SVW1"
    hlen    4 bytes   little-endian uint32: length of the header (JSON, UTF-8)
    blen    8 bytes   little-endian uint64: length of the body (raw array bytes)
    header  hlen bytes  {"header": {...}, "arrays": [[name, dtype, [shape...]], ...]}
    body    blen bytes  the arrays' bytes, C order, little-endian, back to back

The JSON header holds the message (a dict of JSON values: the caller's schema); each numpy
array travels as raw bytes of one of a few plain dtypes (``DTYPES``), its name, dtype and shape
listed in the header, and the body length must equal the sum of their sizes exactly.

API (the general path):

- ``send_message(sock, header, arrays={}, deadline=None, limits=LIMITS)``
- ``recv_message(sock, deadline, limits=LIMITS) -> (header, arrays)``; arrays come back
  read-only (views of the received bytes).
- ``require(header, field, kind)``: one field of a received header, type-checked.

Large arrays without copies: ``send_message(..., shared_above=n)`` puts the arrays of ``n``
bytes or more into one memfd per frame, sealed against writes, shrinking and growing, and
passes its descriptor with the frame's first bytes (``SCM_RIGHTS``; the header then says
``"shared": size`` and each such array's entry ends with its offset). The reader checks that
the descriptor is a memfd with those seals and exactly the declared size, that every array
lies inside it, and maps it shared and read-only (``is_shared``): neither side can change or
truncate it after the check, and a store into it faults. Any other descriptor, or one the
frame does not declare, is a ``WireError``, and every received descriptor is closed.
- errors: ``spec_verify.ipc.errors`` (``WireError`` and its subclasses ``FrameTooLarge``,
  ``WireTimeout``, ``PeerClosed``, ``ProtocolError``).

The buffered fast path, for a conversation of many small frames (the grader's handle RPC: a
suite makes thousands of calls, two frames each; the general reader's three system calls and
poll were about half of a round trip's CPU, ``benchmarks/bench_grade.py`` prints the cost of a
call): the same frames, written and read whole.

- ``encode_frame(header, arrays) -> bytes``: one frame, sent with one ``sendall``;
- ``BufferedReader(sock).read() -> (header, arrays)``: one system call per frame when it is
  whole in the socket, never reading past what the peer sent; it blocks without deadline.

Both paths read and write the same bytes (``tests/ipc/test_frames.py`` checks both ways).

Deadlines are absolute ``time.monotonic()`` values (``None``: wait without limit, for a worker
waiting for its next request). A reader that times out should treat the stream as broken: a
frame may have been half read (the harness kills the peer).
"""

from __future__ import annotations

import array as _array
import fcntl
import json
import math
import mmap
import os
import select
import socket
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.ipc.errors import (
    FrameTooLarge,
    PeerClosed,
    WireError,
    WireTimeout,
)

__all__ = [
    "DTYPES",
    "LIMITS",
    "MAGIC",
    "BufferedReader",
    "Limits",
    "encode_frame",
    "is_shared",
    "recv_message",
    "require",
    "send_message",
]

MAGIC = b"SVW1"
_PREFIX = struct.Struct("<4sIQ")

# The dtypes an array may have on the wire (little-endian names, as numpy spells them).
DTYPES = frozenset({"<f8", "<f4", "<i8", "<i4", "<u8", "<u4", "|u1", "|i1", "|b1"})


@dataclass(frozen=True)
class Limits:
    """Hard bounds on one frame, checked from its prefix before anything is read.

    Attributes:
        max_header: bytes of JSON header.
        max_body: bytes of array data.
        max_arrays: arrays in one frame.
        max_ndim: dimensions of one array.
        max_shared: bytes of one frame's shared-memory file (arrays sent by ``shared_above``).
    """

    max_header: int = 16 << 20
    max_body: int = 256 << 20
    max_arrays: int = 1 << 16
    max_ndim: int = 4
    max_shared: int = 2 << 30
    # Nesting needs no limit here: the JSON parser's recursion limit bounds it (a header
    # nested past it is a WireError), and ``_codec`` bounds the depth of every value.


LIMITS = Limits()


# ---- sending ----------------------------------------------------------------------------


# Shared memory: arrays of at least ``shared_above`` bytes travel in one sealed memfd per
# frame, its descriptor passed with the frame's first bytes (SCM_RIGHTS on the Unix socket).
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
_REQUIRED_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
_ALIGN = 64  # each shared array starts at a multiple of this offset
_MAX_FDS = 4  # descriptors one read accepts (a frame carries at most one; more is an error)
_ANCILLARY = socket.CMSG_SPACE(_MAX_FDS * _array.array("i").itemsize)


class _Encoded:
    """One frame ready to send: its chunks and, when arrays are shared, the sealed memfd."""

    def __init__(self, chunks: list[bytes | memoryview], fd: int | None) -> None:
        self.chunks = chunks
        self.fd = fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _sealed_file(parts: list[tuple[int, memoryview]], size: int) -> int:
    """A memfd of ``size`` bytes holding each ``(offset, bytes)`` of ``parts``, sealed against
    writes, shrinking and growing (so the receiver may map it with no copy, and neither side
    can change it after the receiver checked it)."""
    fd = os.memfd_create("spec-verify-frame", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        for offset, view in parts:
            done = 0
            while done < view.nbytes:
                done += os.pwrite(fd, view[done:], offset + done)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _encode(
    header: Mapping[str, Any],
    arrays: Mapping[str, Any],
    limits: Limits,
    shared_above: int | None = None,
) -> _Encoded:
    if not isinstance(header, Mapping):
        raise WireError(f"header must be a dict, not {type(header).__name__}")
    listing: list[list[Any]] = []
    chunks: list[bytes | memoryview] = []
    shared: list[tuple[int, memoryview]] = []
    total = 0
    shared_size = 0
    if len(arrays) > limits.max_arrays:
        raise FrameTooLarge(f"{len(arrays)} arrays; at most {limits.max_arrays} per frame")
    for name, value in arrays.items():
        array = np.asarray(value)
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        if dtype.str not in DTYPES:
            raise WireError(f"array {name!r} has dtype {array.dtype}; the wire carries {DTYPES}")
        if array.ndim > limits.max_ndim:
            raise FrameTooLarge(f"array {name!r} has {array.ndim} dimensions")
        array = np.ascontiguousarray(array, dtype=dtype)
        entry: list[Any] = [str(name), dtype.str, [int(n) for n in array.shape]]
        if shared_above is not None and array.nbytes >= max(1, shared_above):
            entry.append(shared_size)
            shared.append((shared_size, array.data.cast("B")))
            shared_size += -(-array.nbytes // _ALIGN) * _ALIGN
        else:
            chunks.append(array.data.cast("B") if array.size else b"")
            total += array.nbytes
        listing.append(entry)
    envelope: dict[str, Any] = {"header": dict(header), "arrays": listing}
    if shared:
        envelope["shared"] = shared_size
    try:
        text = _JSON_OUT.encode(envelope).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise WireError(f"header is not plain JSON data: {exc}") from exc
    if len(text) > limits.max_header:
        raise FrameTooLarge(f"header of {len(text)} bytes; the limit is {limits.max_header}")
    if total > limits.max_body:
        raise FrameTooLarge(f"arrays of {total} bytes; the limit is {limits.max_body}")
    if shared_size > limits.max_shared:
        raise FrameTooLarge(
            f"shared arrays of {shared_size} bytes; the limit is {limits.max_shared}")
    fd = _sealed_file(shared, shared_size) if shared else None
    return _Encoded([_PREFIX.pack(MAGIC, len(text), total), text, *chunks], fd)


# made once: json.dumps with options builds an encoder per call, json.loads sniffs the encoding
_JSON_OUT = json.JSONEncoder(separators=(",", ":"), allow_nan=True)
_JSON_IN = json.JSONDecoder()


def _wait(sock: socket.socket, event: int, deadline: float | None, what: str) -> None:
    poller = select.poll()
    poller.register(sock.fileno(), event | select.POLLERR | select.POLLHUP)
    while True:
        if deadline is None:
            timeout_ms = None
        else:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireTimeout(f"{what}: the deadline passed")
            timeout_ms = max(1, math.ceil(left * 1000))
        if poller.poll(timeout_ms):
            return


def send_message(
    sock: socket.socket,
    header: Mapping[str, Any],
    arrays: Mapping[str, Any] | None = None,
    deadline: float | None = None,
    limits: Limits = LIMITS,
    shared_above: int | None = None,
) -> None:
    """Send one frame: ``header`` (JSON data) and ``arrays`` (name -> numpy array).

    With ``shared_above``, the arrays of at least that many bytes are not written onto the
    stream: they go into one sealed memfd whose descriptor crosses with the frame (the
    socket must be a Unix socket), and the receiver maps it read-only instead of copying.

    The write waits at most until ``deadline`` (a peer that stops reading cannot hang the
    sender). Raises ``WireError`` when the header is not JSON data or an array's dtype is not
    in ``DTYPES``, ``FrameTooLarge`` past ``limits``, ``WireTimeout`` at the deadline and
    ``PeerClosed`` when the peer is gone.
    """
    encoded = _encode(header, arrays or {}, limits, shared_above)
    try:
        parts = encoded.chunks
        # The prefix and header go in one write (with the shared file's descriptor, if any);
        # arrays follow without a copy.
        chunks: list[bytes | memoryview] = [b"".join(parts[:2]), *parts[2:]]
        for chunk in chunks:
            view = memoryview(chunk)
            while view.nbytes:
                try:
                    if encoded.fd is not None:
                        rights = _array.array("i", [encoded.fd])
                        sent = sock.sendmsg([view], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                      rights)], socket.MSG_DONTWAIT)
                        encoded.close()  # the peer holds its own copy of the descriptor now
                    else:
                        sent = sock.send(view, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    _wait(sock, select.POLLOUT, deadline, "sending a frame")
                    continue
                except (BrokenPipeError, ConnectionResetError) as exc:
                    raise PeerClosed(
                        f"the peer closed the stream while a frame was sent ({exc})"
                    ) from exc
                view = view[sent:]
    finally:
        encoded.close()


# ---- receiving --------------------------------------------------------------------------


def _read_exact(
    sock: socket.socket,
    n: int,
    deadline: float | None,
    what: str,
    started: bool,
    fds: list[int] | None = None,
) -> bytearray:
    """``n`` bytes by ``deadline``; with ``fds``, read by ``recvmsg`` and every descriptor
    passed with them appended there (the caller closes them)."""
    buffer = bytearray(n)
    view = memoryview(buffer)
    got = 0
    while got < n:
        try:
            if fds is None:
                count = sock.recv_into(view[got:], n - got, socket.MSG_DONTWAIT)
            else:
                count, ancillary, flags, _ = sock.recvmsg_into(
                    [view[got:]], _ANCILLARY, socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
                fds += _descriptors(ancillary)
                if flags & socket.MSG_CTRUNC:
                    raise WireError(f"more than {_MAX_FDS} file descriptors came with a frame")
        except (BlockingIOError, InterruptedError):
            _wait(sock, select.POLLIN, deadline, f"reading {what}")
            continue
        except ConnectionResetError as exc:
            count = 0
            if not started and got == 0:
                raise PeerClosed(f"the peer reset the stream ({exc})") from exc
        if count == 0:
            if not started and got == 0:
                raise PeerClosed("the peer closed the stream")
            raise WireError(f"truncated frame: the stream ended after {got} of {n} bytes of {what}")
        got += count
        if deadline is not None and got < n and time.monotonic() > deadline:
            raise WireTimeout(f"reading {what}: the deadline passed")
    return buffer


def _descriptors(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The descriptors of ``SCM_RIGHTS`` messages (any other control message is ignored)."""
    out: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            rights = _array.array("i")
            rights.frombytes(data[: len(data) - len(data) % rights.itemsize])
            out += list(rights)
    return out


def _map_shared(fd: int, size: Any, limits: Limits) -> mmap.mmap:
    """The frame's shared file, checked and mapped read-only.

    It must be a memfd sealed against writes, shrinking and growing (so that neither the
    sender nor anyone else can change or truncate it after these checks: no SIGBUS, no value
    changing under a validation), of exactly the size the header declares.
    """
    if type(size) is not int or not 0 < size <= limits.max_shared:
        raise WireError(f"a shared size of {size!r:.40}; it must be an int in (0, "
                        f"{limits.max_shared}]")
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError as exc:
        raise WireError(f"the descriptor sent with the frame is not a sealed memfd ({exc})"
                        ) from None
    if seals & _REQUIRED_SEALS != _REQUIRED_SEALS:
        raise WireError(f"the shared memfd is not sealed against writes and resizing "
                        f"(seals {seals:#x}; F_SEAL_WRITE, F_SEAL_SHRINK and F_SEAL_GROW "
                        "are required)")
    actual = os.fstat(fd).st_size
    if actual != size:
        raise WireError(f"the header declares {size} shared bytes but the memfd has {actual}")
    try:
        # MAP_SHARED and PROT_READ: with F_SEAL_WRITE the kernel refuses to make it writable
        return _SealedMap(fd, size, access=mmap.ACCESS_READ)
    except PermissionError:
        # kernels before 6.7 refuse a shared mapping of a write-sealed file: a private one,
        # whose writes (after an mprotect) reach nobody else's pages
        return mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    except (OSError, ValueError) as exc:
        raise WireError(f"the shared memfd could not be mapped ({exc})") from None


def is_shared(array: Any) -> bool:
    """Whether ``array`` is a received shared array the process cannot write: a view of a
    sealed memfd mapped shared and read-only (a C library's store into it faults; ``mprotect``
    cannot make it writable). A private fallback mapping (older kernels) is not: there a
    library could make its own copy writable, so its inputs are checked as copies are."""
    base = array
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return isinstance(base, _SealedMap)


class _SealedMap(mmap.mmap):
    """A shared, read-only mapping of a sealed memfd (``is_shared`` knows it by its type)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise WireError("the header repeats a key")
    return result


def _listing(
    raw: Any, limits: Limits
) -> list[tuple[str, np.dtype[Any], tuple[int, ...], int, int | None]]:
    """The array entries: ``(name, dtype, shape, nbytes, offset)``, ``offset`` None for an
    array in the body, else where it starts in the frame's shared file."""
    if not isinstance(raw, list) or len(raw) > limits.max_arrays:
        raise WireError(f"the array listing must be a list of at most {limits.max_arrays}")
    out = []
    names = set()
    for entry in raw:
        if not (isinstance(entry, list) and len(entry) in (3, 4)):
            raise WireError(f"array entry {entry!r:.80} is not [name, dtype, shape] (or "
                            "[name, dtype, shape, offset] when shared)")
        name, dtype, shape = entry[:3]
        offset = entry[3] if len(entry) == 4 else None
        if not isinstance(name, str) or name in names:
            raise WireError(f"array name {name!r:.80} is not a new string")
        if dtype not in DTYPES:
            raise WireError(f"array {name!r}: dtype {dtype!r:.40} is not one of {sorted(DTYPES)}")
        if not (
            isinstance(shape, list)
            and len(shape) <= limits.max_ndim
            and all(type(n) is int and 0 <= n < 2**62 for n in shape)
        ):
            raise WireError(f"array {name!r}: shape {shape!r:.80} is not a list of sizes")
        names.add(name)
        kind = np.dtype(dtype)
        nbytes = kind.itemsize * math.prod(shape)
        if offset is not None:
            if type(offset) is not int or offset < 0 or offset % _ALIGN:
                raise WireError(f"array {name!r}: shared offset {offset!r:.40} is not a "
                                f"non-negative multiple of {_ALIGN}")
            if nbytes > limits.max_shared:
                raise FrameTooLarge(f"shared array {name!r} of {nbytes} bytes; the limit is "
                                    f"{limits.max_shared}")
        elif nbytes > limits.max_body:
            raise FrameTooLarge(f"array {name!r} of {nbytes} bytes; the limit is {limits.max_body}")
        out.append((name, kind, tuple(shape), nbytes, offset))
    return out


def recv_message(
    sock: socket.socket, deadline: float | None, limits: Limits = LIMITS
) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    """Read one whole frame by ``deadline`` (``time.monotonic()``; None waits without limit).

    Returns:
        ``(header, arrays)``: the header dict as sent, and name -> read-only numpy array
        (shared arrays are views of the sender's sealed memfd, mapped read-only).

    Raises:
        PeerClosed: the stream ended before the frame began.
        WireTimeout: the frame was not whole by the deadline (the stream is then unusable).
        FrameTooLarge: the prefix announces more than ``limits`` allow (nothing allocated).
        WireError: anything else malformed: magic, JSON, schema, sizes, a truncated frame, a
            descriptor the frame does not declare, or a shared file that is not a sealed memfd
            of the declared size holding every shared array.
    """
    fds: list[int] = []
    try:
        return _recv_message(sock, deadline, limits, fds)
    finally:
        for fd in fds:
            os.close(fd)


def _recv_message(
    sock: socket.socket, deadline: float | None, limits: Limits, fds: list[int]
) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
    prefix = _read_exact(sock, _PREFIX.size, deadline, "the frame prefix", False, fds)
    magic, hlen, blen = _PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise WireError(f"bad frame magic {bytes(magic)!r} (expected {MAGIC!r}): not our protocol")
    if hlen > limits.max_header:
        raise FrameTooLarge(f"a header of {hlen} bytes announced; the limit is {limits.max_header}")
    if blen > limits.max_body:
        raise FrameTooLarge(f"a body of {blen} bytes announced; the limit is {limits.max_body}")
    text = _read_exact(sock, hlen, deadline, "the frame header", True, fds)
    try:
        envelope = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except WireError:
        raise
    except (ValueError, RecursionError) as exc:
        raise WireError(f"the frame header is not JSON: {exc}") from exc
    if not (isinstance(envelope, dict) and set(envelope) in ({"header", "arrays"},
                                                              {"header", "arrays", "shared"})):
        raise WireError("the frame header must be {'header': {...}, 'arrays': [...]} (and "
                        "'shared': bytes when arrays are shared)")
    header = envelope["header"]
    if not isinstance(header, dict):
        raise WireError(f"the message header is a {type(header).__name__}, not a dict")
    listing = _listing(envelope["arrays"], limits)
    inline = sum(nbytes for _, _, _, nbytes, offset in listing if offset is None)
    if inline != blen:
        raise WireError(f"the body has {blen} bytes but the arrays listed need {inline}")
    shared = None
    if "shared" in envelope or fds:
        if len(fds) != 1 or "shared" not in envelope:
            raise WireError(f"{len(fds)} file descriptors came with a frame that declares "
                            f"{'a' if 'shared' in envelope else 'no'} shared file; exactly one "
                            "comes with a frame that declares one, none otherwise")
        shared = _map_shared(fds[0], envelope["shared"], limits)
        for name, _, _, nbytes, offset in listing:
            if offset is not None and offset + nbytes > len(shared):
                size = len(shared)
                shared.close()  # now, not when the traceback goes: it holds a descriptor
                raise WireError(f"shared array {name!r} ends at {offset + nbytes}, past the "
                                f"{size} bytes of the shared file")
    elif any(offset is not None for *_, offset in listing):
        raise WireError("the listing has shared arrays but the frame declares no shared file")
    body = _read_exact(sock, blen, deadline, "the frame body", started=True)
    return header, _arrays(body, listing, shared)


def _arrays(
    body: bytes | bytearray,
    listing: list[tuple[str, np.dtype[Any], tuple[int, ...], int, int | None]],
    shared: mmap.mmap | None = None,
) -> dict[str, NDArray[Any]]:
    """The listed arrays: read-only views of ``body``, or of ``shared`` for the entries with
    an offset (the receiver's inputs are read-only)."""
    arrays: dict[str, NDArray[Any]] = {}
    position = 0
    for name, kind, shape, nbytes, offset in listing:
        count = nbytes // kind.itemsize if kind.itemsize else 0
        if offset is None:
            flat = np.frombuffer(body, dtype=kind, count=count, offset=position)
            position += nbytes
        else:
            assert shared is not None
            flat = np.frombuffer(shared, dtype=kind, count=count, offset=offset)
        flat.flags.writeable = False
        arrays[name] = flat.reshape(shape)
    return arrays


def require(header: Mapping[str, Any], field: str, kind: type | tuple[type, ...]) -> Any:
    """``header[field]``, checked to be of ``kind`` (``bool`` is not accepted as ``int``).

    Raises:
        WireError: the field is missing or has another type.
    """
    if field not in header:
        raise WireError(f"the message has no field {field!r}")
    value = header[field]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise WireError(f"field {field!r} is a bool; expected {_names(kinds)}")
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kinds):
        raise WireError(f"field {field!r} is a {type(value).__name__}; expected {_names(kinds)}")
    return value


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kinds)


# ---- the buffered fast path: whole frames, one system call each -------------------------

_CHUNK = 1 << 16


def encode_frame(
    header: Mapping[str, Any], arrays: Mapping[str, Any] | None = None, limits: Limits = LIMITS
) -> bytes:
    """One frame as bytes (``send_message``'s, to be sent with one ``sendall``).

    Raises:
        WireError: the header is not plain JSON data, or an array's dtype is not in ``DTYPES``.
        FrameTooLarge: the header or the arrays are above ``limits``.
    """
    return b"".join(_encode(header, arrays or {}, limits).chunks)


class BufferedReader:
    """Reads frames from a socket, buffered: one system call per frame when it is whole in the
    socket (the usual case), never reading past what the peer sent; no deadline."""

    def __init__(self, sock: socket.socket, limits: Limits = LIMITS) -> None:
        self.sock = sock
        self.limits = limits
        self.buffer = bytearray()

    def _fill(self, size: int, started: bool) -> None:
        while len(self.buffer) < size:
            try:
                chunk = self.sock.recv(max(_CHUNK, size - len(self.buffer)))
            except (BlockingIOError, InterruptedError):
                select.select([self.sock], [], [])
                continue
            except ConnectionResetError as exc:
                chunk = b""
                if not started and not self.buffer:
                    raise PeerClosed(f"the peer reset the stream ({exc})") from exc
            if not chunk:
                if not started and not self.buffer:
                    raise PeerClosed("the peer closed the stream")
                raise WireError(
                    f"truncated frame: the stream ended after {len(self.buffer)} of {size} bytes"
                )
            self.buffer += chunk

    def read(self) -> tuple[dict[str, Any], dict[str, NDArray[Any]]]:
        """The next frame's header and arrays (read-only), as ``recv_message`` returns them.

        Raises:
            PeerClosed: the stream ended before the frame began.
            FrameTooLarge: the prefix announces more than the limits allow.
            WireError: anything else malformed.
        """
        self._fill(_PREFIX.size, started=False)
        magic, size, body = _PREFIX.unpack_from(self.buffer)
        if magic != MAGIC:
            raise WireError(f"bad frame magic {bytes(magic)!r}: not our protocol")
        if size > self.limits.max_header or body > self.limits.max_body:
            raise FrameTooLarge(f"a frame of {size} header and {body} body bytes announced")
        end = _PREFIX.size + size + body
        self._fill(end, started=True)
        text = bytes(self.buffer[_PREFIX.size : _PREFIX.size + size])
        data = bytes(self.buffer[_PREFIX.size + size : end])
        del self.buffer[:end]
        try:
            envelope = _JSON_IN.decode(text.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise WireError(f"the frame header is not JSON: {exc}") from exc
        if not (
            isinstance(envelope, dict)
            and set(envelope) == {"header", "arrays"}
            and isinstance(envelope["header"], dict)
        ):
            raise WireError("the frame header must be {'header': {...}, 'arrays': [...]}")
        listing = _listing(envelope["arrays"], self.limits)
        if "shared" in envelope or any(offset is not None for *_, offset in listing):
            raise WireError("the buffered path carries no shared arrays")
        if sum(nbytes for _, _, _, nbytes, _ in listing) != body:
            raise WireError("the frame's body does not hold exactly the arrays listed")
        return envelope["header"], _arrays(data, listing)
