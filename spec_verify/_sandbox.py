"""One sandbox for untrusted code: check workers and graded suites.

Linux namespaces through the kernel's own calls (``unshare(2)`` via ``unshare(1)`` for check
workers, ``libc.unshare`` in the grader's forked runs), not bubblewrap: bubblewrap is not on
every CI image and may not be installed at run time, while ``unshare`` is in util-linux and the
calls need nothing but the kernel. What the sandbox does, in order:

1. **PID namespace** (the caller forks into it): the untrusted code sees only its own
   processes, cannot signal or trace the harness, and everything it starts dies with the
   namespace's first process.
2. **Mount namespace, private**: its mounts never reach the harness, so binding a file over a
   report path changes nothing the harness sees; a **fresh /proc** of the new PID namespace
   (the harness's command line, memory, file descriptors and page tables are not in it).
3. **Read-only binds** of the harness's own files (the installed ``spec_verify``, its
   ``reference``/``mutants``/``properties`` folders, the interpreter's stdlib, site-packages and
   scripts folder) and of the report folders, after the folders the untrusted code must write
   are bound onto themselves (a recursive read-only bind keeps them writable).
4. **Privileges dropped**: as root, ``setgroups([])``, ``setgid``/``setuid`` to ``NOBODY``
   where the code's files are readable by it; every capability dropped (bounding set, then
   the effective, permitted and inheritable sets), ``no_new_privs`` (a setuid binary cannot
   give them back).

Which of these held is a ``Protections`` value that travels into the report; where the kernel
refuses a step, the step is recorded as not held, with why.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import stat
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "NOBODY",
    "Protections",
    "drop_privileges",
    "enter_sandbox",
    "fresh_temporary_folders",
    "harness_paths",
    "make_reachable",
    "mount_fresh_proc",
    "readable_by",
    "seal_mounts",
    "unshare",
]

NOBODY = 65534  # the unprivileged uid and gid untrusted code runs as where the harness is root

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
# statvfs's f_flag bits (ST_*) -> mount(2) flags a remount must keep (a user namespace may not
# clear a flag its mount was locked with)
_KEPT_FLAGS = ((1, _MS_RDONLY), (2, _MS_NOSUID), (4, _MS_NODEV), (8, _MS_NOEXEC),
               (1024, _MS_NOATIME), (2048, _MS_NODIRATIME), (4096, _MS_RELATIME))  # fmt: skip
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_KEEPCAPS = 8
_LAST_CAP = 63


@dataclass(frozen=True)
class Protections:
    """Which protections held around one piece of untrusted code.

    Attributes:
        pid_namespace: it ran in a PID namespace of its own.
        mount_namespace: it ran in a private mount namespace of its own.
        fresh_proc: ``/proc`` was that namespace's own.
        readonly: the folders bound read-only.
        uid: the uid it ran as.
        capabilities_dropped: its effective, permitted and bounding sets were empty.
        no_new_privs: ``PR_SET_NO_NEW_PRIVS`` was set.
        why_not: what the kernel refused, or why a step was left out, in words.
    """

    pid_namespace: bool = False
    mount_namespace: bool = False
    fresh_proc: bool = False
    readonly: tuple[str, ...] = ()
    uid: int = -1
    capabilities_dropped: bool = False
    no_new_privs: bool = False
    why_not: tuple[str, ...] = field(default_factory=tuple)

    @property
    def sealed(self) -> bool:
        """Every protection held: namespaces, fresh /proc, read-only harness, no privileges
        (``uid`` 0 without capabilities counts: the harness's files are read-only mounts)."""
        return (self.pid_namespace and self.mount_namespace and self.fresh_proc
                and bool(self.readonly) and self.capabilities_dropped and self.no_new_privs)

    def to_json(self) -> dict[str, Any]:
        return {
            "sealed": self.sealed, "pid_namespace": self.pid_namespace,
            "mount_namespace": self.mount_namespace, "fresh_proc": self.fresh_proc,
            "readonly": list(self.readonly), "uid": self.uid,
            "capabilities_dropped": self.capabilities_dropped,
            "no_new_privs": self.no_new_privs, "why_not": list(self.why_not),
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Any) -> Protections:
        """From ``to_json``'s output (untrusted: every field checked, anything else is
        "nothing held")."""
        if not isinstance(data, dict):
            return cls(why_not=("the sandbox's report was not readable",))

        def flag(name: str) -> bool:
            return data.get(name) is True

        readonly = data.get("readonly")
        why = data.get("why_not")
        uid = data.get("uid")
        return cls(
            pid_namespace=flag("pid_namespace"), mount_namespace=flag("mount_namespace"),
            fresh_proc=flag("fresh_proc"),
            readonly=tuple(str(p)[:4096] for p in readonly[:64])
            if isinstance(readonly, list) else (),
            uid=uid if isinstance(uid, int) and not isinstance(uid, bool) else -1,
            capabilities_dropped=flag("capabilities_dropped"),
            no_new_privs=flag("no_new_privs"),
            why_not=tuple(str(w)[:500] for w in why[:16]) if isinstance(why, list) else (),
        )  # fmt: skip

    def summary(self) -> str:
        """One line for a report: what held, and what did not."""
        held = [name for name, ok in (
            ("own PID namespace", self.pid_namespace),
            ("own mount namespace", self.mount_namespace), ("fresh /proc", self.fresh_proc),
            (f"{len(self.readonly)} harness folders read-only", bool(self.readonly)),
            ("no capabilities", self.capabilities_dropped),
            ("no new privileges", self.no_new_privs)) if ok]
        who = f"uid {self.uid}" if self.uid >= 0 else "uid unknown"
        text = f"sandbox: {', '.join(held) or 'nothing held'}; {who}"
        return text + (f" (not held: {'; '.join(self.why_not)})" if self.why_not else "")


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _error(what: str) -> OSError:
    errno = ctypes.get_errno()
    return OSError(errno, f"{what}: {os.strerror(errno)}")


def unshare(flags: int) -> None:
    """``unshare(2)`` (``os.unshare`` is Python 3.12+). Raises OSError."""
    if _libc().unshare(ctypes.c_int(flags)) != 0:
        raise _error("unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    def b(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if _libc().mount(b(source), b(target), b(fstype), ctypes.c_ulong(flags), None) != 0:
        raise _error(f"mount {target}")


def harness_paths() -> list[str]:
    """The folders the harness runs from, which untrusted code must not change: the
    ``spec_verify`` package and the folders of its mapped subpackages (an editable install
    maps them into a checkout), the interpreter's stdlib, site-packages and scripts folders."""
    paths: list[str] = []
    for name in ("spec_verify", "spec_verify.reference", "spec_verify.mutants",
                 "spec_verify.properties"):  # fmt: skip
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            for location in (spec.submodule_search_locations or []) if spec else []:
                paths.append(location)
    for key in ("stdlib", "platstdlib", "purelib", "platlib", "scripts"):
        with contextlib.suppress(KeyError):
            paths.append(sysconfig.get_paths()[key])
    import site

    with contextlib.suppress(AttributeError):
        paths += site.getsitepackages()
    paths.append(os.path.dirname(os.path.realpath(sys.executable)))
    return _existing(paths)


def _existing(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in out and real != "/":
            out.append(real)
    return out


def readable_by(paths: Iterable[str], uid: int = NOBODY) -> str | None:
    """None when ``uid`` (not the owner, in no group of it) can read every path and search
    every folder above it; else the first path that stops it."""
    for path in paths:
        here = Path(os.path.realpath(path))
        for folder in [*reversed(here.parents), here]:
            try:
                st = folder.stat()
            except OSError:
                break
            need = stat.S_IXOTH if folder != here or stat.S_ISDIR(st.st_mode) else 0
            need |= stat.S_IROTH if folder == here else 0
            if st.st_uid != uid and (st.st_mode & need) != need:
                return str(folder)
    return None


def seal_mounts(readonly: Sequence[str], writable: Sequence[str] = ()) -> tuple[list[str],
                                                                                list[str]]:
    """In a fresh mount namespace: make every mount private, bind ``writable`` folders onto
    themselves, then bind each ``readonly`` folder read-only (recursively, so a writable
    folder inside one stays writable). Returns (folders made read-only, what failed)."""
    failed: list[str] = []
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    for path in _existing(writable):
        try:
            _mount(path, path, None, _MS_BIND | _MS_REC)
        except OSError as exc:
            failed.append(str(exc))
    done: list[str] = []
    for path in _existing(readonly):
        try:
            kept = 0
            with contextlib.suppress(OSError):
                flags = os.statvfs(path).f_flag
                kept = sum(ms for st_flag, ms in _KEPT_FLAGS if flags & st_flag)
            _mount(path, path, None, _MS_BIND | _MS_REC)
            _mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | kept)
            done.append(path)
        except OSError as exc:
            failed.append(str(exc))
    return done, failed


def _blocking(path: str, uid: int) -> str | None:
    """The highest folder above ``path`` that ``uid`` cannot search, or None (``path``
    itself is the caller's: a run's folder is given to ``uid``, an unreadable one is
    reported by ``readable_by``)."""
    here = Path(path)
    for folder in reversed(here.parents):
        try:
            st = folder.stat()
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode) and st.st_uid != uid and not st.st_mode & stat.S_IXOTH:
            return str(folder)
    return None


def fresh_temporary_folders(folders: Sequence[str], keep: Sequence[str]) -> list[str]:
    """In a private mount namespace, as its root: an empty tmpfs (mode 1777) over each of
    ``folders`` (``/tmp``, ``/dev/shm``: what every process may write, so what runs could
    share), with the ``keep`` folders inside them bound back from where they were (a graded
    run's own folder, the harness's files when it is installed there). Returns what
    failed."""
    failed: list[str] = []
    fresh = _existing(folders)
    # only what lies inside a fresh folder comes back (a report folder that is /tmp itself
    # does not: it would swallow the rest), and a folder inside another kept one with it
    kept = sorted({p for p in _existing(keep) if any(p.startswith(f + "/") for f in fresh)},
                  key=len)
    kept = [p for i, p in enumerate(kept)
            if not any(p.startswith(q.rstrip("/") + "/") for q in kept[:i])]
    for folder in fresh:
        inside = [p for p in kept if p.startswith(folder + "/")]
        fds = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in inside}
        try:
            _mount("tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV)
            os.chmod(folder, 0o1777)
            for path, fd in fds.items():
                os.makedirs(path, mode=0o755, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
        except OSError as exc:
            failed.append(f"no fresh {folder} ({exc})")
        finally:
            for fd in fds.values():
                os.close(fd)
    return failed


def make_reachable(paths: Sequence[str], uid: int = NOBODY) -> tuple[list[str], list[str]]:
    """In a private mount namespace, as its root: let ``uid`` reach every folder of ``paths``
    without opening the folders above them. Each highest folder ``uid`` cannot search (root's
    home, where pyenv keeps the interpreter) is covered by an empty tmpfs of mode 0755 that
    holds only the needed folders, bound back in from where they were: the rest of that
    folder is hidden from the untrusted code as well. Returns (folders covered, failures)."""
    needed = sorted(_existing(paths), key=len)
    kept = [p for i, p in enumerate(needed)
            if not any(p.startswith(q.rstrip("/") + "/") for q in needed[:i])]
    by_block: dict[str, list[str]] = {}
    for path in kept:
        block = _blocking(path, uid)
        if block is not None:
            by_block.setdefault(block, []).append(path)
    covered: list[str] = []
    failed: list[str] = []
    for block in sorted(by_block, key=len):
        if any(block.startswith(c + "/") for c in covered):
            continue  # inside a folder already covered: its paths are bound there
        inside = [p for b, ps in by_block.items() if b == block or b.startswith(block + "/")
                  for p in ps]
        fds = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in inside}
        try:
            _mount("tmpfs", block, "tmpfs", _MS_NOSUID | _MS_NODEV, )
            os.chmod(block, 0o755)
            for path, fd in fds.items():
                os.makedirs(path, mode=0o755, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
            covered.append(block)
        except OSError as exc:
            failed.append(f"cannot open a way to {inside} through {block!r} ({exc})")
        finally:
            for fd in fds.values():
                os.close(fd)
    return covered, failed


def mount_fresh_proc() -> None:
    """Mount the current PID namespace's own ``/proc`` over ``/proc`` (call as its pid 1,
    in a private mount namespace). Raises OSError."""
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)


def _status_capabilities() -> dict[str, int]:
    out: dict[str, int] = {}
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs"):
                out[key] = int(value.strip(), 16 if key.startswith("Cap") else 10)
    return out


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]  # fmt: skip


