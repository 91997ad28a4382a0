"""Exact acceptance of the lossless tree rules against the branching factor, and the PNG of it.

Prints, for each lossless rule (``with_replacement``, ``without_replacement``), the exact
expected number of drafts kept per round (``spec_verify.exact.acceptance_by_branching``: one
round of a full tree of depth 2, V = 6, seeded rational tables, averaged exactly over the draft
tree's draws), and writes ``docs/trees_acceptance.png`` when matplotlib is installed.

    python benchmarks/tree_acceptance.py [--out docs/trees_acceptance.png]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spec_verify.exact import acceptance_by_branching


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parents[1] / "docs" /
                                             "trees_acceptance.png"))
    parser.add_argument("--V", type=int, default=6)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--max-branching", type=int, default=4)
    args = parser.parse_args()
    by_rule = acceptance_by_branching(V=args.V, depth=args.depth,
                                      max_branching=args.max_branching)
    print(f"expected drafts kept per round (V = {args.V}, full tree of depth {args.depth}):")
    print(f"{'branching':>9}  " + "  ".join(f"{rule:>20}" for rule in by_rule))
    for i in range(args.max_branching):
        row = [by_rule[rule][i][1] for rule in by_rule]
        print(f"{i + 1:>9}  " + "  ".join(f"{float(v):>20.6f}" for v in row))
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    figure = Figure(figsize=(5.5, 3.6))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for rule, points in by_rule.items():
        axes.plot([b for b, _ in points], [float(v) for _, v in points], marker="o",
                  label=rule.replace("_", " "))
    axes.set_xlabel("branching factor (children per node)")
    axes.set_ylabel("expected drafts kept per round")
    axes.set_title(f"lossless tree rules, exact (V = {args.V}, depth {args.depth})")
    axes.set_xticks(range(1, args.max_branching + 1))
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
