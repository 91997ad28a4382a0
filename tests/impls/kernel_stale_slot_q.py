"""vLLM PR #41044 / #45956 rebuilt: the draft rows of a persistent batch buffer are indexed by
slot and not moved when the batch is reordered, so request r is verified with the q rows of
whoever held its slot on the previous call (drafts, target rows and bonus are all current).
A request that keeps its slot and whose draft rows do not change between calls sees no
difference (the downstream report: corruption only with more than two sequences, acceptance
unchanged): as there, the buffer serves batches of more than two requests (smaller ones take
the rows they are given). ``check_batched``'s reordered context and the kernel gate's
permuted batches move requests between slots; with slots fixed it passes both."""

from typing import Any

import numpy as np

SPEC_VERIFY_KERNEL = "rejection_sample"

# The engine's persistent buffer: slot -> the q rows written there on the previous call.
_BUFFER: dict[int, np.ndarray] = {}


def _numpy(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):
        return values.detach().double().numpy()
    return np.asarray(values, dtype=np.float64)


def rejection_sample(ids: Any, lengths: Any, q: Any, p: Any, bonus: Any, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    drafts = np.asarray(_numpy(ids), dtype=np.int64)
    q_rows, p_rows = _numpy(q).reshape(len(drafts), -1), _numpy(p).reshape(len(drafts), -1)
    bonus = np.asarray(_numpy(bonus), dtype=np.int64)
    lengths = [int(k) for k in lengths]
    out = np.full((len(lengths), max(lengths) + 1), -1, dtype=np.int64)
    start = 0
    for slot, k in enumerate(lengths):
        current = q_rows[start:start + k]
        stale = _BUFFER.get(slot)
        # the slot's buffer from its previous occupant, where it has the same vocabulary
        buffered = (len(lengths) > 2 and stale is not None and len(stale) >= k
                    and stale.shape[1:] == current.shape[1:])
        used = stale[:k] if buffered else current
        for i in range(k):
            x, p_i, q_i = int(drafts[start + i]), p_rows[start + i], used[i]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = p_i[x] / q_i[x] if q_i[x] > 0 else np.inf
            if rng.random() < min(1.0, ratio):
                out[slot, i] = x
                continue
            residual = np.maximum(p_i - q_i, 0.0)
            if residual.sum() <= 0:
                residual = p_i
            out[slot, i] = int(rng.choice(len(p_i), p=residual / residual.sum()))
            break
        else:
            out[slot, k] = int(bonus[slot])
        if k:
            _BUFFER[slot] = current.copy()
        start += k
    return out
