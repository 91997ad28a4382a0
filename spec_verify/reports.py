"""Reports of a ``spec-verify check`` run: a terminal table, JSON, JUnit XML and plots.

JUnit maps one tier to one ``<testsuite>`` and one check to one ``<testcase>``, and reads the one
verdict rule (``CheckReport.blocks``): an ERROR is ``<error>``, any other blocking result
(FAILED, and NOT_PROVABLE unless ``--allow-not-provable``) is ``<failure>``, a non-blocking
SKIPPED, NOT_APPLICABLE or accepted NOT_PROVABLE is ``<skipped>``; so a CI server counts
exactly the failures that make the exit code non-zero. Text is cleaned of characters XML 1.0
forbids (an implementation's message may contain any byte).
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import xml.etree.ElementTree as ET
from fractions import Fraction
from typing import Any

from spec_verify.profiles import claim_of
from spec_verify.results import SCHEMA_VERSION, CheckResult, Status, versioned
from spec_verify.runner import CheckReport
from spec_verify.summary_table import fold, names_in_short, table_lines, terminal_width, wrap

__all__ = [
    "SCHEMA_VERSION",
    "check_rows",
    "format_failures",
    "format_summary",
    "junit_xml",
    "markdown_summary",
    "report_json",
    "sandbox_line",
    "verdict_line",
    "write_acceptance_plot",
    "write_json",
    "write_junit",
    "xml_safe",
]

# The version of the JSON reports' layout (every command's: check here, the others in the CLI):
# raised when a field changes meaning or goes away, not when one is added.

_STATUS_LABEL = {
    Status.PASSED: "PASS",
    Status.FAILED: "FAIL",
    Status.ERROR: "ERROR",
    Status.SKIPPED: "skip",
    Status.NOT_PROVABLE: "n/p",
    Status.NOT_APPLICABLE: "n/a",
}


def _first_line(text: str, width: int) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def format_summary(report: CheckReport, width: int | None = None, verbose: bool = False) -> str:
    """The summary table: one row per check, then the totals and the verdict.

    ``width``: the columns to fill (default: the terminal's, ``summary_table.terminal_width``);
    messages wrap there, never cut. Unless ``verbose``, skipped and not-applicable checks that
    share a reason are one line each (``summary_table.fold``).
    """
    width = terminal_width() if width is None else width
    shown, folds = (list(report.results), []) if verbose else fold(report.results)
    rows = [
        (r.tier, r.name, _STATUS_LABEL[r.status], "" if r.n is None else str(r.n),
         f"{r.seconds:.1f}s", _first_line(r.message, 10**6))
        for r in shown
    ]  # fmt: skip
    lines = table_lines(("tier", "check", "status", "n", "time", "what"), rows, width,
                        right=frozenset({3}))  # fmt: skip
    for folded in folds:
        lines.extend(wrap(folded.line(), width, indent="    "))
    if folds:
        lines.append("(--verbose shows each folded check)")
    counts = report.counts()
    verdict = "PASSED" if report.passed else "FAILED"
    lines.append("")
    lines.extend(format_evidence(report, verbose))
    # the verdict stays one line, whatever the width: CI logs are searched for it
    lines.append(
        f"spec-verify check {report.impl}: {verdict} "
        f"({counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped, {counts['not_provable']} not provable, "
        f"{counts['not_applicable']} not applicable) in {report.seconds:.1f} s, "
        f"seed {report.seed}, profile {report.profile.value}"
    )
    if report.law_checks_passed():
        lines.extend(wrap(
            "Every law check passed; only conformance checks failed (draw order, draw counts, "
            "errors, parity). If this sampler is not meant to be a port of the contract's "
            "mechanics, ask only whether it is lossless: --profile lossless", width))
    return "\n".join(lines)


_PROFILE_MEANING = {
    "conformance": "the whole gate for a port of the contract: the output law, draw order, "
    "draw counts, errors, parity",
    "lossless": "only claims about the output law; efficiency is reported, never a failure",
}


def format_evidence(report: CheckReport, verbose: bool = True) -> list[str]:
    """What the run established: the profile, what was proven exactly, what was tested at
    which alpha and power, what did not apply and why (unless ``verbose``, the checks that
    share a reason on one line), the efficiency checks apart."""
    evidence = report.evidence()
    lines = [f"profile: {report.profile.value} ({_PROFILE_MEANING[report.profile.value]})"]
    if report.capabilities:
        lines.append(f"capabilities: {', '.join(report.capabilities)}")
    if evidence["proven_exactly"]:
        lines.append(f"proven exactly: {', '.join(evidence['proven_exactly'])}")
    if evidence["tested_statistically"]:
        lines.append("tested statistically:")
        for t in evidence["tested_statistically"]:
            lines.append(
                f"  {t['check']}: {t['status']} at alpha {_g(t['alpha'])}, power {_g(t['power'])} "
                f"against TV >= {_g(t['delta'])} (n = {t['n']})"
            )
    if evidence["round_shapes"]:
        lines.append("round shapes the law checks judged:")
        for check, (shape, _) in evidence["round_shapes"].items():
            lines.append(f"  {check}: {shape}")
    if evidence["round_shapes"] and not evidence["multi_draft_law_tested"]:
        lines.append(
            "no law check judged a round of two or more drafted positions: beyond the first "
            "token of a round, the output law was not tested"
        )
    if evidence["not_provable"]:
        decided = (
            "not a failure under this profile; the statistical evidence above decides"
            if report.profile.value == "lossless" or report.allow_not_provable
            else "fails the run under the conformance profile (--allow-not-provable accepts it)"
        )
        lines.append(f"not provable exactly: {', '.join(evidence['not_provable'])} ({decided})")
    if evidence["not_applicable"]:
        lines.append("not applicable:")
        not_applicable = [r for r in report.results if r.status is Status.NOT_APPLICABLE]
        shown, folds = (not_applicable, []) if verbose else fold(not_applicable)
        for r in shown:
            lines.append(f"  {r.tier}/{r.name}: {_first_line(r.message, 160)}")
        for folded in folds:
            lines.append(f"  {len(folded.results)} checks: {_first_line(folded.reason, 160)}: "
                         f"{names_in_short(folded.results)}")
    if evidence["efficiency"]:
        rule = (
            "reported, never a failure under this profile"
            if report.profile.value == "lossless"
            else "part of the conformance gate"
        )
        lines.append(f"efficiency ({rule}):")
        for e in evidence["efficiency"]:
            lines.append(f"  {e['check']}: {e['status']} ({e['why']})")
    lines.append("")
    return lines


def _g(value: Any) -> str:
    return "?" if value is None else f"{value:g}"


def format_failures(report: CheckReport) -> str:
    """Each failed or errored check in full, with the command that reproduces it."""
    blocks = []
    for r in report.failures():
        label = "NOT PROVABLE" if r.status is Status.NOT_PROVABLE else _STATUS_LABEL[r.status]
        text = f"{label} {r.tier}/{r.name}: {r.message.strip()}"
        if r.status is Status.NOT_PROVABLE:
            text += "\n  (fails the run: pass --allow-not-provable to accept it)"
        if r.repro:
            text += f"\n  reproduce: {r.repro}"
        blocks.append(text)
    return "\n\n".join(blocks)


def _plain(value: Any) -> Any:  # noqa: PLR0911 -- one return per kind of value
    """JSON for what tiers put in details (numpy scalars and arrays, Fractions, infinities)."""
    if isinstance(value, Fraction):
        return str(value)
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def report_json(report: CheckReport) -> dict[str, Any]:
    """The whole report as plain JSON (``CheckReport.to_json`` with details made plain), led by
    ``schema_version``, the tool's version and ``report: "check"``."""
    data: dict[str, Any] = _plain(report.to_json())
    return versioned("check", data)


def write_json(report: CheckReport, path: str | pathlib.Path) -> pathlib.Path:
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report_json(report), indent=2) + "\n", encoding="utf-8")
    return out


