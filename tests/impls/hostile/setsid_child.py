"""Forks a child that calls setsid() and sleeps forever; its pid goes to $HOSTILE_PID_FILE (as
the host sees it: a worker may run in a PID namespace of its own)."""

import os
import time
from typing import Any

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft

_started = []


def _host_pid() -> int:
    """This process's pid in the outermost PID namespace (the first of /proc's NSpid)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("NSpid:"):
                return int(line.split()[1])
    return os.getpid()


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    if not _started:
        _started.append(True)
        pid = os.fork()
        if pid == 0:
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                with open(os.environ["HOSTILE_PID_FILE"], "w") as handle:
                    handle.write(str(_host_pid()))
                while True:
                    time.sleep(1)
            os._exit(0)
        os.waitpid(pid, 0)
    return wrong_verify_draft(*args, **kwargs)
