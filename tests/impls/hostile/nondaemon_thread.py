"""Leaves a non-daemon thread running forever (the process never exits by itself)."""

import threading
import time

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft as verify_draft  # noqa: F401


def _forever() -> None:
    while True:
        time.sleep(0.1)


threading.Thread(target=_forever, daemon=False).start()
