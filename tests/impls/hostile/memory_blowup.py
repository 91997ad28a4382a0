"""Allocates without end in verify_draft (the worker's RLIMIT_AS stops it)."""

from typing import Any

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    blocks = []
    while True:
        blocks.append(bytearray(1 << 28))
