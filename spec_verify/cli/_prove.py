"""``spec-verify prove``: exact proofs by cell enumeration, sympy derivations, lossy rules.

Modes (one per call):

- ``--p 1/2,1/4,1/4 --q 1/4,1/2,1/4 [--x 1]``: one position, the hand-worked table for
  each drafted ``x`` (the cells each draw falls in, their exact widths, the outcome), then the
  first token over ``x ~ q`` against ``p`` and the verdict;
- ``--case THEOREM/INDEX``: one generated case (as failures print it), its distribution against
  the target's;
- ``--theorem NAME``: one theorem on ``--cases`` seeded cases; no mode: every theorem. The law
  theorems (the law of everything emitted, averaged over the draft draws) are the proof
  whatever ``--impl``'s rule; the token rule's round-length law (``expected_length``) is
  reported apart as conformance to the token rule (CONFORMANT / NOT CONFORMANT, never WRONG);
- ``--symbolic``: the sympy derivations of the per-token identity and the expected length;
- ``--lossy RULE --p .. --q ..``: a lossy rule's exact output, TV distance and acceptance;
- ``--rule block|sampler_match|token|traversal``: a chain rule (CONTRACT.md sections 3, 8, 9) proven
  lossless on small cases (V up to 6, k up to 4; ``--cases N`` random ones added): its exact
  Fraction law, ``--impl`` by cell enumeration (default: the rule's own float64 reference;
  ``mutant:b01`` and the other rule mutants load here), and each case's exact expected
  accepted drafts beside the token rule's and the optimum of any lossless rule (an LP);
- ``--tree``: the tree rules (CONTRACT.md section 6): the reference's lossless rules proven
  exact over the draft draws (V up to 8, branching and depth up to 3), ``--impl``'s law per
  fixed tree against the rule's (V up to 64, up to 16 nodes; ``--cases`` random trees), and
  Medusa's typical acceptance reported with its exact bias at each threshold.

Exit code 0 only on a proven pass (of the law; conformance to the token rule is reported); 1
when anything failed, errored or was not provable; 2 on bad input.
"""

from __future__ import annotations

import argparse
import io
import sys
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from spec_verify.cli._json_out import (
    STDOUT,
    add_json_option,
    emit_json,
    json_problem,
    versioned,
)
from spec_verify.cli._usage import EXIT_CODES_IN_ONE_LINE
from spec_verify.errors import InvalidArgument
from spec_verify.results import ExitCode, Status
from spec_verify.seeds import seed_option

