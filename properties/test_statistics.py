"""The statistical tier, as tests against the implementation under test.

The whole tier runs once per module (Holm's correction is across the run, so the verdicts of
the checks belong together); each check is then its own test, named after it. Options:
``--spec-seed`` (the root seed), ``--spec-alpha`` (family-wise false-alarm rate, 1e-6),
``--spec-delta`` (the total-variation distance each check detects, 0.05), ``--spec-power``
(0.99), ``--spec-sequential`` (stop a check early once an e-process rejects).
"""

from __future__ import annotations

from typing import Any

import pytest

from spec_verify.results import CheckResult, Status
from spec_verify.tiers.statistical import check_names, run_statistical_tier

pytestmark = pytest.mark.spec_statistical


@pytest.fixture(scope="module")
def statistical_results(
    spec_impl: Any, spec_seed: int, spec_statistics: dict[str, Any]
) -> dict[str, CheckResult]:
    results = run_statistical_tier(spec_impl, seed=spec_seed, **spec_statistics)
    return {result.name: result for result in results}


@pytest.mark.parametrize("name", check_names())
def test_statistical_check(statistical_results: dict[str, CheckResult], name: str) -> None:
    result = statistical_results[name]
    if result.status is Status.SKIPPED:
        pytest.skip(result.message)
    if not result.passed:
        pytest.fail(f"{name}: {result.message}", pytrace=False)
