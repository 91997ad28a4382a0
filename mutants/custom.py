"""Instructors' own catalogue: mutants loaded from a private JSON file (``grade --catalogue``).

An entry has the built-in entries' fields (``catalogue.Mutant``): an id, a title, the pitfall
(a seed pitfall's number, or the hint's own text), exact text replacements on named reference
files, and the test that kills it, a pytest node id relative to the catalogue file's folder
(the instructors' private tests live beside it). docs/grading.md shows the format and
``examples/custom_catalogue/`` holds an example.

Loading validates every entry before any suite runs, each error naming the entry:
``load_catalogue`` checks the shape, that ids are unique (the built-in ids included) and that
every replacement applies to the installed reference; ``check_kill_tests`` runs each entry's
kill test, sealed like a graded run, and requires it to pass on the clean reference and fail
on the mutant. A catalogue that no longer matches the reference, or whose test does not kill
its mutant, would otherwise grade students against a bug that is not there.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spec_verify.errors import InvalidArgument

from ._runner import RunOutcome, RunPool, RunRequest
from ._source import reference_sources
from .catalogue import CATALOGUE, PITFALLS, Change, Mutant, MutantDoesNotApply, apply_mutant

__all__ = ["CatalogueError", "CustomCatalogue", "CustomMutant", "check_kill_tests",
           "hint_of", "load_catalogue"]

_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}\Z")
_ENTRY_KEYS = {"id", "title", "pitfall", "changes", "killed_by", "symptom"}
_CHANGE_KEYS = {"file", "old", "new"}
_FIX = "see docs/grading.md, 'An instructors' catalogue'"


class CatalogueError(InvalidArgument):
    """A catalogue file, or one of its entries, that cannot be graded with (a usage error)."""


@dataclass(frozen=True)
class CustomMutant(Mutant):
    """A mutant of an instructors' catalogue: ``hint`` is the text a student sees when the
    suite misses it (the pitfall's own words, or the seed pitfall's when given by number)."""

    hint: str = ""


@dataclass(frozen=True)
class CustomCatalogue:
    """A loaded catalogue: its file, its entries in file order, and whether each entry's kill
    test was run and killed it (``check_kill_tests``)."""

    path: Path
    mutants: tuple[CustomMutant, ...]
    kill_tests_checked: bool = False

    def by_id(self) -> dict[str, CustomMutant]:
        return {m.id: m for m in self.mutants}


def hint_of(mutant: Mutant) -> str:
    """What to tell a student whose suite missed ``mutant``: a custom entry's hint, else the
    seed pitfall's text, else the bug's symptom."""
    if isinstance(mutant, CustomMutant) and mutant.hint:
        return mutant.hint
    if mutant.pitfall is not None and mutant.pitfall in PITFALLS:
        return PITFALLS[mutant.pitfall]
    return mutant.symptom


def _builtin_ids() -> set[str]:
    from .real_bugs import REAL_BUGS
    from .rules import MULTIDRAFT_MUTANTS, RULE_MUTANTS

    return {m.id for m in (*CATALOGUE, *REAL_BUGS, *RULE_MUTANTS, *MULTIDRAFT_MUTANTS)}


def _error(path: Path, where: str, rule: str, fix: str = _FIX) -> CatalogueError:
    """``where`` (``, entry c01``) leads the rule: a long path is shortened in the message,
    the entry's name never is."""
    return CatalogueError("catalogue", str(path),
                          f"{where.removeprefix(', ')}: {rule}" if where else rule, fix)


