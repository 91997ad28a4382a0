"""Writes 64 MB to stderr and stdout on every call, then answers wrongly."""

import os
from typing import Any

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft

_BLOCK = b"flood " * 10_000


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    for _ in range(500):
        os.write(2, _BLOCK)
        os.write(1, _BLOCK)
    return wrong_verify_draft()
