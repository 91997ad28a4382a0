"""The mutant catalogue (s01-s24 on chains, t01-t12 on trees), the real-bug family (r01..,
graded only by id) and the grader that scores a
test suite by the bugs it catches.

``spec_verify.mutants`` knows the reference only as source files: a mutant is a small exact
change to them, and every graded run (clean, canary, mutant) imports ``spec_verify.reference``
from a fresh copy of those files through the same mechanism.
"""

from .catalogue import (
    CATALOGUE,
    CHAIN_MUTANTS,
    PITFALLS,
    TREE_MUTANTS,
    Change,
    Mutant,
    MutantDoesNotApply,
    UnknownMutant,
    apply_mutant,
    mutant_by_id,
    unified_diff,
)
from .real_bugs import REAL_BUGS, RealBug

__all__ = [
    "CATALOGUE",
    "CHAIN_MUTANTS",
    "PITFALLS",
    "REAL_BUGS",
    "TREE_MUTANTS",
    "Change",
    "Mutant",
    "MutantDoesNotApply",
    "RealBug",
    "UnknownMutant",
    "apply_mutant",
    "mutant_by_id",
    "unified_diff",
]
