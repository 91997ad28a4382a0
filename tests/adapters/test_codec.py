"""The codec's ``ArrayTable``: an array object named twice in one frame crosses once, and an
equal but distinct array crosses on its own (identity, not equality, decides)."""

from __future__ import annotations

import numpy as np

from spec_verify.adapters._codec import ArrayTable, decode_value, encode_value


def test_an_array_shared_by_many_values_crosses_once() -> None:
    shared, twin = np.arange(6.0), np.arange(6.0)
    arrays = ArrayTable()
    data = encode_value([{"x": shared}, {"x": shared}, {"x": twin}], arrays)
    assert len(arrays) == 2
    decoded = decode_value(data, dict(arrays))
    assert decoded[0]["x"] is decoded[1]["x"] is not decoded[2]["x"]
    assert all(np.array_equal(d["x"], shared) for d in decoded)


def test_a_plain_dict_names_every_array_anew() -> None:
    shared = np.arange(3)
    arrays: dict[str, object] = {}
    encode_value([shared, shared], arrays)
    assert len(arrays) == 2
