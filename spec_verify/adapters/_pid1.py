"""The first process of a worker's own PID namespace: it starts the worker and reaps.

Where the kernel allows it (``unshare --pid``, as root or through a user namespace), a worker
runs in a PID namespace of its own (``_process.WorkerProcess``). That closes three holes no
same-user process could otherwise close: the implementation cannot signal or stop the harness
(no process outside the namespace has a pid inside it), a descendant that daemonises cannot
escape to the host's init (orphans come here), and when this process ends the kernel kills
everything left in the namespace.

Run as ``python -m spec_verify.adapters._pid1 STATUS_FD PLAN_FD MODULE FD *ARGS``. As root of
the namespaces it binds the harness's folders read-only (JSON read from ``PLAN_FD``, from
``_process._sandbox_plan``; ``_sandbox.py``), then forks: the child drops its privileges,
writes which protections held as the pipe's first line (``P{json}``) and runs ``MODULE`` (the
worker) with ``argv = [MODULE, FD, *ARGS]``; this process, pid 1 of the namespace, reaps
every process that ends until the worker has, then writes how the worker ended to
``STATUS_FD`` (``S<signal>`` or ``E<status>``: pid 1 cannot die of a signal sent from inside
its namespace, so the harness learns the worker's own end from this pipe) and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import signal
import sys
from typing import Any

__all__ = ["main", "parse_status"]


def parse_status(data: bytes) -> int | None:
    """A ``returncode`` in ``subprocess``'s convention (negative: the signal) from what
    ``main`` wrote, or None when it wrote nothing well-formed."""
    text = data.decode("ascii", "replace").strip()
    if len(text) < 2 or text[0] not in "SE" or not text[1:].isdigit():
        return None
    value = int(text[1:])
    return -value if text[0] == "S" else value


def _seal(plan: dict[str, Any]) -> dict[str, Any]:
    """As pid 1, root of the namespaces: the folders the worker needs made reachable by the
    uid it drops to, then the read-only binds (``unshare --mount-proc`` made the mounts private
    and mounted this namespace's /proc). What held, and the uid, for the worker."""
    from spec_verify._sandbox import make_reachable, readable_by, seal_mounts

    held: dict[str, Any] = {"pid_namespace": os.getpid() == 1, "readonly": [], "uid": None,
                            "why_not": [str(w) for w in plan.get("why_not", [])]}
    drop_to = plan.get("drop_to")
    needed = [str(p) for p in plan.get("needed", [])]
    if plan.get("mounts"):
        try:
            if isinstance(drop_to, int):
                held["why_not"] += make_reachable(needed, drop_to)[1]
            held["readonly"], failed = seal_mounts([str(p) for p in plan.get("readonly", [])])
            held["mount_namespace"] = True
            held["why_not"] += failed
        except OSError as exc:
            held["why_not"].append(f"no private mounts ({exc})")
    if isinstance(drop_to, int):
        blocked = readable_by(needed, drop_to)
        if blocked is None:
            held["uid"] = drop_to
        else:
            held["why_not"].append(f"uid 0 kept: {blocked!r} is not readable by uid {drop_to}, "
                                   "and the worker needs it (capabilities are dropped)")
    return held


def _drop(plan: dict[str, Any], held: dict[str, Any], status_fd: int) -> None:
    """In the worker, before the implementation loads: drop privileges, check /proc, and
    write what held as the status pipe's first line (``P{json}``)."""
    from spec_verify._sandbox import Protections, drop_privileges

    now, dropped, no_new, failed = drop_privileges(held["uid"])
    fresh = False
    with contextlib.suppress(OSError, ValueError):  # this namespace's /proc names us as we are
        fresh = int(os.readlink("/proc/self")) == os.getpid()
    protections = Protections(
        pid_namespace=bool(held["pid_namespace"]),
        mount_namespace=bool(held.get("mount_namespace")), fresh_proc=fresh,
        readonly=tuple(held["readonly"]), uid=now, capabilities_dropped=dropped,
        no_new_privs=no_new, why_not=tuple(held["why_not"] + failed))
    with contextlib.suppress(OSError):
        os.write(status_fd, b"P" + json.dumps(protections.to_json()).encode() + b"\n")


def main(argv: list[str]) -> int:
    status_fd = int(argv[1])
    plan_fd = int(argv[2])
    with os.fdopen(plan_fd, "rb") as plan_pipe:
        try:
            plan = json.loads(plan_pipe.read(65536) or b"{}")
        except ValueError:
            plan = {}
    worker_argv = argv[3:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's
    held = _seal(plan if isinstance(plan, dict) else {})
    worker = os.fork()
    if worker == 0:
        _drop(plan if isinstance(plan, dict) else {}, held, status_fd)
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