def _text(entry: Mapping[str, Any], key: str, path: Path, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _error(path, where, f"'{key}' must be a non-empty string, not {value!r:.60}")
    return value


def _changes(entry: Mapping[str, Any], path: Path, where: str) -> tuple[Change, ...]:
    raw = entry.get("changes")
    if not isinstance(raw, list) or not raw:
        raise _error(path, where, "'changes' must be a non-empty list of "
                     "{\"file\", \"old\", \"new\"} objects")
    out = []
    for number, change in enumerate(raw):
        at = f"{where}, change {number}"
        if not isinstance(change, dict) or set(change) != _CHANGE_KEYS:
            keys = sorted(change) if isinstance(change, dict) else type(change).__name__
            raise _error(path, at, f"a change has exactly the keys file, old, new (got {keys})")
        if not all(isinstance(change[k], str) for k in _CHANGE_KEYS) or not change["old"]:
            raise _error(path, at, "file, old and new must be strings, old non-empty")
        if change["old"] == change["new"]:
            raise _error(path, at, "old and new are the same text: the change plants nothing")
        out.append(Change(change["file"], change["old"], change["new"]))
    return tuple(out)


def _pitfall(entry: Mapping[str, Any], path: Path, where: str) -> tuple[int | None, str]:
    value = entry.get("pitfall")
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _error(path, where, "'pitfall' must be the hint's text or a seed pitfall's "
                     f"number 1..{len(PITFALLS)}, not {value!r:.60}")
    if isinstance(value, int):
        if value not in PITFALLS:
            raise _error(path, where, f"pitfall {value} is not a seed pitfall "
                         f"(1..{len(PITFALLS)})")
        return value, PITFALLS[value]
    if not value.strip():
        raise _error(path, where, "'pitfall' must not be empty: it is the students' hint")
    return None, value


def _entry(entry: Any, number: int, path: Path) -> CustomMutant:
    where = f", entry {number}"
    if not isinstance(entry, dict):
        raise _error(path, where, "an entry must be an object")
    ident = entry.get("id")
    if not isinstance(ident, str) or not _ID.match(ident):
        raise _error(path, where, f"'id' must be a letter then up to 31 letters, digits, _ or "
                     f"-, not {ident!r:.60}")
    where = f", entry {ident}"
    unknown = set(entry) - _ENTRY_KEYS
    missing = (_ENTRY_KEYS - {"symptom"}) - set(entry)
    if unknown or missing:
        raise _error(path, where, "unknown keys " * bool(unknown) + ", ".join(sorted(unknown))
                     + ("; " if unknown and missing else "")
                     + ("missing keys " + ", ".join(sorted(missing)) if missing else ""))
    title = _text(entry, "title", path, where)
    number_of_pitfall, hint = _pitfall(entry, path, where)
    killed_by = _text(entry, "killed_by", path, where)
    if "::" not in killed_by or killed_by.startswith(("/", "..")) or "/../" in killed_by:
        raise _error(path, where, f"'killed_by' must be a pytest node id relative to the "
                     f"catalogue's folder (test_file.py::test_name), not {killed_by!r:.80}")
    symptom = entry.get("symptom", hint)
    if not isinstance(symptom, str):
        raise _error(path, where, "'symptom' must be a string")
    return CustomMutant(ident, title, number_of_pitfall, symptom, _changes(entry, path, where),
                        (killed_by,), origin="custom", hint=hint)


def load_catalogue(path: str | os.PathLike[str],
                   sources: Mapping[str, str] | None = None) -> CustomCatalogue:
    """Read and check a catalogue file (no test runs: ``check_kill_tests`` does those).

    Raises:
        CatalogueError: the file is missing or not JSON of the documented shape, an id is
            repeated (in the file or among the built-in ids), or a replacement does not
            apply exactly once to the reference; the message names the entry.
    """
    file = Path(path).expanduser().absolute()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _error(file, "", f"cannot be read ({exc.strerror or exc})",
                     "give the path of a catalogue file (JSON)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _error(file, "", f"is not JSON ({exc})") from None
    if not isinstance(data, dict) or set(data) - {"mutants", "comment"} \
            or not isinstance(data.get("mutants"), list) or not data["mutants"]:
        raise _error(file, "", "must be an object whose 'mutants' is a non-empty list "
                     "(and, optionally, a 'comment')")
    tree = reference_sources() if sources is None else sources
    builtin = _builtin_ids()
    seen: set[str] = set()
    mutants = []
    for number, raw in enumerate(data["mutants"]):
        mutant = _entry(raw, number, file)
        where = f", entry {mutant.id}"
        if mutant.id in builtin:
            raise _error(file, where, "the id is a built-in mutant's",
                         "give the entry an id of its own (e.g. a course prefix: c01)")
        if mutant.id in seen:
            raise _error(file, where, "the id is repeated in the file",
                         "give every entry an id of its own")
        seen.add(mutant.id)
        try:
            apply_mutant(mutant, tree)
        except MutantDoesNotApply as exc:
            where_found = "is not found" if exc.count == 0 else f"is found {exc.count} times"
            raise _error(file, where, f"the replacement no longer applies: its old text in "
                         f"reference/{exc.file} {where_found}, it must match exactly once "
                         f"(text: {exc.old!r:.80})",
                         "update the entry to the installed reference's source "
                         "(`spec-verify mutants show s01` shows a diff of a built-in one)"
                         ) from None
        mutants.append(mutant)
    return CustomCatalogue(file, tuple(mutants))


def _kill_problem(mutant: CustomMutant, clean: RunOutcome, planted: RunOutcome) -> str | None:
    test = mutant.killed_by[0]
    if not clean.passed_cleanly:
        if clean.errors or clean.collected == 0:
            return (f"its kill test {test} was not found or could not be collected on the "
                    f"clean reference: {_first_line(clean)}")
        return f"its kill test {test} does not pass on the clean reference: {_first_line(clean)}"
    if planted.kind == "exited" and planted.code == 1 and planted.failures:
        return None
    if planted.kind == "exited" and planted.code == 0:
        return f"its kill test {test} passes with the mutant planted: it does not kill it"
    return (f"its kill test {test} did not fail with the mutant planted, it ended otherwise "
            f"({planted.kind}, code {planted.code}): {_first_line(planted)}")


def _first_line(outcome: RunOutcome) -> str:
    failing = outcome.failures + outcome.errors
    if failing:
        message = failing[0].message.splitlines()
        return f"{failing[0].test}: {message[0] if message else ''}"
    lines = [line for line in outcome.output.splitlines() if line.strip()]
    return lines[-1][:200] if lines else f"{outcome.kind} {outcome.code}"


def check_kill_tests(catalogue: CustomCatalogue, *, jobs: int, timeout: float,
                     args: Sequence[str]) -> CustomCatalogue:
    """Run every entry's kill test on the clean reference and on its mutant (``jobs`` at a
    time, sealed like graded runs, from a copy of the catalogue's folder); the catalogue,
    marked checked.

    Raises:
        CatalogueError: a kill test is not found, fails on the clean reference, or does not
            fail on its mutant; the first such entry is named.
    """
    sources = reference_sources()
    requests = []
    for mutant in catalogue.mutants:
        select = (mutant.killed_by[0],)
        requests.append(RunRequest(sources, args, timeout, select=select))
        requests.append(RunRequest(apply_mutant(mutant, sources), args, timeout, select=select))
    outcomes: list[RunOutcome | None] = [None] * len(requests)
    with RunPool(catalogue.path.parent) as pool:
        for index, outcome in pool.run_all(jobs, requests):
            outcomes[index] = outcome
    for number, mutant in enumerate(catalogue.mutants):
        clean, planted = outcomes[2 * number], outcomes[2 * number + 1]
        assert clean is not None and planted is not None
        problem = _kill_problem(mutant, clean, planted)
        if problem is not None:
            raise _error(catalogue.path, f", entry {mutant.id}", problem,
                         "fix the entry or its test; a catalogue is graded only when every "
                         "entry's test kills its mutant")
    return CustomCatalogue(catalogue.path, catalogue.mutants, kill_tests_checked=True)
