"""The terminal table: as wide as the terminal (COLUMNS first), messages wrapped and never
cut, and skipped or not-applicable checks that share a reason folded into one line."""

from __future__ import annotations

import pytest

from spec_verify.reports import format_summary
from spec_verify.results import CheckResult, Status
from spec_verify.runner import CheckReport
from spec_verify.summary_table import fold, names_in_short, table_lines

LONG = ("the law of everything the round emitted equals the target's on every one of the "
        "forty-one drafted rounds, proven with exact fractions, no tolerance anywhere")  # fmt: skip
NO_TREES = "skipped: python:mine does not offer verify_tree"


def _report(*results: CheckResult) -> CheckReport:
    return CheckReport("python:mine", 0, ("exact", "statistical"), results, 1.0)


def _skips() -> list[CheckResult]:
    trees = [CheckResult("statistical", f"tree.b{b}_d{d}", Status.SKIPPED, NO_TREES)
             for b in range(1, 5) for d in range(1, 4)]  # fmt: skip
    return [*trees, CheckResult("generation", "all", Status.SKIPPED, NO_TREES),
            CheckResult("exact", "tree", Status.SKIPPED, NO_TREES),
            CheckResult("exact", "tree_law", Status.SKIPPED, NO_TREES),
            CheckResult("parity", "verify_tree", Status.SKIPPED, NO_TREES)]


def _words_kept(message: str, table: str) -> bool:
    return " ".join(message.split()) in " ".join(table.split())


@pytest.mark.parametrize("width", [200, 100, 60, 30])
def test_every_line_fits_and_no_word_is_cut(width: int) -> None:
    table = format_summary(_report(CheckResult("exact", "one_position", Status.PASSED, LONG)),
                           width=width)  # fmt: skip
    rows = table.split("\n\n", 1)[0].splitlines()
    # the cells beside the message are never cut: narrower than they are, the message alone
    # goes below its row, and it still fits
    message_lines = [line for line in rows if "one_position" not in line and "tier" not in line
                     and not line.startswith("-")]  # fmt: skip
    assert all(len(line) <= width for line in message_lines), rows
    assert _words_kept(LONG, "\n".join(rows))
    if width == 200:
        assert any(line.endswith("anywhere") and "one_position" in line for line in rows)


def test_negative_control_a_table_that_cuts_is_caught() -> None:
    # the planted bug: the message cut at the column's width, as the table did at 78
    cut = LONG[:40] + "..."
    table = "\n".join(table_lines(("tier", "what"), [("exact", cut)], 200))
    assert not _words_kept(LONG, table)


def test_the_width_is_the_terminals_and_columns_says_it(monkeypatch) -> None:
    report = _report(CheckResult("exact", "one_position", Status.PASSED, LONG))
    monkeypatch.setenv("COLUMNS", "250")
    assert max(map(len, format_summary(report).split("\n\n")[0].splitlines())) > 78
    monkeypatch.setenv("COLUMNS", "50")
    assert max(map(len, format_summary(report).split("\n\n")[0].splitlines())) <= 50


def test_skips_that_share_a_reason_are_one_line_and_verbose_shows_each() -> None:
    passed = CheckResult("exact", "one_position", Status.PASSED, "proven")
    report = _report(passed, *_skips())
    folded = format_summary(report, width=200)
    assert ("16 checks skipped: python:mine does not offer verify_tree: statistical/tree.*, "
            "generation (the whole tier), exact/tree, exact/tree_law, parity/verify_tree"
            in folded)  # fmt: skip
    assert "tree.b1_d1" not in folded and "one_position" in folded
    assert "--verbose" in folded
    verbose = format_summary(report, width=200, verbose=True)
    assert all(r.name in verbose for r in _skips())
    assert "16 checks skipped" not in verbose


def test_different_reasons_are_never_folded_together() -> None:
    results = [CheckResult("exact", "a", Status.SKIPPED, "reason one"),
               CheckResult("exact", "b", Status.SKIPPED, "reason two"),
               CheckResult("exact", "c", Status.NOT_APPLICABLE, "reason one"),
               CheckResult("exact", "d", Status.FAILED, "reason one"),
               CheckResult("exact", "e", Status.FAILED, "reason one")]  # fmt: skip
    shown, folds = fold(results)
    assert folds == [] and shown == results  # no status and reason is shared by two skips
    shown, folds = fold([*results, CheckResult("exact", "f", Status.SKIPPED, "reason two")])
    assert [f.reason for f in folds] == ["reason two"]
    assert names_in_short(folds[0].results) == "exact/b, exact/f"
    assert [r.name for r in shown] == ["a", "c", "d", "e"]


def test_not_applicable_evidence_is_folded_too() -> None:
    why = "conformance only: the lossless profile asks only about the output law"
    results = [CheckResult("parity", n, Status.NOT_APPLICABLE, why) for n in ("x", "y", "z")]
    text = format_summary(_report(*results), width=200)
    assert f"  3 checks: {why}: parity/x, parity/y, parity/z" in text
    assert "  parity/x:" not in text
