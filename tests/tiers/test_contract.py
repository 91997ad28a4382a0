"""The contract tier's ``inputs`` check: valid calls leave every input bitwise as given.

Negative controls rebuild the real bug (the caller's buffers written in place: -inf logits
"sanitised", draft rows renormalised with vLLM PR #16952's in-place ``div_``) in a worker, in
process, and behind an adapter that passes the harness's arrays through unguarded; the
honest control does the same writes on copies of its own and passes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from spec_verify.adapters import load_implementation
from spec_verify.adapters._implementations import Implementation
from spec_verify.cli import main
from spec_verify.reference import SamplingParams
from spec_verify.reference import verify_draft as reference_verify_draft
from spec_verify.results import Status
from spec_verify.runner import run_checks
from spec_verify.tiers import contract
from spec_verify.tiers.contract import run_contract_tier

INPLACE_LOGITS = "python:tests.impls.inplace_logits"
INPLACE_DRAFT_PROBS = "python:tests.impls.inplace_draft_probs"
COPIES = "python:tests.impls.copies_inputs"


def results_by_name(spec: str, **load: Any) -> dict[str, Any]:
    impl = load_implementation(spec, **load)
    try:
        return {r.name: r for r in run_contract_tier(impl, quick=True)}
    finally:
        impl.close()


def test_the_probes_hold_what_in_place_shortcuts_change() -> None:
    rows, q = contract._INPUT_ROWS, contract._INPUT_Q
    assert np.isneginf(rows).any(axis=1).all()  # every row has a -inf to "sanitise"
    assert (q.sum(axis=1) != 1.0).any()  # a renormalisation changes a row
    assert np.allclose(q.sum(axis=1), 1.0, atol=1e-6)  # ... that is valid as given


@pytest.mark.parametrize("in_process", [False, True])
def test_writing_the_callers_logits_fails_the_inputs_check(in_process: bool) -> None:
    results = results_by_name(INPLACE_LOGITS, in_process=in_process)
    assert results["calls"].status is Status.PASSED  # the minimal calls have no -inf
    inputs = results["inputs"]
    assert inputs.status is Status.FAILED
    assert "modified its input target_logits at [0, 1]: -inf became -1e+30" in inputs.message
    assert np.isneginf(contract._INPUT_ROWS).sum() == 3  # the harness's own rows untouched


def test_dividing_the_callers_draft_probs_in_place_fails_the_tier() -> None:
    results = results_by_name(INPLACE_DRAFT_PROBS)
    assert not any(r.status.ok for r in results.values())
    assert "modified its input draft_probs at [0, 0]" in results["calls"].message


def test_writing_into_copies_of_its_own_passes() -> None:
    results = results_by_name(COPIES)
    assert [r.status for r in results.values()] == [Status.PASSED] * 4, [
        r.message for r in results.values()
    ]


class _Unguarded(Implementation):
    """An adapter that hands the harness's arrays straight to a sampler writing into them."""

    name = "unguarded"
    capabilities = frozenset({"verify_draft", "injected_uniforms", "greedy"})

    def verify_draft(self, target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any,
                     history: Any, rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
        target_logits[np.isneginf(target_logits)] = -1e30
        return reference_verify_draft(target_logits, draft_ids, draft_probs, p, history, rng,
                                      prompt)


def test_the_harness_compares_its_own_arrays_after_each_call() -> None:
    """Whatever the adapter does, the check compares what it gave with what it got back."""
    result = contract._check_inputs(_Unguarded(), _Unguarded.capabilities, 0.0)
    assert result.status is Status.FAILED
    assert "modified its input target_logits at [0, 1]: -inf became -1e+30" in result.message


class _TreeWritesDraftRows(Implementation):
    """A tree verifier that renormalises the root's draft row in place (nested in a list)."""

    name = "tree_writes_draft_rows"
    capabilities = frozenset({"verify_tree", "injected_uniforms"})

    def verify_draft(self, *args: Any, **kwargs: Any) -> tuple[list[int], int]:
        raise NotImplementedError

    def verify_tree(self, target_logits: Any, parents: Any, token_ids: Any, draft_probs: Any,
                    p: Any, history: Any, rng: Any, prompt: Any = (),
                    rule: str = "with_replacement") -> tuple[list[int], list[int]]:
        draft_probs[0] /= draft_probs[0].sum()
        return [int(token_ids[0])], [0]


def test_a_tree_verifier_writing_a_nested_draft_row_fails() -> None:
    impl = _TreeWritesDraftRows()
    result = contract._check_inputs(impl, impl.capabilities, 0.0)
    assert result.status is Status.FAILED
    assert "verify_tree (sampled): modified its input draft_probs[0] at [0]" in result.message


def test_the_reference_leaves_its_inputs_as_given() -> None:
    impl = load_implementation("reference", in_process=True)
    result = contract._check_inputs(impl, impl.capabilities, 0.0)
    assert result.status is Status.PASSED, result.message
    assert result.n == 5  # greedy, sampled, deterministic, sampling_distribution, verify_tree


@pytest.mark.parametrize(("spec", "passed"), [(INPLACE_LOGITS, False), (COPIES, True)])
def test_the_lossless_profile_fails_a_write_into_the_inputs(spec: str, passed: bool) -> None:
    report = run_checks(spec, tiers=["contract"], quick=True, profile="lossless")
    assert report.passed is passed, [r.message for r in report.results]


def test_check_names_the_argument_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--impl", INPLACE_LOGITS, "--tier", "contract", "--quick",
                 "--profile", "lossless", "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL contract/inputs" in out and "modified its input target_logits" in out


def test_sampling_params_of_the_probes_are_valid() -> None:
    for _, _, args in contract._input_probes(frozenset({"verify_draft", "greedy",
                                                        "sampling_distribution"})):
        fields = next(a for a in args if isinstance(a, dict))
        SamplingParams(**fields)
