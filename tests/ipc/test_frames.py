"""The data-only wire format: round trips, and every kind of hostile frame is a WireError."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from spec_verify.ipc.errors import FrameTooLarge, PeerClosed, WireError, WireTimeout
from spec_verify.ipc.frames import (
    LIMITS,
    MAGIC,
    BufferedReader,
    Limits,
    encode_frame,
    recv_message,
    require,
    send_message,
)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def _soon(seconds: float = 2.0) -> float:
    return time.monotonic() + seconds


def _raw(header: bytes, body: bytes = b"", *, hlen: int | None = None, blen: int | None = None):
    prefix = struct.pack("<4sIQ", MAGIC, len(header) if hlen is None else hlen,
                         len(body) if blen is None else blen)  # fmt: skip
    return prefix + header + body


def _envelope(header: object, arrays: object = ()) -> bytes:
    return json.dumps({"header": header, "arrays": list(arrays)}).encode()  # type: ignore[call-overload]


def test_round_trip_header_and_arrays(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    logits = np.linspace(-3, 3, 12).reshape(3, 4)
    ids = np.array([1, 2, 3], dtype=np.int64)
    empty = np.zeros((0, 5))
    big_endian = np.arange(4, dtype=">f8")
    header = {"op": "verify_draft", "p": {"temperature": 0.7, "top_k": None}, "u": [0.5, 1e-300]}
    send_message(a, header, {"logits": logits, "ids": ids, "empty": empty, "be": big_endian})
    got, arrays = recv_message(b, _soon())
    assert got == header
    assert np.array_equal(arrays["logits"], logits) and arrays["logits"].dtype == np.float64
    assert np.array_equal(arrays["ids"], ids) and arrays["ids"].dtype == np.int64
    assert arrays["empty"].shape == (0, 5)
    assert np.array_equal(arrays["be"], np.arange(4.0)) and arrays["be"].dtype.str == "<f8"
    with pytest.raises(ValueError, match="read-only"):
        arrays["logits"][0, 0] = 1.0  # a received array is read-only


def test_floats_round_trip_exactly(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    values = [0.1, 2.0**-53, 1 - 2.0**-53, float("nan"), float("inf"), 5e-324]
    send_message(a, {"u": values})
    got, _ = recv_message(b, _soon())
    assert [v.hex() for v in got["u"]] == [v.hex() for v in values]


def test_large_frame_crosses_in_pieces(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    rows = np.random.default_rng(0).random((2000, 300))  # 4.8 MB: larger than a socket buffer
    sender = threading.Thread(target=send_message, args=(a, {"n": 1}, {"rows": rows}, _soon()))
    sender.start()
    _, arrays = recv_message(b, _soon())
    sender.join()
    assert np.array_equal(arrays["rows"], rows)


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (b"GARBAGE!" * 4, "bad frame magic"),
        (_raw(b"not json at all"), "not JSON"),
        (_raw(b"\xff\xfe"), "not JSON"),
        (_raw(_envelope([1, 2])), "is a list, not a dict"),
        (_raw(b'{"header": {}}'), "must be"),
        (_raw(b'{"header": {"a": 1, "a": 2}, "arrays": []}'), "repeats a key"),
        (_raw(b'{"header": {}, "arrays": [], "code": "x"}'), "must be"),
        (_raw(_envelope({}, [["x", "|O", [1]]]), b"\0" * 8), "dtype"),
        (_raw(_envelope({}, [["x", "<f8", [2]]]), b"\0" * 8), "the arrays listed need 16"),
        (_raw(_envelope({}, [["x", "<f8", [-1]]]), b""), "not a list of sizes"),
        (_raw(_envelope({}, [["x", "<f8", [1.5]]]), b""), "not a list of sizes"),
        (_raw(_envelope({}, [["x", "<f8", [1]], ["x", "<f8", [1]]]), b"\0" * 16), "new string"),
        (_raw(_envelope({}, [["x", "<f8"]]), b""), "not \\[name, dtype, shape\\]"),
        (
            _raw(b'{"header": {"deep": ' + b"[" * 100_000 + b"]" * 100_000 + b'}, "arrays": []}'),
            "not JSON",
        ),
    ],
)
def test_malformed_frames_raise(
    pair: tuple[socket.socket, socket.socket], frame: bytes, match: str
) -> None:
    a, b = pair
    a.sendall(frame)
    with pytest.raises(WireError, match=match):
        recv_message(b, _soon())


def test_giant_length_prefix_is_refused_before_allocation(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    a.sendall(struct.pack("<4sIQ", MAGIC, 16, 2**62))
    with pytest.raises(FrameTooLarge, match="body of 4611686018427387904 bytes"):
        recv_message(b, _soon())
    a.sendall(struct.pack("<4sIQ", MAGIC, 2**32 - 1, 0))
    with pytest.raises(FrameTooLarge, match="header of 4294967295 bytes"):
        recv_message(b, _soon())


def test_array_larger_than_limit_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    small = Limits(max_body=1024)
    a.sendall(_raw(_envelope({}, [["x", "<f8", [10**6, 10**6]]]), blen=0))
    with pytest.raises(FrameTooLarge, match="array 'x'"):
        recv_message(b, _soon(), small)
    with pytest.raises(FrameTooLarge, match="limit is 1024"):
        send_message(a, {}, {"x": np.zeros(200)}, limits=small)


def test_truncated_frame(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(_raw(_envelope({"a": 1}, [["x", "<f8", [4]]]), b"\0" * 32)[:-5])
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(WireError, match="truncated frame: the stream ended after 27 of 32"):
        recv_message(b, _soon())


def test_closed_stream_before_a_frame_is_peer_closed(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    a.close()
    with pytest.raises(PeerClosed):
        recv_message(b, _soon())


def test_late_frame_times_out(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(_raw(_envelope({"a": 1}))[:10])  # half a prefix, then nothing
    started = time.monotonic()
    with pytest.raises(WireTimeout, match="deadline"):
        recv_message(b, started + 0.2)
    assert time.monotonic() - started < 1.0


def test_silent_peer_times_out(pair: tuple[socket.socket, socket.socket]) -> None:
    _, b = pair
    with pytest.raises(WireTimeout):
        recv_message(b, time.monotonic() + 0.05)


def test_send_to_a_peer_that_never_reads_times_out(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, _ = pair
    with pytest.raises(WireTimeout):
        send_message(a, {}, {"x": np.zeros(4_000_000)}, deadline=time.monotonic() + 0.2)


def test_send_refuses_what_is_not_data(pair: tuple[socket.socket, socket.socket]) -> None:
    a, _ = pair
    with pytest.raises(WireError, match="not plain JSON data"):
        send_message(a, {"f": object()})
    with pytest.raises(WireError, match="dtype object"):
        send_message(a, {}, {"x": np.array([object()])})
    with pytest.raises(WireError, match="must be a dict"):
        send_message(a, [1, 2])  # type: ignore[arg-type]


def test_require_checks_types() -> None:
    header = {"n": 3, "flag": True, "u": 0.5, "name": "x"}
    assert require(header, "n", int) == 3
    assert require(header, "n", float) == 3.0 and isinstance(require(header, "n", float), float)
    assert require(header, "flag", bool) is True
    with pytest.raises(WireError, match="field 'flag' is a bool"):
        require(header, "flag", int)
    with pytest.raises(WireError, match="field 'name' is a str; expected int"):
        require(header, "name", int)
    with pytest.raises(WireError, match="no field 'missing'"):
        require(header, "missing", int)


def test_default_limits_are_finite() -> None:
    assert 0 < LIMITS.max_header < 2**32 and 0 < LIMITS.max_body < 2**40


# ---- the buffered fast path reads and writes the same frames ----------------------------


def test_buffered_frames_are_the_general_path_s_frames():
    header = {"k": "req", "v": [1, "x", {"$b": "a0"}], "rel": []}
    arrays = {"a0": np.arange(10, dtype=np.uint8), "a1": np.linspace(0, 1, 6).reshape(2, 3)}
    a, b = socket.socketpair()
    with a, b:
        a.sendall(encode_frame(header, arrays))  # the fast path, read by the general one
        got, received = recv_message(b, _soon())
        assert got == header and set(received) == set(arrays)
        assert all(np.array_equal(received[k], v) for k, v in arrays.items())
        send_message(a, header, arrays)  # the general path, read by the fast one
        send_message(a, {"k": "ok", "v": None})
        reader = BufferedReader(b)
        first, second = reader.read(), reader.read()
        assert first[0] == header and set(first[1]) == set(arrays)
        assert all(np.array_equal(first[1][k], v) for k, v in arrays.items())
        assert not first[1]["a1"].flags.writeable  # read-only, as recv_message's
        assert second == ({"k": "ok", "v": None}, {})
        # what a broken or hostile peer may send instead
        a.sendall(_frame({"header": {}, "arrays": [["x", "|u1", [4]]]}, bytes(3)))
        with pytest.raises(WireError, match="exactly the arrays"):
            reader.read()
    c, d = socket.socketpair()
    with c, d:
        c.sendall(_frame({"header": {}, "arrays": [["x", "|O", [1]]]}, bytes(8)))
        with pytest.raises(WireError, match="dtype"):
            BufferedReader(d).read()
        c.sendall(struct.pack("<4sIQ", MAGIC, 1 << 30, 0))
        with pytest.raises(FrameTooLarge):
            BufferedReader(d).read()
    c, d = socket.socketpair()
    with c, d:
        c.sendall(b"XXXX" + bytes(12))
        with pytest.raises(WireError, match="magic"):
            BufferedReader(d).read()
    e, f = socket.socketpair()
    with f:
        e.sendall(encode_frame({"k": "ok"})[:20])
        e.close()
        with pytest.raises(WireError, match="truncated"):
            BufferedReader(f).read()
    g, h = socket.socketpair()
    with h:
        g.close()
        with pytest.raises(PeerClosed):
            BufferedReader(h).read()


def _frame(envelope: dict[str, Any], body: bytes) -> bytes:
    text = json.dumps(envelope).encode()
    return struct.pack("<4sIQ", MAGIC, len(text), len(body)) + text + body


def test_a_buffered_frame_above_the_limits_is_refused_before_sending():
    with pytest.raises(FrameTooLarge):
        encode_frame({"k": "ok"}, {"a": np.zeros(2048, np.uint8)}, Limits(max_body=1024))
    with pytest.raises(WireError, match="not plain JSON"):
        encode_frame({"k": object()})


def test_the_transport_imports_no_other_part_of_the_project():
    import subprocess
    import sys

    code = (
        "import sys; import spec_verify.ipc.frames, spec_verify.ipc.errors, spec_verify.ipc.codec; "
        "print(sorted(m for m in sys.modules if m.startswith('spec_verify.') "
        "and not m.startswith(('spec_verify.ipc', 'spec_verify._checkout'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
