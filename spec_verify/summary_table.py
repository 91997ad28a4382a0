"""The terminal table of a check run: as wide as the terminal, messages wrapped (never cut),
and runs of skipped or not-applicable checks folded into one line per reason.

The width is ``shutil.get_terminal_size``'s (``COLUMNS`` first, then the terminal; a pipe or
a file gets ``PIPE_WIDTH``). Folding groups SKIPPED and NOT_APPLICABLE rows by status and
reason; a reason shared by two or more checks becomes one line naming them
(``statistical/tree.*``), and ``verbose`` shows every row instead.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spec_verify.results import CheckResult, Status

__all__ = ["PIPE_WIDTH", "Fold", "fold", "names_in_short", "table_lines", "terminal_width",
           "wrap"]

# Columns when stdout is no terminal and COLUMNS is unset: CI logs are read in wide windows.
PIPE_WIDTH = 120
# The narrowest message column beside the other cells; narrower, messages go below the row.
_MIN_MESSAGE = 24
_FOLDED = (Status.SKIPPED, Status.NOT_APPLICABLE)
_WORDS = {Status.SKIPPED: "skipped", Status.NOT_APPLICABLE: "not applicable"}


def terminal_width() -> int:
    """The columns to fill: ``COLUMNS``, else the terminal's, else ``PIPE_WIDTH`` (at least 20)."""
    return max(20, shutil.get_terminal_size((PIPE_WIDTH, 24)).columns)


def wrap(text: str, width: int, indent: str = "", first_indent: str = "") -> list[str]:
    """``text`` wrapped to ``width`` columns, every word kept (a word wider than a line is
    broken, never dropped)."""
    lines = textwrap.wrap(" ".join(text.split()), width=max(width, len(indent) + 8),
                          initial_indent=first_indent, subsequent_indent=indent,
                          break_on_hyphens=False)  # fmt: skip
    return lines or [first_indent.rstrip()]


@dataclass(frozen=True)
class Fold:
    """Checks with one status and one reason, shown as one line."""

    status: Status
    reason: str
    results: tuple[CheckResult, ...]

    def line(self) -> str:
        count = len(self.results)
        return f"{count} checks {_WORDS[self.status]}: {self.reason}: " \
            f"{names_in_short(self.results)}"


def _reason(result: CheckResult) -> str:
    first = result.message.strip().splitlines()[0] if result.message.strip() else "no reason"
    return first.removeprefix("skipped: ")


def fold(results: Sequence[CheckResult]) -> tuple[list[CheckResult], list[Fold]]:
    """The rows to show one by one (in run order), and the folds: every reason that two or
    more skipped (or not-applicable) checks share."""
    groups: dict[tuple[Status, str], list[CheckResult]] = {}
    for result in results:
        if result.status in _FOLDED:
            groups.setdefault((result.status, _reason(result)), []).append(result)
    folds = [Fold(status, reason, tuple(members))
             for (status, reason), members in groups.items() if len(members) >= 2]
    folded = {id(r) for f in folds for r in f.results}
    return [r for r in results if id(r) not in folded], folds


def names_in_short(results: Iterable[CheckResult]) -> str:
    """``tier/name`` of each check, a prefix shared by several checks of one tier shown once
    (``statistical/tree.*``), a whole tier (``all``) by its name."""
    shown: list[str] = []
    prefixes: dict[tuple[str, str], int] = {}
    results = list(results)
    for r in results:
        if "." in r.name:
            key = (r.tier, r.name.split(".", 1)[0])
            prefixes[key] = prefixes.get(key, 0) + 1
    for r in results:
        prefix = r.name.split(".", 1)[0]
        if "." in r.name and prefixes[(r.tier, prefix)] >= 2:
            name = f"{r.tier}/{prefix}.*"
        elif r.name == "all":
            name = f"{r.tier} (the whole tier)"
        else:
            name = f"{r.tier}/{r.name}"
        if name not in shown:
            shown.append(name)
    return ", ".join(shown)


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]], width: int,
                right: frozenset[int] = frozenset()) -> list[str]:
    """A table whose last column is free text wrapped to what is left of ``width``; columns in
    ``right`` are right-aligned. When fewer than 24 columns are left, the text goes on the
    lines below its row, indented by four."""
    every = [list(header), *map(list, rows)]
    cells = len(header) - 1
    widths = [max(len(row[i]) for row in every) for i in range(cells)]
    left = sum(widths) + 2 * cells
    lines = []
    for i, row in enumerate(every):
        fixed = "  ".join(row[j].rjust(widths[j]) if j in right else row[j].ljust(widths[j])
                          for j in range(cells))  # fmt: skip
        text = row[cells]
        if width - left >= _MIN_MESSAGE:
            pad = " " * left  # textwrap counts the indent in the width
            wrapped = wrap(text, width, indent=pad, first_indent=pad)
            lines.append(f"{fixed}  {wrapped[0][left:]}".rstrip())
            lines.extend(wrapped[1:])
        else:
            lines.append(fixed.rstrip())
            if text:
                lines.extend(wrap(text, width, indent="    ", first_indent="    "))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 4)
    return lines
