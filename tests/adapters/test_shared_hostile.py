"""Hostile workers on the shared-memory path: a reply with a descriptor that is not a memfd,
a size that lies, a file truncated after sending. Each is the implementation's failure (the
worker broke the protocol; it is killed), the harness is intact and nothing is left running.
The library-side attacks (a store into the mapping) are ``tests/ffi/test_shared_inputs.py``
and ``tests/ipc/test_shared.py``."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from spec_verify.adapters._loader import load_implementation
from spec_verify.adapters._process import descendants
from spec_verify.errors import ImplementationError
from spec_verify.reference import SamplingParams, request_rng
from tests.adapters.test_hostile import _alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd")


@pytest.mark.parametrize(("name", "message"), [
    ("shm_bad_fd", "is not a sealed memfd"),
    ("shm_lying_size", "declares 1048576 shared bytes but the memfd has 4096"),
    ("shm_truncates", "is not sealed against writes and resizing"),
])
def test_a_forged_shared_reply_is_the_implementations_failure(name: str, message: str) -> None:
    before = set(descendants(os.getpid()))
    impl = load_implementation(f"python:tests.impls.hostile.{name}")
    impl.timeout = 20.0
    logits = np.zeros((2, 8))
    try:
        with pytest.raises(ImplementationError, match="broke the worker protocol") as caught:
            impl.verify_draft(logits, [1], None, SamplingParams(), [], request_rng(1))
        assert message in caught.value.reason
        assert (logits == 0).all()
    finally:
        impl.close()
    left = [p for p in descendants(os.getpid()) if p not in before and _alive(p)]
    assert not left, "a process was left behind"
