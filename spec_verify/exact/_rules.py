"""Chain rules other than the contract's, proven lossless exactly (``prove --rule``).

For each case (small rational tables, V up to 6, k up to 4) a rule gets three verdicts:

- the reference rule's own law (``reference/rules_exact.py``, Fractions) composed into the
  first ``k + 1`` tokens equals the target's law: the rule is lossless on that case;
- an implementation (the rule's float64 reference by default, a port, a planted bug) is
  proven by cell enumeration over its injected uniforms (``prove_case`` on the sequence
  theorem): the law of everything it emits, averaged over the draft draws, against the
  target's; a mismatch is WRONG with the call that reproduces it;
- efficiency: the rule's exact expected accepted length beside the token rule's and, where
  the case is small enough, the optimum over every lossless rule (``_optimal.py``).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import TYPE_CHECKING

from spec_verify.errors import InvalidArgument
from spec_verify.exact._cells import Dist, one_hot
from spec_verify.exact._theorems import Case, CaseResult, Models, TableModel, prove_case
from spec_verify.results import CheckResult, Status

if TYPE_CHECKING:
    from spec_verify.adapters import Implementation

__all__ = [
    "CHAIN_RULES",
    "RULE_IMPLEMENTATIONS",
    "RuleCaseProof",
    "efficiency_markdown",
    "prove_rule",
    "rule_cases",
    "sequence_law_check",
]

# Rule name -> the spec of its float64 reference (what ``prove --rule`` proves by default).
RULE_IMPLEMENTATIONS = {
    "block": "python:spec_verify.reference.block",
    "sampler_match": "python:spec_verify.reference.sampler_match",
    "token": "reference",
    "traversal": "python:spec_verify.reference.traversal",
}
CHAIN_RULES = tuple(RULE_IMPLEMENTATIONS)

# (V, k, deterministic drafts): the default cases, small enough to prove in seconds each.
_DEFAULT_SIZES = [(2, 1, False), (3, 2, False), (2, 3, False), (4, 2, False), (3, 2, True),
                  (2, 4, False), (6, 1, False)]
_RANDOM_SIZES = [(2, 2), (3, 2), (2, 3), (4, 2), (3, 3), (5, 1), (6, 2), (2, 4)]


def _random_dist(rng: random.Random, V: int, zeros: float) -> Dist:
    weights = [0 if rng.random() < zeros else rng.randint(1, 9) for _ in range(V)]
    if not any(weights):
        weights[rng.randrange(V)] = rng.randint(1, 9)
    total = sum(weights)
    return tuple(Fraction(w, total) for w in weights)


def _table(key: str, V: int, zeros: float) -> TableModel:
    @cache
    def row(prefix: tuple[int, ...]) -> Dist:
        return _random_dist(random.Random(f"{key}|{prefix}"), V, zeros)

    return row


def _one_hot_table(key: str, V: int) -> TableModel:
    @cache
    def row(prefix: tuple[int, ...]) -> Dist:
        return one_hot(random.Random(f"{key}|{prefix}").randrange(V), V)

    return row


def _case(name: str, V: int, k: int, deterministic: bool, key: str) -> Case:
    target = _table(key + "/target", V, 0.2)
    draft = _one_hot_table(key + "/draft", V) if deterministic else _table(key + "/draft", V, 0.2)
    models = Models(V, (), target, draft, deterministic=deterministic)
    what = "one-hot drafts" if deterministic else "random rational tables"
    return Case("k_positions", name, f"V={V}, k={k}, {what}, context-dependent", models, k)


def rule_cases(n_random: int = 0, seed: int = 0) -> list[Case]:
    """The default cases (``rule/0..6``), then ``n_random`` seeded ones (``rule/7..``).

    Raises:
        InvalidArgument: ``n_random`` is negative.
    """
    if n_random < 0:
        raise InvalidArgument("cases", n_random, "must be >= 0")
    out = [_case(f"rule/{i}", V, k, det, f"rule/{i}")
           for i, (V, k, det) in enumerate(_DEFAULT_SIZES)]
    for j in range(n_random):
        rng = random.Random(f"{seed}/rule/{j}")
        V, k = _RANDOM_SIZES[rng.randrange(len(_RANDOM_SIZES))]
        index = len(_DEFAULT_SIZES) + j
        out.append(_case(f"rule/{index}", V, k, rng.random() < 0.25, f"{seed}/rule/{index}"))
    return out


@dataclass(frozen=True)
class RuleCaseProof:
    """One case of ``prove --rule``: the reference rule's law, the implementation's, and
    the efficiency numbers (exact expected accepted drafts per round)."""

    rule: str
    case: Case
    status: Status
    rule_lossless: bool
    implementation: CaseResult
    accepted: dict[str, Fraction]
    optimum: float | None
    seconds: float

    @property
    def message(self) -> str:
        """The implementation's verdict line (with its witness when WRONG)."""
        return self.implementation.message


