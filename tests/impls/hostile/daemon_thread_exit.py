"""A daemon thread ends the process with os._exit(0) a moment after import."""

import os
import threading
import time

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft as verify_draft  # noqa: F401


def _later() -> None:
    time.sleep(0.5)
    os._exit(0)


threading.Thread(target=_later, daemon=True).start()
