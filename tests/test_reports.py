"""Check reports: the table, JSON and JUnit XML."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from fractions import Fraction

import numpy as np

import spec_verify
from spec_verify.reports import (
    SCHEMA_VERSION,
    format_failures,
    format_summary,
    junit_xml,
    report_json,
    write_json,
)
from spec_verify.results import CheckResult, Status
from spec_verify.runner import CheckReport

REPORT = CheckReport(
    "ffi:/tmp/lib.so",
    3,
    ("contract", "parity"),
    (
        CheckResult("contract", "calls", Status.PASSED, "5 minimal calls", n=5, seconds=0.1),
        CheckResult(
            "parity",
            "verify_draft",
            Status.FAILED,
            "2 of 10 cases differ\nshrunk: V=2",
            n=10,
            details={"x": np.float64(0.5), "f": Fraction(1, 3), "inf": math.inf, "a": np.arange(2)},
            repro="spec-verify check --impl ffi:/tmp/lib.so --tier parity --case-seed 4",
        ),
        CheckResult("parity", "pcg32", Status.ERROR, "crashed with SIGSEGV", repro="r"),
        CheckResult("exact", "all", Status.SKIPPED, "not installed"),
    ),
    1.5,
)


def test_summary_and_failures():
    table = format_summary(REPORT)
    assert "contract  calls" in table
    assert "FAILED (1 passed, 1 failed, 1 errors, 1 skipped, 0 not provable, 0 not " \
        "applicable) in 1.5 s, seed 3, profile conformance" in table
    assert "profile: conformance" in table
    assert "--profile lossless" not in table  # a crash is no sign of a lossless sampler
    failures = format_failures(REPORT)
    assert "FAIL parity/verify_draft: 2 of 10 cases differ\nshrunk: V=2" in failures
    assert "reproduce: spec-verify check --impl ffi:/tmp/lib.so --tier parity --case-seed 4" in (
        failures
    )
    assert "ERROR parity/pcg32" in failures and "calls" not in failures


def test_json_is_plain(tmp_path):
    data = json.loads(write_json(REPORT, tmp_path / "sub" / "r.json").read_text())
    assert data["passed"] is False
    assert data["counts"]["failed"] == 1
    details = data["results"][1]["details"]
    assert details == {"x": 0.5, "f": "1/3", "inf": "inf", "a": [0, 1]}


def test_json_names_its_schema_and_the_tool_first():
    data = report_json(REPORT)
    assert list(data)[:3] == ["schema_version", "spec_verify_version", "report"]
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert data["spec_verify_version"] == spec_verify.__version__
    assert data["report"] == "check"
    assert data["impl"] == REPORT.impl  # the report's own fields follow, unchanged


def test_junit_maps_statuses():
    root = ET.fromstring(junit_xml(REPORT))
    assert root.tag == "testsuites" and root.get("failures") == "1" and root.get("errors") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"contract", "parity", "exact"}
    cases = {c.get("name"): c for c in root.iter("testcase")}
    failure = cases["verify_draft"].find("failure")
    assert failure is not None and "--case-seed 4" in (failure.text or "")
    assert cases["pcg32"].find("error") is not None
    assert cases["all"].find("skipped") is not None
    assert cases["calls"].find("failure") is None


def _not_provable_report(*, allow: bool, message: str = "breakpoints too close") -> CheckReport:
    return CheckReport(
        "python:port",
        0,
        ("contract", "exact"),
        (
            CheckResult("contract", "calls", Status.PASSED, "ok"),
            CheckResult("exact", "verify_draft", Status.NOT_PROVABLE, message),
        ),
        0.1,
        allow_not_provable=allow,
    )


def test_one_verdict_rule_drives_summary_exit_code_json_and_junit():
    for allow in (False, True):
        report = _not_provable_report(allow=allow)
        blocked = [report.blocks(r) for r in report.results]
        assert blocked == [False, not allow]
        assert report.passed is allow
        assert int(report.exit_code) == (0 if allow else 1)
        assert report.to_json()["passed"] is allow
        assert report.to_json()["blocking"] == ([] if allow else ["exact/verify_draft"])
        assert ("PASSED" if allow else "FAILED") in format_summary(report)
        root = ET.fromstring(junit_xml(report))
        # JUnit counts exactly what the exit code counts: a blocking not-provable is a failure
        assert root.get("failures") == ("0" if allow else "1")
        case = next(c for c in root.iter("testcase") if c.get("name") == "verify_draft")
        assert (case.find("failure") is None) is allow
        assert (case.find("skipped") is not None) is allow


def test_an_empty_report_never_passes():
    report = CheckReport("reference", 0, ("contract",), (), 0.0)
    assert not report.passed and int(report.exit_code) == 1


def test_junit_stays_valid_xml_whatever_the_message_holds():
    nasty = "bad\x00byte \x1b[31mred\x1b[0m \x07bell \ud800 \ufffe end\ttab\nline"
    report = _not_provable_report(allow=False, message=nasty)
    text = junit_xml(report)
    root = ET.fromstring(text)  # parses: every XML-illegal character was escaped
    failure = next(root.iter("failure"))
    assert "\\x00" in (failure.text or "") and "\\x1b" in (failure.text or "")
    assert "end\ttab\nline" in (failure.text or "")  # legal whitespace is kept
    assert "\x00" not in text and "\x1b" not in text


def _evidence_of(*results: CheckResult) -> str:
    from spec_verify.reports import format_evidence

    report = CheckReport("python:x", 0, ("exact", "statistical"), results, 1.0)
    return "\n".join(format_evidence(report))


def test_the_round_shapes_law_tested_are_listed_and_their_absence_said_plainly():
    first = CheckResult("statistical", "first_token.sampled_draft", Status.PASSED, "ok", n=9)
    exact_k1 = CheckResult("exact", "k_positions", Status.PASSED, "ok", n=1,
                           details={"cases": [{"drafts": 1}]})
    # an efficiency check with two drafts judges no law: it does not count
    tuple_law = CheckResult("statistical", "sequence.two_drafts", Status.PASSED, "ok", n=9)
    text = _evidence_of(first, exact_k1, tuple_law)
    assert "statistical/first_token.sampled_draft: one draft, the first token" in text
    assert "exact/k_positions: rounds of 1 draft, exactly" in text
    assert "sequence.two_drafts: " not in text.split("round shapes")[1].split("efficiency")[0]
    assert "no law check judged a round of two or more drafted positions" in text

    chain = CheckResult("statistical", "sequence.law_k4", Status.FAILED, "biased", n=9)
    skipped = CheckResult("statistical", "sequence.law_k2", Status.SKIPPED, "no source")
    text = _evidence_of(first, chain, skipped)
    assert "sequence.law_k4: a chain of 4 drafts, everything it emits" in text
    assert "law_k2" not in text
    assert "no law check judged" not in text
