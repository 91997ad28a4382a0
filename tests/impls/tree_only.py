"""A tree-only module: ``verify_tree`` (the reference's) and no ``verify_draft``. The tiers with
tree checks run; the chain checks skip with a reason."""

from spec_verify.reference import SamplingParams, verify_tree

__all__ = ["SamplingParams", "verify_tree"]
