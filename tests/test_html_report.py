"""The HTML reports (``check --html``, ``grade --html``) and the Markdown summary
(``check --markdown``): what they say, that an implementation's text stays inert, and (in a real
headless Chromium) that the page renders with the verdict's colour.

Chromium comes from the system packages (``apt-get install chromium``); without it the browser
tests skip, unless ``SPEC_VERIFY_REQUIRE_BROWSER=1`` (CI sets it): then they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from spec_verify import reports
from spec_verify.cli import main
from spec_verify.html_report import VERDICT_COLOURS, check_html, grade_html
from spec_verify.results import CheckResult, ExitCode, Status
from spec_verify.runner import CheckReport

# Planted in a message: inert text on the page, never an element or a running script.
_PLANTED = "<script>document.title='pwned'</script><b id=\"planted\">bold</b> | pipe"


def _report(failing: bool) -> CheckReport:
    results = [
        CheckResult("contract", "shapes", Status.PASSED, "every shape is right", seconds=0.1),
        CheckResult(
            "statistical", "chi2_first_token", Status.PASSED, "matches the target law",
            statistic=3.2, pvalue=0.4, alpha=1e-6, n=20000,
            details={"power": 0.99, "delta": 0.05, "cells": ["0", "1"], "observed": [9990, 10010],
                     "expected": [10000.0, 10000.0]},
        ),
        CheckResult("generation", "whole", Status.SKIPPED, "no generate(): not offered"),
    ]
    if failing:
        results.append(CheckResult(
            "greedy", "argmax_chain", Status.FAILED, f"emitted [3], greedy gives [6] {_PLANTED}",
            repro="spec-verify check --impl python:mine.py --tier greedy --quick",
        ))
    return CheckReport("python:mine.py", 7, ("contract", "greedy", "statistical", "generation"),
                       tuple(results), 1.5, quick=True)


def test_the_check_page_says_the_verdict_each_check_and_the_reproduction():
    page = check_html(_report(failing=True))
    assert "<h1>FAILED</h1>" in page and VERDICT_COLOURS["FAILED"] in page
    assert "argmax_chain" in page and "chi2_first_token" in page
    assert "<td>law</td>" in page  # the claim column
    assert "<td>1e-06</td><td>0.99</td><td>20000</td>" in page  # alpha, power, n
    assert "spec-verify check --impl python:mine.py --tier greedy --quick" in page
    assert "sandbox: none" in page
    assert "data:image/png;base64," in page  # the statistical check's plot, inline
    assert "<h1>PASSED</h1>" in check_html(_report(failing=False))
    assert "<h1>NO VERDICT</h1>" in check_html(_report(failing=False), "interrupted")


def test_an_implementations_markup_is_escaped():
    page = check_html(_report(failing=True))
    assert "<script" not in page and '<b id="planted">' not in page
    assert "&lt;script&gt;" in page
    # the page itself refuses scripts and remote loads, should escaping ever miss one
    assert "default-src 'none'" in page and "http://" not in page and "https://" not in page


def test_without_matplotlib_the_plots_are_left_out_with_a_note(monkeypatch):
    from spec_verify import plots

    def missing(result):
        raise plots.PlotsUnavailable("No module named 'matplotlib'")

    monkeypatch.setattr(plots, "png_bytes", missing)
    page = check_html(_report(failing=False))
    assert "data:image/png" not in page
    assert "plots left out: matplotlib is not installed" in page


def test_the_markdown_summary_lists_what_blocks_and_what_was_skipped():
    text = reports.markdown_summary(_report(failing=True))
    assert text.startswith("## ❌ spec-verify check: FAILED")
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| check | status |")
    assert table[1].startswith("| greedy/argmax_chain | FAIL | law | yes |")  # blocking first
    assert table[2].startswith("| generation/whole | skip | law | no |")
    assert len(table) == 3  # passing checks are counted, not listed
    assert "<script" not in text and "\\| pipe" in text  # inert, and the table keeps its columns
    passing = reports.markdown_summary(_report(failing=False))
    assert passing.startswith("## ✅ spec-verify check: PASSED")


def test_a_real_runs_html_and_markdown_files_say_what_its_json_says(reference_check):
    report, page = reference_check["report"], reference_check["html"]
    assert report["passed"] is True and "<h1>PASSED</h1>" in page
    assert "spec-verify check reference" in page
    statistical = [r for r in report["results"] if r["tier"] == "statistical"]
    assert statistical and all(f"<td>{r['name']}</td>" in page for r in statistical)
    assert page.count("data:image/png;base64,") >= 1  # the plots, inline
    assert reference_check["markdown"].startswith("## ✅ spec-verify check: PASSED")
    assert "HTML report: " in reference_check["out"]


def test_a_typo_leaves_failing_html_and_markdown_reports(tmp_path, capsys):
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    html.write_text("<h1>PASSED</h1>")  # a stale passing report must not survive
    code = main(["check", "--impl", "mutant:s999", "--html", str(html), "--markdown", str(md)])
    assert code == ExitCode.USAGE_ERROR
    assert "<h1>NO VERDICT</h1>" in html.read_text()
    assert "NO VERDICT" in md.read_text() and "usage_error" in md.read_text()
    assert main(["check", "--markdown", str(tmp_path)]) == ExitCode.USAGE_ERROR
    assert "--markdown" in capsys.readouterr().err


def _grade():
    from spec_verify.mutants.catalogue import CATALOGUE, PITFALLS
    from spec_verify.mutants.custom import hint_of
    from spec_verify.mutants.grader import GradeResult, MutantResult, MutantState

    with_pitfall = next(m for m in CATALOGUE if m.pitfall is not None)
    killed = next(m for m in CATALOGUE if m is not with_pitfall)
    mutants = (
        MutantResult(killed.id, killed.title, MutantState.KILLED, "tests/t.py::test_x <i>", "",
                     0.5),
        MutantResult(with_pitfall.id, with_pitfall.title, MutantState.SURVIVED, None,
                     "every test passed", 0.4, hint=hint_of(with_pitfall)),
    )
    result = GradeResult(0.5, 1, 2, True, "1 of 2 detected", mutants, "suite/")
    return result, PITFALLS[with_pitfall.pitfall], with_pitfall


def test_the_grade_page_gives_the_missed_mutants_pitfall_as_a_hint():
    result, pitfall, _ = _grade()
    page = grade_html(result, fail_under=40)
    assert "<h1>PASSED</h1>" in page and "grade 1/2 detected = 50.0%" in page
    assert f"hint: {__import__('html').escape(pitfall)}" in page
    assert "tests/t.py::test_x &lt;i&gt;" in page  # the killing test, escaped
    assert page.count("hint:") == 1  # only the survivor gets one
    assert "<h1>FAILED</h1>" in grade_html(result, fail_under=60)  # as the exit code says


def test_grade_refuses_an_html_path_that_is_a_folder(tmp_path, capsys):
    assert main(["grade", "nowhere", "--html", str(tmp_path)]) == ExitCode.USAGE_ERROR
    assert f"--html {str(tmp_path)!r}: is a folder" in capsys.readouterr().err


# --- in a real browser ----------------------------------------------------------------------

_REQUIRED = os.environ.get("SPEC_VERIFY_REQUIRE_BROWSER") == "1"
_WINDOW = (1000, 700)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        why = "chromium is not installed (apt-get install -y chromium)"
        if _REQUIRED:
            pytest.fail(f"SPEC_VERIFY_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    return found


def _browse(page: Path, *mode: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile: nothing from other runs
        return subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", *mode, page.as_uri()],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip


def _screenshot(page: Path) -> tuple[int, int, int]:
    """The screenshot's banner colour (the most common pixel in a strip of its left margin)
    after checking the file is a PNG of more than one colour."""
    from PIL import Image

    shot = page.with_suffix(".png")
    run = _browse(page, f"--screenshot={shot}", f"--window-size={_WINDOW[0]},{_WINDOW[1]}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(shot).convert("RGB")
    assert image.size == _WINDOW
    assert len(image.getcolors(maxcolors=1 << 24) or []) > 1  # not a blank page
    strip = image.crop((0, 4, 16, 60)).getcolors()  # the banner's padding: no text reaches it
    assert strip
    return max(strip)[1]


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_the_page_renders_in_chromium_with_the_verdict_and_its_colour(tmp_path):
    failing, passing = tmp_path / "failing.html", tmp_path / "passing.html"
    failing.write_text(check_html(_report(failing=True)), encoding="utf-8")
    passing.write_text(check_html(_report(failing=False)), encoding="utf-8")
    dom = _browse(failing, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert '<h1>FAILED</h1>' in dom.stdout and "argmax_chain" in dom.stdout
    # the planted script and element are text in the rendered DOM, and the script did not run
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom.stdout
    assert '<b id="planted">' not in dom.stdout and "<title>pwned" not in dom.stdout
    assert _screenshot(failing) == _rgb(VERDICT_COLOURS["FAILED"])
    assert _screenshot(passing) == _rgb(VERDICT_COLOURS["PASSED"])


def test_the_browser_check_would_see_unescaped_markup(tmp_path):
    """Negative control: the same DOM assertion finds the planted element when a page does not
    escape it (so the test above can fail)."""
    page = tmp_path / "raw.html"
    page.write_text(f"<!DOCTYPE html><html><body><p>{_PLANTED}</p></body></html>",
                    encoding="utf-8")
    dom = _browse(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert '<b id="planted">' in dom.stdout
