"""The GPU kernels' route (docs/gpu-kernels.md): ``flashinfer_chain_kernel``'s glue on CPU
with fake kernels of ``chain_speculative_sampling``'s signature, and FlashInfer's real kernel
where a CUDA device and flashinfer are present (skipped with the reason otherwise).

Declared: ``check_batched`` at family alpha 1e-3 and power 0.99 at TV 0.2 per context; the
wrong-bonus fake moves the law of three tokens on every request that accepts both drafts."""

from __future__ import annotations

import numpy as np
import pytest

from spec_verify.adapters import flashinfer_chain_kernel, gpu_unavailable_reason
from spec_verify.endtoend import check_batched
from spec_verify.errors import InvalidArgument
from tests.impls import fake_chain_kernel

torch = pytest.importorskip("torch", reason="the glue puts its rows in torch tensors")


def test_requests_are_grouped_by_draft_length_and_the_bonus_is_the_callers() -> None:
    fake_chain_kernel.CALLS.clear()
    kernel = flashinfer_chain_kernel(fake_chain_kernel.honest, device="cpu")
    V = 4
    lengths = [2, 0, 1, 2]
    ids = np.array([1, 2, 3, 0, 1])
    q = np.full((5, V), 1.0 / V)
    p = np.zeros((5, V))
    p[np.arange(5), ids] = 1.0  # every draft is certain to be accepted
    bonus = np.array([3, 2, 1, 0])
    out = kernel(ids, np.array(lengths), q, p, bonus, 7)
    assert out.tolist() == [[1, 2, 3], [2, -1, -1], [3, 1, -1], [0, 1, 0]]
    assert fake_chain_kernel.CALLS == [((2, 2, V), (2, 2), (2, 3, V)),
                                       ((1, 1, V), (1, 1), (1, 2, V))]
    again = kernel(ids, np.array(lengths), None, p, bonus, 7)  # deterministic drafts
    assert again.tolist() == out.tolist()


@pytest.mark.slow  # the fakes loop in Python over torch scalars: 40-110 s for both
def test_the_glue_with_an_honest_fake_passes_and_a_wrong_bonus_fails() -> None:
    honest = check_batched(flashinfer_chain_kernel(fake_chain_kernel.honest, device="cpu"),
                           delta=0.2, seed=3)  # fmt: skip
    assert honest.passed, honest.message
    wrong = check_batched(
        flashinfer_chain_kernel(fake_chain_kernel.bonus_from_last_draft_row, device="cpu"),
        delta=0.2, seed=3,
    )  # fmt: skip
    assert not wrong.passed, wrong.message


def test_bad_arguments_name_themselves() -> None:
    with pytest.raises(InvalidArgument, match="chain"):
        flashinfer_chain_kernel("chain_speculative_sampling")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="device"):
        flashinfer_chain_kernel(fake_chain_kernel.honest, device=0)  # type: ignore[arg-type]


def test_the_reason_names_what_is_missing() -> None:
    if not torch.cuda.is_available():
        assert gpu_unavailable_reason("flashinfer").startswith("no CUDA device")
    else:
        assert "no_such_module_ does not import" in gpu_unavailable_reason("no_such_module_")


@pytest.mark.skipif(bool(gpu_unavailable_reason("flashinfer")),
                    reason=gpu_unavailable_reason("flashinfer") or "runs")  # fmt: skip
def test_flashinfers_chain_kernel_on_the_gpu() -> None:
    result = check_batched(flashinfer_chain_kernel(device="cuda"), delta=0.2)
    assert result.passed, result.message
