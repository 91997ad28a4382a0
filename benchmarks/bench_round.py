"""``spec-verify check`` on the bundled reference: this checkout against the round's starting
commit, in the same run, on the same machine.

The round's starting commit (``BASE``, 96321fe) is the last commit before the work on issues 22
to 28 began (2026-12-02 03:18 UTC; the next, afb4292, starts issue 22's shared workers). It is
exported with ``git archive`` and installed without dependencies into a temporary folder that
goes first on ``PYTHONPATH``, so both versions run on this interpreter's numpy, scipy and
hypothesis; the current version is the installed ``spec_verify``. Each version runs
``python -m spec_verify.cli check`` (default sizes, or ``--quick``) as a fresh process, the two
alternating ``--repeats`` times (so load drifting on a shared machine hits both alike); the
ratio of the medians is printed (issue 23's target: HEAD within 1.5x of BASE). Both verdicts
must be PASSED, or the numbers mean nothing.

Usage: python benchmarks/bench_round.py [--quick] [--repeats N] [--base COMMIT]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = "96321fe"
_ROOT = Path(__file__).resolve().parents[1]


def install_base(commit: str, into: Path) -> Path:
    """``commit`` of this repository installed (no dependencies) under ``into``; its folder."""
    source, site = into / "source", into / "site"
    source.mkdir()
    archive = subprocess.run(["git", "-C", str(_ROOT), "archive", commit],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(site), str(source)], check=True)
    return site


def timed_check(site: Path | None, quick: bool, scratch: Path) -> tuple[float, int]:
    """Seconds and exit code of one ``check`` run (``site`` first on the path: the base)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    command = [sys.executable, "-m", "spec_verify.cli", "check", "--impl", "reference",
               "--no-progress", *(["--quick"] if quick else [])]
    start = time.perf_counter()
    done = subprocess.run(command, check=False, cwd=scratch, env=env, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
    return seconds, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="check --quick (default: full)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each version")
    parser.add_argument("--base", default=BASE, help=f"the starting commit (default {BASE})")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats {args.repeats}: must be at least 1 (e.g. --repeats 3)")
    with tempfile.TemporaryDirectory(prefix="bench_round_") as folder:
        root = Path(folder)
        site = install_base(args.base, root)
        scratch = root / "run"
        scratch.mkdir()  # neither version sees this checkout as its current folder
        times: dict[str, list[float]] = {"base": [], "head": []}
        codes: dict[str, set[int]] = {"base": set(), "head": set()}
        for _ in range(args.repeats):
            for label, where in (("base", site), ("head", None)):
                seconds, code = timed_check(where, args.quick, scratch)
                times[label].append(seconds)
                codes[label].add(code)
    base, head = (statistics.median(times[k]) for k in ("base", "head"))
    size = "--quick" if args.quick else "(default sizes)"
    print(f"spec-verify check --impl reference {size}, {args.repeats} run(s) each, "
          f"load {os.getloadavg()[0]:.1f}")
    for label, median in (("base " + args.base, base), ("head", head)):
        verdict = "PASSED" if codes[label.split()[0]] == {0} else f"exit {codes[label.split()[0]]}"
        print(f"{label:<14} {median:8.1f} s  {verdict}  "
              f"({', '.join(f'{t:.1f}' for t in times[label.split()[0]])})")
    print(f"ratio head / base: {head / base:.2f}x (target: at most 1.5x)")


if __name__ == "__main__":
    main()
