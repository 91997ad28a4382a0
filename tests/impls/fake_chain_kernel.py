"""Fake kernels with the signature of FlashInfer's ``chain_speculative_sampling`` that run on
CPU torch, so that ``spec_verify.adapters.flashinfer_chain_kernel``'s glue is tested where no
GPU is: ``honest`` is the token rule drawing from the given ``torch.Generator`` and samples
the bonus from the last target row (as FlashInfer does); ``bonus_from_last_draft_row`` has
the bug of taking the bonus from row ``k - 1`` instead of row ``k``. ``CALLS`` records the
shapes of every call."""

from __future__ import annotations

from typing import Any

CALLS: list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]] = []


def _chain(draft_probs: Any, draft_token_ids: Any, target_probs: Any, *, bonus_row: int,
           generator: Any) -> Any:
    import torch

    CALLS.append((tuple(draft_probs.shape), tuple(draft_token_ids.shape),
                  tuple(target_probs.shape)))  # fmt: skip
    B, k, _ = draft_probs.shape
    out = torch.full((B, k + 1), -1, dtype=torch.int32)
    for b in range(B):
        for i in range(k):
            x = int(draft_token_ids[b, i])
            p, q = target_probs[b, i], draft_probs[b, i]
            u = float(torch.rand((), generator=generator))
            if u * float(q[x]) < float(p[x]):
                out[b, i] = x
                continue
            residual = torch.clamp(p - q, min=0.0)
            residual = residual if float(residual.sum()) > 0 else p
            out[b, i] = int(torch.multinomial(residual, 1, generator=generator))
            break
        else:
            row = target_probs[b, k + bonus_row]
            out[b, k] = int(torch.multinomial(row, 1, generator=generator))
    return out, None, None  # FlashInfer versions that also return the two counts


def honest(draft_probs: Any, draft_token_ids: Any, target_probs: Any,
           maybe_output_accepted_token_num: Any = None,
           maybe_output_emitted_draft_token_num: Any = None, deterministic: bool = True,
           generator: Any = None, seed: Any = None, offset: Any = None) -> Any:
    return _chain(draft_probs, draft_token_ids, target_probs, bonus_row=0, generator=generator)


def bonus_from_last_draft_row(draft_probs: Any, draft_token_ids: Any, target_probs: Any,
                              maybe_output_accepted_token_num: Any = None,
                              maybe_output_emitted_draft_token_num: Any = None,
                              deterministic: bool = True, generator: Any = None,
                              seed: Any = None, offset: Any = None) -> Any:
    return _chain(draft_probs, draft_token_ids, target_probs, bonus_row=-1, generator=generator)
