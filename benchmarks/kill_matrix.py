"""The full kill matrix: each mutant against every test in ``tests/reference``.

The gate is ``tests/mutants/test_kill_matrix.py`` (each mutant against the test its catalogue
entry declares; a surviving mutant fails it). This script answers the wider question a
maintainer asks when adding a mutant or a test: which of our tests kill which mutant. It runs
through the grader's mechanism (``run_mutants``: ``tests/`` copied into each run's temporary
folder, the reference imported from the run's copy) and exits 1 if the clean reference fails a
test, a mutant survives all of them, or a mutant's declared killer is not among its killers.
About 4 minutes on 2 idle cores.

    python benchmarks/kill_matrix.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from spec_verify.mutants import CATALOGUE
from spec_verify.mutants.grader import run_mutants

TESTS = Path(__file__).resolve().parents[1] / "tests"


def main() -> int:
    started = time.perf_counter()
    plan: dict[str | None, list[str]] = {None: ["reference"]}
    plan.update({m.id: ["reference"] for m in CATALOGUE})
    outcomes = run_mutants(TESTS, plan, exitfirst=False)
    problems = []
    clean = outcomes[None]
    if not clean.passed_cleanly:
        problems.append(f"the clean reference fails: {clean.failures[:5]} {clean.errors[:5]}")
    print("kill matrix (mutant: tests of ours that fail with it planted)")
    for mutant in CATALOGUE:
        outcome = outcomes[mutant.id]
        killers = sorted({f.test.split("[")[0].rsplit("::", 1)[-1] for f in outcome.failures})
        print(f"  {mutant.id}: {', '.join(killers) or '(none)'}")
        declared = {node.rsplit("::", 1)[-1] for node in mutant.killed_by}
        if not killers:
            problems.append(f"{mutant.id} survives all of tests/reference ({outcome.kind}, "
                            f"exit {outcome.code}: {outcome.errors[:1]})")
        elif not declared & set(killers):
            problems.append(f"{mutant.id}: declared killer {sorted(declared)} not among {killers}")
    print(f"{len(CATALOGUE)} mutants in {time.perf_counter() - started:.0f} s")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