# Characters XML 1.0 cannot carry (C0 controls but tab, newline and return; surrogates;
# U+FFFE/U+FFFF): shown as \xNN escapes so the message stays readable and the file parses.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """``text`` with every XML-illegal character replaced by a visible escape."""
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _junit_kind(report: CheckReport, result: CheckResult) -> str | None:
    """``error``, ``failure``, ``skipped`` or None (a pass), by the report's verdict rule."""
    if report.blocks(result):
        return "error" if result.status is Status.ERROR else "failure"
    if result.status is Status.PASSED:
        return None
    return "skipped"


def _case(parent: ET.Element, report: CheckReport, result: CheckResult) -> None:
    case = ET.SubElement(
        parent,
        "testcase",
        classname=f"spec_verify.{xml_safe(result.tier)}",
        name=xml_safe(result.name),
        time=f"{result.seconds:.3f}",
    )
    body = xml_safe(result.message + (f"\nreproduce: {result.repro}" if result.repro else ""))
    first = xml_safe(_first_line(result.message, 200))
    kind = _junit_kind(report, result)
    if kind in ("error", "failure"):
        ET.SubElement(case, kind, message=first, type=result.status.value.upper()).text = body
    elif kind == "skipped":
        ET.SubElement(case, "skipped", message=f"{result.status.value}: {first}")
    elif result.message:
        ET.SubElement(case, "system-out").text = body


