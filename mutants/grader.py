"""The grader: score a test suite by the share of the catalogue's planted bugs it catches.

Run phases, in order (ARCHITECTURE.md, docs/grading.md):

1. **Prepare**: read the reference source; apply every mutant (a change that no longer applies
   stops here, loudly); build the canary. Start the fork server (``_worker.py``).
2. **Calibration**: one clean run of the whole suite, through the same mechanism as every
   other run; it must pass. Its time caps every run of the main batch
   (``max(min_timeout, timeout_factor x its seconds)``). Should it fail, the other repeats run
   at once: a failure in every repeat is a suite that fails on the clean reference, a failure
   in some only a flaky suite; both grade 0 with the failing tests.
3. **Canary, decoys, the other ``repeats - 1`` clean repeats and mutants**, shuffled into one
   random order and run ``jobs`` at a time. The repeats must pass (else failing or flaky, as
   above); the slowest of them sets the time limit of every verdict (at most the cap): a run
   that took longer timed out, whatever its result.
   - the **canary** (every function of the reference raises) must make the suite fail, else
     the suite tests nothing (grade 0);
   - each **decoy** is one more clean run, indistinguishable from a mutant run: it must pass,
     else the suite's result depends on something other than the reference's behaviour
     (grade 0, with what differed and the failing tests);
   - each **mutant** ends killed (a test failed), survived (all passed), timed out, or errored
     (the suite could not be collected or the interpreter died).
4. **Confirmation**: every detection is run again ``confirmations`` times on the same mutant,
   shuffled with ``clean_reruns`` clean runs, each a whole run like the first. Each rerun must
   detect the mutant again in the same way (a kill: the same test fails first; a time-out or
   a crash: the same again), and each clean rerun must pass; anything else refuses the grade
   as flaky. ``clean_reruns`` defaults to the fewest that keep a suite with memory between
   runs, failing at random, below 1 win in 100 (``lottery.py``).
5. **Report**: the grade and one row per mutant (``reports.py`` writes the formats).

Every run is the same run to the suite: the same pytest options (``-x`` for all), the suite's
own test order, the same layout of paths, environment and working directory, no bytecode
written by any run, and a worker that starts every run from the same state. A suite can tell
runs apart only by the reference's behaviour, and by a run's position in time, which tells it
nothing: only the calibration run comes first, and it sets no verdict's time limit; after it
clean repeats, decoys and mutants are shuffled.

The score: ``grade = detected / total``, where a mutant is *detected* when it is killed, timed
out or errored (each makes the suite, or a CI running it, visibly fail) and the detection was
confirmed. docs/grading.md shows that a suite failing at random, with any probability or
strategy, beats its honest part in fewer than 1 grading in 100.
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
from typing import Any

from spec_verify.errors import InvalidArgument

from ._runner import HarmfulRun, RunFailure, RunOutcome, RunPool, RunRequest
from ._source import canary_sources, reference_sources
from .catalogue import CATALOGUE, Mutant, UnknownMutant, apply_mutant, mutant_by_id
from .custom import CustomCatalogue, check_kill_tests, hint_of, load_catalogue
from .lottery import clean_reruns_needed

__all__ = [
    "DEFAULT_CONFIRMATIONS",
    "DEFAULT_DECOYS",
    "DEFAULT_REPEATS",
    "SCORE_DEFINITION",
    "GradeResult",
    "MutantResult",
    "MutantState",
    "Refusal",
    "SuiteNotFound",
    "checked_catalogue",
    "grade",
    "pytest_arguments",
    "run_mutants",
]

DEFAULT_DECOYS = 3
DEFAULT_REPEATS = 3
DEFAULT_CONFIRMATIONS = 2

SCORE_DEFINITION = (
    "grade = detected / total: a mutant is detected when the suite fails with it planted "
    "(killed: a test failed; timed out: no result within the time limit; errored: the suite "
    "could not be collected or the interpreter died) and the detection reproduces (the "
    "killing test fails again on the mutant and passes on the clean reference). Survivors "
    "are the only misses. The suite must pass on every repeated clean run and on decoy clean "
    "runs mixed among the mutants, and fail on the canary (a reference whose every function "
    "raises); otherwise the grade is 0."
)

# Passed to pytest in every run alike: no cache between runs, no random test order, a fixed
# hypothesis seed, and -x (a run's verdict is its first failure). The rewrite warning is about
# the worker having imported hypothesis before pytest started.
_BASE_ARGS = (
    "-p", "no:cacheprovider", "-p", "no:randomly", "-q", "--color=no", "-x",
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


class Refusal(str, Enum):
    """Why a suite got no grade (``NONE`` when it was graded)."""

    NONE = ""
    FAILING = "fails on the clean reference"
    FLAKY = "flaky"
    UNRELIABLE = "unreliable"
    TESTS_NOTHING = "tests nothing"
    HARMFUL = "harmful"


@dataclass(frozen=True)
class MutantResult:
    """One mutant's verdict.

    Attributes:
        mutant_id / title: the catalogue entry.
        state: killed, survived, timed out or errored (after confirmation).
        killed_by: the first failing test (its pytest node id) when killed.
        reason: the full failure message, or why the run errored or timed out.
        seconds: the run's wall time.
        tests_run: tests that ran to the end before it stopped.
        details: the killing test's traceback (as pytest printed it), when killed.
        hint: for a survivor only, what the suite missed (the pitfall's text,
            ``custom.hint_of``); empty for every detected mutant.
    """

    mutant_id: str
    title: str
    state: MutantState
    killed_by: str | None
    reason: str
    seconds: float
    tests_run: int = 0
    details: str = ""
    hint: str = ""


@dataclass(frozen=True)
class GradeResult:
    """The grade of one suite, with the evidence.

    Attributes:
        grade: ``detected / total`` in [0, 1]; 0 when the suite could not be graded.
        detected / total: mutants detected, mutants graded.
        graded: False when a clean run, the canary, a decoy or a confirmation made grading
            meaningless (``refusal`` says which).
        reason: the score, or why the grade is 0 (what happened and what differed).
        mutants: one result per mutant, in catalogue order (empty when not graded).
        suite: the graded path.
        clean_seconds: the clean runs' times; clean_tests: tests passing in a clean run.
        clean_failures: the failures that explain a refusal, full messages.
        flaky_tests: tests whose result changed on the same reference.
        time_limit: the per-run time limit derived from the clean runs.
        notes: things the grader noticed that do not change the grade (files written).
        seconds: wall time of the whole grading.
        refusal: why the suite got no grade.
        sandbox: which protections sealed every run off (namespaces, fresh /proc, read-only
            harness, uid, capabilities).
        custom: the instructors' catalogue entries among the graded mutants (``--catalogue``),
            which the reports look up by id beside the built-in ones.
    """

    grade: float
    detected: int
    total: int
    graded: bool
    reason: str
    mutants: tuple[MutantResult, ...]
    suite: str
    clean_seconds: tuple[float, ...] = ()
    clean_tests: int = 0
    clean_failures: tuple[RunFailure, ...] = ()
    flaky_tests: tuple[str, ...] = ()
    time_limit: float = 0.0
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    refusal: Refusal = Refusal.NONE
    score_definition: str = SCORE_DEFINITION
    # which protections held around every run (``spec_verify._sandbox.Protections`` as JSON)
    sandbox: Mapping[str, Any] | None = None
    custom: tuple[Mutant, ...] = ()
    catalogue: str = ""  # the instructors' catalogue file, when one of its entries was graded

    def count(self, state: MutantState) -> int:
        """How many mutants ended in ``state``."""
        return sum(1 for m in self.mutants if m.state is state)


def pytest_arguments(exitfirst: bool = True) -> list[str]:
    """pytest's arguments for every graded run (the same for all of them; ``exitfirst=False``
    only for ``run_mutants``, which lists every failing test rather than grading)."""
    args = [a for a in _BASE_ARGS if exitfirst or a != "-x"]
    if _has_hypothesis_plugin():
        args.append("--hypothesis-seed=0")
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
    """Why a run that should have passed did not (for the clean runs and decoys)."""
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
                   decoys: int, repeats: int, confirmations: int,
                   clean_reruns: int | None) -> None:
    if not isinstance(jobs, int) or jobs < 1:
        raise InvalidArgument("jobs", jobs, "must be an integer >= 1")
    for name, value in (("timeout_factor", timeout_factor), ("min_timeout", min_timeout),
                        ("clean_timeout", clean_timeout)):
        if not value > 0:
            raise InvalidArgument(name, value, "must be > 0")
    if not isinstance(decoys, int) or decoys < 0:
        raise InvalidArgument("decoys", decoys, "must be an integer >= 0",
                              f"the default is {DEFAULT_DECOYS}")
    if not isinstance(repeats, int) or repeats < 1:
        raise InvalidArgument("repeats", repeats, "must be an integer >= 1",
                              f"the default is {DEFAULT_REPEATS}")
    if not isinstance(confirmations, int) or confirmations < 1:
        raise InvalidArgument("confirmations", confirmations, "must be an integer >= 1",
                              f"the default is {DEFAULT_CONFIRMATIONS}")
    if clean_reruns is not None and (not isinstance(clean_reruns, int) or clean_reruns < 1):
        raise InvalidArgument("clean_reruns", clean_reruns, "must be an integer >= 1 or None",
                              "None (the default) takes the fewest that keep a lottery below "
                              "1 win in 100")


def _selected(mutant_ids: Sequence[str] | None,
              custom: CustomCatalogue | None = None) -> tuple[Mutant, ...]:
    """The graded mutants: ``mutant_ids`` from the built-in catalogue and ``custom``'s entries
    (mixed freely); by default the custom catalogue's entries when one is given, else the
    built-in catalogue."""
    if mutant_ids is None:
        return CATALOGUE if custom is None else custom.mutants
    own = {} if custom is None else custom.by_id()
    chosen: list[Mutant] = []
    for mutant_id in dict.fromkeys(mutant_ids):
        if mutant_id in own:
            chosen.append(own[mutant_id])
            continue
        try:
            chosen.append(mutant_by_id(mutant_id))
        except UnknownMutant as exc:
            if custom is None:
                raise
            raise UnknownMutant("mutants", mutant_id, f"{exc.rule}, nor in {custom.path} "
                                f"({', '.join(own)})", exc.fix) from None
    if not chosen:
        raise InvalidArgument("mutants", list(mutant_ids), "must name at least one mutant")
    return tuple(chosen)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _seconds(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values) + " s"


@dataclass(frozen=True)
class _Refused(Exception):
    """Raised inside a grading to stop it with a grade of 0 (caught by ``grade``)."""

    refusal: Refusal
    reason: str
    failures: tuple[RunFailure, ...] = ()
    flaky: tuple[str, ...] = ()


def _failing(outcome: RunOutcome) -> tuple[RunFailure, ...]:
    return outcome.failures + outcome.errors


def _failed_tests(outcome: RunOutcome) -> set[str]:
    return {f.test for f in _failing(outcome)}


class _Grading:
    """One grading's state between phases (the phases are methods, in order)."""

    def __init__(self, pool: RunPool, jobs: int, say: Callable[[str], None],
                 shuffler: random.Random) -> None:
        self.shuffler = shuffler
        self.pool = pool
        self.jobs = jobs
        self.say = say
        self.args = pytest_arguments()
        self.clean: list[RunOutcome] = []
        self.limit = 0.0  # a run's verdict: longer than this is timed out
        self.cap = 0.0  # how long a main-batch run may go on (the calibration's limit)
        self.timeout_factor = self.min_timeout = 0.0
        self.notes: list[str] = []

    def run(self, requests: Sequence[RunRequest]) -> list[RunOutcome]:
        """Run ``requests`` ``jobs`` at a time; outcomes in request order."""
        out: list[RunOutcome | None] = [None] * len(requests)
        for index, outcome in self.pool.run_all(self.jobs, requests):
            out[index] = outcome
        return [o for o in out if o is not None]

    def calibrate(self, sources: Mapping[str, str], repeats: int, clean_timeout: float,
                  timeout_factor: float, min_timeout: float) -> None:
        """Phase 2: one clean run, whose time sets the main batch's kill limit; the other
        ``repeats - 1`` clean repeats are shuffled into the main batch (``controls_and_mutants``)
        so that no run after the first is known to be clean by its place. Should it fail, the
        other repeats run at once (the grading stops: their order tells nothing) so that a
        flaky suite is told from a failing one."""
        self.clean = self.run([RunRequest(sources, self.args, clean_timeout)])
        self.cap = max(min_timeout, timeout_factor * self.clean[0].seconds)
        self.limit = self.cap
        self.timeout_factor, self.min_timeout = timeout_factor, min_timeout
        if not self.clean[0].passed_cleanly:
            if repeats > 1:
                self.clean += self.run([RunRequest(sources, self.args, clean_timeout)]
                                       * (repeats - 1))
            self.judge_clean_runs(clean_timeout)  # refuses

    def judge_clean_runs(self, clean_timeout: float) -> None:
        """Every clean repeat must pass; the limit of every later run's verdict comes from
        the shuffled repeats (the calibration's time only capped how long they could run, so
        a suite that sleeps in its first run gains no time)."""
        repeats = len(self.clean)
        first = self.clean[0]
        if first.wrote:
            shown = ", ".join(first.wrote[:5]) + (" ..." if len(first.wrote) > 5 else "")
            self.notes.append(f"the suite wrote {len(first.wrote)} file(s) during a clean run, "
                              f"inside its temporary folders (discarded): {shown}")
        passing = [o for o in self.clean if o.passed_cleanly]
        self.say(f"clean runs: {len(passing)} of {repeats} passed "
                 f"({_seconds([o.seconds for o in self.clean])})")
        if len(passing) < repeats:
            failed = [o for o in self.clean if not o.passed_cleanly]
            failures = tuple(f for o in failed for f in _failing(o))
            whys = sorted({_why_not_passing(o, clean_timeout) for o in failed})
            if not passing and len({frozenset(_failed_tests(o)) for o in failed}) == 1:
                raise _Refused(Refusal.FAILING,
                               f"grade 0: on the clean reference the suite {whys[0]}",
                               _first_each(failures))
            flaky = sorted({t for o in failed for t in _failed_tests(o)})
            raise _Refused(
                Refusal.FLAKY,
                f"grade 0: the suite is flaky: the same clean reference, run {repeats} times "
                f"alike, passed {len(passing)} time(s) and otherwise {'; '.join(whys)}. "
                "Its result depends on something other than the reference's behaviour "
                "(unseeded randomness, the clock, the machine's load, state kept between "
                "runs); seed it and make every test deterministic."
                + (f" Tests that changed result: {', '.join(flaky)}." if flaky else ""),
                _first_each(failures), tuple(flaky))
        hidden = self.clean[1:] or self.clean
        self.limit = min(self.cap, max(self.min_timeout,
                                       self.timeout_factor * max(o.seconds for o in hidden)))

    def controls_and_mutants(self, sources: Mapping[str, str], canary: Mapping[str, str],
                             chosen: Sequence[Mutant], mutated: Sequence[Mapping[str, str]],
                             decoys: int, repeats: int, clean_timeout: float
                             ) -> list[RunOutcome]:
        """Phase 3, with the clean repeats after the first; returns the mutants' outcomes in
        ``chosen`` order, each judged against the limit the repeats set (a run that took
        longer timed out, whatever its result)."""
        plan: list[tuple[str, int]] = [("mutant", i) for i in range(len(chosen))]
        plan += [("canary", 0)] + [("decoy", i) for i in range(decoys)]
        plan += [("repeat", i) for i in range(repeats - 1)]
        self.shuffler.shuffle(plan)
        trees = {"canary": canary, "decoy": sources, "repeat": sources}
        runs = [RunRequest(mutated[i] if kind == "mutant" else trees[kind], self.args,
                           self.cap) for kind, i in plan]
        outcomes: dict[tuple[str, int], RunOutcome] = {}
        for position, outcome in self.pool.run_all(self.jobs, runs):
            outcomes[plan[position]] = outcome
        self.clean += [outcomes["repeat", i] for i in range(repeats - 1)]
        self.judge_clean_runs(self.cap)  # the repeats ran under the batch's cap
        outcomes = {key: _within(outcome, self.limit) for key, outcome in outcomes.items()}
        done = 0
        for kind, i in plan:  # in run order; control runs print nothing: their number hidden
            outcome = outcomes[kind, i]
            if kind == "mutant":
                done += 1
                state = _classify(outcome, self.limit)[0].value
                self.say(f"[{done}/{len(chosen)}] {chosen[i].id}: {state} "
                         f"({outcome.seconds:.2f} s)")
        canary_run = outcomes["canary", 0]
        if canary_run.kind == "exited" and canary_run.code == 0:
            raise _Refused(Refusal.TESTS_NOTHING,
                           "grade 0: the suite passes when every function of the reference "
                           "raises (the canary): it tests nothing")
        for i in range(decoys):
            self._check_decoy(outcomes["decoy", i])
        return [outcomes["mutant", i] for i in range(len(chosen))]

    def _check_decoy(self, decoy: RunOutcome) -> None:
        if decoy.passed_cleanly:
            return
        why = _why_not_passing(decoy, self.limit)
        flaky = sorted(_failed_tests(decoy))
        raise _Refused(
            Refusal.FLAKY if flaky else Refusal.UNRELIABLE,
            f"grade 0: the suite's result is unreliable: a decoy run {why}. A decoy is a clean "
            "run hidden among the mutant runs, alike in every way the grader controls (the "
            "same unchanged reference, options, test order, paths and environment); the "
            f"{_plural(len(self.clean), 'clean run')} before it passed in "
            f"{_seconds([o.seconds for o in self.clean])}. What differed is not the "
            "reference: it is the suite's own randomness, the clock or the machine's load, or "
            "state it keeps between runs"
            + (f"; tests that passed on every clean run and failed here: {', '.join(flaky)}"
               if flaky else "") + ".",
            _failing(decoy), tuple(flaky))

    def confirm(self, sources: Mapping[str, str], chosen: Sequence[Mutant],
                mutated: Sequence[Mapping[str, str]], outcomes: Sequence[RunOutcome],
                confirmations: int, clean_reruns: int) -> list[MutantResult]:
        """Phase 4: rerun every detection on its mutant, ``confirmations`` times, shuffled
        with ``clean_reruns`` clean runs; every rerun is a whole run like the first (a suite
        cannot tell a confirmation from a first run, nor a clean rerun from a mutant rerun)."""
        results: list[MutantResult] = []
        plan: list[int] = []  # mutant index per rerun; -1 for a clean rerun
        for i, (mutant, outcome) in enumerate(zip(chosen, outcomes, strict=True)):
            state, killed_by, reason = _classify(outcome, self.limit)
            details = outcome.failures[0].details if killed_by is not None else ""
            results.append(MutantResult(
                mutant.id, mutant.title, state, killed_by, reason, outcome.seconds,
                outcome.passed + len(outcome.failures), details,
                hint_of(mutant) if state is MutantState.SURVIVED else ""))
            if state.detected:
                plan += [i] * confirmations
        if not plan:
            return results
        plan += [-1] * clean_reruns
        self.shuffler.shuffle(plan)
        again = self.run([RunRequest(sources if i < 0 else mutated[i], self.args, self.limit)
                          for i in plan])
        self.say(f"confirmation: {sum(1 for r in results if r.state.detected)} detection(s) "
                 f"rerun {confirmations} time(s) each")
        for i, rerun in zip(plan, again, strict=True):
            if i < 0:
                self._check_clean_rerun(rerun)
        for i, rerun in zip(plan, again, strict=True):
            if i >= 0:
                self._check_reproduced(results[i], rerun)
        return results

    def _check_clean_rerun(self, rerun: RunOutcome) -> None:
        if rerun.passed_cleanly:
            return
        flaky = tuple(sorted(_failed_tests(rerun)))
        raise _Refused(
            Refusal.FLAKY if flaky else Refusal.UNRELIABLE,
            f"grade 0: the suite's result is unreliable: a clean run among the confirmation "
            f"reruns {_why_not_passing(rerun, self.limit)}, after the same reference passed on "
            f"every earlier clean run ({_seconds([o.seconds for o in self.clean])}). What "
            "differed is not the reference: it is the suite's own randomness, the clock or the "
            "machine's load, or state it keeps between runs"
            + (f"; tests that changed result: {', '.join(flaky)}" if flaky else "") + ".",
            _failing(rerun), flaky)

    def _check_reproduced(self, first: MutantResult, rerun: RunOutcome) -> None:
        state, killed_by, reason = _classify(rerun, self.limit)
        if state is first.state and killed_by == first.killed_by:
            return
        what = f"{first.state.value}" + (f" by {first.killed_by}" if first.killed_by else "")
        then = ("all its tests passed" if state is MutantState.SURVIVED else
                f"it was {state.value}" + (f" by {killed_by}" if killed_by else "")
                + f" ({reason})")
        hint = (" (a time-out that does not reproduce may also mean the time limit is too "
                "tight: raise --timeout-factor)" if MutantState.TIMED_OUT in (state, first.state)
                else "")
        flaky = tuple(t for t in (first.killed_by, killed_by) if t)
        raise _Refused(
            Refusal.FLAKY,
            f"grade 0: the suite is flaky: with mutant {first.mutant_id} it was {what} "
            f"({first.reason}), but when the same run was repeated on the same mutant {then}. "
            "A detection that does not reproduce is not counted, and a suite whose verdicts "
            f"do not reproduce cannot be graded{hint}.",
            _failing(rerun), tuple(dict.fromkeys(flaky)))


