"""Run by tests/mutants/test_cores.py: a graded run's process and its sampler's process share
one core. The sampler's processes are the children of the sampler's fork server (a run at a
time has one; with two at a time one of two is ours)."""

import os
from pathlib import Path


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _parent(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _served_samplers():
    marker = b"spec_verify.mutants._sampler"
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    return [p for p in pids if marker in _cmdline(p) and marker in _cmdline(_parent(p))]


def test_this_run_and_its_sampler_share_one_core():
    import spec_verify.reference  # the proxy: connected to the run's sampler

    assert spec_verify.reference.SamplingParams() is not None
    mine = os.sched_getaffinity(0)
    assert len(mine) == 1, mine
    samplers = {pid: os.sched_getaffinity(pid) for pid in _served_samplers()}
    assert mine in samplers.values(), (mine, samplers)
