"""``check --rule NAME``: conformance to a verification rule other than the token rule.

A run asks two questions of an implementation (``spec_verify.profiles``); with a rule, the
second is asked of that rule's contract (CONTRACT.md section 8 for ``block``, 9 for
``sampler_match``) instead of the token rule's (section 3):

- **law** checks are the same whatever the rule: the lossless claim is the law of what is
  emitted, and every lossless rule owes the target's law;
- **conformance** checks compare against the rule: parity draws case by case the rule
  module's decisions on the same injected uniforms (``rule_outcome``), and the exact tier's
  ``rule.NAME`` check proves, per fixed draft, that the implementation's round law (cell
  enumeration over its uniforms) is the rule's ``Fraction`` law (``check_rule_exact``);
- the token rule's own mechanics (its draw count, its round-length law, its tuple law) are not
  asked of another rule: ``token_only_reason`` says so, and the run reports them as
  NOT_APPLICABLE.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any

from spec_verify.errors import InvalidArgument
from spec_verify.results import CheckResult, Progress, Status

__all__ = [
    "CHECK_RULES",
    "check_rule",
    "check_rule_exact",
    "rule_label",
    "rule_outcome",
    "rule_verify",
    "token_only_reason",
]

# The rules ``check --rule`` knows: "token" is the contract's (the default).
CHECK_RULES = ("token", "block", "sampler_match", "kseq", "rrs")

_SECTIONS = {"token": 3, "block": 8, "sampler_match": 9, "kseq": 12, "rrs": 12}

# Token-rule checks that ask about its mechanics or its efficiency, not the output law: under
# another rule they do not apply (the rule's own draw order is parity's question).
_TOKEN_ONLY = {
    ("properties", "uniform_draw_count"): "the token rule's draw count (2 per reached draft "
    "and a bonus)",
    ("statistical", "acceptance_rate"): "the token rule's acceptance rate sum min(p, q)",
    ("statistical", "sequence.two_drafts"): "the token rule's law of a round's tuple",
    ("exact", "expected_length"): "the token rule's round-length law",
    ("edges", "certain_acceptance"): "the token rule's acceptance where p(x) >= q(x)",
}


# Under a multi-draft rule over K chains (kseq, rrs) the contract's tree rule and the chain
# rule are not asked either: parity/rule.NAME and exact/rule.NAME ask the rule's own.
_MULTIDRAFT_ONLY = {
    ("parity", "verify_tree"): "per tree, the contract's tree rule's ids (section 6)",
    ("exact", "tree"): "per fixed tree, the contract's tree rule's law (section 6)",
    ("parity", "verify_draft"): "the chain rule's decisions (a K-chain rule has no chain "
    "verify_draft to compare)",
}


def check_rule(rule: object) -> str:
    """``rule`` as a rule name of ``CHECK_RULES``.

    Raises:
        InvalidArgument: any other value.
    """
    if not isinstance(rule, str) or rule not in CHECK_RULES:
        raise InvalidArgument("rule", rule, f"unknown rule; choose one of {', '.join(CHECK_RULES)}",
                              "e.g. --rule block")
    return rule


def rule_label(rule: str) -> str:
    """How reports name the rule's side: "the reference" or "the block rule"."""
    return "the reference" if rule == "token" else f"the {rule} rule"


def token_only_reason(tier: str, name: str, rule: str) -> str | None:
    """Why ``tier/name`` is not asked under ``rule``, or None when it is."""
    if rule == "token":
        return None
    what = _TOKEN_ONLY.get((tier, name))
    if what is None and rule in ("kseq", "rrs"):
        multi = _MULTIDRAFT_ONLY.get((tier, name))
        if multi is not None:
            return (f"{multi}: not asked under --rule {rule} (parity/rule.{rule} and "
                    f"exact/rule.{rule} check the {rule} rule, CONTRACT.md section 12)")
    if what is None:
        return None
    return (f"{what}: a mechanic of the token rule, not asked under --rule {rule} "
            f"(parity/verify_draft checks the {rule} rule's draw order, CONTRACT.md section "
            f"{_SECTIONS[rule]})")


def rule_verify(rule: str) -> Callable[..., tuple[list[int], int]]:
    """The float64 reference of ``rule``: a function with ``verify_draft``'s arguments."""
    check_rule(rule)
    if rule == "block":
        from spec_verify.reference.block import verify_block

        return verify_block
    if rule == "sampler_match":
        from spec_verify.reference.sampler_match import verify_sampler_match

        return verify_sampler_match
    from spec_verify.reference import verify_draft

    return verify_draft


