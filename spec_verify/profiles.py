"""Two questions a run can ask, and what each check claims.

- ``lossless``: does the output follow the target law (greedy: token-identical)? What any
  speculative sampler owes its users, whatever its draw order, precision or generator.
- ``conformance`` (the default, today's gate): on top, does a port of *this* contract make the
  reference's decisions on the same uniforms (draw order, draw counts, errors on bad input,
  parity)?

Each check makes one kind of claim (``claim_of``): about the output **law**, about
**conformance** to the contract's mechanics, or about **efficiency** (how much is accepted, a
round's length). The lossless profile runs only law checks; conformance checks are not
applicable there; efficiency checks run, are reported on their own, and never fail it.
``not_applicable_reason`` also answers for what an implementation declares it does not do
(no greedy path): such checks are NOT_APPLICABLE under either profile, never a failure.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from spec_verify.errors import InvalidArgument
from spec_verify.results import CheckResult, Status

__all__ = [
    "PROFILES",
    "Claim",
    "Profile",
    "RunContext",
    "claim_of",
    "not_applicable_in",
    "not_applicable_reason",
    "parse_profile",
]


class Profile(str, enum.Enum):
    """Which question a run asks (see the module docstring)."""

    CONFORMANCE = "conformance"
    LOSSLESS = "lossless"


PROFILES = tuple(p.value for p in Profile)


class Claim(str, enum.Enum):
    """What a check's pass says about an implementation."""

    LAW = "law"  # the output follows the target law
    CONFORMANCE = "conformance"  # the contract's draw order, draw counts, errors, parity
    EFFICIENCY = "efficiency"  # how much is accepted: the round's length, the acceptance rate


# (tier, check) -> the claim; "*" stands for every check of a tier. Unlisted checks are LAW.
_CLAIMS: dict[tuple[str, str], tuple[Claim, str]] = {
    ("parity", "*"): (
        Claim.CONFORMANCE,
        "draw-order parity with the reference is a port's obligation, not a law of the output",
    ),
    ("contract", "errors"): (
        Claim.CONFORMANCE,
        "the contract's exception types on bad input are its API, not the output law",
    ),
    ("properties", "uniform_draw_count"): (
        Claim.CONFORMANCE,
        "how many uniforms are drawn is the contract's draw order, not the output law",
    ),
    ("properties", "same_stream_same_output"): (
        Claim.CONFORMANCE,
        "replaying one stream to one output holds only for samplers driven by that stream",
    ),
    ("statistical", "acceptance_rate"): (
        Claim.EFFICIENCY,
        "the acceptance rate against the optimum sum min(p, q) measures efficiency",
    ),
    ("statistical", "tree.acceptance_b2_d2"): (
        Claim.EFFICIENCY,
        "how many tree nodes a round accepts measures efficiency: a lossless tree sampler may "
        "accept less",
    ),
    ("statistical", "sequence.two_drafts"): (
        Claim.EFFICIENCY,
        "a round's emitted tuple is the token rule's, with how many drafts were kept: a "
        "lossless rule that accepts more (block verification) or less has another tuple law; "
        "the sequence.law_* checks ask the law question",
    ),
    ("exact", "expected_length"): (
        Claim.EFFICIENCY,
        "tokens per round is the token rule's round-length law: a lossless rule that accepts "
        "more (block verification) or less (sampler-match) has another",
    ),
    ("edges", "certain_acceptance"): (
        Claim.EFFICIENCY,
        "a rejection where p(x) >= q(x) loses acceptance; where p = q it is lossless if the "
        "empty residual falls back to p, and edges/uniforms judges the token it emits",
    ),
    ("exact", "rule.block"): (
        Claim.CONFORMANCE,
        "per fixed draft the law is block verification's (CONTRACT.md section 8), not the output "
        "law: another lossless rule has another",
    ),
    ("exact", "rule.sampler_match"): (
        Claim.CONFORMANCE,
        "per fixed draft the law is sampler-match's (CONTRACT.md section 9), not the output law: "
        "another lossless rule has another",
    ),
    ("exact", "rule.kseq"): (
        Claim.CONFORMANCE,
        "per fixed chains the law is K-SEQ's over K chains (CONTRACT.md section 12), not the "
        "output law: another lossless rule has another",
    ),
    ("exact", "rule.rrs"): (
        Claim.CONFORMANCE,
        "per fixed chains the law is recursive rejection sampling's over K chains (CONTRACT.md "
        "section 12), not the output law: another lossless rule has another",
    ),
    ("exact", "tree"): (
        Claim.CONFORMANCE,
        "per fixed tree the law is the contract's tree rule's: a lossless multi-draft rule "
        "(SpecTr K-SEQ) has another per-tree law and the target's law over the drafts, which "
        "exact/tree_law and the statistical tree checks test",
    ),
}

