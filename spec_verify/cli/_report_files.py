"""The report files of one ``spec-verify check`` run: claimed before any work, never stale.

A CI server reads the files, not the terminal, so they must never say more than the run
proved:

- the paths are resolved to absolute ones at the start (an implementation that changes the
  working directory cannot move them), and each is written at once with an *incomplete*
  report (``passed: false``, ``state: "running"``): an unwritable path is a usage error before
  any work, and a run that dies leaves a failing report, never the previous run's passing one;
- every later write goes to a temporary file in the same folder, then ``os.replace``: a reader
  sees the old file or the new one, never half of one;
- the final state is ``complete``, ``interrupted`` (Ctrl-C, SIGTERM) or ``harness_error``.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import sys
from collections.abc import Sequence

from spec_verify.cli._json_out import atomic_write, report_path_problem
from spec_verify.results import CheckResult, ExitCode, Status
from spec_verify.runner import CheckReport

__all__ = ["ReportFiles", "ReportPathError", "placeholder_report"]


# The exit code of a run that ended in each state other than "complete" (and "running").
_EXIT_BY_STATE = {
    "usage_error": ExitCode.USAGE_ERROR,
    "interrupted": ExitCode.INTERRUPTED,
    "harness_error": ExitCode.HARNESS_ERROR,
}


class ReportPathError(Exception):
    """A report path that cannot be written (a usage error: nothing was checked)."""


def placeholder_report(
    impl: str, seed: int, tiers: Sequence[str], quick: bool, state: str, why: str
) -> CheckReport:
    """A report that fails: one ERROR result saying why the run has no verdict."""
    result = CheckResult("run", state, Status.ERROR, why)
    return CheckReport(impl, seed, tuple(tiers), (result,), 0.0, quick=quick)


class ReportFiles:
    """The ``--json``, ``--junit``, ``--html`` and ``--markdown`` files of a run (any may be
    None; ``--json -`` is stdout)."""

    def __init__(self, json_path: str | None, junit_path: str | None,
                 html_path: str | None = None, markdown_path: str | None = None) -> None:
        # ``--json -``: the JSON report goes to stdout, once, with the final state
        self.json_stdout = json_path == "-"
        self.json = None if self.json_stdout else _resolve("--json", json_path)
        self.junit = _resolve("--junit", junit_path)
        self.html = _resolve("--html", html_path)
        self.markdown = _resolve("--markdown", markdown_path)

    def paths(self) -> list[pathlib.Path]:
        """The files this run writes (not stdout)."""
        return [p for p in (self.json, self.junit, self.html, self.markdown) if p is not None]

    def write(self, report: CheckReport, state: str) -> list[pathlib.Path]:
        """Write both files atomically; ``state`` goes into the JSON. Returns the paths."""
        from spec_verify import reports

        written = []
        if self.json is not None or (self.json_stdout and state != "running"):
            data = reports.report_json(report)
            data["state"] = state
            if state in _EXIT_BY_STATE:  # the process's own exit code, not the stub's verdict
                data["exit_code"] = int(_EXIT_BY_STATE[state])
            text = json.dumps(data, indent=2) + "\n"
            if self.json is None:
                with contextlib.suppress(OSError, ValueError):
                    sys.stdout.write(text)
                    sys.stdout.flush()
            else:
                atomic_write(self.json, text)
                written.append(self.json)
        if self.junit is not None:
            atomic_write(self.junit, reports.junit_xml(report) + "\n")
            written.append(self.junit)
        if self.html is not None:
            from spec_verify.html_report import check_html

            atomic_write(self.html, check_html(report, state))
            written.append(self.html)
        if self.markdown is not None:
            atomic_write(self.markdown, reports.markdown_summary(report, state))
            written.append(self.markdown)
        return written

    def claim(self, report: CheckReport) -> None:
        """Write the incomplete report now (raises ``ReportPathError`` naming the path)."""
        try:
            self.write(report, "running")
        except OSError as exc:
            raise ReportPathError(str(exc)) from None


def _resolve(option: str, path: str | None) -> pathlib.Path | None:
    if path is None:
        return None
    problem = report_path_problem(option, path)
    if problem is not None:
        raise ReportPathError(problem)
    return pathlib.Path(path).expanduser().absolute()
