"""Arrays by shared memory (``send_message(..., shared_above=n)``): one sealed memfd per frame,
its descriptor passed with the frame, mapped read-only by the receiver.

The same arrays as the copying path, bitwise; read-only where the receiver cannot undo it; a
sealed file nobody can write or resize; and every forged variant (no seal, a size that lies, a
descriptor that is not a memfd, descriptors the frame does not declare, an array past the end)
refused with ``WireError`` and no descriptor left open.
"""

from __future__ import annotations

import array
import fcntl
import json
import mmap
import os
import socket
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

from spec_verify.ipc import frames
from spec_verify.ipc.errors import WireError
from spec_verify.ipc.frames import MAGIC, is_shared, recv_message, send_message

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd, SCM_RIGHTS")

_V = 40_000  # a row of 320 kB: above the threshold the tests use


def _exchange(arrays: dict[str, Any], shared_above: int | None) -> tuple[dict, dict]:
    a, b = socket.socketpair()
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(recv_message(b, None)))
    reader.start()
    try:
        send_message(a, {"kind": "t"}, arrays, shared_above=shared_above)
        reader.join(10)
    finally:
        a.close()
        b.close()
    return got[0]


def _inputs() -> dict[str, Any]:
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(5, _V))
    rows[0, 3] = -np.inf
    rows[1, 4] = -0.0
    rows.view(np.uint64)[2, 5] = 0x7FF8_0000_DEAD_BEEF  # a NaN with a payload
    return {"rows": rows, "q": rng.random((4, _V)).astype(np.float32),
            "ids": np.arange(9, dtype=np.int64), "empty": np.zeros((0, 3)),
            "strided": rows[:, ::2], "flags": rng.random(_V * 8) > 0.5}


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_shared_arrays_are_the_copied_arrays_bitwise() -> None:
    sent = _inputs()
    _, copied = _exchange(sent, None)
    _, shared = _exchange(sent, 1 << 16)
    assert set(copied) == set(shared) == set(sent)
    for name, value in sent.items():
        assert shared[name].dtype == copied[name].dtype
        assert shared[name].shape == copied[name].shape == value.shape
        assert shared[name].tobytes() == copied[name].tobytes() == np.ascontiguousarray(
            value).tobytes(), name
    big = {n for n, v in sent.items() if v.nbytes >= 1 << 16}
    assert big == {"rows", "q", "strided", "flags"}
    assert {n for n, v in shared.items() if is_shared(v)} == big
    assert not any(is_shared(v) for v in copied.values())  # negative control


def test_a_shared_array_is_read_only_for_good() -> None:
    _, got = _exchange({"rows": np.ones((2, _V))}, 1 << 16)
    rows = got["rows"]
    assert not rows.flags.writeable
    with pytest.raises(ValueError, match="WRITEABLE"):
        rows.flags.writeable = True
    with pytest.raises(ValueError, match="read-only"):
        rows[0, 0] = 2.0


def test_the_shared_file_cannot_be_written_or_resized_by_anyone() -> None:
    data = np.arange(1024, dtype=np.float64)
    fd = frames._sealed_file([(0, data.data.cast("B"))], data.nbytes)
    try:
        for attempt in (lambda: os.write(fd, b"x"), lambda: os.pwrite(fd, b"x", 0),
                        lambda: os.ftruncate(fd, 0), lambda: os.ftruncate(fd, 1 << 20),
                        lambda: mmap.mmap(fd, data.nbytes, access=mmap.ACCESS_WRITE),
                        lambda: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, 0)):
            with pytest.raises(PermissionError):
                attempt()
        assert os.pread(fd, data.nbytes, 0) == data.tobytes()
    finally:
        os.close(fd)


_STORE = """
import ctypes, socket, sys, threading, numpy as np
from spec_verify.ipc.frames import recv_message, send_message, is_shared
a, b = socket.socketpair()
t = threading.Thread(target=send_message, args=(a, {}, {"x": np.ones(1 << 16)}),
                     kwargs={"shared_above": 1 << 10}); t.start()
_, got = recv_message(b, None); t.join()
x = got["x"]
assert is_shared(x)
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
page = x.ctypes.data & ~4095
print("mprotect", libc.mprotect(page, 4096, 3), flush=True)  # PROT_READ | PROT_WRITE
ctypes.memset(x.ctypes.data, 0, 8)  # a C library's store into its const input
print("stored", flush=True)
"""


def test_a_store_into_a_shared_array_faults_and_mprotect_cannot_lift_it() -> None:
    result = subprocess.run([sys.executable, "-c", _STORE], capture_output=True, text=True,
                            timeout=60, check=False)
    assert "mprotect -1" in result.stdout, (result.stdout, result.stderr)
    assert "stored" not in result.stdout
    assert result.returncode == -11, result.stderr  # SIGSEGV: the implementation's crash


# ---- forged frames ------------------------------------------------------------------------


def _forge(envelope: dict[str, Any], fds: list[int], body: bytes = b"") -> dict[str, Any]:
    """Send a hand-built frame with ``fds``; what ``recv_message`` raises or returns."""
    text = json.dumps(envelope).encode()
    a, b = socket.socketpair()
    try:
        prefix = frames._PREFIX.pack(MAGIC, len(text), len(body))
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        a.sendmsg([prefix + text + body], rights)
        before = _open_fds()
        try:
            header, arrays = recv_message(b, None)
        except WireError as exc:
            assert _open_fds() == before, "a received descriptor was left open"
            return {"error": str(exc)}
        return {"header": header, "arrays": arrays}
    finally:
        a.close()
        b.close()


