"""The comparison's picture: per position, A's and B's token frequencies side by side.

One PNG, one panel per test (the joint law's most frequent sequences, then each position),
each titled with its p-value, Holm threshold and estimated TV; a rejected panel is red.
matplotlib is imported only here, without pyplot (no global figure state).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from spec_verify.endtoend._compare import CompareResult, Comparison
from spec_verify.plots import PlotsUnavailable

__all__ = ["write_compare_plot"]

_MAX_BARS = 24


def write_compare_plot(result: CompareResult, directory: str | os.PathLike[str]) -> Path:
    """Write ``compare.png`` into ``directory`` (created if missing) and return its path.

    Raises:
        PlotsUnavailable: matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotsUnavailable(str(exc)) from exc
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    panels = list(result.comparisons)
    figure = Figure(figsize=(10, 2.6 * max(1, len(panels))), dpi=100)
    FigureCanvasAgg(figure)
    for row, comparison in enumerate(panels):
        _panel(figure.add_subplot(len(panels), 1, row + 1), comparison, result)
    verdict = "same law" if result.passed else "DIFFERENT" if result.complete else "NO VERDICT"
    figure.suptitle(
        f"compare: {verdict} (n_a={result.n_a}, n_b={result.n_b}, family alpha "
        f"{result.family_alpha:g}; TV >= {result.detectable_tv:.3g} detected with power "
        f"{result.power:g})",
        fontsize=10,
    )
    figure.tight_layout()
    path = out / "compare.png"
    figure.savefig(path, format="png")
    return path


def _panel(ax: Any, comparison: Comparison, result: CompareResult) -> None:
    test = comparison.test
    rows = sorted(
        zip(test.categories, test.counts_a, test.counts_b, strict=True),
        key=lambda r: -(r[1] / test.n_a + r[2] / test.n_b),
    )
    shown = rows[:_MAX_BARS]
    rest = rows[_MAX_BARS:]
    labels = [str(c) for c, _, _ in shown]
    freq_a = [a / test.n_a for _, a, _ in shown]
    freq_b = [b / test.n_b for _, _, b in shown]
    if rest:
        labels.append(f"other ({len(rest)})")
        freq_a.append(sum(a for _, a, _ in rest) / test.n_a)
        freq_b.append(sum(b for _, _, b in rest) / test.n_b)
    x = list(range(len(labels)))
    ax.bar([i - 0.2 for i in x], freq_a, width=0.4, label="A", color="#74c0fc")
    ax.bar([i + 0.2 for i in x], freq_b, width=0.4, label="B", color="#ffa94d")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=90 if len(labels) > 10 else 0, fontsize=7)
    ax.set_ylabel("frequency")
    ax.legend(loc="upper right", fontsize=8)
    color = "#c92a2a" if comparison.rejected else "#2b8a3e"
    ax.set_title(
        f"{comparison.name}: p={test.pvalue:.3g} (Holm threshold {comparison.threshold:.3g}), "
        f"TV {comparison.tv:.3g} [{comparison.tv_low:.3g}, {comparison.tv_high:.3g}]",
        fontsize=9,
        color=color,
        loc="left",
    )
