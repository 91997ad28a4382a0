"""Profiles: lossless apart from conformant; capabilities declared, detected or overridden."""

from __future__ import annotations

import json

import pytest

from spec_verify import reports
from spec_verify.adapters import CAPABILITIES, load_implementation
from spec_verify.cli import main
from spec_verify.cli._check import _CAPABILITIES, _PROFILES
from spec_verify.errors import InvalidArgument
from spec_verify.profiles import (
    PROFILES,
    Claim,
    Profile,
    claim_of,
    not_applicable_reason,
    parse_profile,
)
from spec_verify.results import CheckResult, Status
from spec_verify.runner import CheckReport, run_checks

_ALL = frozenset(CAPABILITIES)


@pytest.mark.parametrize(
    ("tier", "name", "claim"),
    [
        ("parity", "verify_draft", Claim.CONFORMANCE),
        ("parity", "pcg32", Claim.CONFORMANCE),
        ("contract", "errors", Claim.CONFORMANCE),
        ("contract", "calls", Claim.LAW),
        ("properties", "uniform_draw_count", Claim.CONFORMANCE),
        ("properties", "no_zero_probability_tokens", Claim.LAW),
        ("statistical", "acceptance_rate", Claim.EFFICIENCY),
        ("statistical", "sequence.two_drafts", Claim.EFFICIENCY),
        ("statistical", "sequence.law_k2", Claim.LAW),
        ("exact", "expected_length", Claim.EFFICIENCY),
        ("exact", "k_positions", Claim.LAW),
        ("exact", "tree", Claim.CONFORMANCE),
        ("statistical", "first_token.sampled_draft", Claim.LAW),
        ("exact", "one_position", Claim.LAW),
        ("greedy", "argmax_chain", Claim.LAW),
    ],
)
def test_each_check_makes_one_kind_of_claim(tier: str, name: str, claim: Claim) -> None:
    assert claim_of(tier, name) is claim


def test_what_does_not_apply_and_why() -> None:
    lossless, conformance = Profile.LOSSLESS, Profile.CONFORMANCE
    assert "conformance only" in str(not_applicable_reason("parity", "*", lossless, _ALL))
    assert not_applicable_reason("parity", "*", conformance, _ALL) is None
    assert not_applicable_reason("statistical", "acceptance_rate", lossless, _ALL) is None
    sampled_only = _ALL - {"greedy"}
    for profile in Profile:
        assert "no greedy path" in str(not_applicable_reason("greedy", "*", profile, sampled_only))
        assert not_applicable_reason(
            "properties", "greedy_is_argmax_chain", profile, sampled_only
        )
    assert not_applicable_reason("greedy", "*", conformance, _ALL) is None


def test_an_unknown_profile_is_refused_with_the_choices() -> None:
    assert parse_profile("lossless") is Profile.LOSSLESS
    with pytest.raises(InvalidArgument, match="conformance, lossless"):
        parse_profile("strict")


def _report(profile: Profile, *results: CheckResult, allow: bool = False) -> CheckReport:
    return CheckReport("python:x", 0, (), results, 1.0, allow_not_provable=allow, profile=profile)


_PASS = CheckResult("statistical", "first_token.sampled_draft", Status.PASSED, alpha=1e-7,
                    details={"power": 0.99, "delta": 0.1}, n=100)  # fmt: skip
_SLOW = CheckResult("statistical", "acceptance_rate", Status.FAILED, "accepts less")
_UNPROVEN = CheckResult("exact", "one_position", Status.NOT_PROVABLE, "float32 breakpoints")
_NA = CheckResult("exact", "injected_uniforms", Status.NOT_APPLICABLE, "own randomness")
_PARITY = CheckResult("parity", "verify_draft", Status.FAILED, "another draw order")
_LAW_FAIL = CheckResult("statistical", "first_token.sampled_draft", Status.FAILED, "biased")


@pytest.mark.parametrize(
    ("profile", "result", "allow", "blocks"),
    [
        (Profile.LOSSLESS, _SLOW, False, False),  # efficiency never fails lossless
        (Profile.CONFORMANCE, _SLOW, False, True),  # ... it is part of the conformance gate
        (Profile.LOSSLESS, _UNPROVEN, False, False),  # statistics decide under lossless
        (Profile.CONFORMANCE, _UNPROVEN, False, True),
        (Profile.CONFORMANCE, _UNPROVEN, True, False),
        (Profile.LOSSLESS, _NA, False, False),
        (Profile.CONFORMANCE, _NA, False, False),
        (Profile.LOSSLESS, _LAW_FAIL, False, True),
        (Profile.CONFORMANCE, _PARITY, False, True),
    ],
)
def test_the_verdict_rule_takes_the_profile(
    profile: Profile, result: CheckResult, allow: bool, blocks: bool
) -> None:
    report = _report(profile, _PASS, result, allow=allow)
    assert report.blocks(result) is blocks
    assert report.passed is not blocks
    junit = reports.junit_xml(report)
    assert ('<failure' in junit) is blocks
    assert f'name="profile" value="{profile.value}"' in junit
    assert json.loads(json.dumps(reports.report_json(report)))["profile"] == profile.value


