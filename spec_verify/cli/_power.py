"""``spec-verify power``: plan a statistical check before running it.

``--delta D`` gives the number of samples that detect a sampler at total-variation distance
``D`` from the target; ``--samples N`` gives the smallest distance ``N`` samples detect. Both at
false-alarm rate ``--alpha`` with probability ``--power``, over ``--vocab`` tokens.
"""

from __future__ import annotations

import argparse
import sys

from spec_verify.cli._json_out import (
    add_json_option,
    emit_json,
    json_problem,
    text_stream,
    versioned,
)
from spec_verify.cli._usage import EXIT_CODES_IN_ONE_LINE
from spec_verify.errors import InvalidArgument
from spec_verify.results import ExitCode

__all__ = ["register", "run"]

# Library argument names as the command line spells them.
_OPTION_BY_ARGUMENT = {
    "V": "--vocab",
    "alpha": "--alpha",
    "delta": "--delta",
    "n": "--samples",
    "power": "--power",
    "budget": "--budget",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``power`` sub-command to the CLI."""
    parser = subparsers.add_parser(
        "power",
        epilog=EXIT_CODES_IN_ONE_LINE,
        help="sample size for a goodness-of-fit check (or the deviation a sample size detects)",
        description=(
            "Plan a G-test against the target: the samples needed to detect a total-variation "
            "distance DELTA, or the smallest DELTA that SAMPLES draws detect, with probability "
            "POWER at false-alarm rate ALPHA over VOCAB tokens. Uses the hardest alternative "
            "(chi-square divergence 4*delta^2), so the answer holds for every target."
        ),
    )
    parser.add_argument("--vocab", type=int, required=True, metavar="V", help="number of tokens")
    parser.add_argument(
        "--alpha", type=float, default=1e-6, help="false-alarm rate (default: %(default)g)"
    )
    parser.add_argument(
        "--power", type=float, default=0.99, help="detection probability (default: %(default)g)"
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--delta", type=float, help="TV distance to detect: print the required samples"
    )
    target.add_argument(
        "--samples", type=int, metavar="N", help="sample size: print the detectable delta"
    )
    parser.add_argument(
        "--budget",
        type=int,
        metavar="N",
        help="with --delta: fail (exit 2) if more than N samples are needed, saying what fits",
    )
    add_json_option(parser, "the plan")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the plan; exit code 0, or 2 on an invalid or unaffordable request."""
    from spec_verify.cli._usage import usage_line

    problem = json_problem(args.json)
    if problem is not None:
        print(f"spec-verify power: error: {problem}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        report = _plan(args)
    except InvalidArgument as error:
        print(usage_line("power", error, _OPTION_BY_ARGUMENT), file=sys.stderr)
        return ExitCode.USAGE_ERROR
    out = text_stream(args)
    if args.delta is not None:
        print(f"required samples: {report['samples']}", file=out)
    else:
        print(f"detectable delta: {report['delta']:.6g}", file=out)
    print(_describe(report), file=out)
    if args.json and (
        code := emit_json("power", args.json, versioned("power", report), out)
    ) is not None:
        return code
    return ExitCode.PASSED


def _plan(args: argparse.Namespace) -> dict[str, float | int | str]:
    from spec_verify.stats._power import detectable_delta, noncentrality, required_samples

    if args.delta is not None:
        samples = required_samples(
            args.vocab, args.alpha, args.delta, args.power, budget=args.budget
        )
        delta = float(args.delta)
        mode = "samples"
    else:
        if args.budget is not None:
            raise InvalidArgument(
                "budget", args.budget, "only applies with --delta", "drop --budget"
            )
        samples = int(args.samples)
        delta = detectable_delta(args.vocab, args.alpha, samples, args.power)
        mode = "delta"
    return {
        "solved_for": mode,
        "vocab": int(args.vocab),
        "alpha": float(args.alpha),
        "power": float(args.power),
        "delta": delta,
        "samples": samples,
        "noncentrality": noncentrality(args.vocab, args.alpha, args.power),
    }


def _describe(report: dict[str, float | int | str]) -> str:
    return (
        f"  V={report['vocab']}, alpha={report['alpha']:g}, power={report['power']:g}, "
        f"delta={report['delta']:.6g} (total variation), samples={report['samples']}, "
        f"noncentrality={report['noncentrality']:.6g}"
    )
