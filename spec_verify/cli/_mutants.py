"""``spec-verify mutants list`` and ``spec-verify mutants show ID``: the mutant catalogue."""

from __future__ import annotations

import argparse
import sys

from spec_verify.cli._json_out import add_json_option, write_json
from spec_verify.results import ExitCode

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mutants`` sub-command to the CLI."""
    from spec_verify.mutants.catalogue import CATALOGUE  # plain data: no numpy for --help

    chains = [m.id for m in CATALOGUE if m.id.startswith("s")]
    trees = [m.id for m in CATALOGUE if m.id.startswith("t")]
    parser = subparsers.add_parser(
        "mutants",
        help=f"the mutant catalogue: {len(CATALOGUE)} planted bugs ({chains[0]}-{chains[-1]} on "
        f"chains, {trees[0]}-{trees[-1]} on trees) and the tests of ours that kill them",
        description="List the catalogue of planted bugs (each a small exact change to the "
        "reference source), or show one with its pitfall, symptom, killing test and diff.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="one line per mutant")
    add_json_option(listing, "the catalogue (a list, one object per mutant)")
    listing.add_argument("--real", action="store_true",
                         help="only the family of real bugs (r01..), with their citations")
    show = actions.add_parser("show", help="one mutant, with its diff against the reference")
    show.add_argument("mutant_id", metavar="ID", help="a catalogue id, e.g. s03")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the catalogue or one entry; exit code 2 for an unknown id."""
    from spec_verify.mutants import CATALOGUE, PITFALLS, UnknownMutant, mutant_by_id, unified_diff
    from spec_verify.mutants._source import reference_sources
    from spec_verify.mutants.real_bugs import REAL_BUGS, RealBug

    if args.action == "list":
        listed_mutants = REAL_BUGS if args.real else CATALOGUE
        if args.json:
            listed = [{
                "id": m.id, "title": m.title, "pitfall": m.pitfall, "origin": m.origin,
                "symptom": m.symptom, "files": [f"reference/{f}" for f in m.files],
                "killed_by": [f"tests/{t}" for t in m.killed_by],
                **({"citation": m.citation, "killed_by_checks": list(m.killed_by_checks)}
                   if isinstance(m, RealBug) else {}),
            } for m in listed_mutants]  # fmt: skip
            try:
                written = write_json(args.json, listed)
            except OSError as exc:
                print(f"spec-verify mutants: error: {exc}", file=sys.stderr)
                return ExitCode.USAGE_ERROR
            if written is None:
                return ExitCode.PASSED
            print(f"JSON: {written}", file=sys.stderr)
        if not args.real:
            print(f"{'id':<5}{'pitfall':<9}{'file':<24}title")
            for m in CATALOGUE:
                pitfall = str(m.pitfall) if m.pitfall is not None else "ours"
                print(f"{m.id:<5}{pitfall:<9}{'reference/' + m.files[0]:<24}{m.title}")
            print(f"\n{len(CATALOGUE)} mutants; `spec-verify mutants show ID` for one with "
                  "its diff\n")
        print(f"Real bugs ({REAL_BUGS[0].id}..{REAL_BUGS[-1].id}; not graded by default: "
              "`grade --mutants r01,...`):")
        print(f"{'id':<5}{'file':<24}{'title':<66}citation")
        for r in REAL_BUGS:
            print(f"{r.id:<5}{'reference/' + r.files[0]:<24}{r.title:<66}{r.citation}")
        return ExitCode.PASSED
    try:
        mutant = mutant_by_id(args.mutant_id)
    except UnknownMutant as error:
        print(f"spec-verify mutants: error: {error}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    pitfall = (f"{mutant.pitfall}. {PITFALLS[mutant.pitfall]}" if mutant.pitfall is not None
               else "(none of the known pitfalls)")
    print(f"{mutant.id}: {mutant.title}")
    origin = {"seed": "the known pitfalls", "real": "a reported bug"}.get(mutant.origin, "ours")
    print(f"origin:    {origin}")
    if isinstance(mutant, RealBug):
        print(f"citation:  {mutant.citation}")
    print(f"pitfall:   {pitfall}")
    print(f"symptom:   {mutant.symptom}")
    checks = mutant.killed_by_checks if isinstance(mutant, RealBug) else ()
    print("killed by: " + ", ".join([*(f"tests/{t}" for t in mutant.killed_by),
                                     *(f"check {c}" for c in checks)]))
    print()
    print(unified_diff(mutant, reference_sources()), end="")
    return ExitCode.PASSED