if TYPE_CHECKING:
    from spec_verify.exact._cells import Dist, Enumeration

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``prove`` sub-command to the CLI."""
    parser = subparsers.add_parser(
        "prove",
        epilog=EXIT_CODES_IN_ONE_LINE,
        help="prove an implementation exact by enumerating the cells of its uniform draws",
        description=(
            "Prove, with exact fractions, that an implementation's output distribution equals "
            "the target's: every draw's cells of [0, 1) are enumerated, the implementation is "
            "called with a float inside each, and outcomes are weighted by exact cell widths. "
            "Exit code 0 only on a proven pass."
        ),
    )
    parser.add_argument("--impl", default=None,
                        help="implementation spec, as for check: reference (the default; with "
                        "--rule, the rule's own float64 reference), "
                        "python:path/to/file.py, python:pkg.mod, ffi:path/to/lib.so, mutant:sNN")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--case", metavar="THEOREM/INDEX", help="one generated case")
    mode.add_argument("--theorem", help="one theorem on --cases seeded cases")
    mode.add_argument("--symbolic", action="store_true",
                      help="print the sympy derivations of the identities")
    mode.add_argument("--tree", action="store_true",
                      help="prove the tree rules over the draft draws, check --impl per fixed "
                      "tree, and measure typical acceptance's bias")
    mode.add_argument("--rule", choices=("block", "sampler_match", "token", "traversal", "kseq",
                                         "rrs"),
                      help="prove a chain rule (or the multi-draft rules kseq, rrs over K "
                      "draft chains) lossless on small cases, --impl by cell "
                      "enumeration, with each case's expected accepted length and the optimum")
    mode.add_argument("--lossy", metavar="RULE",
                      help="measure a lossy rule (typical, ensemble:w=1/2, confidence:tau=1/2) "
                      "on --p and --q")
    parser.add_argument("--p", metavar="P", help="target row, fractions: 1/2,1/4,1/4")
    parser.add_argument("--q", metavar="Q", help="draft row, fractions: 1/4,1/2,1/4")
    parser.add_argument("--x", type=int, help="with --p/--q: show the table for this draft only")
    parser.add_argument("--p-next", metavar="P",
                        help="with --p/--q: the bonus row after a kept draft (default: p)")
    parser.add_argument("--seed", type=seed_option("--seed"), default=0,
                        help="seed of generated cases, in [0, 2**63) (%(default)s)")
    parser.add_argument("--cases", type=int, default=None,
                        help="cases per theorem (default: the tier's)")
    parser.add_argument("--leaves", action="store_true",
                        help="print every enumerated leaf, however many")
    add_json_option(parser, "the proof")
    parser.set_defaults(func=run)


# The exact engine imports numpy: loaded when a proof runs, not when ``--help`` builds the parser.
def format_fraction(value: Fraction) -> str:
    from spec_verify.exact._cells import format_fraction as exact_format

    return exact_format(value)


def parse_dist(text: str, argument: str) -> Dist:
    from spec_verify.exact._cells import parse_dist as exact_parse

    return exact_parse(text, argument)


def run(args: argparse.Namespace) -> int:
    """Dispatch on the mode; see the module docstring for exit codes."""
    problem = json_problem(args.json)
    if problem is not None:
        print(f"spec-verify prove: error: {problem}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        return _rule(args) if args.rule else _run(args)
    except InvalidArgument as error:
        from spec_verify.cli._usage import usage_line

        print(usage_line("prove", error, {"impl": "--impl", "case": "--case"}), file=sys.stderr)
        return ExitCode.USAGE_ERROR


def _run(args: argparse.Namespace) -> int:
    if args.impl is None:
        args.impl = "reference"
    if args.cases is not None and args.cases < (0 if args.tree else 1):
        # Zero cases prove nothing: "proven" over an empty set would be a vacuous verdict. (In
        # --tree mode --cases counts the random trees added to the fixed ones, so 0 is fine.)
        rule = (
            "must be >= 0 (random trees added to the fixed ones)"
            if args.tree
            else "must be >= 1 (zero cases prove nothing)"
        )
        raise InvalidArgument("--cases", args.cases, rule)
    given = args.p is not None or args.q is not None
    if args.symbolic:
        return _symbolic(args)
    if args.tree:
        if given:
            raise InvalidArgument("--tree", True, "goes without --p and --q")
        return _tree(args)
    if args.lossy:
        if args.p is None or args.q is None:
            raise InvalidArgument("--lossy", args.lossy, "needs --p and --q")
        return _lossy(args)
    if given:
        if args.case or args.theorem:
            raise InvalidArgument("--p", args.p, "goes without --case and --theorem")
        if args.p is None or args.q is None:
            raise InvalidArgument("--p/--q", (args.p, args.q), "give both")
        return _given(args)
    if args.x is not None:
        raise InvalidArgument("--x", args.x, "only applies with --p and --q",
                              "give --p and --q, or drop --x")
    if args.p_next is not None:
        raise InvalidArgument("--p-next", args.p_next, "only applies with --p and --q",
                              "give --p and --q, or drop --p-next")
    if args.case:
        return _case(args)
    return _theorems(args)


# ---------------------------------------------------------------------------------------------
# printing


def _row(dist: Dist) -> str:
    return "[" + ", ".join(map(format_fraction, dist)) + "]"


def _key(key: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, key)) + "]"


def _verdict(status: Status) -> str:
    return {
        Status.PASSED: "PROVEN EXACT",
        Status.FAILED: "WRONG",
        Status.NOT_PROVABLE: "NOT PROVABLE",
        Status.ERROR: "ERROR",
        Status.SKIPPED: "SKIPPED",
        Status.NOT_APPLICABLE: "NOT APPLICABLE",
    }[status]


def _table(rows: list[list[str]], header: list[str], indent: str = "  ") -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append(indent + "  ".join("-" * w for w in widths))
    lines += [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))
              for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def _leaves_table(enumeration: Enumeration) -> str:
    rows = []
    for number, leaf in enumerate(enumeration.leaves, 1):
        cells = " | ".join(f"{d.role} {d.cell} {d.cell.label}" for d in leaf.draws)
        uniforms = ", ".join(f"{u:.6g}" for u in leaf.uniforms)
        rows.append([str(number), cells, format_fraction(leaf.weight), _key(leaf.emitted),
                     str(leaf.n_accepted), uniforms])
    return _table(rows, ["#", "cells (draw, cell, what the contract makes of it)", "width",
                         "emitted", "kept", "uniforms"])


def _enumeration_text(enumeration: Enumeration) -> str:
    rnd = enumeration.round
    lines = []
    if enumeration.leaves:
        lines.append(_leaves_table(enumeration))
    lines.append(f"  {len(enumeration.leaves)} leaves, {enumeration.calls} calls; "
                 f"status {enumeration.status}")
    if enumeration.reason:
        lines.append(f"  reason: {enumeration.reason} (uniforms {list(enumeration.script)})")
    lines += [f"  note: {note}" for note in enumeration.notes]
    _ = rnd
    return "\n".join(lines)


def _comparison(result: Any) -> str:
    rows = [[_key(key), format_fraction(o), format_fraction(e), format_fraction(d)]
            for key, o, e, d in result.rows()]
    return _table(rows, ["outcome", "obtained", "expected", "difference"])


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str, ok: bool) -> int:
    if args.json:
        where = io.StringIO()  # the text comes first, then where the JSON went
        code = emit_json("prove", args.json, versioned("prove", payload), where)
        if code is not None:
            return code
        if args.json != STDOUT:
            print(text)
            print(where.getvalue(), end="")
    else:
        print(text)
    return ExitCode.PASSED if ok else ExitCode.FAILED


# ---------------------------------------------------------------------------------------------
# modes


def _impl(args: argparse.Namespace) -> Any:
    from spec_verify.adapters._loader import load_implementation

    return load_implementation(args.impl)


MAX_GIVEN_VOCAB = 128


def _given(args: argparse.Namespace) -> int:
    from spec_verify.exact._theorems import one_position_case, prove_case
    from spec_verify.reference.exact import step_table

    p, q = parse_dist(args.p, "--p"), parse_dist(args.q, "--q")
    if len(p) > MAX_GIVEN_VOCAB:
        # One enumeration per drafted token, each over O(V) cells: about V^2 (measured:
        # V = 50 in 7 s, V = 200 in 110 s on 2 cores; V = 2,000 would take hours).
        raise InvalidArgument(
            "--p", f"{len(p)} entries",
            f"the exact proof enumerates every drafted token over every cell, about V^2 work; "
            f"V is at most {MAX_GIVEN_VOCAB} here (about a minute)",
            "prove a smaller row, or test a large vocabulary with `spec-verify check` (its "
            "statistical tier)",
        )  # fmt: skip
    bonus = parse_dist(args.p_next, "--p-next") if args.p_next else None
    case = one_position_case(p, q, bonus)
    if args.x is not None and not (0 <= args.x < len(q) and q[args.x] > 0):
        raise InvalidArgument("--x", args.x, f"must be a token with q(x) > 0 in [0, {len(q)})")
    impl = _impl(args)
    result = prove_case(impl, case)
    lines = [
        f"spec-verify prove: {impl.name}",
        f"target p = {_row(p)}; draft q = {_row(q)}; bonus row = {_row(bonus or p)}",
    ]
    for enumeration in result.enumerations:
        x = enumeration.round.draft_ids[0]
        if args.x is not None and x != args.x:
            continue
        lines.append("")
        lines.append(f"drafted x = {x} (q(x) = {q[x]}):")
        lines.append(_table([list(r) for r in step_table(p, q, x)],
                            ["step", "computation", "result"]))
        lines.append("enumerated:")
        lines.append(_enumeration_text(enumeration))
    lines.append("")
    lines.append("first token over x ~ q:")
    lines.append(_comparison(result))
    lines.append(f"verdict: {_verdict(result.status)}: {result.message}")
    payload = {
        "mode": "given", "impl": impl.name, "p": [str(v) for v in p], "q": [str(v) for v in q],
        "verdict": result.status.value, "result": result.to_json(),
        "enumerations": [e.to_json() for e in result.enumerations],
    }
    return _emit(args, payload, "\n".join(lines), result.status is Status.PASSED)


def _case(args: argparse.Namespace) -> int:
    from spec_verify.exact._theorems import THEOREMS, named_case, prove_case

    case = named_case(args.case, args.seed)
    impl = _impl(args)
    result = prove_case(impl, case)
    lines = [
        f"spec-verify prove: {impl.name}",
        f"case {case.name} (seed {args.seed}): {THEOREMS[case.theorem]}",
        f"  {case.description}",
        f"  {len(result.enumerations)} rounds enumerated, {result.calls} calls",
        "",
    ]
    leaves = sum(len(e.leaves) for e in result.enumerations)
    if args.leaves or leaves <= 40:
        for e in result.enumerations:
            rnd = e.round
            lines.append(f"round after history {list(rnd.history)} with drafts "
                         f"{list(rnd.draft_ids)}:")
            lines.append(_enumeration_text(e))
        lines.append("")
    else:
        lines.append(f"({leaves} leaves in {len(result.enumerations)} rounds; --leaves prints "
                     "them)")
    lines.append(_comparison(result))
    lines += [f"note: {note}" for note in result.notes]
    lines.append(f"verdict: {_verdict(result.status)}: {result.message}")
    if result.status is not Status.PASSED:
        lines.append(f"reproduce: spec-verify prove --impl {impl.name} --case {case.name} "
                     f"--seed {args.seed}")
    payload = {
        "mode": "case", "impl": impl.name, "seed": args.seed, "verdict": result.status.value,
        "result": result.to_json(),
    }
    return _emit(args, payload, "\n".join(lines), result.status is Status.PASSED)


def _theorems(args: argparse.Namespace) -> int:
    from spec_verify.exact._rules import sequence_law_check
    from spec_verify.exact._theorems import DEFAULT_CASES, THEOREMS, run_exact_tier
    from spec_verify.profiles import Claim, claim_of, why_claim

    names = (*THEOREMS, "sequence_law")
    if args.theorem is not None and args.theorem not in names:
        raise InvalidArgument("--theorem", args.theorem, f"choose from {', '.join(names)}")
    impl = _impl(args)
    cases = DEFAULT_CASES if args.cases is None else args.cases
    if args.theorem == "sequence_law":  # its own 7 cases (context-dependent, k up to 4)
        checks = [sequence_law_check(impl, args.seed)]
    else:
        theorems = None if args.theorem is None else [args.theorem]
        checks = run_exact_tier(impl, seed=args.seed, cases=cases, theorems=theorems)
        if theorems is None:
            checks.insert(2, sequence_law_check(impl, args.seed))
    # The law theorems are the proof (the law of everything emitted, averaged over the draft
    # draws, whatever the rule); the others are the token rule's round-length law: conformance,
    # where a lossless rule that accepts more (block verification) or less simply differs.
    law = [c for c in checks if claim_of("exact", c.name) is Claim.LAW]
    token_rule = [c for c in checks if claim_of("exact", c.name) is not Claim.LAW]
    lines = [f"spec-verify prove: {impl.name}, seed {args.seed}, {cases} cases per theorem"]
    if law:
        lines.append("the output law, averaged over the draft draws (whatever the rule):")
    for check in law:
        lines.extend(_check_lines(check, _verdict(check.status)))
    if token_rule:
        lines.append("conformance to the contract's token rule (not the law: "
                     f"{why_claim('exact', token_rule[0].name)}):")
    for check in token_rule:
        lines.extend(_check_lines(check, _conformance(check.status)))
    ok = bool(law) and all(c.status is Status.PASSED for c in law)
    conformant = all(c.status is Status.PASSED for c in token_rule)
    verdict = "PROVEN EXACT" if ok else "NOT PROVEN"
    if token_rule:
        verdict += ("; conformant to the token rule" if conformant else
                    "; not conformant to the token rule ("
                    + ", ".join(c.name for c in token_rule if c.status is not Status.PASSED)
                    + ")")
    elif ok:
        verdict += " (the law theorems asked; conformance to the token rule not asked)"
    lines.append(f"verdict: {verdict}")
    payload = {"mode": "theorems", "impl": impl.name, "seed": args.seed,
               "verdict": "passed" if ok else "not_passed",
               "token_rule": None if not token_rule else
               ("conformant" if conformant else "not_conformant"),
               "checks": [{**c.to_json(), "claim": claim_of("exact", c.name).value}
                          for c in checks]}
    return _emit(args, payload, "\n".join(lines), ok)


def _check_lines(check: Any, verdict: str) -> list[str]:
    lines = [f"  {verdict:<13} {check.name:<24} {check.message}"]
    for case in check.details.get("cases", []):
        if case["status"] != "passed":
            lines.append(f"      {case['status']:<13} {case['message']}")
    if check.status is not Status.PASSED and check.repro:
        lines.append(f"      reproduce: {check.repro}")
    return lines


def _conformance(status: Status) -> str:
    """A token-rule check's verdict: another rule differs here, which is not WRONG."""
    return {Status.PASSED: "CONFORMANT", Status.FAILED: "NOT CONFORMANT"}.get(
        status, _verdict(status))


