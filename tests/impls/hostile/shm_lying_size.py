"""Answers with a sealed memfd of 4 kB that the frame says holds 1 MB."""

import fcntl
import os
from typing import Any

from ._shared_frame import send_forged
from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    fd = os.memfd_create("lies", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4096)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                | fcntl.F_SEAL_WRITE)
    send_forged(fd, 1 << 20)
