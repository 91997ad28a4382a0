"""``kseq_tree_bonus_root``'s planted bug behind its own generator."""

from spec_verify.reference import SamplingParams

from ._kseq_tree import kseq_tree
from .own_generator import verify_draft
from .own_tree import own_randomness

__all__ = ["SPEC_VERIFY_CAPABILITIES", "SamplingParams", "verify_draft", "verify_tree"]

SPEC_VERIFY_CAPABILITIES = {"injected_uniforms": False}

verify_tree = own_randomness(kseq_tree("bonus_root_row"))
