"""How often a suite that fails at random wins a detection it did not earn (docs/grading.md,
"The lottery"), and how many clean reruns keep that below ``TARGET_WIN``.

Two attackers, both on top of a weak honest suite:

- **independent**: every run fails with probability ``f``, whatever came before;
- **counting**: the suite keeps state between runs (a file in ``/tmp``), so it knows which
  batch a run belongs to and what it did in earlier runs, and chooses *which* runs fail. The
  only thing hidden from it is which of the runs that reach its random test are clean (decoys,
  clean reruns) and which are mutants: those are shuffled, and alike in every way the grader
  controls.

The counting attacker is the stronger. To win it must fail on no decoy in the main batch, and in
the confirmation batch fail on exactly the reruns of its lottery "kills" (``confirmations``
each) and on none of the ``clean_reruns``: whatever its strategy, that is one subset of the
confirmation batch's positions, drawn uniformly by the shuffle, so for ``L`` lottery kills it
wins with probability at most ``C(U, L) / C(U + D, L) / C(L c + K, L c)`` (``U`` mutants its
honest part misses, ``D`` decoys, ``c`` confirmations, ``K`` clean reruns), largest at
``L = 1``, ``U = mutants``.
"""

from __future__ import annotations

from math import comb

from spec_verify.errors import InvalidArgument

__all__ = [
    "TARGET_WIN",
    "clean_reruns_needed",
    "counting_lottery_win",
    "independent_lottery_credit",
    "independent_lottery_win",
]

# the grade's promise: a suite failing at random beats its honest part in fewer than 1 in 100
TARGET_WIN = 0.01


def counting_lottery_win(mutants: int, decoys: int, confirmations: int,
                         clean_reruns: int) -> float:
    """The most a counting attacker can win with, over every strategy (the module's bound)."""
    if mutants < 1:
        return 0.0
    return mutants / (mutants + decoys) / comb(confirmations + clean_reruns, confirmations)


def clean_reruns_needed(mutants: int, decoys: int, confirmations: int,
                        target: float = TARGET_WIN) -> int:
    """The fewest clean reruns (at least ``confirmations``) that bring the counting attacker's
    bound below ``target``: 13 for 36 mutants, 3 decoys and 2 confirmations."""
    if not 0 < target < 1:
        raise InvalidArgument("target", target, "must be a probability in (0, 1)")
    if confirmations < 1:
        raise InvalidArgument("confirmations", confirmations, "must be an integer >= 1")
    reruns = confirmations
    while counting_lottery_win(mutants, decoys, confirmations, reruns) >= target:
        reruns += 1
    return reruns


def independent_lottery_win(f: float, mutants: int, repeats: int, decoys: int,
                            confirmations: int, clean_reruns: int) -> float:
    """P(graded with at least one unearned detection) for a suite whose every run fails
    independently with probability ``f``: every clean control passes, some mutant's failure
    reproduces on all its reruns, and no other failure fails to reproduce."""
    controls = repeats + decoys + clean_reruns
    reproduced = f ** (confirmations + 1)
    return (1 - f) ** controls * ((1 - f + reproduced) ** mutants - (1 - f) ** mutants)


def independent_lottery_credit(f: float, mutants: int, repeats: int, decoys: int,
                               confirmations: int, clean_reruns: int) -> float:
    """The expected number of unearned detections counted, for the same suite."""
    controls = repeats + decoys + clean_reruns
    reproduced = f ** (confirmations + 1)
    return (1 - f) ** controls * mutants * reproduced * (1 - f + reproduced) ** (mutants - 1)