def _sandbox_line(sandbox: Mapping[str, Any]) -> str:
    """What sealed the runs off, in one line."""
    from spec_verify._sandbox import Protections

    return Protections.from_json(dict(sandbox)).summary()


def _within(outcome: RunOutcome, limit: float) -> RunOutcome:
    """``outcome`` as a time-out when it ran longer than ``limit`` (it was stopped only at
    the larger cap of its batch)."""
    if outcome.kind == "timed_out" or outcome.seconds <= limit:
        return outcome
    return replace(outcome, kind="timed_out", finished=False)


def _first_each(failures: Sequence[RunFailure]) -> tuple[RunFailure, ...]:
    """Failures with duplicates (the same test failing in several runs) left out."""
    seen: dict[tuple[str, str], RunFailure] = {}
    for f in failures:
        seen.setdefault((f.test, f.message), f)
    return tuple(seen.values())


def grade(
    path: str | os.PathLike[str],
    *,
    jobs: int | None = None,
    mutants: Sequence[str] | None = None,
    select: Sequence[str] = (),
    timeout_factor: float = 5.0,
    min_timeout: float = 10.0,
    clean_timeout: float = 600.0,
    decoys: int = DEFAULT_DECOYS,
    repeats: int = DEFAULT_REPEATS,
    confirmations: int = DEFAULT_CONFIRMATIONS,
    clean_reruns: int | None = None,
    progress: Callable[[str], None] | None = None,
    order_seed: int | None = None,
    allow_unsealed: bool = False,
    catalogue: str | os.PathLike[str] | CustomCatalogue | None = None,
) -> GradeResult:
    """Grade the pytest suite at ``path`` (a folder or one test file) by the mutants it kills.

    Args:
        path: the suite. It imports the contract as ``spec_verify.reference`` (or through the
            pytest plugin's ``spec_impl`` fixture). A single test file is graded with its
            folder around it (helpers, ``conftest.py``), running only that file.
        jobs: runs at a time (default: the CPUs this process may use).
        mutants: catalogue ids to grade against (default: all of them).
        select: pytest arguments, relative to the suite, choosing what runs (default: all).
        timeout_factor / min_timeout: a later run's time limit is
            ``max(min_timeout, timeout_factor x the slowest clean run's seconds)``.
        clean_timeout: the clean runs' time limit, in seconds.
        decoys: clean runs hidden among the mutants (each must pass); default 3.
        repeats: clean runs (each must pass): the first calibrates the time limit, the
            others are shuffled among the mutants; default 3.
        confirmations: reruns of each detection on its mutant (each must detect it again);
            default 2.
        clean_reruns: clean runs shuffled with the confirmations (each must pass); default
            None, the fewest that keep a suite failing at random, even one that counts its
            runs, below 1 win in 100 (``lottery.clean_reruns_needed``: 13 with the other
            defaults and the whole catalogue).
        progress: called with one line per finished mutant run and per phase.
        order_seed: None (the default) shuffles the runs unpredictably, from the system's
            entropy; an integer makes the order reproducible, for the grader's own tests only
            (a suite that knew the order could cheat).
        allow_unsealed: grade even where the runs cannot be sealed off (no PID or mount
            namespace): the result's ``sandbox`` says what did not hold.
        catalogue: an instructors' catalogue file (``custom.load_catalogue``), or one loaded
            already; its entries are graded by default, or mixed with built-in ids through
            ``mutants``. A file is validated first, its kill tests run (``check_kill_tests``).

    Returns:
        The ``GradeResult``; the suite's failures are results, never exceptions.

    Raises:
        SuiteNotFound: ``path`` does not exist. InvalidArgument: bad options;
            ``custom.CatalogueError`` (one) names the catalogue entry that cannot be graded.
        MutantDoesNotApply: the catalogue no longer matches the reference (a project bug).
    """
    started = time.monotonic()
    jobs = _default_jobs() if jobs is None else jobs
    _check_options(jobs, timeout_factor, min_timeout, clean_timeout, decoys, repeats,
                   confirmations, clean_reruns)
    suite = Path(path)
    if not suite.exists():
        raise SuiteNotFound("path", str(path), "does not exist",
                            "give a folder of tests or a test file")
    custom = checked_catalogue(catalogue, jobs, clean_timeout)
    chosen = _selected(mutants, custom)
    own = tuple(m for m in chosen if custom is not None and m in custom.mutants)
    shown = str(custom.path) if own and custom is not None else ""
    if clean_reruns is None:
        clean_reruns = clean_reruns_needed(len(chosen), decoys, confirmations)
    sources = reference_sources()
    mutated = [apply_mutant(m, sources) for m in chosen]  # fails loudly before any run
    say = progress or (lambda line: None)

    canary = canary_sources(sources)

    # the catalogue's folder (its mutants, its kill tests) is out of every run's sight
    hidden = [custom.path.parent] if custom is not None else []
    with RunPool(suite, select, hidden) as pool:
        sandbox = dict(pool.sandbox)
        if not sandbox.get("sealed") and not allow_unsealed:
            raise InvalidArgument(
                "allow_unsealed", False,
                "the suite's runs cannot be sealed off here, so a suite could read the graded "
                f"sampler or the grader ({_sandbox_line(sandbox)})",
                "grade where the kernel allows PID and mount namespaces (as root, or with "
                "unprivileged user namespaces), or pass --allow-unsealed to grade anyway")
        say(_sandbox_line(sandbox))
        pool.precompile([sources, canary, *mutated])  # before any run: every run alike
        shuffler = random.SystemRandom() if order_seed is None else random.Random(order_seed)
        grading = _Grading(pool, jobs, say, shuffler)
        try:
            try:
                grading.calibrate(sources, repeats, clean_timeout, timeout_factor,
                                  min_timeout)
                outcomes = grading.controls_and_mutants(sources, canary, chosen, mutated,
                                                        decoys, repeats, clean_timeout)
                results = grading.confirm(sources, chosen, mutated, outcomes, confirmations,
                                          clean_reruns)
            except HarmfulRun as harmful:
                raise _Refused(Refusal.HARMFUL, f"grade 0: {harmful}") from None
        except _Refused as refused:
            return GradeResult(
                grade=0.0, detected=0, total=len(chosen), graded=False, reason=refused.reason,
                mutants=(), suite=str(suite),
                clean_seconds=tuple(o.seconds for o in grading.clean),
                clean_tests=max((o.passed for o in grading.clean), default=0),
                clean_failures=refused.failures, flaky_tests=refused.flaky,
                time_limit=grading.limit, notes=tuple(grading.notes),
                seconds=time.monotonic() - started, refusal=refused.refusal,
                sandbox=sandbox, custom=own, catalogue=shown)
    detected = sum(1 for r in results if r.state.detected)
    total = len(results)
    return GradeResult(
        grade=detected / total, detected=detected, total=total, graded=True,
        reason=f"{detected} of {total} mutants detected", mutants=tuple(results),
        suite=str(suite), clean_seconds=tuple(o.seconds for o in grading.clean),
        clean_tests=max(o.passed for o in grading.clean), time_limit=grading.limit,
        notes=tuple(grading.notes), seconds=time.monotonic() - started, sandbox=sandbox,
        custom=own, catalogue=shown,
    )


def checked_catalogue(catalogue: str | os.PathLike[str] | CustomCatalogue | None, jobs: int,
                       timeout: float) -> CustomCatalogue | None:
    """``catalogue`` loaded and its kill tests run (once: a checked one is returned as is)."""
    if catalogue is None:
        return None
    loaded = catalogue if isinstance(catalogue, CustomCatalogue) else load_catalogue(catalogue)
    if loaded.kill_tests_checked:
        return loaded
    return check_kill_tests(loaded, jobs=jobs, timeout=timeout, args=pytest_arguments())


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

    The same mechanism and options as ``grade`` without its verdicts: the kill matrix uses
    it to show which of our tests fail against which mutant. Unlike a graded suite, ours may
    import the reference's private names (its tests of internals): the proxy serves them here.
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
                       timeout, select=tuple(plan[i]) or None, private_names=True) for i in ids]
    out: dict[str | None, RunOutcome] = {}
    with RunPool(suite) as pool:
        pool.precompile([run.sources for run in runs])
        for index, outcome in pool.run_all(jobs or _default_jobs(), runs):
            out[ids[index]] = outcome
    return out
