"""vLLM's real rejection sampler with one acceptance uniform reused at every position of a
request (the uniforms drawn per request, not per token): the first token's law is right, the
second draft's acceptance is coupled to the first's."""

import importlib
from typing import Any

from spec_verify.adapters._vllm import SPEC_VERIFY_KERNEL, rejection_sample

# After _vllm, which hides the CUDA builds of torchvision and friends from vLLM's import.
_sampler = importlib.import_module("vllm.v1.sample.rejection_sampler")

__all__ = ["SPEC_VERIFY_KERNEL", "rejection_sample"]

_generate = _sampler.generate_uniform_probs


def _one_per_request(num_tokens: int, num_draft_tokens: list[int], *args: Any) -> Any:
    uniforms = _generate(num_tokens, num_draft_tokens, *args)
    start = 0
    for n in num_draft_tokens:
        if n:
            uniforms[start:start + n] = uniforms[start]
        start += n
    return uniforms


_sampler.generate_uniform_probs = _one_per_request
