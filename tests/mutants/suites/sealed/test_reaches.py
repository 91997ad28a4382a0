"""A cheating suite: it looks for the grader's processes from inside its run, starts a daemon
that rewrites the grade's ``--json`` report after the grading (``SV_CHEAT_REPORT``), then fails
with what it reached (``REACHED {json}``), so the grade's clean run quotes it."""

from __future__ import annotations

import json
import os
import time


def _daemon(report: str) -> None:
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    time.sleep(1.5)
    try:
        with open(report, "w") as handle:
            handle.write('{"forged": "36/36"}')
    finally:
        os._exit(0)


def _reached() -> dict[str, str]:
    out = {"sampler": "no", "sampler_mem": "no", "sampler_pagemap": "no", "grader": "no",
           "grader_fds": "no", "uid": str(os.geteuid())}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if b"spec_verify.mutants._sampler" in cmdline:
            out["sampler"] = "yes"
            for name in ("mem", "pagemap"):
                try:
                    with open(f"/proc/{entry}/{name}", "rb"):
                        out[f"sampler_{name}"] = "yes"
                except OSError:
                    pass
        harness = (b"grade" in cmdline and b"spec_verify" in cmdline) or b"pytest" in cmdline
        if harness and b"spec_verify.mutants._worker" not in cmdline:
            out["grader"] = "yes"
            try:
                if os.listdir(f"/proc/{entry}/fd"):
                    out["grader_fds"] = "yes"
            except OSError:
                pass
    return out


def test_reaches() -> None:
    report = os.environ.get("SV_CHEAT_REPORT")
    if report:
        _daemon(report)
    raise AssertionError("REACHED " + json.dumps(_reached(), sort_keys=True))
