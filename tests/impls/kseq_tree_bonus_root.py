"""K-SEQ as a tree sampler whose bonus after a kept leaf is drawn from the root's row: the first
token's law is K-SEQ's (the target's), the second token's is wrong."""

from spec_verify.reference import SamplingParams, verify_draft

from ._kseq_tree import kseq_tree

__all__ = ["SamplingParams", "verify_draft", "verify_tree"]

verify_tree = kseq_tree("bonus_root_row")
