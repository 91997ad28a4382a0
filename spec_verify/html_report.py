"""The HTML reports of ``check --html FILE`` and ``grade --html FILE``: one self-contained page.

No external assets: the CSS is inline and each statistical check's plot is an inline base64
PNG when matplotlib (the ``plots`` extra) is installed, left out with a note otherwise. Every
text that reaches the page goes through ``html.escape``: messages, names and reproduction lines
come from the implementation under test (or a student's suite) and must stay inert text. The
check page is built from the same ``CheckReport`` as the JSON, its table from
``reports.check_rows`` (the Markdown summary's rows too); the grade page from ``GradeResult``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from html import escape
from typing import TYPE_CHECKING, Any

from spec_verify import reports
from spec_verify.runner import CheckReport

if TYPE_CHECKING:
    from spec_verify.mutants.grader import GradeResult

__all__ = ["VERDICT_COLOURS", "check_html", "grade_html"]

# The verdict banner's background: a screenshot test tells a pass from a failure by it.
VERDICT_COLOURS = {"PASSED": "#1a7f37", "FAILED": "#cf222e", "NO VERDICT": "#6e7781"}

_CSS = """
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: #1f2328; background: #fff; }
.verdict { color: #fff; padding: 18px 24px; }
.verdict h1 { margin: 0; font-size: 26px; }
.verdict p { margin: 4px 0 0; }
main { padding: 8px 24px 32px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 16px; }
th, td { border: 1px solid #d0d7de; padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.msg { white-space: pre-wrap; word-break: break-word; min-width: 40ch; }
tr.blocks td { background: #ffebe9; }
pre { background: #f6f8fa; padding: 8px; white-space: pre-wrap; word-break: break-word; }
code { font: 12px ui-monospace, monospace; }
.note { color: #57606a; }
img { max-width: 100%; }
"""


def _page(title: str, verdict: str, detail: str, body: Iterable[str]) -> str:
    colour = VERDICT_COLOURS[verdict]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # nothing on the page may load or run anything, whatever a message says
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "img-src data:; style-src 'unsafe-inline'\">",
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f'<header class="verdict" id="verdict" style="background: {colour}">',
        f"<h1>{escape(verdict)}</h1><p>{escape(title)}</p><p>{escape(detail)}</p></header>",
        "<main>",
        *body,
        "</main></body></html>",
        "",
    ])


def _number(value: Any) -> str:
    return "" if value is None else escape(f"{value:g}" if isinstance(value, float) else str(value))


def _plots(report: CheckReport) -> list[str]:
    from spec_verify.plots import PlotsUnavailable, plottable, png_bytes

    chosen = [r for r in report.results if plottable(r)]
    if not chosen:
        return []
    out = ["<h2>Observed against expected</h2>"]
    for result in chosen:
        try:
            data = base64.b64encode(png_bytes(result)).decode("ascii")
        except PlotsUnavailable as exc:
            return [*out[:1], f'<p class="note">plots left out: matplotlib is not installed '
                    f"({escape(str(exc))}); pip install 'spec-verify[plots]'</p>"]
        name = escape(f"{result.tier}/{result.name}")
        out.append(f'<figure><img alt="{name}" src="data:image/png;base64,{data}">'
                   f"<figcaption>{name}</figcaption></figure>")
    return out


def check_html(report: CheckReport, state: str = "complete") -> str:
    """The page of one ``check`` run; ``state`` as in the JSON (a run that did not complete
    has no verdict, and no plots)."""
    verdict, detail = reports.verdict_line(report, state)
    rows = reports.check_rows(report)
    body = [
        f"<p>{escape(reports.sandbox_line(report))}</p>",
        "<h2>Checks</h2>",
        "<table><thead><tr><th>tier</th><th>check</th><th>claim</th><th>status</th>"
        "<th>alpha</th><th>power</th><th>n</th><th>seconds</th><th>message</th></tr></thead>"
        "<tbody>",
    ]
    for row in rows:
        css = ' class="blocks"' if row["blocks"] else ""
        body.append(
            f"<tr{css}><td>{escape(row['tier'])}</td><td>{escape(row['check'])}</td>"
            f"<td>{escape(row['claim'])}</td><td>{escape(row['label'])}</td>"
            f"<td>{_number(row['alpha'])}</td><td>{_number(row['power'])}</td>"
            f"<td>{_number(row['n'])}</td><td>{row['seconds']:.1f}</td>"
            f'<td class="msg">{escape(row["message"])}</td></tr>'
        )
    body.append("</tbody></table>")
    failing = [row for row in rows if row["blocks"]]
    if failing:
        body.append("<h2>Failures</h2>")
        for row in failing:
            body.append(f"<h3>{escape(row['label'])} {escape(row['tier'])}/"
                        f"{escape(row['check'])}</h3><pre>{escape(row['message'])}</pre>")
            if row["repro"]:
                body.append(f"<p>reproduce: <code>{escape(row['repro'])}</code></p>")
    body.append(f"<h2>Evidence</h2><pre>{escape(chr(10).join(reports.format_evidence(report)))}"
                "</pre>")
    if state == "complete":
        body.extend(_plots(report))
    title = f"spec-verify check {report.impl}"
    return _page(title, verdict, detail, body)


def grade_html(result: GradeResult, fail_under: float = 0.0) -> str:
    """The page of one ``grade``: the grade, each mutant with its state and, for the ones the
    suite missed, the hint of what it missed (``MutantResult.hint``: the pitfall's text, or a
    custom catalogue's own hint). The verdict is the exit code's: PASSED
    when graded and the grade reaches ``fail_under`` percent."""
    from spec_verify.mutants.grader import _sandbox_line

    if result.graded:
        verdict = "PASSED" if 100 * result.grade >= fail_under else "FAILED"
        detail = (f"grade {result.detected}/{result.total} detected = "
                  f"{100 * result.grade:.1f}% (--fail-under {fail_under:g})")
    else:
        verdict, detail = "NO VERDICT", f"not graded: {result.refusal.value or result.reason}"
    body = [f"<p>{escape(result.reason)}</p>"]
    if result.sandbox is not None:
        body.append(f"<p>{escape(_sandbox_line(result.sandbox))}</p>")
    body.extend(f'<p class="note">note: {escape(note)}</p>' for note in result.notes)
    if result.mutants:
        body.append("<h2>Mutants</h2><table><thead><tr><th>mutant</th><th>title</th>"
                    "<th>state</th><th>seconds</th><th>killed by / hint</th></tr></thead><tbody>")
        for m in result.mutants:
            what = f"hint: {m.hint}" if m.hint else (m.killed_by or m.reason)
            css = ' class="blocks"' if m.state.value == "survived" else ""
            body.append(
                f"<tr{css}><td>{escape(m.mutant_id)}</td><td>{escape(m.title)}</td>"
                f"<td>{escape(m.state.value)}</td><td>{m.seconds:.2f}</td>"
                f'<td class="msg">{escape(what)}</td></tr>'
            )
        body.append("</tbody></table>")
    for failure in result.clean_failures[:20]:
        body.append(f"<pre>{escape(failure.test)}: {escape(failure.message)}</pre>")
    body.append(f'<p class="note">score: {escape(result.score_definition)}</p>')
    return _page(f"spec-verify grade {result.suite}", verdict, detail, body)
