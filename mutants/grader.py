"""The grader: score a test suite by the share of the catalogue's planted bugs it catches.

Run phases, in order (ARCHITECTURE.md):

1. **Prepare**: read the reference source; apply every mutant (a change that no longer applies
   stops here, loudly); build the canary. Start the fork server (``_worker.py``).
2. **Clean run**: the whole suite against an unchanged copy of the reference, through the same
   mechanism as every other run. It must pass (at least one test passing, none failing), else
   the grade is 0 and the report shows the failing tests. Its time sets the time limit of
   every later run (``max(min_timeout, timeout_factor x clean)``) and its per-test durations
   the order of later runs (fastest tests first: with ``-x`` a mutant dies at its first failure).
   The worker then preloads the modules the clean run imported (never the reference) and later
   runs reuse pytest's rewritten bytecode of the suite, so each starts warm.
3. **Canary, decoys and mutants**, shuffled into one random order and run ``jobs`` at a time,
   each in its own process with ``-x`` (and one-line tracebacks):
   - the **canary** (every function of the reference raises) must make the suite fail, else
     the suite tests nothing (grade 0);
   - each **decoy** is one more clean run, indistinguishable from a mutant run: it must pass,
     else the suite's result depends on something other than the reference's behaviour (its
     own randomness, the clock, the order or number of runs) and the grade is 0;
   - each **mutant** ends killed (a test failed), survived (all passed), timed out, or errored
     (the suite could not be collected or the interpreter died).
4. **Report**: the grade and one row per mutant (``reports.py`` writes the formats).

The score: ``grade = detected / total``, where a mutant is *detected* when it is killed, timed
out or errored (each makes the suite, or a CI running it, visibly fail) and *total* is the
number of mutants graded. Only a survivor counts against the suite.

What a suite can and cannot see: every run after the clean one has the same environment,
paths, file and module names, and the same reference module attributes (the isolation tests
show it); the clean run differs only in being first (the worker has not yet preloaded the
suite's imports), which the decoys make worthless. What differs is the reference's code, and
a suite that reads that code (its source or bytecode), or brings its own copy of the reference
as an oracle, can tell; that is reading the answer, not testing, and only a review of the suite
can rule it out.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from spec_verify.errors import InvalidArgument

from ._runner import RunFailure, RunOutcome, RunPool, RunRequest
from ._source import canary_sources, reference_sources
from .catalogue import CATALOGUE, Mutant, apply_mutant, mutant_by_id

__all__ = [
    "SCORE_DEFINITION",
    "GradeResult",
    "MutantResult",
    "MutantState",
    "SuiteNotFound",
    "grade",
    "pytest_arguments",
    "run_mutants",
]

SCORE_DEFINITION = (
    "grade = detected / total: a mutant is detected when the suite fails with it planted "
    "(killed: a test failed; timed out: no result within the time limit; errored: the suite "
    "could not be collected or the interpreter died). Survivors are the only misses. The "
    "suite must first pass on the clean reference and fail on the canary (a reference whose "
    "every function raises), and pass again on decoy clean runs mixed among the mutants; "
    "otherwise the grade is 0."
)

# Always passed to pytest: no cache between runs, no random test order, fixed hypothesis seed.
# The rewrite warning is about the worker having imported hypothesis before pytest started.
_BASE_ARGS = (
    "-p", "no:cacheprovider", "-p", "no:randomly", "-q", "--color=no",
    "-W", "ignore::pytest.PytestAssertRewriteWarning",
)


class SuiteNotFound(InvalidArgument):
    """The path to grade does not exist."""


class MutantState(str, Enum):
    """How a mutant run ended."""

    KILLED = "killed"
    SURVIVED = "survived"
    TIMED_OUT = "timed out"
    ERRORED = "errored"

    @property
    def detected(self) -> bool:
        """Whether the suite noticed the bug (every state but survived)."""
        return self is not MutantState.SURVIVED


@dataclass(frozen=True)
class MutantResult:
    """One mutant's verdict.

    Attributes:
        mutant_id / title: the catalogue entry.
        state: killed, survived, timed out or errored.
        killed_by: the first failing test (its pytest node id) when killed.
        reason: the failure message, or why the run errored or timed out.
        seconds: the run's wall time.
        tests_run: tests that ran to the end before it stopped.
    """

    mutant_id: str
    title: str
    state: MutantState
    killed_by: str | None
    reason: str
    seconds: float
    tests_run: int = 0


@dataclass(frozen=True)
class GradeResult:
    """The grade of one suite, with the evidence.

    Attributes:
        grade: ``detected / total`` in [0, 1]; 0 when the suite could not be graded.
        detected / total: mutants detected, mutants graded.
        graded: False when the clean run, the canary or a decoy made grading meaningless.
        reason: one sentence: the score, or why the grade is 0.
        mutants: one result per mutant, in catalogue order (empty when not graded).
        suite: the graded path.
        clean_seconds / clean_tests: the clean run's time and passing tests.
        clean_failures: the clean run's failing tests (why the grade is 0).
        time_limit: the per-run time limit derived from the clean run.
        notes: things the grader noticed that do not change the grade (files written).
        seconds: wall time of the whole grading.
    """

    grade: float
    detected: int
    total: int
    graded: bool
    reason: str
    mutants: tuple[MutantResult, ...]
    suite: str
    clean_seconds: float = 0.0
    clean_tests: int = 0
    clean_failures: tuple[RunFailure, ...] = ()
    time_limit: float = 0.0
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    score_definition: str = SCORE_DEFINITION

    def count(self, state: MutantState) -> int:
        """How many mutants ended in ``state``."""
        return sum(1 for m in self.mutants if m.state is state)


def pytest_arguments(exitfirst: bool) -> list[str]:
    """pytest's arguments for a graded run (``-x`` for every run after the clean one)."""
    args = list(_BASE_ARGS)
    if _has_hypothesis_plugin():
        args.append("--hypothesis-seed=0")
    if exitfirst:
        # Later runs only need the first failure's test and message: one line per failure
        # (the clean run keeps full tracebacks, they are what a student reads).
        args += ["-x", "--tb=line"]
    return args