def _symbolic(args: argparse.Namespace) -> int:
    from spec_verify.exact._symbolic import derivations

    found = derivations()
    ok = all(d.proven for d in found)
    text = "\n\n".join(d.render() for d in found)
    payload = {"mode": "symbolic", "verdict": "passed" if ok else "failed",
               "derivations": [d.to_json() for d in found]}
    return _emit(args, payload, text, ok)


def _lossy(args: argparse.Namespace) -> int:
    from spec_verify.exact._lossy import lossy_rule, measure

    rule = lossy_rule(args.lossy)
    report = measure(rule, parse_dist(args.p, "--p"), parse_dist(args.q, "--q"))
    exact = report.complete and report.tv == Fraction(0)
    verdict = "exact" if exact else ("lossy" if report.complete else "incomplete")
    text = report.render() + f"\nverdict: {verdict}"
    payload = {"mode": "lossy", "verdict": verdict, "report": report.to_json()}
    return _emit(args, payload, text, exact)


def _tree(args: argparse.Namespace) -> int:
    from spec_verify.exact._tree_proofs import prove_tree_rules, typical_bias
    from spec_verify.tiers.tree import check_tree_exact

    impl = _impl(args)
    proofs = prove_tree_rules(seed=args.seed)
    lines = [f"spec-verify prove --tree (seed {args.seed})", "",
             "the reference's lossless rules, one round averaged over the draft tree's draws, "
             "continued with the target to depth + 1 tokens, against plain sampling:"]
    lines.append(_table(
        [[p.rule, str(p.V), str(p.branching), str(p.depth), str(p.outcomes),
          format_fraction(p.mean_kept), "PROVEN EXACT" if p.proven else f"WRONG (TV {p.tv})"]
         for p in proofs],
        ["rule", "V", "branching", "depth", "outcomes", "mean kept", "verdict"]))
    rules_ok = all(p.proven for p in proofs)
    cases = 8 if args.cases is None else args.cases
    check = check_tree_exact(impl, seed=args.seed, count=cases, max_V=64, max_nodes=16)
    lines += ["", f"{impl.name} per fixed tree (V up to 64, up to 16 nodes, {cases} random trees "
              "and the hand examples):"]
    if check is None:
        lines.append(f"  SKIPPED: {impl.name} does not offer verify_tree")
        impl_ok = False
    else:
        lines.append(f"  {_verdict(check.status)}: {check.message}")
        impl_ok = check.status is Status.PASSED
        if not impl_ok and check.repro:
            lines.append(f"  reproduce: {check.repro}")
    bias = typical_bias(seed=args.seed)
    lines += ["", "typical acceptance (Medusa; lossy): exact bias of one round (V = 4, branching "
              "2, depth 2), delta = sqrt(epsilon):"]
    lines.append(_table(
        [[format_fraction(b.epsilon), f"{b.delta:.4g}", f"{float(b.tv):.6f}",
          f"{float(b.tv_first):.6f}",
          ", ".join(f"{t}: {format_fraction(v)}" for t, v in b.first_token_error.items()),
          f"{float(b.mean_kept):.4f}", f"{float(b.lossless_mean_kept):.4f}"] for b in bias],
        ["epsilon", "delta", "TV", "TV first", "first token P - p", "kept", "kept (lossless)"]))
    lines.append("  (every threshold is biased: TV > 0; exact values in --json)"
                 if all(b.tv > 0 for b in bias) else "  (TV 0 at some thresholds)")
    ok = rules_ok and impl_ok
    lines.append(f"verdict: {'PROVEN EXACT' if ok else 'NOT PROVEN'}")
    payload = {"mode": "tree", "impl": impl.name, "seed": args.seed,
               "verdict": "passed" if ok else "not_passed",
               "rules": [p.to_json() for p in proofs],
               "implementation": None if check is None else check.to_json(),
               "typical": [b.to_json() for b in bias]}
    return _emit(args, payload, "\n".join(lines), ok)