def junit_xml(report: CheckReport) -> str:
    """The report as JUnit XML (one testsuite per tier); its counts match the exit code."""
    kinds = [_junit_kind(report, r) for r in report.results]
    root = ET.Element(
        "testsuites",
        name=xml_safe(f"spec-verify check {report.impl} (profile {report.profile.value})"),
        tests=str(len(report.results)),
        failures=str(kinds.count("failure")),
        errors=str(kinds.count("error")),
        time=f"{report.seconds:.3f}",
    )
    tiers: dict[str, list[CheckResult]] = {}
    for result in report.results:
        tiers.setdefault(result.tier, []).append(result)
    for tier, results in tiers.items():
        tier_kinds = [_junit_kind(report, r) for r in results]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=xml_safe(tier),
            tests=str(len(results)),
            failures=str(tier_kinds.count("failure")),
            errors=str(tier_kinds.count("error")),
            skipped=str(tier_kinds.count("skipped")),
            time=f"{sum(r.seconds for r in results):.3f}",
        )
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="impl", value=xml_safe(report.impl))
        ET.SubElement(properties, "property", name="seed", value=str(report.seed))
        ET.SubElement(properties, "property", name="profile", value=report.profile.value)
        for result in results:
            _case(suite, report, result)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def write_junit(report: CheckReport, path: str | pathlib.Path) -> pathlib.Path:
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(junit_xml(report) + "\n", encoding="utf-8")
    return out