def _memfd(data: bytes, seals: int | None = frames._SEALS) -> int:
    fd = os.memfd_create("forged", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if seals is not None:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd


_ROW = np.arange(64, dtype=np.float64).tobytes()  # 512 bytes


def _envelope(shared: Any = 512, offset: Any = 0, shape: Any = (64,)) -> dict[str, Any]:
    return {"header": {"kind": "x"}, "arrays": [["x", "<f8", list(shape), offset]],
            "shared": shared}


@pytest.fixture
def descriptors() -> Any:
    opened: list[int] = []

    def make(fd: int) -> int:
        opened.append(fd)
        return fd

    yield make
    for fd in opened:
        os.close(fd)


def test_a_well_formed_forged_frame_is_read(descriptors: Any) -> None:
    got = _forge(_envelope(), [descriptors(_memfd(_ROW))])
    assert "error" not in got, got
    assert got["arrays"]["x"].tobytes() == _ROW and is_shared(got["arrays"]["x"])


@pytest.mark.parametrize(("case", "message"), [
    ("unsealed", "not sealed against writes and resizing"),
    ("write_seal_only", "not sealed against writes and resizing"),
    ("pipe", "not a sealed memfd"),
    ("regular_file", "not a sealed memfd"),
    ("size_larger", "declares 1024 shared bytes but the memfd has 512"),
    ("size_smaller", "ends at 512, past the 256 bytes"),
    ("size_not_int", "a shared size of '512'"),
    ("size_zero", "a shared size of 0"),
    ("offset_past_end", "ends at 1024, past the 512 bytes"),
    ("offset_unaligned", "is not a non-negative multiple of 64"),
    ("offset_negative", "is not a non-negative multiple of 64"),
    ("undeclared_fd", "1 file descriptors came with a frame that declares no shared file"),
    ("declared_without_fd", "0 file descriptors came with a frame that declares a shared"),
    ("two_fds", "2 file descriptors came with a frame that declares a shared file"),
    ("too_many_fds", "more than 4 file descriptors"),
    ("listing_without_declaration", "declares no shared file"),
])
def test_a_forged_shared_frame_is_refused(case: str, message: str, descriptors: Any,
                                          tmp_path: Any) -> None:
    envelope = _envelope()
    fds: list[int] = []
    if case == "unsealed":
        fds = [descriptors(_memfd(_ROW, None))]
    elif case == "write_seal_only":  # it could still be truncated under the reader: SIGBUS
        fds = [descriptors(_memfd(_ROW, fcntl.F_SEAL_WRITE))]
    elif case == "pipe":
        read, write = os.pipe()
        descriptors(write)
        fds = [descriptors(read)]
    elif case == "regular_file":
        path = tmp_path / "f"
        path.write_bytes(_ROW)
        fds = [descriptors(os.open(path, os.O_RDONLY))]
    elif case == "size_larger":
        envelope, fds = _envelope(shared=1024), [descriptors(_memfd(_ROW))]
    elif case == "size_smaller":
        envelope, fds = _envelope(shared=256), [descriptors(_memfd(_ROW[:256]))]
    elif case == "size_not_int":
        envelope, fds = _envelope(shared="512"), [descriptors(_memfd(_ROW))]
    elif case == "size_zero":
        envelope, fds = _envelope(shared=0), [descriptors(_memfd(b""))]
    elif case == "offset_past_end":
        envelope, fds = _envelope(offset=512), [descriptors(_memfd(_ROW))]
    elif case == "offset_unaligned":
        envelope, fds = _envelope(offset=8, shape=(8,)), [descriptors(_memfd(_ROW))]
    elif case == "offset_negative":
        envelope, fds = _envelope(offset=-64), [descriptors(_memfd(_ROW))]
    elif case == "undeclared_fd":
        envelope = {"header": {}, "arrays": []}
        fds = [descriptors(_memfd(_ROW))]
    elif case == "declared_without_fd":
        pass
    elif case == "two_fds":
        fds = [descriptors(_memfd(_ROW)), descriptors(_memfd(_ROW))]
    elif case == "too_many_fds":
        fds = [descriptors(_memfd(_ROW)) for _ in range(6)]
    elif case == "listing_without_declaration":
        envelope = {"header": {}, "arrays": [["x", "<f8", [64], 0]]}
    got = _forge(envelope, fds)
    assert "error" in got, f"{case} was accepted"
    assert message in got["error"], got["error"]


def test_the_sender_closes_its_descriptor() -> None:
    before = _open_fds()
    for _ in range(5):
        _exchange({"rows": np.ones((2, _V))}, 1 << 16)
    assert _open_fds() == before


def test_mapping_a_received_array_is_not_copying_it() -> None:
    """The point of the path: the receiver's array is a view of the mapping (its address
    is inside it), not a copy of it."""
    _, got = _exchange({"rows": np.ones((3, _V))}, 1 << 16)
    rows = got["rows"]
    base: Any = rows
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    assert isinstance(base, mmap.mmap) and len(base) >= rows.nbytes
    _, copied = _exchange({"rows": np.ones((3, _V))}, None)
    base = copied["rows"]
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    assert not isinstance(base, mmap.mmap)  # negative control: the stream's bytes
