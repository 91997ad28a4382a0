"""Supervising an untrusted process tree: start it apart, bound it, kill all of it, prove it.

One module for every process that runs code the harness does not trust: the check workers
(``adapters._process``), the grader's runner (``mutants._runner``) and the end-to-end generator
workers (``endtoend._draw``). It knows no contract type and imports nothing of the project;
the sandbox itself (namespaces, mounts, uid) is ``spec_verify._sandbox``.

Why each piece:

- **Own session** (``start_new_session`` at the caller's ``Popen``): the worker and its
  children share a process group the harness can kill at once, and a Ctrl-C in the terminal
  reaches the harness only.
- **Child subreaper** (``PR_SET_CHILD_SUBREAPER``, Linux): a worker sets it on itself before
  it loads untrusted code (``harden_worker``), so a child that daemonises (fork, ``setsid()``,
  fork) is re-parented to the worker, not to init, and is still found by walking ``/proc``
  from the worker's pid. A harness is a subreaper too (``become_subreaper``), so what escapes
  a worker that exits on its own is re-parented to the harness, which kills it when that
  worker is cleaned up (same session) or at the end of the run (``reap_all_children``).
- **Kill the tree, then prove it** (``kill_tree``): the root is stopped, not killed, so it
  keeps taking in orphans; each descendant is killed the moment it is read, pass after pass;
  then the root and its group. It returns the processes of the tree still running afterwards:
  empty is the proof that nothing is left (the callers report anything else).
- **Limits before the untrusted code runs**: no core dumps, an address-space limit, death with
  the parent (``PR_SET_PDEATHSIG``), Ctrl-C left to the harness.
- **Bounded output** (``OutputRing``): a worker's pipes are drained by one thread each into a
  ring buffer (the last ``RING_BYTES``), quoted in failure messages; a flood costs CPU only.

Deadlines are the callers' (every wait on a worker is against a monotonic deadline; when it
passes, the tree is killed): nothing relies on signals inside the untrusted process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

__all__ = [
    "MEMORY_LIMIT",
    "RING_BYTES",
    "OutputRing",
    "alive",
    "become_subreaper",
    "children",
    "descendants",
    "describe_exit",
    "harden_worker",
    "kill_tree",
    "reap_all_children",
    "supervise_self",
]

RING_BYTES = 64 << 10  # the last 64 KiB of each of the worker's stdout and stderr are kept
MEMORY_LIMIT = 4 << 30  # RLIMIT_AS of a worker: a runaway allocation fails there, not here
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux; False elsewhere)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def harden_worker(memory_limit: int | None = MEMORY_LIMIT) -> None:
    """Called first thing in a worker: no core dumps, an address-space limit, death with the
    parent, subreaper of its own descendants, Ctrl-C left to the harness."""
    import resource

    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    out: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and ")"; split after the last one
        fields = text[text.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            out[int(entry)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children first found first), from /proc."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signum)


def kill_tree(pid: int, extra: Sequence[int] = ()) -> list[int]:
    """Kill ``pid``, its process group and every descendant; return those still running after
    (empty: nothing is left).

    ``pid`` is stopped first, not killed: it stays alive, and a worker is a child subreaper,
    so a descendant whose parent dies is re-parented to it and is still found. Then passes over
    ``/proc`` kill each descendant the moment it is read (newest pid first), until two passes
    in a row find none (or 2 s pass): a "fork runner" (fork, ``setsid()``, exit, over and over)
    changes pid faster than a whole listing can be made, but not faster than one ``stat``
    read and a signal. Only then is ``pid`` itself killed."""
    _signal(pid, signal.SIGSTOP)
    before = set(descendants(pid))  # what the proof checks: the tree as the kill found it
    tree = {pid, *extra}
    _kill_descendants(tree)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    for p in tree:
        _signal(p, signal.SIGKILL)
    if not sys.platform.startswith("linux"):
        return []
    _wait_gone(tree)
    _reap_orphans(pid)
    return sorted(p for p in tree | before | set(descendants(pid)) if alive(p))


def _kill_descendants(tree: set[int]) -> None:
    """Kill every descendant of the processes in ``tree`` (adding them to it), pass after pass
    over ``/proc`` until two passes in a row find none or 2 s pass."""
    killed: set[int] = set()
    deadline = time.monotonic() + 2.0
    quiet = 0
    while quiet < 2 and time.monotonic() < deadline:
        quiet = 0 if _kill_children_of(tree, killed) else quiet + 1


def supervise_self() -> None:
    """Split this process in two where no PID namespace holds the untrusted code: the parent
    stays a subreaper that waits for the child, kills whatever the child left running (its
    daemons are re-parented to the parent, which is still alive) and exits as the child did;
    the child returns from here and runs the untrusted code. So the process the harness
    started outlives nothing it started, as a namespace's pid 1 guarantees where there is one.
    Call it in a single-threaded process, after ``harden_worker``."""
    become_subreaper()
    child = os.fork()
    if child == 0:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        return
    for fd in (0, 1, 2):  # the harness sees end of output when the child's tree is gone
        with contextlib.suppress(OSError):
            os.close(fd)
    status = 0
    while True:
        try:
            pid, status = os.waitpid(child, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if pid == child:
            break
    _kill_descendants({os.getpid()})
    with contextlib.suppress(ChildProcessError, OSError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 70)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (not gone, not a zombie), from /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _kill_children_of(tree: set[int], killed: set[int]) -> int:
    """One pass over ``/proc``, newest pid first: SIGKILL at once every live process whose
    parent is in ``tree``, and add it to ``tree``. Returns how many were new.

    A killed process's pid is not reused during the passes: it stays a zombie (its parent
    is in the tree, or it is re-parented to the stopped root, and neither reaps it)."""
    try:
        entries = sorted((int(e) for e in os.listdir("/proc") if e.isdigit()), reverse=True)
    except OSError:
        return 0
    new = 0
    for p in entries:
        if p in killed:
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text[text.rfind(b")") + 2 :].split()
        if len(fields) < 2 or fields[0] == b"Z" or int(fields[1]) not in tree:
            continue
        _signal(p, signal.SIGKILL)
        tree.add(p)
        killed.add(p)
        new += 1
    return new


def _wait_gone(pids: set[int], limit: float = 2.0) -> None:
    """Wait (briefly) until every killed process is dead or a zombie: a kill is asynchronous,
    and the caller's next look must not find them running."""
    deadline = time.monotonic() + limit
    left = set(pids)
    while left and time.monotonic() < deadline:
        for p in list(left):
            try:
                with open(f"/proc/{p}/stat", "rb") as stat:
                    state = stat.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                state = b"X"
            if state in (b"Z", b"X"):
                left.discard(p)
        if left:
            time.sleep(0.005)