def _has_hypothesis_plugin() -> bool:
    import importlib.util

    return importlib.util.find_spec("_hypothesis_pytestplugin") is not None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


# One return per way a run can end: the function is a decision table.
def _why_not_passing(outcome: RunOutcome, limit: float) -> str:  # noqa: PLR0911
    """Why a run that should have passed did not (for the clean run and decoys)."""
    if outcome.kind == "timed_out":
        return f"did not finish within {limit:g} s"
    if outcome.kind == "signaled":
        return f"crashed the interpreter ({_signal_name(outcome.code)})"
    if not outcome.finished and outcome.code in (0, 1):
        return (f"ended the interpreter before pytest finished (exit status {outcome.code}): "
                "a test called os._exit or similar")
    if outcome.code == 5 or (outcome.finished and outcome.collected == 0 and not outcome.errors):
        return "collected no tests"
    if outcome.errors:
        first = outcome.errors[0]
        return f"could not be collected ({first.test}: {first.message})"
    if outcome.failures:
        n = len(outcome.failures)
        return f"has {n} failing test{'s' * (n != 1)} (first: {outcome.failures[0].test})"
    if outcome.code == 0 and outcome.passed == 0:
        return "ran no test to the end (all skipped or deselected)"
    return f"ended with pytest exit status {outcome.code}: {_last_line(outcome.output)}"


def _classify(  # noqa: PLR0911 (a decision table: one return per way a run can end)
    outcome: RunOutcome, limit: float
) -> tuple[MutantState, str | None, str]:
    if outcome.kind == "timed_out":
        return MutantState.TIMED_OUT, None, f"no result within the time limit of {limit:g} s"
    if outcome.kind == "signaled":
        return MutantState.ERRORED, None, f"the interpreter died ({_signal_name(outcome.code)})"
    if not outcome.finished:
        return (MutantState.ERRORED, None,
                f"the process ended before pytest finished (exit status {outcome.code})")
    if outcome.code == 0 and not outcome.failures and not outcome.errors:
        return MutantState.SURVIVED, None, f"all {outcome.passed} tests passed"
    if outcome.code == 1 and outcome.failures:
        first = outcome.failures[0]
        return MutantState.KILLED, first.test, first.message
    if outcome.errors:
        first = outcome.errors[0]
        return (MutantState.ERRORED, None,
                f"the suite could not be collected ({first.test}: {first.message})")
    return (MutantState.ERRORED, None,
            f"pytest exit status {outcome.code}: {_last_line(outcome.output)}")


