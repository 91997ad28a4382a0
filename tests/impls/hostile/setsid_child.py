"""Forks a child that calls setsid() and sleeps forever; its pid goes to $HOSTILE_PID_FILE."""

import os
import time
from typing import Any

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
                while True:
                    time.sleep(1)
            with open(os.environ["HOSTILE_PID_FILE"], "w") as handle:
                handle.write(str(grandchild))
            os._exit(0)
        os.waitpid(pid, 0)
    return wrong_verify_draft(*args, **kwargs)