def drop_privileges(uid: int | None) -> tuple[int, bool, bool, list[str]]:
    """Drop what this process may do: every capability out of the bounding set, the groups,
    to ``uid`` (and the same gid) when given and this process is root, then the remaining
    capability sets, then ``no_new_privs``. Returns (uid now, capabilities dropped,
    no_new_privs set, what failed)."""
    libc = _libc()
    failed: list[str] = []
    for cap in range(_LAST_CAP + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last: fine
    if uid is not None and os.geteuid() == 0 and uid != 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)  # clears the permitted and effective sets
        except OSError as exc:
            failed.append(f"setuid {uid}: {exc.strerror}")
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        failed.append(str(_error("capset")))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        failed.append(str(_error("no_new_privs")))
    caps = _status_capabilities()
    dropped = all(caps.get(k, 1) == 0 for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb"))
    return os.geteuid(), dropped, caps.get("NoNewPrivs") == 1, failed


_PR_SET_PDEATHSIG = 1


def _write_id_maps(uid: int, gid: int) -> None:
    """A new user namespace's maps: this process's uid and gid as 0 inside."""
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"0 {gid} 1")


def _mirror(child: int, status_read: int) -> None:
    """End this process as the namespace's untrusted process ended (its pid 1 says how)."""
    while True:
        try:
            os.waitpid(child, 0)
            break
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    data = b""
    with contextlib.suppress(OSError):
        data = os.read(status_read, 64)
    text = data.decode("ascii", "replace")
    if text[:1] == "S" and text[1:].isdigit():
        signum = int(text[1:])
        with contextlib.suppress(OSError, ValueError):
            import signal

            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(int(text[1:]) if text[:1] == "E" and text[1:].isdigit() else 70)


