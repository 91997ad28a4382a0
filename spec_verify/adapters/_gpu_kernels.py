"""GPU speculative-sampling kernels in the batched-kernel shape (docs/gpu-kernels.md).

``check_batched`` and the kernel gate (``SPEC_VERIFY_KERNEL``, ``adapters/_kernel.py``) call a
kernel as ``kernel(draft_token_ids, num_draft_tokens, draft_probs, target_probs,
bonus_token_ids, seed) -> (batch, max_k + 1) ids`` with flattened drafts of any lengths.
FlashInfer's ``flashinfer.sampling.chain_speculative_sampling(draft_probs, draft_token_ids,
target_probs, ..., deterministic=True, generator=None)`` takes ``(B, k, V)`` draft rows,
``(B, k)`` drafts and ``(B, k + 1, V)`` target rows with one ``k`` for the whole batch, and
samples the bonus itself from the last target row. ``flashinfer_chain_kernel`` is the glue:

- requests are grouped by draft length, one kernel call per length present (in the order the
  lengths first appear); a request without drafts emits its bonus and makes no call;
- a deterministic draft (``draft_probs`` None) gets one-hot draft rows;
- the ``k + 1``-th target row is one-hot on the caller's bonus token, so the kernel's own
  bonus draw emits the bonus the harness sampled from the real row;
- the rows go to ``device`` as float32, the drafts as int32; the kernel's generator is a
  ``torch.Generator`` on ``device`` seeded from ``seed`` and the group's position, so a
  call's draws are the seed's;
- the answer (a tensor, or the first of a tuple in FlashInfer versions returning the counts
  too) is read back into one ``(batch, max_k + 1)`` int64 array, -1 padded.

The glue is plain torch and imports neither FlashInfer nor CUDA: ``tests/adapters/
test_gpu_kernels.py`` runs it on CPU with a fake kernel of the same signature (an honest one
passes ``check_batched``, one that takes the bonus from the wrong row fails it) and runs the
real kernel only where ``gpu_unavailable_reason()`` is empty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.errors import InvalidArgument

__all__ = ["flashinfer_chain_kernel", "gpu_unavailable_reason"]

ChainKernel = Callable[..., Any]


def gpu_unavailable_reason(module: str = "flashinfer") -> str:
    """Why a GPU kernel from ``module`` cannot run here ("" when it can): no torch, no CUDA
    device, or ``module`` not importable (each named with the install that fixes it)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'spec-verify[torch]', or a CUDA torch)"
    if not torch.cuda.is_available():
        return f"no CUDA device (torch {torch.__version__}: torch.cuda.is_available() is False)"
    try:
        __import__(module)
    except Exception as error:  # a broken install raises anything at import
        return f"{module} does not import ({type(error).__name__}: {error}); pip install {module}"
    return ""


def _numpy(values: Any, dtype: Any) -> NDArray[Any]:
    if hasattr(values, "detach"):
        values = values.detach().cpu().double().numpy()
    return np.asarray(values).astype(dtype)


def flashinfer_chain_kernel(
    chain: ChainKernel | None = None, *, device: str = "cuda"
) -> Callable[..., NDArray[np.int64]]:
    """FlashInfer's chain kernel (or ``chain``, any function of its signature) as a batched
    kernel for ``check_batched`` and ``SPEC_VERIFY_KERNEL`` modules (module doc).

    Args:
        chain: the kernel; None imports ``flashinfer.sampling.chain_speculative_sampling``
            when the returned kernel is first called.
        device: the torch device the rows are put on ("cuda", or "cpu" for a fake kernel).

    Raises:
        InvalidArgument: ``chain`` not callable or ``device`` not a string.
    """
    if chain is not None and not callable(chain):
        raise InvalidArgument("chain", chain, "must be a function of chain_speculative_sampling's "
                              "signature, or None", "chain=flashinfer.sampling."
                              "chain_speculative_sampling")  # fmt: skip
    if not isinstance(device, str):
        raise InvalidArgument("device", device, "must be a torch device name", "device='cuda'")
    found: list[ChainKernel] = [] if chain is None else [chain]

    def kernel(draft_token_ids: Any, num_draft_tokens: Any, draft_probs: Any,
               target_probs: Any, bonus_token_ids: Any, seed: int) -> NDArray[np.int64]:
        import torch

        if not found:
            from flashinfer.sampling import chain_speculative_sampling

            found.append(chain_speculative_sampling)
        lengths = [int(k) for k in _numpy(num_draft_tokens, np.int64)]
        ids = _numpy(draft_token_ids, np.int64)
        bonus = _numpy(bonus_token_ids, np.int64)
        p = _numpy(target_probs, np.float64)
        V = p.shape[1] if p.ndim == 2 and p.size else None
        q = None if draft_probs is None else _numpy(draft_probs, np.float64)
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
        out = np.full((len(lengths), max(lengths, default=0) + 1), -1, dtype=np.int64)
        for request, k in enumerate(lengths):
            if k == 0:
                out[request, 0] = bonus[request]
        for group, k in enumerate(dict.fromkeys(k for k in lengths if k)):
            members = [r for r, length in enumerate(lengths) if length == k]
            assert V is not None  # a request with drafts has target rows
            spans = [np.arange(starts[r], starts[r] + k) for r in members]
            drafts = np.stack([ids[s] for s in spans])  # (B, k)
            if q is None:
                rows_q = np.zeros((len(members), k, V))
                np.put_along_axis(rows_q, drafts[:, :, None], 1.0, axis=2)
            else:
                rows_q = np.stack([q[s] for s in spans])
            rows_p = np.zeros((len(members), k + 1, V))
            rows_p[:, :k] = np.stack([p[s] for s in spans])
            rows_p[np.arange(len(members)), k, bonus[members]] = 1.0
            generator = torch.Generator(device=device)
            generator.manual_seed((int(seed) * 1_000_003 + group) % 2**63)
            answer = found[0](
                torch.tensor(rows_q, dtype=torch.float32, device=device),
                torch.tensor(drafts, dtype=torch.int32, device=device),
                torch.tensor(rows_p, dtype=torch.float32, device=device),
                deterministic=True, generator=generator,
            )  # fmt: skip
            tokens = answer[0] if isinstance(answer, (tuple, list)) else answer
            values = _numpy(tokens, np.int64)
            if values.shape != (len(members), k + 1):
                raise ValueError(f"the chain kernel returned shape {values.shape} for "
                                 f"{len(members)} requests of {k} drafts, not "
                                 f"{(len(members), k + 1)}")  # fmt: skip
            out[members, : k + 1] = values
        return out

    return kernel
