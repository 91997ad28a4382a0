"""``spec-verify compare A B``: do two generators emit the same law of the first L tokens?

A and B are ``python:module:function`` (or ``python:file.py:function``): functions taking an
integer seed and returning token ids. The usual pair is speculative ``generate()`` against
plain sampling from the target. The library function is
``spec_verify.endtoend.compare_generators``; this module parses, shows progress and prints.
Exit code 0: same law (no test rejected, every draw made); 1: different laws, or a generator
failed (no verdict); 2: bad arguments (including a sample size below the power plan).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import Any

from spec_verify.cli._json_out import (
    add_json_option,
    emit_json,
    folder_problem,
    json_problem,
    text_stream,
    versioned,
)
from spec_verify.cli._usage import EXIT_CODES_IN_ONE_LINE

__all__ = ["register", "run"]

# Library argument names as the command line spells them.
_OPTION_BY_ARGUMENT = {
    "n": "--samples",
    "length": "--length",
    "vocab_size": "--vocab",
    "family_alpha": "--alpha",
    "alpha": "--alpha",
    "workers": "--workers",
    "delta": "--delta",
    "power": "--power",
    "timeout": "--timeout",
    "A": "A",
    "B": "B",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compare`` sub-command to the CLI."""
    parser = subparsers.add_parser(
        "compare",
        epilog=EXIT_CODES_IN_ONE_LINE,
        help="two-sample test of two generators' laws (e.g. speculative vs plain generate)",
        description=(
            "Draw N token sequences from generator A and from generator B (each a function "
            "seed -> token ids, given as python:module:function or python:file.py:function) "
            "in worker processes, then test whether the joint law of the first LENGTH tokens "
            "and each position's law are the same (two-sample G-tests, Holm at family ALPHA). "
            "N comes from the power plan: the joint test detects a TV of DELTA with "
            "probability POWER."
        ),
    )
    parser.add_argument("generator_a", metavar="A", help="python:module:function")
    parser.add_argument("generator_b", metavar="B", help="python:module:function")
    parser.add_argument("--vocab", type=int, required=True, metavar="V", help="vocabulary size")
    parser.add_argument(
        "--length",
        type=int,
        default=2,
        metavar="L",
        help="tokens compared per draw (default: %(default)s)",
    )
    parser.add_argument(
        "--samples", type=int, metavar="N", help="draws per generator (default: the power plan's)"
    )
    parser.add_argument(
        "--delta",
        type=float,
        default=0.1,
        help="TV between the joint laws to detect (default: %(default)g)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=1e-3,
        help="family-wise false-alarm rate (default: %(default)g)",
    )
    parser.add_argument(
        "--power",
        type=float,
        default=0.99,
        help="detection probability at DELTA (default: %(default)g)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="A draws seeds SEED+2j, B SEED+2j+1 (default: %(default)s)",
    )
    parser.add_argument("--workers", type=int, help="worker processes (default: CPUs)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds one draw may take before it is a hang (default: %(default)g)",
    )
    parser.add_argument("--plots", metavar="DIR", help="write compare.png here (matplotlib)")
    add_json_option(parser, "the verdict and every test")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compare, print the verdict and the per-position table; return the exit code."""
    from spec_verify._specs import check_generator
    from spec_verify.cli._usage import usage_line
    from spec_verify.errors import InvalidArgument
    from spec_verify.results import ExitCode

    problem = json_problem(args.json) or folder_problem("--plots", args.plots)
    if problem is None and args.workers is not None and args.workers < 1:
        problem = (f"--workers {args.workers}: must be an integer >= 1 (worker processes); "
                   "leave it out for one per CPU")
    if problem is not None:
        print(f"spec-verify compare: error: {problem}", file=sys.stderr)
        return int(ExitCode.USAGE_ERROR)
    try:  # before numpy and the workers: a typo is a usage error at once
        check_generator(args.generator_a, "A")
        check_generator(args.generator_b, "B")
    except InvalidArgument as error:
        print(usage_line("compare", error, _OPTION_BY_ARGUMENT), file=sys.stderr)
        return int(ExitCode.USAGE_ERROR)
    from spec_verify.endtoend import compare_generators

    out = text_stream(args)
    progress = _Progress(sys.stderr)
    try:
        result = compare_generators(
            args.generator_a,
            args.generator_b,
            length=args.length,
            vocab_size=args.vocab,
            n=args.samples,
            delta=args.delta,
            family_alpha=args.alpha,
            power=args.power,
            root_seed=args.seed,
            workers=args.workers,
            timeout=args.timeout,
            progress=progress,
        )
    except InvalidArgument as error:
        print(usage_line("compare", error, _OPTION_BY_ARGUMENT), file=sys.stderr)
        return int(ExitCode.USAGE_ERROR)
    progress.close()
    _print(result, args, out)
    if args.json and (
        code := emit_json("compare", args.json, versioned("compare", _as_json(result, args)), out)
    ) is not None:
        return code
    if args.plots and result.comparisons:
        from spec_verify.endtoend._plot import write_compare_plot
        from spec_verify.plots import PlotsUnavailable

        try:
            path = write_compare_plot(result, args.plots)
        except PlotsUnavailable as exc:
            print(f"plot skipped: {exc}", file=sys.stderr)
        else:
            print(f"plot: {path}", file=out)
    return int(ExitCode.PASSED if result.passed else ExitCode.FAILED)


class _Progress:
    """A one-line bar on a terminal; on a pipe, a line at every tenth of the work."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._shown = -1
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: dict[str, int], requested: dict[str, int]) -> None:
        total = sum(requested.values())
        count = sum(done.values())
        share = count / total if total else 1.0
        parts = " ".join(f"{k} {done[k]}/{requested[k]}" for k in requested)
        if self._tty:
            now = time.monotonic()
            if now - self._last < 0.1 and count < total:
                return
            self._last = now
            bar = "#" * int(30 * share)
            self._stream.write(f"\rdrawing [{bar:<30}] {parts}")
            self._stream.flush()
            self._drawn = True
        elif int(share * 10) > self._shown:
            self._shown = int(share * 10)
            self._stream.write(f"drawing: {parts}\n")
            self._stream.flush()

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()


