"""Writes garbage onto the worker's socket (its descriptor is argv[1]) instead of answering."""

import os
import sys
from typing import Any

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    os.write(int(sys.argv[1]), b"GARBAGE!" * 100)
    while True:
        pass