def _default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _check_options(jobs: int, timeout_factor: float, min_timeout: float, clean_timeout: float,
                   decoys: int) -> None:
    if not isinstance(jobs, int) or jobs < 1:
        raise InvalidArgument("jobs", jobs, "must be an integer >= 1")
    for name, value in (("timeout_factor", timeout_factor), ("min_timeout", min_timeout),
                        ("clean_timeout", clean_timeout)):
        if not value > 0:
            raise InvalidArgument(name, value, "must be > 0")
    if not isinstance(decoys, int) or decoys < 0:
        raise InvalidArgument("decoys", decoys, "must be an integer >= 0")


def _selected(mutant_ids: Sequence[str] | None) -> tuple[Mutant, ...]:
    if mutant_ids is None:
        return CATALOGUE
    chosen = tuple(mutant_by_id(i) for i in dict.fromkeys(mutant_ids))
    if not chosen:
        raise InvalidArgument("mutants", list(mutant_ids), "must name at least one mutant")
    return chosen


def _not_graded(suite: Path, reason: str, started: float, total: int,
                **fields: object) -> GradeResult:
    return GradeResult(grade=0.0, detected=0, total=total, graded=False, reason=reason, mutants=(),
                       suite=str(suite), seconds=time.monotonic() - started,
                       **fields)  # type: ignore[arg-type]


def grade(
    path: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    mutants: Sequence[str] | None = None,
    select: Sequence[str] = (),
    timeout_factor: float = 5.0,
    min_timeout: float = 10.0,
    clean_timeout: float = 600.0,
    decoys: int = 1,
    progress: Callable[[str], None] | None = None,
) -> GradeResult:
    """Grade the pytest suite at ``path`` (a folder or one test file) by the mutants it kills.

    Args:
        path: the suite. It imports the contract as ``spec_verify.reference`` (or through the
            pytest plugin's ``spec_impl`` fixture); every run gets its own copy of it.
        jobs: runs at a time (default: the CPUs this process may use).
        mutants: catalogue ids to grade against (default: all of them).
        select: pytest arguments, relative to the suite, choosing what runs (default: all).
        timeout_factor / min_timeout: a later run's time limit is
            ``max(min_timeout, timeout_factor x the clean run's seconds)``.
        clean_timeout: the clean run's time limit, in seconds.
        decoys: extra clean runs hidden among the mutants (each must pass).
        progress: called with one line per finished run.

    Returns:
        The ``GradeResult``; the suite's failures are results, never exceptions.

    Raises:
        SuiteNotFound: ``path`` does not exist. InvalidArgument: bad options.
        MutantDoesNotApply: the catalogue no longer matches the reference (a project bug).
    """
    started = time.monotonic()
    jobs = _default_jobs() if jobs is None else jobs
    _check_options(jobs, timeout_factor, min_timeout, clean_timeout, decoys)
    suite = Path(path)
    if not suite.exists():
        raise SuiteNotFound("path", str(path), "does not exist",
                            "give a folder of tests or a test file")
    chosen = _selected(mutants)
    sources = reference_sources()
    mutated = [apply_mutant(m, sources) for m in chosen]  # fails loudly before any run
    say = progress or (lambda line: None)

    with RunPool(suite, select) as pool:
        pool.submit(RunRequest(sources, pytest_arguments(exitfirst=False), clean_timeout,
                               watch_files=True, share_bytecode=True))
        _, clean = pool.next_done()
        say(f"clean run: {clean.passed} passed, {len(clean.failures)} failed "
            f"in {clean.seconds:.2f} s")
        notes = []
        if clean.wrote:
            shown = ", ".join(clean.wrote[:5]) + (" ..." if len(clean.wrote) > 5 else "")
            notes.append(f"the suite wrote {len(clean.wrote)} file(s) during the clean run, "
                         f"inside its temporary folders (discarded): {shown}")
        if not clean.passed_cleanly:
            why = _why_not_passing(clean, clean_timeout)
            return _not_graded(
                suite, f"grade 0: on the clean reference the suite {why}", started, len(chosen),
                clean_seconds=clean.seconds, clean_tests=clean.passed,
                clean_failures=clean.failures + clean.errors, notes=tuple(notes),
            )
        pool.preload(clean.modules)  # later runs start with what the suite imported
        limit = max(min_timeout, timeout_factor * clean.seconds)
        order = sorted(clean.durations, key=lambda t: clean.durations[t])
        args = pytest_arguments(exitfirst=True)
        # (kind, index): kind "mutant" indexes ``chosen``; the canary and decoys stand alone.
        plan: list[tuple[str, int]] = [("mutant", i) for i in range(len(chosen))]
        plan += [("canary", 0)] + [("decoy", i) for i in range(decoys)]
        random.SystemRandom().shuffle(plan)
        canary = canary_sources(sources)
        runs = [RunRequest(mutated[i] if kind == "mutant" else canary if kind == "canary"
                           else sources, args, limit, order) for kind, i in plan]
        outcomes: dict[tuple[str, int], RunOutcome] = {}
        for done, (position, outcome) in enumerate(pool.run_all(jobs, runs), start=1):
            kind, i = plan[position]
            outcomes[kind, i] = outcome
            label = chosen[i].id if kind == "mutant" else kind
            state = _classify(outcome, limit)[0].value if kind == "mutant" else (
                "passed" if outcome.passed_cleanly else "failed")
            say(f"[{done}/{len(plan)}] {label}: {state} ({outcome.seconds:.2f} s)")

    common = {"clean_seconds": clean.seconds, "clean_tests": clean.passed,
              "time_limit": limit, "notes": tuple(notes)}
    canary_run = outcomes["canary", 0]
    if canary_run.kind == "exited" and canary_run.code == 0:
        return _not_graded(
            suite, "grade 0: the suite passes when every function of the reference raises "
            "(the canary): it tests nothing", started, len(chosen), **common)
    for i in range(decoys):
        decoy = outcomes["decoy", i]
        if not decoy.passed_cleanly:
            return _not_graded(
                suite, "grade 0: on a repeated clean run the suite "
                f"{_why_not_passing(decoy, limit)}; its result depends on something other "
                "than the reference's behaviour (randomness, the clock, the order of runs)",
                started, len(chosen), clean_failures=decoy.failures + decoy.errors,
                **common)
    results = []
    for i, mutant in enumerate(chosen):
        outcome = outcomes["mutant", i]
        state, killed_by, reason = _classify(outcome, limit)
        tests_run = outcome.passed + len(outcome.failures)
        results.append(MutantResult(mutant.id, mutant.title, state, killed_by, reason,
                                    outcome.seconds, tests_run))
    detected = sum(1 for r in results if r.state.detected)
    total = len(results)
    return GradeResult(
        grade=detected / total, detected=detected, total=total, graded=True,
        reason=f"{detected} of {total} mutants detected", mutants=tuple(results),
        suite=str(suite), seconds=time.monotonic() - started, **common,  # type: ignore[arg-type]
    )


