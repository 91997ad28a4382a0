"""FlashInfer's chain speculative sampling as the issue 26 notes have it: uniforms from
``curand_uniform`` on (0, 1], a draft accepted iff ``u < p(x)/q(x)`` (strictly, the [0, 1)
comparison), and after a rejection the residual ``max(p - q, 0)`` sampled without a fallback
for an all-zero residual. At ``p(x) = q(x)`` and ``u = 1.0`` (probability about 2^-24 per
draw) it rejects a draft whose acceptance is certain, the residual is all zero, and the id it
returns is whatever the output held: 0 here (a zeroed buffer; ``flashinfer_chain_past_end``
returns V). Statistics cannot see it; the edge tier, fed ``1.0`` because it declares (0, 1],
does."""

from __future__ import annotations

from typing import Any

from spec_verify.reference import SamplingParams

from ._open_closed import SPEC_VERIFY_CAPABILITIES, bonus, residual_or_none, sample_open_closed
from ._scaffold import Row, Step, verify

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "strict_step", "verify_draft"]


def strict_step(uninitialised: Any) -> Step:
    """The kernel's step; ``uninitialised(V)`` is the id it returns from an all-zero residual."""

    def step(p: Row, q: Row, x: int, rng: Any) -> tuple[int, bool]:
        u_accept = rng.random()
        u_resample = rng.random()
        if u_accept * q[x] < p[x]:  # the bug: strict on (0, 1], so u = 1.0 rejects p = q
            return x, True
        d = residual_or_none(p, q)
        if d is None:  # nothing reaches u: the id is never written
            return int(uninitialised(p.shape[0])), False
        return sample_open_closed(d, u_resample), False

    return step


_STEP = strict_step(lambda V: 0)


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 rng: Any, prompt: Any = ()) -> tuple[list[int], int]:
    return verify(_STEP, bonus, target_logits, draft_ids, draft_probs, p, history, prompt, rng)
