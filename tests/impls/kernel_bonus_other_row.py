"""The tutorial's batched kernel with a bonus from the wrong request: a request that keeps
every draft gets the bonus the caller sampled for the next request of the batch. Alone in a
batch (its own row) it is right; the first token is never a bonus, so only a law past the
first token, in a batch of several requests, can catch it."""

from typing import Any

from tests.impls.kernel_honest import rejection_sample as _honest

SPEC_VERIFY_KERNEL = "rejection_sample"


def rejection_sample(ids: Any, lengths: Any, q: Any, p: Any, bonus: Any, seed: int) -> Any:
    out = _honest(ids, lengths, q, p, bonus, seed)
    for request, k in enumerate(lengths):
        if k and out[request, k] != -1:
            out[request, k] = int(bonus[(request + 1) % len(lengths)])
    return out
