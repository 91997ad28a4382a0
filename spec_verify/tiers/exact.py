"""The exact engine's public face: what the check runner, the CLI and users import.

- ``cells``: the cell enumerator (``enumerate_round``): one round's exact output distribution
  for any implementation that takes an injected uniform source;
- ``theorems``: the exactness theorems on seeded cases and ``run_exact_tier`` (one
  ``CheckResult`` per theorem);
- ``lossy``: lossy verification rules as implementations, and ``measure`` (exact bias and
  acceptance gained);
- ``symbolic``: sympy derivations of the per-token identity and the expected length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spec_verify.exact._cells import (
    GUARD,
    Enumeration,
    Round,
    check_dist,
    enumerate_round,
    parse_dist,
)
from spec_verify.exact._lossy import LOSSY_RULES, LossyReport, lossy_rule, measure
from spec_verify.exact._symbolic import Derivation, derivations
from spec_verify.exact._theorems import (
    DEFAULT_CASES,
    THEOREMS,
    Case,
    CaseResult,
    named_case,
    one_position_case,
    prove_case,
    run_theorem,
)
from spec_verify.exact._theorems import run_exact_tier as _run_chain_theorems
from spec_verify.profiles import RunContext, not_applicable_in
from spec_verify.results import CheckResult, Status

__all__ = [
    "DEFAULT_CASES",
    "GUARD",
    "LOSSY_RULES",
    "THEOREMS",
    "Case",
    "CaseResult",
    "Derivation",
    "Enumeration",
    "LossyReport",
    "Round",
    "check_dist",
    "derivations",
    "enumerate_round",
    "lossy_rule",
    "measure",
    "named_case",
    "one_position_case",
    "parse_dist",
    "prove_case",
    "run_exact_tier",
    "run_theorem",
]


def run_exact_tier(
    impl: Any,
    *,
    seed: int = 0,
    cases: int | None = None,
    theorems: Sequence[str] | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
    rule: str = "token",
    run: RunContext | None = None,
    **options: Any,
) -> list[CheckResult]:
    """Every theorem of ``_theorems.run_exact_tier`` (same arguments), then, for an
    implementation with ``verify_tree`` and all theorems asked, the tree law over the drafts
    (the LAW claim) and the per-fixed-tree check (conformance); under a ``rule`` other than
    the token rule (``check --rule``), ``rule.NAME``: per fixed draft, the rule's round law
    (``tiers._rules.check_rule_exact``). A check the ``run`` does not ask (``exact/tree`` and
    ``rule.NAME`` are conformance: not applicable under the lossless profile) is reported
    NOT_APPLICABLE without being computed."""
    if "verify_draft" in impl.capabilities:
        results = _run_chain_theorems(impl, seed=seed, cases=cases, theorems=theorems,
                                      quick=quick, progress=progress, **options)
    else:  # a tree-only module: the chain theorems need verify_draft
        results = [CheckResult("exact", "theorems", Status.SKIPPED,
                               f"{impl.name} has no verify_draft (tree-only): the chain "
                               "theorems do not apply; the tree checks below run")]
    if rule != "token" and theorems is None and "injected_uniforms" in impl.capabilities:
        from spec_verify.repro import repro_command
        from spec_verify.tiers._rules import check_rule_exact

        skipped = not_applicable_in(run, "exact", f"rule.{rule}")
        repro = repro_command(impl.name, ["exact"], seed=seed, quick=quick, rule=rule)
        results.append(skipped or check_rule_exact(impl, rule, quick=quick, progress=progress,
                                                   repro=repro))
    if theorems is None and "injected_uniforms" in impl.capabilities:
        from spec_verify.tiers.tree import check_tree_exact, check_tree_law

        for name, check in (("tree_law", check_tree_law), ("tree", check_tree_exact)):
            skipped = not_applicable_in(run, "exact", name)
            if skipped is not None and "verify_tree" in impl.capabilities:
                results.append(skipped)
                continue
            tree = check(impl, seed=seed, quick=quick, progress=progress)
            if tree is not None:
                results.append(tree)
    return results
