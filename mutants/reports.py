"""Reports of a grade: a terminal table, mutation-testing-elements JSON, Gradescope, JUnit XML.

Every format states the score definition and, when the suite could not be graded, why. The
mutation-testing-elements report (schema version 2, rendered by Stryker's report viewer) marks
an errored mutant ``Killed`` with the reason, so the viewer's score equals ours (it would leave
``RuntimeError`` out of its denominator).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from spec_verify import __version__

from ._runner import RunFailure
from ._source import reference_sources
from .catalogue import Mutant, apply_mutant, mutant_by_id
from .grader import GradeResult, MutantResult, MutantState

__all__ = [
    "failure_text",
    "gradescope_results",
    "junit_xml",
    "mutation_testing_report",
    "sandbox_text",
    "terminal_report",
]

_STRYKER_STATUS = {
    MutantState.KILLED: "Killed",
    MutantState.SURVIVED: "Survived",
    MutantState.TIMED_OUT: "Timeout",
    MutantState.ERRORED: "Killed",
}


def _one_line(text: str, limit: int = 90) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _percent(result: GradeResult) -> str:
    return f"{100 * result.grade:.1f}%"


def _verdict(result: MutantResult) -> str:
    if result.state is MutantState.KILLED and result.killed_by:
        return f"{result.killed_by}: {result.reason}"
    return result.reason


def _indented(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line for line in text.rstrip().splitlines()]


def failure_text(failure: RunFailure) -> str:
    """One failure in full: the test, its whole message and its traceback."""
    text = f"FAILED {failure.test}" + (f" ({failure.when})" if failure.when != "call" else "")
    text += f": {failure.message}"
    if failure.details and failure.details.strip() != failure.message.strip():
        text += "\n" + failure.details.rstrip()
    return text


def sandbox_text(result: GradeResult) -> str:
    """Which protections sealed every run off, in one line (every report carries it)."""
    if result.sandbox is None:
        return "sandbox: not known (no run started)"
    from spec_verify._sandbox import Protections

    return Protections.from_json(dict(result.sandbox)).summary()


def terminal_report(result: GradeResult, *, full: bool = True) -> str:
    """A plain-text table for the terminal (``full=False`` abbreviates the messages)."""
    lines = [f"spec-verify grade {result.suite}", sandbox_text(result)]
    if result.clean_tests or result.clean_seconds:
        seconds = ", ".join(f"{s:.2f}" for s in result.clean_seconds)
        lines.append(f"clean runs: {result.clean_tests} tests passed ({seconds} s)" + (
            f"; time limit per run {result.time_limit:g} s" if result.time_limit else ""))
    lines.extend(f"note: {note}" for note in result.notes)
    if not result.graded:
        lines.append("")
        lines.append(result.reason)
        for failure in result.clean_failures[:20]:
            if full:
                lines.extend(_indented(failure_text(failure), "  "))
            else:
                lines.append(f"  FAILED {failure.test}: {_one_line(failure.message, 120)}")
        if len(result.clean_failures) > 20:
            lines.append(f"  ... and {len(result.clean_failures) - 20} more")
        lines.append("")
        lines.append(f"score: {result.score_definition}")
        return "\n".join(lines) + "\n"
    lines.append("")
    lines.append(f"{'mutant':<7}{'state':<11}{'seconds':>8}  killed by / reason")
    for m in result.mutants:
        verdict = _verdict(m)
        if full and "\n" in verdict:
            lines.append(f"{m.mutant_id:<7}{m.state.value:<11}{m.seconds:>8.2f}")
            lines.extend(_indented(verdict, " " * 9))
        else:
            lines.append(f"{m.mutant_id:<7}{m.state.value:<11}{m.seconds:>8.2f}  "
                         f"{verdict if full else _one_line(verdict)}")
    counts = ", ".join(f"{state.value} {result.count(state)}" for state in MutantState)
    lines.append("")
    lines.append(f"grade: {result.detected}/{result.total} detected = {_percent(result)} "
                 f"({counts})")
    survivors = [m for m in result.mutants if m.state is MutantState.SURVIVED]
    if survivors:
        lines.append("survived (see `spec-verify mutants show ID`):")
        for m in survivors:
            lines.append(f"  {m.mutant_id}  {m.title}")
            if m.hint:
                lines.append(f"      hint: {m.hint}")
        ids = ",".join(m.mutant_id for m in survivors)
        lines.append(f"reproduce: spec-verify grade {result.suite} --mutants {ids}"
                     + (f" --catalogue {result.catalogue}" if result.catalogue else ""))
    lines.append(f"score: {result.score_definition}")
    return "\n".join(lines) + "\n"


def _position(text: str, offset: int) -> dict[str, int]:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return {"line": line, "column": column}


def mutant_location(mutant: Mutant, sources: Mapping[str, str]) -> tuple[str, int, int, str]:
    """``(file, start, end, replacement)``: the span of the original source a mutant changes
    (from its first change to its last, in its first file) and the span's mutated text."""
    file = mutant.files[0]
    text = sources[file]
    changes = [c for c in mutant.changes if c.file == file]
    starts = [text.index(c.old) for c in changes]
    start = min(starts)
    end = max(s + len(c.old) for s, c in zip(starts, changes, strict=True))
    region = text[start:end]
    for change in changes:
        region = region.replace(change.old, change.new, 1)
    return file, start, end, region


def _mutant(result: GradeResult, mutant_id: str) -> Mutant:
    """The graded entry ``mutant_id``: an instructors' one of ``result``, else a built-in."""
    for mutant in result.custom:
        if mutant.id == mutant_id:
            return mutant
    return mutant_by_id(mutant_id)


