"""Ignores SIGALRM, cancels the interval timer, and loops forever in verify_draft, swallowing
every exception raised into it."""

import signal
import time
from typing import Any

from ._wrong import *  # noqa: F403


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    signal.setitimer(signal.ITIMER_REAL, 0)
    while True:
        try:
            time.sleep(0.01)
        except BaseException:
            continue
