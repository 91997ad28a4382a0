"""Grading at scale: every submission of a folder, one CSV row each and a summary table.

A course collects one folder per student (``submissions/alice/``, ``submissions/bob/``...);
``grade_submissions`` grades each one with ``grade`` (its own fork servers, its own temporary
folders), never stops for one that cannot be graded (that is a row with its reason), and
``write_csv`` / ``summary_table`` report the batch.
"""

from __future__ import annotations

import csv
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spec_verify.errors import InvalidArgument

from .grader import GradeResult, _default_jobs, checked_catalogue, grade

__all__ = ["CSV_FIELDS", "SubmissionGrade", "grade_submissions", "summary_table", "write_csv"]

CSV_FIELDS = ("submission", "graded", "grade_percent", "detected", "total", "refusal",
              "reason", "seconds")


@dataclass(frozen=True)
class SubmissionGrade:
    """One submission's row: its name and its grade, or why the grader itself failed on it."""

    submission: str
    result: GradeResult | None
    error: str = ""
    seconds: float = 0.0

    def row(self) -> dict[str, Any]:
        """The CSV row (full reason, one line)."""
        r = self.result
        if r is None:
            return {"submission": self.submission, "graded": False, "grade_percent": 0.0,
                    "detected": 0, "total": 0, "refusal": "grader error",
                    "reason": " ".join(self.error.split()), "seconds": round(self.seconds, 2)}
        return {"submission": self.submission, "graded": r.graded,
                "grade_percent": round(100 * r.grade, 2), "detected": r.detected,
                "total": r.total, "refusal": r.refusal.value, "reason": " ".join(r.reason.split()),
                "seconds": round(self.seconds, 2)}


def submissions_in(folder: str | os.PathLike[str]) -> list[Path]:
    """The submissions of ``folder``: its sub-folders, by name (hidden ones left out).

    Raises:
        InvalidArgument: ``folder`` is not a folder, or holds no sub-folder.
    """
    root = Path(folder)
    if not root.is_dir():
        raise InvalidArgument("submissions", str(folder), "must be a folder",
                              "give the folder that holds one folder per submission")
    found = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if not found:
        raise InvalidArgument("submissions", str(folder), "holds no submission folder",
                              "put each submission in its own folder inside it")
    return found


def grade_submissions(folder: str | os.PathLike[str], *,
                      progress: Callable[[str], None] | None = None,
                      **options: Any) -> list[SubmissionGrade]:
    """Grade every submission of ``folder`` (``options`` go to ``grade``), in name order."""
    say = progress or (lambda line: None)
    rows = []
    paths = submissions_in(folder)
    if options.get("catalogue") is not None:  # validated once, not once per submission
        jobs = options.get("jobs") or _default_jobs()
        options["catalogue"] = checked_catalogue(options["catalogue"], jobs,
                                                 options.get("clean_timeout", 600.0))
    for number, path in enumerate(paths, start=1):
        started = time.monotonic()
        try:
            result: GradeResult | None = grade(path, **options)
            error = ""
        except InvalidArgument:
            raise  # bad options: the same for every submission, stop at once
        except Exception as exc:
            result, error = None, f"{type(exc).__name__}: {exc}"
        row = SubmissionGrade(path.name, result, error, time.monotonic() - started)
        rows.append(row)
        shown = row.row()
        say(f"[{number}/{len(paths)}] {path.name}: " + (
            f"{shown['grade_percent']}%" if shown["graded"] else f"0 ({shown['refusal']})"))
    return rows


def write_csv(rows: Sequence[SubmissionGrade], path: str | os.PathLike[str]) -> None:
    """One row per submission, the columns of ``CSV_FIELDS``."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow(row.row())


def summary_table(rows: Sequence[SubmissionGrade]) -> str:
    """A plain-text table: one line per submission, then counts and the grade distribution."""
    width = max([len("submission"), *(len(r.submission) for r in rows)])
    lines = [f"{'submission':<{width}}  {'grade':>7}  {'detected':>9}  note"]
    graded = []
    refusals: dict[str, int] = {}
    for row in rows:
        shown = row.row()
        if shown["graded"]:
            graded.append(float(shown["grade_percent"]))
            lines.append(f"{row.submission:<{width}}  {shown['grade_percent']:>6.1f}%  "
                         f"{shown['detected']:>4}/{shown['total']:<4}")
        else:
            refusals[str(shown["refusal"])] = refusals.get(str(shown["refusal"]), 0) + 1
            lines.append(f"{row.submission:<{width}}  {0.0:>6.1f}%  {'-':>9}  "
                         f"{shown['refusal']}: {shown['reason'][:100]}")
    lines.append("")
    lines.append(f"{len(rows)} submissions: {len(graded)} graded, {len(rows) - len(graded)} not "
                 "graded" + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(refusals.items()))
                             + ")" if refusals else ""))
    if graded:
        lines.append(f"grades of the graded: mean {statistics.mean(graded):.1f}%, median "
                     f"{statistics.median(graded):.1f}%, min {min(graded):.1f}%, max "
                     f"{max(graded):.1f}%")
    return "\n".join(lines) + "\n"
