"""vLLM's rejection sampler's test as the issue 23 notes quote it: accept iff
``target_prob / draft_prob >= uniform`` on [0, 1) uniforms. Exact in law (the ratio equals u
with probability 0), but at ``u = 0.0`` (``torch.rand`` on float32: probability 2^-24 per
draw) it accepts a drafted token the target rules out (``p(x) = 0``, ratio 0 >= 0).

``p/q >= u`` is ``u <= p/q``: the same rule as transformers' (``accept_le``), under vLLM's name.
"""

from .accept_le import SamplingParams, verify_draft

__all__ = ["SamplingParams", "verify_draft"]