# Checks that need a greedy path (an implementation may declare it has none).
_GREEDY_CHECKS = frozenset(
    {
        ("greedy", "*"),
        ("properties", "greedy_is_argmax_chain"),
        ("properties", "greedy_speculative_equals_plain"),
    }
)


def parse_profile(value: object) -> Profile:
    """``value`` as a ``Profile``.

    Raises:
        InvalidArgument: not one of ``PROFILES``.
    """
    try:
        return Profile(value)
    except ValueError:
        raise InvalidArgument(
            "profile", value, f"unknown profile; choose one of {', '.join(PROFILES)}"
        ) from None


def _lookup(table: Iterable[tuple[str, str]], tier: str, name: str) -> tuple[str, str] | None:
    keys = set(table)
    for key in ((tier, name), (tier, "*")):
        if key in keys:
            return key
    return None


def claim_of(tier: str, name: str) -> Claim:
    """The kind of claim the check ``tier/name`` makes (LAW unless listed otherwise)."""
    key = _lookup(_CLAIMS, tier, name)
    return _CLAIMS[key][0] if key is not None else Claim.LAW


def why_claim(tier: str, name: str) -> str:
    """One sentence saying why ``tier/name`` is not a law check ("" for a law check)."""
    key = _lookup(_CLAIMS, tier, name)
    return _CLAIMS[key][1] if key is not None else ""


def not_applicable_reason(
    tier: str, name: str, profile: Profile, capabilities: frozenset[str], rule: str = "token"
) -> str | None:
    """Why ``tier/name`` does not apply to this run, or None when it does.

    ``name`` ``"*"`` asks about the whole tier (the runner then does not run it at all).
    ``rule``: the verification rule conformance is asked of (``check --rule``); the token
    rule's own mechanics are not asked of another (``tiers._rules.token_only_reason``).
    """
    from spec_verify.tiers._rules import token_only_reason

    only_token = token_only_reason(tier, name, rule)
    if only_token is not None:
        return only_token
    if _lookup(_GREEDY_CHECKS, tier, name) is not None and "greedy" not in capabilities:
        return "the implementation has no greedy path (it declares sampled-only)"
    if profile is Profile.LOSSLESS and claim_of(tier, name) is Claim.CONFORMANCE:
        return f"conformance only: {why_claim(tier, name)}; the lossless profile asks only " \
            "about the output law"
    return None


@dataclass(frozen=True)
class RunContext:
    """What one run asks of the tiers, handed to each as its ``run`` option by ``run_checks``:
    the profile, the rule conformance is asked of, and the capabilities the run grants (the
    implementation's, with the caller's overrides). A tier asks ``not_applicable`` before it
    computes a check, so a check the run would report as NOT_APPLICABLE costs nothing; called
    directly, without a context, a tier computes every check it has."""

    profile: Profile = Profile.CONFORMANCE
    rule: str = "token"
    capabilities: frozenset[str] = frozenset()

    def not_applicable(self, tier: str, name: str) -> CheckResult | None:
        """The NOT_APPLICABLE result of ``tier/name`` in this run, or None when it applies."""
        reason = not_applicable_reason(tier, name, self.profile, self.capabilities, self.rule)
        return None if reason is None else CheckResult(tier, name, Status.NOT_APPLICABLE, reason)


def not_applicable_in(run: RunContext | None, tier: str, name: str) -> CheckResult | None:
    """``run.not_applicable(tier, name)``; None without a run (a tier called directly)."""
    return None if run is None else run.not_applicable(tier, name)
