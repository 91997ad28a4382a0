"""An atexit handler that calls os._exit(0) (after the harness printed FAILED)."""

import atexit
import os

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft as verify_draft  # noqa: F401

atexit.register(lambda: os._exit(0))
