"""Writes a frame prefix announcing 2**60 bytes onto the worker's socket."""

import os
import struct
import sys
from typing import Any

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    os.write(int(sys.argv[1]), struct.pack("<4sIQ", b"SVW1", 16, 2**60))
    while True:
        pass
