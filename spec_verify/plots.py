"""PNG plots of observed against expected frequencies, with each check's verdict.

``spec-verify check --plots DIR`` calls ``write_plots(results, DIR)``. matplotlib is an optional
extra (``pip install 'spec-verify[plots]'``); it is imported only here, only when plotting,
and without pyplot (no global backend or figure state is touched).
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from spec_verify.errors import SpecVerifyError
from spec_verify.results import CheckResult, Status

__all__ = ["PlotsUnavailable", "plottable", "png_bytes", "write_plots"]

_MAX_CELLS = 40  # beyond this the smallest expected cells are drawn as one "other" bar
_COLOR_BY_STATUS = {
    Status.PASSED: "#2b8a3e",
    Status.FAILED: "#c92a2a",
    Status.ERROR: "#c92a2a",
}


class PlotsUnavailable(SpecVerifyError, ImportError):
    """matplotlib is not installed; plots need the ``plots`` extra."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        super().__init__(
            "plots need matplotlib, which is not installed"
            + (f" ({reason})" if reason else "")
            + "; install it with: pip install 'spec-verify[plots]'"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason,))


def plottable(result: CheckResult) -> bool:
    """Whether ``result`` carries observed and expected counts per cell."""
    details = result.details
    cells, observed, expected = (details.get(k) for k in ("cells", "observed", "expected"))
    return (
        isinstance(cells, list)
        and isinstance(observed, list)
        and isinstance(expected, list)
        and len(cells) == len(observed) == len(expected) > 0
    )


def write_plots(results: Iterable[CheckResult], directory: str | os.PathLike[str]) -> list[Path]:
    """Write one PNG per result that has observed and expected counts; return their paths.

    Each plot shows the observed count of every cell (bars) against its expected count (a
    marker, with a band of two standard deviations), cells ordered by expected count, and the
    verdict, p-value, threshold, sample size and declared delta and power in the title. Cells
    the target gives probability 0 that were observed are drawn in red.

    Args:
        results: check results, e.g. from ``run_statistical_tier``; results without counts
            (skipped checks, non-statistical tiers) are passed over.
        directory: where to write ``<tier>-<name>.png`` (created if missing).

    Returns:
        The paths written, in the order of ``results``.

    Raises:
        PlotsUnavailable: matplotlib is not installed (the message says how to install it).
    """
    chosen = [result for result in results if plottable(result)]
    if not chosen:
        return []
    _matplotlib()  # a missing matplotlib is said before the folder is made
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for result in chosen:
        path = out / f"{_slug(result.tier)}-{_slug(result.name)}.png"
        path.write_bytes(png_bytes(result))
        paths.append(path)
    return paths


def png_bytes(result: CheckResult) -> bytes:
    """The plot of one plottable result (``plottable``) as PNG bytes (the HTML report inlines
    them).

    Raises:
        PlotsUnavailable: matplotlib is not installed.
    """
    figure_type, canvas_type = _matplotlib()
    figure = figure_type(figsize=(9, 4.8), dpi=100)
    canvas_type(figure)
    _draw(figure, result)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotsUnavailable(str(exc)) from exc
    return Figure, FigureCanvasAgg


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "check"


def _cells(result: CheckResult) -> tuple[list[str], list[int], list[float]]:
    """Cells by decreasing expected count; past ``_MAX_CELLS`` the rest merge into "other"
    (observed zero-probability cells are always kept)."""
    details = result.details
    rows = sorted(
        zip(details["cells"], details["observed"], details["expected"], strict=True),
        key=lambda row: (-float(row[2]), str(row[0])),
    )
    keep = [row for row in rows[:_MAX_CELLS]]
    rest = rows[_MAX_CELLS:]
    keep += [row for row in rest if float(row[2]) == 0 and int(row[1]) > 0]
    merged = [row for row in rest if not (float(row[2]) == 0 and int(row[1]) > 0)]
    labels = [str(row[0]) for row in keep]
    observed = [int(row[1]) for row in keep]
    expected = [float(row[2]) for row in keep]
    if merged:
        labels.append(f"other ({len(merged)})")
        observed.append(sum(int(row[1]) for row in merged))
        expected.append(math.fsum(float(row[2]) for row in merged))
    return labels, observed, expected


def _draw(figure: Any, result: CheckResult) -> None:
    labels, observed, expected = _cells(result)
    axes = figure.add_subplot(1, 1, 1)
    x = list(range(len(labels)))
    color = _COLOR_BY_STATUS.get(result.status, "#495057")
    bar_colors = [
        "#c92a2a" if e == 0 and o > 0 else "#74c0fc"
        for o, e in zip(observed, expected, strict=True)
    ]
    axes.bar(x, observed, color=bar_colors, label="observed", width=0.7)
    n = max(1, result.n or sum(observed))
    spread = [2 * math.sqrt(max(e * (1 - e / n), 0.0)) for e in expected]
    axes.errorbar(
        x,
        expected,
        yerr=spread,
        fmt="o",
        color="#212529",
        markersize=4,
        capsize=3,
        label="expected (± 2 sd)",
    )
    axes.set_xticks(x)
    axes.set_xticklabels(labels, rotation=90 if len(labels) > 12 else 0, fontsize=8)
    axes.set_xlabel(_axis_label(result))
    axes.set_ylabel("count")
    axes.legend(loc="upper right", fontsize=8)
    axes.set_title(_title(result), fontsize=9, color=color, loc="left")
    figure.tight_layout()


def _axis_label(result: CheckResult) -> str:
    test = str(result.details.get("test", ""))
    return "outcome" + (f" ({test})" if test else "")


def _title(result: CheckResult) -> str:
    details = result.details
    parts = [f"{result.name}: {result.status.value.upper()}"]
    if result.pvalue is not None:
        threshold = details.get("holm_threshold", result.alpha)
        parts.append(
            f"p={result.pvalue:.3g}" + (f" (threshold {threshold:.3g})" if threshold else "")
        )
    if result.n is not None:
        parts.append(f"n={result.n:,}")
    declared = [
        f"{key}={details[key]:g}" for key in ("delta", "power", "family_alpha") if key in details
    ]
    first = ", ".join(parts)
    return first + ("\n" + ", ".join(declared) if declared else "") + _interval(details)


def _interval(details: dict[str, Any]) -> str:
    interval: Sequence[float] | None = details.get("interval")
    if not interval:
        return ""
    return (
        f"; rate {details.get('observed_rate', float('nan')):.4g} in "
        f"[{interval[0]:.4g}, {interval[1]:.4g}], expected {details.get('expected_rate')}"
    )
