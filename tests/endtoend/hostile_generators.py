"""A generator that attacks the harness from compare's worker process (loaded by path), then
raises with what it reached: ``HOSTILE {json}``. Each attack undoes itself if it lands (a file
opened for appending is not written, nothing is created)."""

from __future__ import annotations

import json
import os

import spec_verify


def _attacks() -> dict[str, str]:
    out = {"uid": str(os.geteuid())}
    module = os.path.join(os.path.dirname(spec_verify.__file__), "runner.py")
    try:
        os.close(os.open(module, os.O_WRONLY | os.O_APPEND))
        out["module"] = "landed"
    except OSError as exc:
        out["module"] = f"refused {exc.errno}"
    out["harness_cmdline"] = "refused"
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if b"pytest" in handle.read():
                        out["harness_cmdline"] = "landed"
            except OSError:
                pass
    return out


def attacks(seed: int) -> list[int]:
    raise RuntimeError("HOSTILE " + json.dumps(_attacks(), sort_keys=True))