MAX_RULE_CASES = 200  # random cases take up to ~10 s each (V = 2, k = 4; measured)


def _rule(args: argparse.Namespace) -> int:
    if args.rule in ("kseq", "rrs"):
        return _multidraft_rule(args)
    from spec_verify.exact._rules import RULE_IMPLEMENTATIONS, prove_rule, rule_cases
    from spec_verify.mutants.rules import load_rule_mutant, rule_mutant_by_id

    if args.p is not None or args.q is not None:
        raise InvalidArgument("--rule", args.rule, "goes without --p and --q")
    extra = 0 if args.cases is None else args.cases
    if not 0 <= extra <= MAX_RULE_CASES:
        raise InvalidArgument("--cases", extra, f"with --rule must be in [0, {MAX_RULE_CASES}] "
                              "(random cases added to the default ones)")
    spec = RULE_IMPLEMENTATIONS[args.rule] if args.impl is None else args.impl
    if spec.startswith("mutant:") and rule_mutant_by_id(spec.partition(":")[2]) is not None:
        impl = load_rule_mutant(spec)
    else:
        args.impl = spec
        impl = _impl(args)
    try:
        proofs = prove_rule(args.rule, impl, rule_cases(extra, args.seed))
    finally:
        impl.close()
    others = [r for r in ("token", "block") if r != args.rule]
    rows = []
    for pr in proofs:
        a = pr.accepted
        rows.append([pr.case.name, pr.case.description.split(",")[0][2:],
                     str(pr.case.k), "one-hot" if pr.case.models.deterministic else "sampled",
                     "PROVEN EXACT" if pr.rule_lossless else "WRONG",
                     _verdict(pr.implementation.status), f"{float(a[args.rule]):.6f}",
                     *(f"{float(a[r]):.6f}" for r in others),
                     "-" if pr.optimum is None else f"{pr.optimum:.6f}",
                     f"{pr.seconds:.1f}"])
    lines = [f"spec-verify prove --rule {args.rule} (impl {impl.name}, seed {args.seed}, "
             f"{len(proofs)} cases)", "",
             "each case: the rule's exact law, then the implementation's by cell enumeration "
             "(the first k + 1 tokens, averaged over the draft draws) against the target's; "
             "E[kept] is the exact expected number of drafts one round keeps, the optimum the "
             "largest any lossless rule reaches with the same draft (an LP, floats):",
             _table(rows, ["case", "V", "k", "drafts", "rule law", "implementation",
                           f"E[kept] {args.rule}", *(f"E[kept] {r}" for r in others),
                           "optimum", "s"])]
    for pr in proofs:
        if pr.implementation.status is not Status.PASSED:
            lines.append(f"  {_verdict(pr.implementation.status)}: {pr.message}")
    ok = all(pr.status is Status.PASSED for pr in proofs)
    if args.rule == "sampler_match":  # its law also has a symbolic proof (sympy)
        from spec_verify.exact._rule_symbolic import sampler_match_identity

        derivation = sampler_match_identity()
        lines += ["", derivation.render()]
        ok = ok and derivation.proven
    lines.append(f"verdict: {'PROVEN EXACT' if ok else 'NOT PROVEN'}")
    payload = {
        "mode": "rule", "rule": args.rule, "impl": impl.name, "seed": args.seed,
        "verdict": "passed" if ok else "not_passed",
        "cases": [{"case": pr.case.name, "description": pr.case.description, "k": pr.case.k,
                   "rule_lossless": pr.rule_lossless, "status": pr.status.value,
                   "message": pr.message,
                   "expected_accepted": {r: format_fraction(v) for r, v in pr.accepted.items()},
                   "optimum": pr.optimum, "seconds": pr.seconds,
                   "implementation": pr.implementation.to_json()} for pr in proofs],
    }
    return _emit(args, payload, "\n".join(lines), ok)


