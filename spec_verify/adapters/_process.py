"""A check worker, seen from the harness: started in the sandbox in its own session, spoken to
over the data-only wire (``ipc.frames``) against a deadline, and killed with every process it
started.

The process-tree supervision (session, subreaper, limits, kill-the-tree and its proof, the
output ring buffers) is ``spec_verify.ipc.supervisor``, shared with the grader's runner and the
end-to-end generator workers; its names are re-exported here for the adapters' callers. This
module adds what only a check worker has: the PID and mount namespace prefix (``unshare``) and
the sandbox plan its pid 1 (``_pid1``) seals, the socket conversation with deadlines (every
wait is ``recv_message`` against a monotonic deadline; when it passes the tree is killed), and
the words for how a worker ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spec_verify._sandbox import NOBODY, Protections, harness_paths
from spec_verify.adapters._pid1 import parse_status
from spec_verify.errors import ImplementationError, SpecVerifyError
from spec_verify.ipc.errors import PeerClosed, WireError, WireTimeout
from spec_verify.ipc.frames import recv_message, send_message
from spec_verify.ipc.supervisor import (
    MEMORY_LIMIT,
    RING_BYTES,
    OutputRing,
    become_subreaper,
    children,
    descendants,
    describe_exit,
    harden_worker,
    kill_tree,
    reap_all_children,
)

__all__ = [
    "MEMORY_LIMIT",
    "REPORT_FOLDERS",
    "RING_BYTES",
    "WorkerProcess",
    "become_subreaper",
    "children",
    "descendants",
    "describe_exit",
    "harden_worker",
    "kill_tree",
    "reap_all_children",
    "with_sandbox",
]

Serve = Callable[[dict[str, Any], dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]


# The worker imports spec_verify from where this process did. Started with ``-m``, its first
# path entry would be the working directory, where a source checkout's ``spec_verify/`` (which
# lacks the installed ``spec_verify.reference``) would shadow an installed package. runpy's
# warning that the module was imported (by its package) before it ran as __main__ is noise
# on the worker's stderr, which failure messages quote: it is silenced.
_BOOTSTRAP = (
    "import json, runpy, sys, warnings; sys.path[:] = json.loads(sys.argv[1]); "
    "sys.argv = sys.argv[2:]; warnings.filterwarnings('ignore', "
    "'.*found in sys.modules after import of package', RuntimeWarning); "
    "runpy.run_module(sys.argv[0], run_name='__main__')"
)


_NAMESPACE_PROBE: list[list[str] | None] = []  # the cached result of _namespace_prefix()


def _namespace_prefix() -> list[str] | None:
    """The command prefix that starts a process in a PID namespace of its own (``unshare``,
    through a user namespace when not root), or None where the kernel or the machine does not
    allow it (then workers run without one; docs/threat-model.md says what that leaves open).
    ``SPEC_VERIFY_NO_PID_NAMESPACE=1`` turns it off."""
    if _NAMESPACE_PROBE:
        return _NAMESPACE_PROBE[0]
    prefix: list[str] | None = None
    unshare = shutil.which("unshare")
    if (
        sys.platform.startswith("linux")
        and unshare is not None
        and os.environ.get("SPEC_VERIFY_NO_PID_NAMESPACE", "") in ("", "0")
    ):
        base = [unshare, "--pid", "--fork", "--kill-child"]
        if os.geteuid() != 0:
            base += ["--user", "--map-root-user"]
        # a private mount namespace with its own /proc where the kernel allows it, else the
        # PID namespace alone (the report says which held)
        for candidate in ([*base, "--mount", "--mount-proc"], base):
            try:
                probe = subprocess.run(
                    [*candidate, sys.executable, "-c", "import os; assert os.getpid() == 1"],
                    capture_output=True, timeout=10, check=False,
                )  # fmt: skip
            except (OSError, subprocess.TimeoutExpired):
                continue
            if probe.returncode == 0:
                prefix = candidate
                break
    _NAMESPACE_PROBE.append(prefix)
    return prefix


REPORT_FOLDERS = "SPEC_VERIFY_REPORT_FOLDERS"  # JSON list the CLI sets: bound read-only


def _sandbox_plan(mounts: bool, cwd: str | None, args: Sequence[str]) -> dict[str, Any]:
    """What ``_pid1`` seals: the harness's folders and the report folders read-only, and the
    uid to drop to (root only, and only where the worker's files are readable by it)."""
    plan: dict[str, Any] = {"mounts": mounts, "readonly": [], "drop_to": None, "needed": [],
                            "why_not": []}
    if mounts:
        readonly = harness_paths()
        with contextlib.suppress(ValueError, TypeError):
            folders = json.loads(os.environ.get(REPORT_FOLDERS, "[]"))
            readonly += [str(f) for f in folders if isinstance(f, str)]
        plan["readonly"] = readonly
    else:
        plan["why_not"].append("no mount namespace (unshare --mount refused): the harness's "
                               "files, the report folders and /proc are the host's")
    if os.geteuid() == 0:  # _pid1 drops to NOBODY where it can make these readable by it
        plan["drop_to"] = NOBODY
        plan["needed"] = [p for p in [sys.base_prefix, sys.prefix, *sys.path, cwd or os.getcwd(),
                                      *args] if p and os.path.isabs(p) and os.path.exists(p)]
    return plan


class WorkerProcess:
    """One worker process running ``python -m <module> FD *args``; every wait is bounded.

    ``module``'s ``main(argv)`` gets ``argv = [module, FD, *args]``; FD is its end of a socket
    pair carrying ``ipc.frames`` frames. The first frame it sends is its greeting.

    ``shared_above``: requests' arrays of at least that many bytes cross in a sealed memfd
    the worker maps read-only (``ipc.frames``), None: every array on the stream.
    """

    shared_above: int | None = None

    def __init__(
        self,
        impl: str,
        module: str,
        args: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.impl = impl
        parent_sock, child_sock = socket.socketpair()
        child_fd = child_sock.fileno()
        command = [sys.executable, "-c", _BOOTSTRAP, json.dumps(sys.path), module,
                   str(child_fd), *args]  # fmt: skip
        passed = [child_fd]
        self._status_read: int | None = None
        prefix = _namespace_prefix()
        self.protections = Protections(why_not=(
            "no PID namespace: the kernel or the machine refused unshare (or "
            "SPEC_VERIFY_NO_PID_NAMESPACE is set); the worker runs beside the harness",))
        self._pending = b""
        if env is None and REPORT_FOLDERS in os.environ:  # the harness's, not the worker's
            env = {k: v for k, v in os.environ.items() if k != REPORT_FOLDERS}
        if prefix is not None:  # pid 1 of a namespace of its own starts the worker
            self._status_read, status_write = os.pipe()
            # the plan names the report folders: through a pipe, never on a command line the
            # worker can read in /proc/1/cmdline
            plan = json.dumps(_sandbox_plan("--mount-proc" in prefix, cwd, args)).encode()
            plan_read, plan_write = os.pipe()
            try:
                os.write(plan_write, plan[:60000])
            finally:
                os.close(plan_write)
            command = [*prefix, sys.executable, "-c", _BOOTSTRAP, json.dumps(sys.path),
                       "spec_verify.adapters._pid1", str(status_write), str(plan_read),
                       module, str(child_fd), *args]  # fmt: skip
            passed += [status_write, plan_read]
        self.namespaced = prefix is not None
        try:
            self.process = subprocess.Popen(
                command,
                pass_fds=tuple(passed),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
                start_new_session=True,
                cwd=cwd,
                env=None if env is None else dict(env),
            )  # fmt: skip
        finally:
            child_sock.close()
            for fd in passed[1:]:
                os.close(fd)
        self.sock = parent_sock
        self.pid = self.process.pid
        self._stdout = OutputRing(self.process.stdout)
        self._stderr = OutputRing(self.process.stderr)
        self.closed = False

    # ---- talking ------------------------------------------------------------------------

    def exchange(
        self,
        header: Mapping[str, Any] | None,
        arrays: Mapping[str, Any] | None,
        call: str,
        timeout: float,
        serve: Serve | None = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Send a request (None: only wait, for the greeting) and return the reply frame.

        Frames with ``"kind": "callback"`` that arrive first are answered with ``serve`` (the
        harness's side of a callback, e.g. a uniform source); time spent there and in
        ``while_waiting()`` (the caller's own work overlapped with the worker's) is not the
        implementation's. Raises ImplementationError when the worker dies, breaks the wire
        protocol or runs past ``timeout`` (the worker and its descendants are then killed).
        """
        deadline = time.monotonic() + timeout
        try:
            if header is not None:
                send_message(self.sock, header, arrays, deadline, shared_above=self.shared_above)
            if while_waiting is not None:
                started = time.monotonic()
                while_waiting()
                deadline += time.monotonic() - started
            while True:
                reply, reply_arrays = recv_message(self.sock, deadline)
                if reply.get("kind") != "callback":
                    return reply, reply_arrays
                if serve is None:
                    raise WireError("a callback arrived where none may be made")
                started = time.monotonic()
                answer, answer_arrays = serve(reply, reply_arrays)
                deadline += time.monotonic() - started
                send_message(self.sock, answer, answer_arrays, deadline,
                             shared_above=self.shared_above)
        except WireTimeout:
            self.kill()
            raise ImplementationError(
                self.impl,
                call,
                f"did not return within {timeout:g} s (a hang or an endless loop); the worker "
                f"and its processes were killed{self._quote()}",
            ) from None
        except PeerClosed as exc:
            raise self.died(call) from exc
        except WireError as exc:
            self.kill()
            raise ImplementationError(
                self.impl,
                call,
                f"broke the worker protocol ({exc}); the worker was killed{self._quote()}",
            ) from None

    # ---- ending -------------------------------------------------------------------------

    def output_tail(self) -> str:
        """The tails of the worker's stderr and stdout, for a failure message."""
        parts = []
        err, out = self._stderr.tail(), self._stdout.tail()
        if err:
            parts.append(f"stderr ends with: {err!r}")
        if out:
            parts.append(f"stdout ends with: {out!r}")
        return "; ".join(parts)

    def _quote(self) -> str:
        tail = self.output_tail()
        return f"; its {tail}" if tail else ""

    def read_protections(self, timeout: float = 5.0) -> Protections:
        """Which protections held in the worker (its first line on the status pipe, written
        before the implementation was loaded); call after the greeting."""
        if self._status_read is None or b"\n" in self._pending:
            return self.protections
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending and len(self._pending) < 65536:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._status_read], [], [], left)[0]:
                break
            try:
                chunk = os.read(self._status_read, 65536)
            except OSError:
                break
            if not chunk:
                break
            self._pending += chunk
        line, _, _ = self._pending.partition(b"\n")
        if line.startswith(b"P"):
            with contextlib.suppress(ValueError):
                self.protections = Protections.from_json(json.loads(line[1:]))
        return self.protections

    def _returncode(self) -> int | None:
        """How the worker itself ended: from its pid 1's report when it has one (the process
        this object started is then ``unshare``), else the process's own return code."""
        try:
            returncode: int | None = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        if self._status_read is not None:
            with contextlib.suppress(OSError):
                data = self._pending + os.read(self._status_read, 65536)
                reported = parse_status(data.rpartition(b"\n")[2])
                if reported is not None:
                    return reported
        return returncode

    def died(self, call: str) -> ImplementationError:
        """The worker is gone: say how, with its output."""
        returncode = self._returncode()
        self.kill()
        return ImplementationError(
            self.impl, call, f"{describe_exit(returncode)} in the worker process{self._quote()}"
        )

    def kill(self) -> None:
        """Kill the worker and every process it started; reap it."""
        kill_tree(self.pid)
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.sock.close()
        if self._status_read is not None:
            with contextlib.suppress(OSError):
                os.close(self._status_read)
            self._status_read = None
        self.closed = True

    def close(self, quit_header: Mapping[str, Any] | None = None) -> None:
        """End the worker and everything it started. It is killed, not asked to quit: a
        worker that exits on its own would orphan its descendants before they are found
        (``quit_header`` is accepted for the callers' symmetry and not sent)."""
        if not self.closed:
            self.kill()


def with_sandbox(error: BaseException, worker: WorkerProcess) -> BaseException:
    """Kill ``worker``, whose implementation failed to load with ``error``; ``error`` (returned)
    then carries what the worker's sandbox held while that code ran (``error.sandbox``), so
    the report of a failed load says it as every other report does."""
    if isinstance(error, SpecVerifyError) and error.sandbox is None:
        with contextlib.suppress(OSError, ValueError):
            error.sandbox = worker.read_protections(timeout=1.0).to_json()
    worker.kill()
    return error