def run_mutants(
    path: str | os.PathLike[str],
    plan: Mapping[str | None, Sequence[str]],
    *,
    exitfirst: bool = True,
    jobs: int | None = None,
    timeout: float = 300.0,
) -> dict[str | None, RunOutcome]:
    """Run the suite once per entry of ``plan``: mutant id (``None`` for the clean reference)
    -> pytest selection relative to the suite (empty for all of it). The raw outcomes.

    The same mechanism as ``grade`` without its verdicts: the kill matrix uses it to show which
    of our tests fail against which mutant.
    """
    if not plan:
        raise InvalidArgument("plan", dict(plan), "must name at least one run")
    suite = Path(path)
    if not suite.exists():
        raise SuiteNotFound("path", str(path), "does not exist")
    sources = reference_sources()
    ids = list(plan)
    args = pytest_arguments(exitfirst)
    runs = [RunRequest(sources if i is None else apply_mutant(mutant_by_id(i), sources), args,
                       timeout, select=tuple(plan[i]) or None) for i in ids]
    out: dict[str | None, RunOutcome] = {}
    with RunPool(suite) as pool:
        # The first run alone, then the worker preloads what it imported (as ``grade`` does).
        pool.submit(replace(runs[0], share_bytecode=True))
        _, out[ids[0]] = pool.next_done()
        pool.preload(out[ids[0]].modules)
        for index, outcome in pool.run_all(jobs or _default_jobs(), runs[1:]):
            out[ids[index + 1]] = outcome
    return out