def _reap_orphans(worker_pid: int) -> None:
    """Kill and reap orphans re-parented to this process (a subreaper) from ``worker_pid``'s
    session, and reap any that already died."""
    me = os.getpid()
    for child, parent in _parents().items():
        if parent != me or child == worker_pid:
            continue
        try:
            sid = os.getsid(child)
        except OSError:
            continue
        if sid == worker_pid:
            _signal(child, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(child, 0)


def children() -> set[int]:
    """The pids of this process's live children."""
    me = os.getpid()
    return {child for child, parent in _parents().items() if parent == me}


def reap_all_children(keep: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Kill and reap every child of this process but those in ``keep`` (what a subreaper
    harness inherited from workers that exited on their own, and any worker left open);
    ``spec-verify check`` calls it at the end with the children it had at the start.
    Returns the pids killed."""
    me = os.getpid()
    killed = []
    for child, parent in _parents().items():
        if parent == me and child not in keep:
            for p in [*descendants(child), child]:
                _signal(p, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(child, 0)
            killed.append(child)
    return killed


def describe_exit(returncode: int | None) -> str:
    """How a worker ended, in words."""
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        signum = -returncode
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        what = {
            "SIGSEGV": "a segmentation fault: the library touched memory it does not own",
            "SIGBUS": "a bus error: a misaligned or unmapped access",
            "SIGABRT": "an abort (abort(), a failed assert or a panic that aborts)",
            "SIGFPE": "an arithmetic trap",
            "SIGILL": "an illegal instruction",
            "SIGKILL": "out of memory, or killed from outside",
        }.get(name, name)
        return f"crashed with {name} ({what})"
    return f"exited with status {returncode} (the implementation ended the process)"


class OutputRing:
    """The last ``size`` bytes of a pipe, drained by a daemon thread."""

    def __init__(self, pipe: Any, size: int = RING_BYTES) -> None:
        self.size = size
        self.data = bytearray()
        self.total = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(pipe.fileno(), 65536):
                with self._lock:
                    self.total += len(chunk)
                    self.data += chunk
                    if len(self.data) > self.size:
                        del self.data[: len(self.data) - self.size]
        with contextlib.suppress(OSError):
            pipe.close()

    def tail(self, limit: int = 1200) -> str:
        self._thread.join(timeout=0.2)  # what the worker wrote just before it died
        with self._lock:
            text = bytes(self.data[-limit:]).decode("utf-8", "replace").strip()
            cut = self.total > limit
        return ("..." + text) if cut and text else text
