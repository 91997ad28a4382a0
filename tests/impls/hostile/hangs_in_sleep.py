"""Sleeps far past the per-call time limit."""

import time
from typing import Any

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    time.sleep(3600)
