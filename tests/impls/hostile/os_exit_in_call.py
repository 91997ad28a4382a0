"""Ends its process with os._exit(0) inside verify_draft."""

import os
from typing import Any

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    os._exit(0)