def _check_rule(rule: str) -> None:
    if rule not in CHAIN_RULES:
        raise InvalidArgument("--rule", rule, f"must be one of {', '.join(CHAIN_RULES)}")


def prove_rule(rule: str, impl: Implementation, cases: list[Case],
               optimum: bool = True) -> list[RuleCaseProof]:
    """Prove ``rule`` (its Fraction law) and ``impl`` (by cell enumeration) on ``cases``.

    A case passes only when both laws equal the target's; ``status`` is the implementation's
    verdict, or FAILED when the reference rule itself is not lossless there.

    Raises:
        InvalidArgument: ``rule`` is not a chain rule.
    """
    from spec_verify.exact._optimal import optimal_accepted
    from spec_verify.reference.rules_exact import exact_rule_sequences, expected_accepted

    _check_rule(rule)
    out: list[RuleCaseProof] = []
    for case in cases:
        start = time.perf_counter()
        m = case.models
        law = exact_rule_sequences(rule, m.target, m.draft, m.context, case.k, case.length)
        lossless = {s: v for s, v in law.items() if v} == case.expected()
        result = prove_case(impl, case)
        status = result.status if lossless else Status.FAILED
        accepted = {name: expected_accepted(name, m.target, m.draft, m.context, case.k)
                    for name in dict.fromkeys((rule, "token", "block"))}
        best = optimal_accepted(m.target, m.draft, m.context, case.k) if optimum else None
        out.append(RuleCaseProof(rule, case, status, lossless, result, accepted, best,
                                 time.perf_counter() - start))
    return out


_SEVERITY = (Status.ERROR, Status.FAILED, Status.NOT_PROVABLE, Status.NOT_APPLICABLE)


def sequence_law_check(impl: Implementation, seed: int = 0) -> CheckResult:
    """``prove --impl``'s sequence law on the rule cases (context-dependent tables, k up to
    4): everything a round emits, averaged over the draft draws, continued with the target,
    against the target's law; whatever the implementation's rule. The theorems' own
    ``k_positions`` cases have constant rows, where some wrong rules (block verification with
    the token rule's stopping weight) are still exact."""
    start = time.perf_counter()
    results = [prove_case(impl, case) for case in rule_cases(0, seed)]
    statuses = {r.status for r in results}
    status = next((s for s in _SEVERITY if s in statuses), Status.PASSED)
    calls = sum(r.calls for r in results)
    what = ("everything a round emits (k up to 4, rows that depend on the tokens before "
            "them), averaged over the draft draws, follows the target's law")
    repro = f"spec-verify prove --impl {impl.name} --seed {seed}"
    if status is Status.PASSED and calls == 0:
        status, message = Status.NOT_PROVABLE, f"{what}: nothing proven (0 calls)"
    elif status is Status.PASSED:
        message = f"{what}: proven on {len(results)} cases ({calls} calls)"
    else:
        bad = next(r for r in results if r.status is status)
        message = bad.message
        repro = f"spec-verify prove --rule token --impl {impl.name} --seed {seed}"
    return CheckResult("exact", "sequence_law", status, message, n=len(results),
                       details={"seed": seed, "calls": calls,
                                "cases": [r.to_json() for r in results]},
                       repro=repro, seconds=time.perf_counter() - start)


def efficiency_markdown(cases: list[Case] | None = None) -> str:
    """The efficiency table of docs/rules.md, computed: each case's exact expected kept
    drafts per round under each chain rule, and the LP optimum (6 decimals)."""
    from spec_verify.exact._optimal import optimal_accepted
    from spec_verify.reference.rules_exact import expected_accepted

    lines = ["| case | V | k | drafts | token | block | sampler_match | traversal | optimum (LP) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for case in rule_cases() if cases is None else cases:
        m = case.models
        kept = [float(expected_accepted(r, m.target, m.draft, m.context, case.k))
                for r in ("token", "block", "sampler_match", "traversal")]
        best = optimal_accepted(m.target, m.draft, m.context, case.k)
        V = case.description.split(",")[0].removeprefix("V=")
        drafts = "one-hot" if m.deterministic else "sampled"
        cells = [case.name, V, str(case.k), drafts, *(f"{v:.6f}" for v in kept),
                 "-" if best is None else f"{best:.6f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
