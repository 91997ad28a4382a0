"""Answers with a shared-memory frame whose descriptor is a pipe, not a memfd."""

import os
from typing import Any

from ._shared_frame import send_forged
from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    read, _ = os.pipe()
    send_forged(read, 4096)
