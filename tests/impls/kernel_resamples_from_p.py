"""A batched rejection kernel with the classic bug: after a rejection it resamples from the
target p instead of the residual max(p - q, 0). Its law is wrong on every batch size."""

import numpy as np

SPEC_VERIFY_KERNEL = "rejection_sample"


def rejection_sample(draft_ids, lengths, draft_probs, target_probs, bonus, seed):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    out = np.full((len(lengths), max(lengths) + 1), -1, dtype=np.int64)
    start = 0
    for request, k in enumerate(lengths):
        for i in range(k):
            x = int(draft_ids[start + i])
            p, q = np.asarray(target_probs[start + i]), np.asarray(draft_probs[start + i])
            if rng.random() < min(1.0, p[x] / q[x]):
                out[request, i] = x
                continue
            out[request, i] = int(rng.choice(len(p), p=p / p.sum()))  # the bug: not the residual
            break
        else:
            out[request, k] = int(bonus[request])
        start += k
    return out
