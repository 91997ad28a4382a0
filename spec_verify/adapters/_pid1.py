"""The first process of a worker's own PID namespace: it starts the worker and reaps.

Where the kernel allows it (``unshare --pid``, as root or through a user namespace), a worker
runs in a PID namespace of its own (``_process.WorkerProcess``). That closes three holes no
same-user process could otherwise close: the implementation cannot signal or stop the harness
(no process outside the namespace has a pid inside it), a descendant that daemonises cannot
escape to the host's init (orphans come here), and when this process ends the kernel kills
everything left in the namespace.

Run as ``python -m spec_verify.adapters._pid1 STATUS_FD MODULE FD *ARGS``. It forks: the child
runs ``MODULE`` (the worker) with ``argv = [MODULE, FD, *ARGS]``; this process, pid 1 of the
namespace, reaps every process that ends until the worker has, then writes how the worker
ended to ``STATUS_FD`` (``S<signal>`` or ``E<status>``: pid 1 cannot die of a signal sent from
inside its namespace, so the harness learns the worker's own end from this pipe) and exits.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import sys

__all__ = ["main", "parse_status"]


def parse_status(data: bytes) -> int | None:
    """A ``returncode`` in ``subprocess``'s convention (negative: the signal) from what
    ``main`` wrote, or None when it wrote nothing well-formed."""
    text = data.decode("ascii", "replace").strip()
    if len(text) < 2 or text[0] not in "SE" or not text[1:].isdigit():
        return None
    value = int(text[1:])
    return -value if text[0] == "S" else value


def main(argv: list[str]) -> int:
    status_fd = int(argv[1])
    worker_argv = argv[2:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's
    worker = os.fork()
    if worker == 0:
        os.close(status_fd)
        sys.argv = worker_argv
        runpy.run_module(worker_argv[0], run_name="__main__")
        return 0
    os.closerange(3, status_fd)  # the worker's socket is the worker's, not ours
    os.closerange(status_fd + 1, 65536)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if pid == worker:
            break
    if os.WIFSIGNALED(status):
        report = f"S{os.WTERMSIG(status)}"
    else:
        report = f"E{os.waitstatus_to_exitcode(status)}"
    with contextlib.suppress(OSError):
        os.write(status_fd, report.encode("ascii"))
    return 0  # the kernel now kills whatever the worker left in this namespace


if __name__ == "__main__":
    sys.exit(main(sys.argv))
