"""SpecTr K-SEQ as a tree sampler on injected uniforms (``tests/impls/_kseq_tree.py``): lossless
averaged over the drafts, another per-fixed-tree law than the contract's tree rule."""

from spec_verify.reference import SamplingParams, verify_draft

from ._kseq_tree import kseq_tree

__all__ = ["SamplingParams", "verify_draft", "verify_tree"]

verify_tree = kseq_tree()
