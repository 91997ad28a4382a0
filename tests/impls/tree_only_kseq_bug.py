"""A tree-only module whose tree sampler is K-SEQ with the bonus after a kept leaf from the
root's row (``_kseq_tree.py``): the negative control of the tree-only gate."""

from spec_verify.reference import SamplingParams

from ._kseq_tree import kseq_tree

__all__ = ["SamplingParams", "verify_tree"]

verify_tree = kseq_tree("bonus_root_row")