def _print(result: Any, args: argparse.Namespace, out: Any = None) -> None:
    out = out or sys.stdout
    verdict = "SAME LAW" if result.passed else "DIFFERENT" if result.complete else "NO VERDICT"
    # The message opens with the verdict in words ("same law: ...", "different laws: ...", "no
    # verdict: ..."): the label replaces them, so the verdict is said once.
    head, sep, rest = result.message.partition(": ")
    known = head in ("same law", "different laws", "no verdict")
    print(f"{verdict}: {rest if sep and known else result.message}", file=out)
    for failure in result.failures:
        if failure.detail.strip():
            tail = failure.detail.strip().splitlines()[-6:]
            print("    " + "\n    ".join(tail), file=out)
    if not result.comparisons:
        return
    print(
        f"A = {args.generator_a}\nB = {args.generator_b}\n"
        f"first {result.length} tokens, V={result.vocab_size}, n_a={result.n_a}, "
        f"n_b={result.n_b}, family alpha {result.family_alpha:g} (Holm over "
        f"{len(result.comparisons)} tests), {result.seconds:.1f} s",
        file=out,
    )
    header = ("test", "G", "cells", "p-value", "Holm threshold", "TV [95% interval]", "verdict")
    rows = []
    for c in result.comparisons:
        t = c.test
        how = f"{t.df + 1}" if t.method == "chi2" else f"{t.df + 1} (perm.)"
        rows.append(
            (
                c.name,
                f"{t.statistic:.4g}",
                how,
                f"{t.pvalue:.3g}",
                f"{c.threshold:.3g}",
                f"{c.tv:.3f} [{c.tv_low:.3f}, {c.tv_high:.3f}]",
                "REJECTED" if c.rejected else "ok",
            )
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)),
              file=out)
    print(
        f"detectable: a TV of {result.detectable_tv:.3g} or more between the joint laws is "
        f"found with probability {result.power:g}",
        file=out,
    )
    if not result.passed and result.complete:
        words = ["spec-verify", "compare", args.generator_a, args.generator_b,
                 "--vocab", str(result.vocab_size), "--length", str(result.length),
                 "--samples", str(result.n_a), "--alpha", f"{result.family_alpha:g}",
                 "--seed", str(args.seed)]  # fmt: skip
        print(f"reproduce: {shlex.join(words)}", file=out)  # pasted in a shell, it runs as is


def _as_json(result: Any, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "passed": result.passed,
        "complete": result.complete,
        "pvalue": result.pvalue,
        "family_alpha": result.family_alpha,
        "power": result.power,
        "detectable_tv": result.detectable_tv,
        "n_a": result.n_a,
        "n_b": result.n_b,
        "length": result.length,
        "vocab_size": result.vocab_size,
        "generator_a": args.generator_a,
        "generator_b": args.generator_b,
        "seed": args.seed,
        "message": result.message,
        "failures": [
            {"generator": f.label, "spec": f.spec, "seed": f.seed, "reason": f.reason, "fix": f.fix}
            for f in result.failures
        ],
        "tests": [
            {
                "test": c.name,
                "statistic": c.test.statistic,
                "pvalue": c.test.pvalue,
                "method": c.test.method,
                "cells": c.test.df + 1,
                "threshold": c.threshold,
                "rejected": c.rejected,
                "tv": c.tv,
                "tv_interval": [c.tv_low, c.tv_high],
            }
            for c in result.comparisons
        ],
    }