def _multidraft_rule(args: argparse.Namespace) -> int:
    """``--rule kseq|rrs``: K draft chains (CONTRACT.md section 12), ``--impl`` a
    ``verify_tree`` module."""
    from spec_verify.exact._multidraft import (
        MULTIDRAFT_IMPLEMENTATIONS,
        multidraft_cases,
        prove_multidraft,
    )
    from spec_verify.mutants.rules import load_rule_mutant, rule_mutant_by_id

    if args.p is not None or args.q is not None:
        raise InvalidArgument("--rule", args.rule, "goes without --p and --q")
    extra = 0 if args.cases is None else args.cases
    if not 0 <= extra <= MAX_RULE_CASES:
        raise InvalidArgument("--cases", extra, f"with --rule must be in [0, {MAX_RULE_CASES}] "
                              "(random cases added to the default ones)")
    spec = MULTIDRAFT_IMPLEMENTATIONS[args.rule][0] if args.impl is None else args.impl
    if spec.startswith("mutant:") and rule_mutant_by_id(spec.partition(":")[2]) is not None:
        impl = load_rule_mutant(spec)
    else:
        args.impl = spec
        impl = _impl(args)
    try:
        caps = impl.capabilities  # a mapping to flags, or the set of offered names
        offered = caps.get("verify_tree", False) if hasattr(caps, "get") else "verify_tree" in caps
        if not offered:
            raise InvalidArgument("--impl", spec, f"has no verify_tree; --rule {args.rule} "
                                  "calls it with K draft chains as a tree (CONTRACT.md "
                                  "section 12)", "export verify_tree(target_logits, parents, "
                                  "token_ids, draft_probs, p, history, rng, prompt, rule)")
        proofs = prove_multidraft(args.rule, impl, multidraft_cases(extra, args.seed))
    finally:
        impl.close()
    names = ["kseq", "rrs", "rrs_with", "tree_with", "token", "block"]
    rows = [[pr.case.name, str(pr.case.K), str(pr.case.L), str(pr.case.V),
             "PROVEN EXACT" if pr.rule_lossless else "WRONG", _verdict(pr.status),
             *(f"{float(pr.accepted[n]):.6f}" for n in names),
             *("-" if pr.optimum.get(k) is None else f"{pr.optimum[k]:.6f}"
               for k in ("iid", "without")), f"{pr.seconds:.1f}"]
            for pr in proofs]
    lines = [f"spec-verify prove --rule {args.rule} (impl {impl.name}, seed {args.seed}, "
             f"{len(proofs)} cases of K draft chains of L tokens)", "",
             "each case: the rule's exact law, then the implementation's by cell enumeration "
             "on every draw of the chains, averaged and continued by the target to L + 1 "
             "tokens, against the target's; E[kept] is the exact expected number of drafts one "
             "round keeps: K-SEQ, recursive rejection without (rrs) and with replacement "
             "(rrs_with), the tree rule with_replacement on the same chains (tree_with), one "
             "chain's token rule and block verification; the optima are the largest E[kept] any "
             "lossless rule reaches with the same chains, i.i.d. or drawn without "
             "replacement (rrs's: a tree branching per the case, docs/rules.md; a coupling "
             "LP, floats):",
             _table(rows, ["case", "K", "L", "V", "rule law", "implementation",
                           *(f"E[kept] {n}" for n in names), "optimum iid",
                           "optimum without", "s"])]
    for pr in proofs:
        if pr.status is not Status.PASSED:
            lines.append(f"  {_verdict(pr.status)}: {pr.message}")
    rhos = _rho_lines(proofs) if args.rule == "kseq" else []
    lines += rhos
    ok = all(pr.status is Status.PASSED for pr in proofs)
    lines.append(f"verdict: {'PROVEN EXACT' if ok else 'NOT PROVEN'}")
    payload = {"mode": "rule", "rule": args.rule, "rho": rhos, "impl": impl.name, "seed": args.seed,
               "verdict": "passed" if ok else "not_passed",
               "cases": [pr.to_json() for pr in proofs]}
    return _emit(args, payload, "\n".join(lines), ok)


def _rho_lines(proofs: list[Any]) -> list[str]:
    """What the K-SEQ proof claims about ``rho``: the contract's grid value, decided exactly,
    and only a bracket of SpecTr's continuous smallest valid one (its first position)."""
    from spec_verify.reference.multidraft_exact import kseq_rho_bounds
    from spec_verify.reference.rules_exact import exact_kseq_rho

    out = ["rho at the first position: the proof is of the grid's rho (CONTRACT.md section "
           "10, decided exactly); SpecTr's smallest valid rho is only bracketed (upper end "
           "proven valid, lower end 1 or proven invalid):"]
    for pr in proofs:
        target, draft = pr.case.tree_case("kseq").tables()
        p, q = tuple(target(())), tuple(draft(()))
        lo, hi = kseq_rho_bounds(p, q, pr.case.K, Fraction(1, 2**20))
        out.append(f"  {pr.case.name}: grid rho {format_fraction(exact_kseq_rho(p, q, pr.case.K))}"
                   f", smallest valid in [{float(lo):.6f}, {float(hi):.6f}]")
    return out
