"""K-SEQ as a tree sampler driven by its own generator (one injected uniform seeds it):
the statistical tier's tree checks decide (``injected_uniforms: False``)."""

from spec_verify.reference import SamplingParams

from ._kseq_tree import kseq_tree
from .own_generator import verify_draft
from .own_tree import own_randomness

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft", "verify_tree"]

SPEC_VERIFY_CAPABILITIES = {"injected_uniforms": False}

verify_tree = own_randomness(kseq_tree())