def mutation_testing_report(result: GradeResult,
                            sources: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The grade in the mutation-testing-elements schema (version 2)."""
    tree = reference_sources() if sources is None else sources
    files: dict[str, dict[str, Any]] = {}
    test_files: dict[str, dict[str, Any]] = {}
    ids = [m.mutant_id for m in result.mutants]
    for mutant_id in ids or []:
        apply_mutant(_mutant(result, mutant_id), tree)  # fails loudly if the catalogue drifted
    for m in result.mutants:
        mutant = _mutant(result, m.mutant_id)
        file, start, end, replacement = mutant_location(mutant, tree)
        entry = files.setdefault(f"reference/{file}", {
            "language": "python", "source": tree[file], "mutants": []})
        reason = _verdict(m)
        if m.state is MutantState.ERRORED:
            reason = f"errored (counted as detected): {reason}"
        record: dict[str, Any] = {
            "id": m.mutant_id,
            "mutatorName": f"{m.mutant_id}: {mutant.title}",
            "description": mutant.symptom,
            "replacement": replacement,
            "location": {"start": _position(tree[file], start), "end": _position(tree[file], end)},
            "status": _STRYKER_STATUS[m.state],
            "statusReason": reason,
            "duration": round(1000 * m.seconds),
            "testsCompleted": m.tests_run,
        }
        if m.hint:  # survivors only: what the suite missed
            record["hint"] = m.hint
        if m.killed_by:
            record["killedBy"] = [m.killed_by]
            test_file, _, name = m.killed_by.partition("::")
            tests = test_files.setdefault(test_file, {"tests": []})["tests"]
            if all(t["id"] != m.killed_by for t in tests):
                tests.append({"id": m.killed_by, "name": name or m.killed_by})
        entry["mutants"].append(record)
    report: dict[str, Any] = {
        "$schema": "https://git.io/mutation-testing-schema",
        "schemaVersion": "2",
        "thresholds": {"high": 80, "low": 60},
        "files": files,
        "testFiles": test_files,
        "framework": {"name": "spec-verify", "version": __version__},
        "config": {
            "suite": result.suite, "graded": result.graded, "grade": result.grade,
            "detected": result.detected, "total": result.total, "reason": result.reason,
            "scoreDefinition": result.score_definition, "timeLimitSeconds": result.time_limit,
        },
        # which protections sealed every run off (spec_verify/_sandbox.py); None: not known
        "sandbox": None if result.sandbox is None else dict(result.sandbox),
    }
    return report


def gradescope_results(result: GradeResult) -> dict[str, Any]:
    """Gradescope's autograder ``results.json``: one point per detected mutant."""
    tests: list[dict[str, Any]] = []
    if not result.graded:
        output = result.reason
        if result.clean_failures:
            output += "\n\n" + "\n\n".join(failure_text(f) for f in result.clean_failures[:50])
        tests.append({"name": "the suite passes on the clean reference and fails on the canary",
                      "score": 0, "max_score": 0, "status": "failed", "output": output})
    for m in result.mutants:
        detected = m.state.detected
        tests.append({
            "name": f"{m.mutant_id}: {m.title}",
            "number": m.mutant_id,
            "score": 1 if detected else 0,
            "max_score": 1,
            "status": "passed" if detected else "failed",
            "output": f"{m.state.value}: {_verdict(m)}" + (
                f"\n\n{m.details.rstrip()}" if m.details else "") + (
                f"\n\nhint: {m.hint}" if m.hint else ""),
        })
    return {
        "score": result.detected,
        "max_score": result.total,
        "execution_time": round(result.seconds, 3),
        "visibility": "visible",
        "output": f"{result.reason}\n\n{result.score_definition}\n\n{sandbox_text(result)}",
        "tests": tests,
    }


def junit_xml(result: GradeResult) -> str:
    """JUnit XML: the clean run and one test case per mutant; a survivor is a failure."""
    survived = result.count(MutantState.SURVIVED)
    failures = survived + (0 if result.graded else 1)
    suites = ET.Element("testsuites", name="spec-verify grade")
    suite = ET.SubElement(
        suites, "testsuite", name="spec-verify mutants", tests=str(len(result.mutants) + 1),
        failures=str(failures), errors="0", skipped="0", time=f"{result.seconds:.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (("suite", result.suite), ("grade", f"{result.grade:.4f}"),
                        ("detected", str(result.detected)), ("total", str(result.total)),
                        ("score_definition", result.score_definition),
                        ("sandbox", sandbox_text(result))):
        ET.SubElement(properties, "property", name=name, value=value)
    clean = ET.SubElement(suite, "testcase", classname="spec_verify.mutants",
                          name="clean runs, decoys and canary",
                          time=f"{sum(result.clean_seconds):.3f}")
    if not result.graded:
        failure = ET.SubElement(clean, "failure", message=result.reason)
        failure.text = "\n\n".join(failure_text(f) for f in result.clean_failures)
    for m in result.mutants:
        case = ET.SubElement(suite, "testcase", classname="spec_verify.mutants",
                             name=f"{m.mutant_id} {m.title}", time=f"{m.seconds:.3f}")
        if m.state is MutantState.SURVIVED:
            failure = ET.SubElement(case, "failure", message=f"survived: {m.reason}")
            failure.text = f"{m.mutant_id} ({m.title}) was not detected by the suite"
        else:
            out = ET.SubElement(case, "system-out")
            out.text = f"{m.state.value}: {_verdict(m)}" + (
                f"\n\n{m.details.rstrip()}" if m.details else "")
    ET.indent(suites)
    body = ET.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="utf-8"?>\n{body}\n'