def enter_sandbox(readonly: Sequence[str], writable: Sequence[str], needed: Sequence[str],
                  drop_to: int | None, chown: Sequence[str] = (),
                  fresh: Sequence[str] = ()) -> Protections:
    """Seal the calling process off; call it in a freshly forked, single-threaded process.

    The caller unshares a PID and a mount namespace (and a user namespace where it is not
    root), forks the namespace's pid 1, which mounts the namespace's own ``/proc``, makes
    ``needed`` reachable by ``drop_to``, binds ``writable`` and then ``readonly``, gives the
    ``chown`` folders to ``drop_to``, puts an empty tmpfs over each ``fresh`` folder (``/tmp``:
    nothing one run writes there is seen by the next) and forks the process that returns from
    here, after
    dropping its privileges. The caller waits and ends as that process ends (its exit status or
    its signal); pid 1 reaps orphans and, when the process ends, ends too, which kills
    everything left in the namespace; both die with their parent. Where the kernel refuses the
    namespaces, the caller itself returns, unsealed, and the value says why."""
    uid, gid = os.getuid(), os.getgid()
    user = os.geteuid() != 0
    try:
        unshare(CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWUSER if user else 0))
        if user:
            _write_id_maps(uid, gid)
    except OSError as exc:
        return Protections(why_not=(f"no namespaces ({exc.strerror or exc})",))
    status_read, status_write = os.pipe()
    first = os.fork()
    if first:
        os.close(status_write)
        _mirror(first, status_read)
    libc = _libc()
    libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)
    os.close(status_read)
    why: list[str] = []
    fresh_proc = mounted = False
    done: list[str] = []
    try:
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        mounted = True
        mount_fresh_proc()
        fresh_proc = True
        # the harness's own files may be in /tmp too (a virtual environment made there)
        why += fresh_temporary_folders(fresh, [*writable, *readonly, *needed])
        if drop_to is not None:
            why += make_reachable(needed, drop_to)[1]
        done, failed = seal_mounts(readonly, writable)
        why += failed
    except OSError as exc:
        why.append(f"mounts ({exc})")
    if drop_to is not None and not user:
        for folder in chown:
            for here, dirs, files in os.walk(folder):
                for name in [here, *(os.path.join(here, n) for n in dirs + files)]:
                    with contextlib.suppress(OSError):
                        os.chown(name, drop_to, drop_to, follow_symlinks=False)
        blocked = readable_by(needed, drop_to)
        if blocked is not None:
            why.append(f"uid 0 kept: {blocked!r} is not readable by uid {drop_to}")
            drop_to = None
    second = os.fork()
    if second:
        _pid1_reap(second, status_write)
    os.close(status_write)
    libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)
    now, dropped, no_new, failed = drop_privileges(drop_to)
    return Protections(pid_namespace=os.getpid() == 2, mount_namespace=mounted,
                       fresh_proc=fresh_proc and int(os.readlink("/proc/self")) == os.getpid(),
                       readonly=tuple(done), uid=now if not user else uid,
                       capabilities_dropped=dropped, no_new_privs=no_new,
                       why_not=tuple(why + failed))


def _pid1_reap(child: int, status_write: int) -> None:
    """Pid 1 of the namespace: reap until ``child`` ends, say how on the pipe, and exit (the
    kernel then kills whatever is left in the namespace)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status = 0
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == child:
            break
    report = (f"S{os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
              else f"E{os.waitstatus_to_exitcode(status)}")
    with contextlib.suppress(OSError):
        os.write(status_write, report.encode("ascii"))
    os._exit(0)
