"""Answers with an unsealed memfd and truncates it once sent (a reader that mapped it would
die of SIGBUS on its first read)."""

import os
from typing import Any

from ._shared_frame import send_forged
from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    fd = os.memfd_create("shrinks", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 1 << 20)
    send_forged(fd, 1 << 20, then_truncate=True)
