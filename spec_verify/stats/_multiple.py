"""Family-wise error control: Holm's step-down procedure.

A gate run asserts many things at once and must keep its *family-wise* false-alarm rate (the
probability that any true null is rejected) at most ``family_alpha``. Holm's procedure does so
under any dependence between the tests, and rejects everything Bonferroni (each test at
``family_alpha / m``) rejects, and sometimes more. So sample sizes planned at
``per_test_alpha(family_alpha, m)`` keep their declared power under Holm.

Convention, as everywhere in this package: a test rejects when ``p < threshold`` (it passes
when ``p >= threshold``).

>>> holm([0.01, 0.04, 0.03], family_alpha=0.05)
[True, False, False]
>>> holm_thresholds([0.01, 0.04, 0.03], family_alpha=0.05)
[0.016666666666666666, 0.05, 0.025]
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from spec_verify.errors import InvalidArgument
from spec_verify.stats._validate import check_int, check_open_unit

__all__ = ["holm", "holm_thresholds", "per_test_alpha"]


def holm(pvalues: Sequence[float], family_alpha: float) -> list[bool]:
    """Holm–Bonferroni step-down: which hypotheses to reject.

    Sort the p-values ascending (ties by position); the i-th smallest (i = 0, 1, ...) is
    compared with ``family_alpha / (m - i)``; reject while ``p < threshold`` and stop at the
    first p-value that is not below its threshold (it and all larger ones are kept).

    Args:
        pvalues: one p-value per test, each in [0, 1].
        family_alpha: the family-wise false-alarm rate, in (0, 1).

    Returns:
        Reject flags in the order of ``pvalues`` (an empty family rejects nothing).

    Raises:
        InvalidArgument: a p-value outside [0, 1] or NaN, or ``family_alpha`` outside (0, 1).
    """
    values = _check_pvalues(pvalues)
    family_alpha = check_open_unit("family_alpha", family_alpha)
    rejected = [False] * len(values)
    for rank, index in enumerate(_order(values)):
        if not values[index] < family_alpha / (len(values) - rank):
            break
        rejected[index] = True
    return rejected


def holm_thresholds(pvalues: Sequence[float], family_alpha: float) -> list[float]:
    """The threshold Holm compares each p-value with, in the order of ``pvalues``.

    The test of rank i (0-based, ascending p-values, ties by position) is compared with
    ``family_alpha / (m - i)``. A test rejects when its p-value is below its threshold *and*
    every smaller p-value rejected too (see ``holm``); the thresholds show how close each
    test came.

    Raises:
        InvalidArgument: as ``holm``.
    """
    values = _check_pvalues(pvalues)
    family_alpha = check_open_unit("family_alpha", family_alpha)
    thresholds = [0.0] * len(values)
    for rank, index in enumerate(_order(values)):
        thresholds[index] = family_alpha / (len(values) - rank)
    return thresholds


def per_test_alpha(family_alpha: float, m: int) -> float:
    """The alpha at which to plan each of ``m`` tests: ``family_alpha / m`` (Bonferroni).

    Holm rejects whatever Bonferroni rejects, so a sample size computed at this alpha
    (``required_samples(V, per_test_alpha(...), delta, power)``) keeps its power.

    Raises:
        InvalidArgument: ``family_alpha`` outside (0, 1) or ``m < 1``.
    """
    family_alpha = check_open_unit("family_alpha", family_alpha)
    m = check_int("m", m, 1)
    return family_alpha / m


def _order(values: Sequence[float]) -> list[int]:
    return sorted(range(len(values)), key=lambda i: (values[i], i))


def _check_pvalues(pvalues: Sequence[float]) -> list[float]:
    values: list[float] = []
    for index, value in enumerate(pvalues):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InvalidArgument("pvalues", pvalues, f"entry {index} is {value!r}, not a number")
        p = float(value)
        if math.isnan(p) or not 0 <= p <= 1:
            raise InvalidArgument(
                "pvalues", pvalues, f"entry {index} is {value!r}; p-values lie in [0, 1]"
            )
        values.append(p)
    return values