def write_acceptance_plot(
    report: CheckReport, directory: str | pathlib.Path
) -> pathlib.Path | None:
    """A PNG of the mean acceptance rate against draft length over the parity tier's sampled
    cases (None when the report has none). Observed-vs-expected plots of statistical checks
    are ``spec_verify.plots.write_plots``.

    Raises:
        ImportError: matplotlib is not installed (``pip install 'spec-verify[plots]'``).
    """
    by_m: dict[str, Any] = {}
    for result in report.results:
        found = result.details.get("acceptance_by_m")
        if isinstance(found, dict) and found:
            by_m = found
    if not by_m:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ms = sorted(int(m) for m in by_m)
    rates = [by_m[str(m)]["mean_accepted"] / m for m in ms]
    figure = Figure(figsize=(6, 3.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(ms, rates, marker="o")
    axes.set_xlabel("draft length m")
    axes.set_ylabel("mean accepted / m")
    axes.set_ylim(0, 1)
    axes.set_title(f"acceptance against draft length (parity cases, {report.impl})")
    figure.tight_layout()
    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "parity-acceptance.png"
    figure.savefig(path, format="png")
    return path


# What a report whose run did not complete says instead of a verdict (state -> why).
_NO_VERDICT = {
    "running": "the run has not finished (or it died without a verdict)",
    "usage_error": "nothing was checked: a usage error",
    "interrupted": "the run was interrupted",
    "harness_error": "the harness failed",
}


def verdict_line(report: CheckReport, state: str = "complete") -> tuple[str, str]:
    """``(verdict, detail)``: PASSED, FAILED or NO VERDICT (a run that did not complete), and
    the counts or why there is none. The HTML page and the Markdown summary lead with it."""
    if state != "complete":
        return "NO VERDICT", f"{state}: {_NO_VERDICT.get(state, state)}"
    counts = report.counts()
    detail = (
        f"{counts['passed']} passed, {len(report.failures())} blocking, "
        f"{counts['skipped']} skipped, {counts['not_applicable']} not applicable, "
        f"{counts['not_provable']} not provable; profile {report.profile.value}, seed "
        f"{report.seed}{', --quick' if report.quick else ''}, {report.seconds:.1f} s"
    )
    return ("PASSED" if report.passed else "FAILED"), detail


def sandbox_line(report: CheckReport) -> str:
    """What sealed the implementation off, in one line (or that it ran in this process)."""
    if report.sandbox is None:
        return "sandbox: none (the implementation ran in the harness's process)"
    from spec_verify._sandbox import Protections

    return Protections.from_json(report.sandbox).summary()


def check_rows(report: CheckReport) -> list[dict[str, Any]]:
    """One row per check, the one source of the HTML and Markdown tables: tier, check, the
    claim it makes (law, conformance, efficiency), status, whether it blocks the run, alpha,
    power, n, message and the reproduction line."""
    return [
        {
            "tier": r.tier,
            "check": r.name,
            "claim": claim_of(r.tier, r.name).value,
            "status": r.status.value,
            "label": _STATUS_LABEL[r.status],
            "blocks": report.blocks(r),
            "alpha": r.alpha,
            "power": r.details.get("power"),
            "n": r.n,
            "seconds": r.seconds,
            "message": r.message,
            "repro": r.repro,
        }
        for r in report.results
    ]


def _md_cell(text: str, width: int = 300) -> str:
    """Markdown table cell: one line, HTML-escaped (messages come from the implementation and
    GitHub renders HTML in a job summary), pipes and backticks escaped."""
    import html

    line = " ".join(text.split())
    if len(line) > width:
        line = line[: width - 3] + "..."
    return html.escape(line).replace("|", "\\|").replace("`", "\\`")


def markdown_summary(report: CheckReport, state: str = "complete") -> str:
    """A Markdown job summary (``$GITHUB_STEP_SUMMARY``): the verdict, then a table of the
    checks that block the run and of the skipped ones; passing checks are only counted."""
    verdict, detail = verdict_line(report, state)
    mark = {"PASSED": "✅", "FAILED": "❌"}.get(verdict, "⚠️")
    lines = [
        f"## {mark} spec-verify check: {verdict}",
        "",
        f"<code>{_md_cell(report.impl)}</code>: {_md_cell(detail)}",
        "",
        _md_cell(sandbox_line(report)),
        "",
    ]
    shown = [row for row in check_rows(report) if row["blocks"] or row["status"] != "passed"]
    if shown:
        lines += ["| check | status | claim | blocks | message | reproduce |",
                  "|---|---|---|---|---|---|"]
        shown.sort(key=lambda row: not row["blocks"])  # what fails the run first
        for row in shown:
            repro = f"<code>{_md_cell(row['repro'])}</code>" if row["repro"] else ""
            lines.append(
                f"| {_md_cell(row['tier'] + '/' + row['check'])} | {row['label']} | "
                f"{row['claim']} | {'yes' if row['blocks'] else 'no'} | "
                f"{_md_cell(row['message'])} | {repro} |"
            )
    else:
        lines.append("Every check passed.")
    return "\n".join(lines) + "\n"
