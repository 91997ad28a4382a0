"""Sends SIGSTOP to its parent and to every process that looks like the harness (any process
whose command line names pytest or spec_verify), then answers wrongly.

Run only where workers get a PID namespace of their own: there, no process outside the
namespace has a pid the worker can name, so the signals reach nothing of the harness's.
"""

import contextlib
import os
import signal
from typing import Any

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft


def _harness_like() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                text = cmdline.read()
            if b"pytest" in text or b"spec_verify" in text or b"spec-verify" in text:
                found.append(int(entry))
    return found


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    for pid in [os.getppid(), *_harness_like()]:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGSTOP)
    return wrong_verify_draft(*args, **kwargs)
