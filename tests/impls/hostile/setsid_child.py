"""Forks a child that calls setsid() and sleeps forever; who it is goes to $HOSTILE_PID_FILE
(tests/_noted_process.py: a sealed worker has a PID namespace and a /proc of its own)."""

import os
import time
from typing import Any

from tests._noted_process import note_this_process

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft

_started = []


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    if not _started:
        _started.append(True)
        pid = os.fork()
        if pid == 0:
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                note_this_process(os.environ["HOSTILE_PID_FILE"])
                while True:
                    time.sleep(1)
            os._exit(0)
        os.waitpid(pid, 0)
    return wrong_verify_draft(*args, **kwargs)