def rule_outcome(case: Any, rule: str) -> Any:
    """``reference_outcome`` of a parity case under ``rule`` (a ``CallOutcome``)."""
    from spec_verify.adapters._calls import CallOutcome
    from spec_verify.uniforms import ScriptedUniforms

    verify = rule_verify(rule)
    script = ScriptedUniforms(case.uniforms if not case.greedy else ())
    try:
        result = verify(case.target_logits, list(case.draft_ids), case.draft_probs,
                        case.sampling_params(), list(case.history), script, list(case.prompt))
    except ValueError as exc:
        return CallOutcome.err(exc, script.drawn)
    return CallOutcome.ok((list(result[0]), int(result[1])), script.drawn)


def _fixed_drafts(case: Any) -> Iterator[tuple[tuple[int, ...], Fraction]]:
    """Every draft ``x_1..x_k`` the case's draft model proposes, with its probability."""
    m = case.models
    for ids in itertools.product(range(m.V), repeat=case.k):
        weight = Fraction(1)
        for i, x in enumerate(ids):
            weight *= m.draft(m.context + ids[:i])[x]
            if not weight:
                break
        if weight:
            yield ids, weight


def _rounds(quick: bool) -> Iterator[tuple[str, Any]]:
    """``(case name, Round)`` per fixed draft of the ``prove --rule`` cases."""
    from spec_verify.exact._cells import Round
    from spec_verify.exact._rules import rule_cases

    cases = rule_cases()
    if quick:
        cases = cases[:4]
    for case in cases:
        m = case.models
        for ids, _ in _fixed_drafts(case):
            p_rows = tuple(tuple(m.target(m.context + ids[:i])) for i in range(case.k + 1))
            q_rows = None if m.deterministic else tuple(
                tuple(m.draft(m.context + ids[:i])) for i in range(case.k))
            yield case.name, Round(p_rows, ids, q_rows)


def _law_text(law: dict[tuple[int, ...], Fraction]) -> str:
    return "{" + ", ".join(f"{list(k)}: {v}" for k, v in sorted(law.items()) if v) + "}"


def check_rule_exact(impl: Any, rule: str, *, quick: bool = False,
                     progress: Progress | None = None,
                     repro: str = "") -> CheckResult:
    """``exact/rule.NAME``: per fixed draft, the implementation's round law is the rule's.

    The cases are ``prove --rule``'s (``rule/0..6``: V up to 6, k up to 4, sampled and one-hot
    drafts; ``quick``: the first four); every draft they can propose is one round. A law that
    differs is FAILED with the round and both laws; a round the enumeration cannot complete is
    NOT_PROVABLE (or ERROR when the implementation failed).
    """
    from spec_verify.exact._cells import enumerate_round
    from spec_verify.reference.rules_exact import RULES

    if check_rule(rule) in ("kseq", "rrs"):
        from spec_verify.tiers._multidraft_rules import check_multidraft_exact

        return check_multidraft_exact(impl, rule, quick=quick, progress=progress, repro=repro)
    start = time.perf_counter()
    exact_rule = RULES[rule]
    name = f"rule.{rule}"
    rounds: Sequence[tuple[str, Any]] = list(_rounds(quick))
    unproven: tuple[str, Any, str] | None = None
    for done, (case_name, rnd) in enumerate(rounds):
        if progress:
            progress(f"exact: {name} round {done + 1}/{len(rounds)}")
        want = {k: v for k, v in exact_rule(rnd.p_rows, rnd.draft_ids, rnd.q_rows).items() if v}
        found = enumerate_round(impl, rnd)
        where = f"{case_name}, drafts {list(rnd.draft_ids)}"
        if found.status == "error":
            return CheckResult("exact", name, Status.ERROR,
                               f"{where}: the implementation failed: {found.reason}",
                               n=done, repro=repro, seconds=time.perf_counter() - start)
        if not found.complete:
            unproven = unproven or (where, rnd, found.reason)
            continue
        got = {k: v for k, v in found.distribution.items() if v}
        if got != want:
            return CheckResult(
                "exact", name, Status.FAILED,
                f"{where}: the round law differs from {rule_label(rule)}'s "
                f"(CONTRACT.md section {_SECTIONS[rule]}):\n  {rule}: {_law_text(want)}\n"
                f"  implementation: {_law_text(got)}",
                n=done + 1, repro=repro, seconds=time.perf_counter() - start,
                details={"case": case_name, "draft_ids": list(rnd.draft_ids)})
    seconds = time.perf_counter() - start
    if unproven is not None:
        return CheckResult("exact", name, Status.NOT_PROVABLE,
                           f"{unproven[0]}: not provable ({unproven[2]})",
                           n=len(rounds), repro=repro, seconds=seconds)
    return CheckResult(
        "exact", name, Status.PASSED,
        f"{len(rounds)} rounds (every draft of the prove --rule cases, V up to 6, k up to 4): "
        f"the round law of {rule_label(rule)} for each fixed draft, exactly",
        n=len(rounds), seconds=seconds)
