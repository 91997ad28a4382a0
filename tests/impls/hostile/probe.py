"""Attacks the harness from inside the worker, at import, then reports what
each attack reached: every ``verify_draft`` raises ``RuntimeError("HOSTILE {json}")``, which the
contract tier's failures quote (the rest is the reference).

Every attack stops at the proof that it would land and undoes itself: a file opened for
appending is not written, a file created is removed at once, a mount is unmounted at once.
Without the sandbox (a worker as root beside the harness) every one of them lands:

- ``module``: open an installed ``spec_verify`` module for writing (a later import runs it);
- ``pth`` / ``pyc`` / ``script``: create a file in site-packages, the package's
  ``__pycache__`` and the interpreter's scripts folder (a later run executes it);
- ``report_dir``: create a file beside the ``--json`` report (``HOSTILE_REPORT_DIR``);
- ``mount``: mount a tmpfs (what binding a passing file over a report path needs);
- ``harness_cmdline``: a visible process runs pytest or ``spec_verify check`` (the harness);
- ``foreign_mem``: open ``/proc/<pid>/mem`` of a process that is not this one.
"""

from __future__ import annotations

import ctypes
import json
import os
import sysconfig
import tempfile
from typing import Any

import spec_verify
from spec_verify.reference import *  # noqa: F403


def _create(folder: str) -> str:
    path = os.path.join(folder, f"zz-spec-verify-hostile-{os.getpid()}.pth")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        return f"refused {exc.errno}"
    os.close(fd)
    os.unlink(path)
    return "landed"


def _append(path: str) -> str:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError as exc:
        return f"refused {exc.errno}"
    os.close(fd)
    return "landed"


def _mount() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    target = tempfile.mkdtemp(prefix="sv-hostile-")
    try:
        if libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, None) != 0:
            return f"refused {ctypes.get_errno()}"
        libc.umount2(target.encode(), 2)  # MNT_DETACH
        return "landed"
    finally:
        os.rmdir(target)


def _processes() -> tuple[str, str]:
    seen_harness = "refused"
    mem = "refused"
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if b"pytest" in cmdline or b"spec_verify\x00check" in cmdline:
            seen_harness = "landed"
        try:
            with open(f"/proc/{entry}/mem", "rb"):
                mem = "landed"
        except OSError:
            pass
    return seen_harness, mem


def _attacks() -> dict[str, str]:
    package = os.path.dirname(spec_verify.__file__)
    site = sysconfig.get_paths()["purelib"]
    cache = os.path.join(package, "__pycache__")
    harness, mem = _processes()
    out = {
        "module": _append(os.path.join(package, "runner.py")),
        "pth": _create(site),
        "pyc": _create(cache if os.path.isdir(cache) else package),
        "script": _create(sysconfig.get_paths()["scripts"]),
        "mount": _mount(),
        "harness_cmdline": harness,
        "foreign_mem": mem,
        "uid": str(os.geteuid()),
    }
    report_dir = os.environ.get("HOSTILE_REPORT_DIR")
    if report_dir:
        out["report_dir"] = _create(report_dir)
    return out


_REPORT = "HOSTILE " + json.dumps(_attacks(), sort_keys=True)


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(_REPORT)
