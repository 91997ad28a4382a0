"""vLLM's real rejection sampler with the bonus token taken from the next request's row (the
bug shape of a bonus indexed by slot): alone in a batch it is right, and the first token is
never a bonus, so only the law past the first token, in a batch, can catch it."""

from typing import Any

import numpy as np

from spec_verify.adapters._vllm import SPEC_VERIFY_KERNEL
from spec_verify.adapters._vllm import rejection_sample as _vllm

__all__ = ["SPEC_VERIFY_KERNEL", "rejection_sample"]


def rejection_sample(ids: Any, lengths: Any, q: Any, rows: Any, bonus: Any, seed: int) -> Any:
    return _vllm(ids, lengths, q, rows, np.roll(np.asarray(bonus), -1), seed)
