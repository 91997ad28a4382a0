"""Raises KeyboardInterrupt from verify_draft (it must not look like the user's Ctrl-C)."""

from typing import Any

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    raise KeyboardInterrupt