def test_every_report_says_what_was_proven_tested_and_not_applicable() -> None:
    report = _report(Profile.LOSSLESS, _PASS, _SLOW, _UNPROVEN, _NA)
    text = reports.format_summary(report)
    assert "profile: lossless" in text
    assert "statistical/first_token.sampled_draft: passed at alpha 1e-07, power 0.99" in text
    assert "exact/injected_uniforms: own randomness" in text
    assert "not provable exactly: exact/one_position (not a failure under this profile" in text
    assert "efficiency (reported, never a failure under this profile)" in text
    assert "statistical/acceptance_rate: failed" in text
    assert "PASSED" in text
    evidence = reports.report_json(report)["evidence"]
    assert evidence["not_applicable"] == {"exact/injected_uniforms": "own randomness"}
    assert [t["check"] for t in evidence["tested_statistically"]] == [
        "statistical/first_token.sampled_draft"
    ]


def test_a_conformance_failure_with_every_law_check_passing_suggests_lossless() -> None:
    report = _report(Profile.CONFORMANCE, _PASS, _PARITY)
    assert report.law_checks_passed()
    assert "--profile lossless" in reports.format_summary(report)
    mixed = _report(Profile.CONFORMANCE, _PASS, _PARITY, _LAW_FAIL)
    assert not mixed.law_checks_passed()
    assert "--profile lossless" not in reports.format_summary(mixed)


def test_lossless_does_not_run_the_conformance_only_tier(reference) -> None:
    report = run_checks(reference, tiers=["parity"], profile="lossless")
    (result,) = report.results
    assert result.status is Status.NOT_APPLICABLE and "conformance only" in result.message
    assert report.passed and report.profile is Profile.LOSSLESS


# ---- capabilities ---------------------------------------------------------------------------


def test_a_module_declares_what_it_does_not_do() -> None:
    impl = load_implementation("python:tests.impls.sampled_only")
    assert "greedy" not in impl.capabilities and "verify_draft" in impl.capabilities
    report = run_checks(impl, tiers=["contract", "greedy"], profile="lossless")
    assert report.passed, [r.message for r in report.failures()]
    greedy = [r for r in report.results if r.tier == "greedy"]
    assert [r.status for r in greedy] == [Status.NOT_APPLICABLE]
    assert "no greedy path" in greedy[0].message


def test_without_the_declaration_a_sampled_only_sampler_fails_the_greedy_call() -> None:
    report = run_checks(
        "python:tests.impls.sampled_only", tiers=["contract"], capabilities={"greedy": True}
    )
    assert not report.passed
    assert "verify_draft (greedy)" in report.failures()[0].message


def test_a_malformed_declaration_is_a_load_failure_naming_it(tmp_path, monkeypatch) -> None:
    (tmp_path / "bad_caps.py").write_text(
        "from spec_verify.reference import verify_draft\n"
        "SPEC_VERIFY_CAPABILITIES = {'teleport': True}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    report = run_checks("python:bad_caps", tiers=["contract"])
    (result,) = report.results
    assert result.status is Status.FAILED
    assert "SPEC_VERIFY_CAPABILITIES" in result.message and "teleport" in result.message


def test_the_command_line_overrides_capabilities(capsys) -> None:
    code = main(["check", "--tier", "greedy", "--no-capability", "greedy", "--profile",
                 "lossless", "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "no greedy path" in out and "profile: lossless" in out


def test_a_capability_given_both_ways_is_a_usage_error(capsys) -> None:
    code = main(["check", "--capability", "greedy", "--no-capability", "greedy"])
    assert code == 2
    assert "both name ['greedy']" in capsys.readouterr().err


def test_the_cli_lists_match_the_library() -> None:
    assert set(_CAPABILITIES) == set(CAPABILITIES)
    assert _PROFILES == PROFILES


# ---- the "done when": lossless passes correct samplers of every kind ------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "passes"),
    [
        ("own_generator", True),  # own randomness, seeded from one harness uniform
        ("ignores_source", True),  # own randomness, never reads the injected source
        ("sampled_only", True),  # no greedy path (declared)
        ("float32_cumsum", True),  # float32 arithmetic: the exact tier is not provable
        ("threshold_bug", False),  # lossy: accepts 0.9 min(1, p/q)
    ],
)
def test_lossless_passes_correct_samplers_and_fails_lossy_ones(module: str, passes: bool) -> None:
    report = run_checks(f"python:tests.impls.{module}", quick=True, profile="lossless")
    assert report.passed is passes, reports.format_summary(report)
    if not passes:  # it fails on law checks, not only on efficiency
        assert any(claim_of(r.tier, r.name) is Claim.LAW for r in report.failures())
