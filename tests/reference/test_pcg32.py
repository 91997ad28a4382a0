from __future__ import annotations

import pytest

from spec_verify.reference import InvalidParams, Pcg32, request_rng
from spec_verify.reference.pcg32 import REQUEST_STREAM

PUBLISHED = [0xA15C02B7, 0x7B47F409, 0xBA1D3330, 0x83D2F293, 0xBFA4784B, 0xCBED606E]


def test_published_reference_sequence():
    rng = Pcg32(42, 54)
    assert [rng.next_u32() for _ in range(6)] == PUBLISHED


def test_uniform_is_the_output_times_two_to_the_minus_32():
    a, b = Pcg32(42, 54), Pcg32(42, 54)
    for _ in range(100):
        u = a.random()
        assert u == b.next_u32() / 2**32
        assert 0.0 <= u < 1.0


def test_request_rng_is_the_request_stream():
    assert REQUEST_STREAM == 54
    assert [request_rng(42).random() for _ in range(1)] == [PUBLISHED[0] / 2**32]
    assert request_rng(1).random() != request_rng(2).random()


@pytest.mark.parametrize("bad", [-1, 2**64, 1.5, "7", True])
def test_bad_seeds_raise(bad):
    with pytest.raises(InvalidParams, match="initstate"):
        Pcg32(bad, 54)
