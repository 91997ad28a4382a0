"""Compare two generators' laws of the first L tokens: ``spec-verify compare A B``.

The usual pair is speculative ``generate()`` against plain sampling from the same target: a
lossless speculative sampler emits the same law. Both are black boxes (a seed in, tokens out),
so neither law is known and the test is ``two_sample_test``: the joint law of the first
``length`` tokens (each distinct sequence a category) and each position's marginal, with Holm
across the ``1 + length`` tests at ``family_alpha``. The sample size comes from the power
calculation (``compare_plan``), never guessed: a declared ``n`` that cannot reach the declared
power at ``delta`` is refused before anything is drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from spec_verify.endtoend._draw import DrawOutcome, GeneratorFailure, Progress, draw_sequences
from spec_verify.errors import InvalidArgument
from spec_verify.stats._multiple import holm, holm_thresholds
from spec_verify.stats._power import MAX_VOCABULARY, _check_plan
from spec_verify.stats._two_sample import (
    TwoSampleResult,
    two_sample_detectable_delta,
    two_sample_required_samples,
    two_sample_test,
)
from spec_verify.stats._validate import check_open_unit

__all__ = ["CompareResult", "Comparison", "compare_generators", "compare_plan", "compare_samples"]


@dataclass(frozen=True)
class Comparison:
    """One test of a comparison: the joint law (``position is None``) or one position's.

    ``tv``, ``tv_low``, ``tv_high``: the estimated TV between the two laws (as seen through the
    tested cells) and its conservative 95% interval (``TwoSampleResult.total_variation_interval``).
    """

    position: int | None
    test: TwoSampleResult
    rejected: bool
    threshold: float
    tv: float
    tv_low: float
    tv_high: float

    @property
    def name(self) -> str:
        return "joint" if self.position is None else f"position {self.position}"


@dataclass(frozen=True)
class CompareResult:
    """The verdict of a comparison and its evidence.

    Attributes:
        passed: every draw was made and Holm at ``family_alpha`` rejected none of the tests.
        pvalue: the smallest Holm-adjusted p-value (``m`` times the smallest p-value, capped).
        family_alpha: the family-wise false-alarm rate.
        power: the declared power; ``detectable_tv`` is the TV the joint test detects with it.
        n_a, n_b: draws made from A and B.
        length, vocab_size: the first ``length`` tokens, ids in ``[0, vocab_size)``.
        comparisons: the joint test first, then one per position (only the joint when
            ``length == 1``).
        detectable_tv: the smallest TV between the joint laws detected with probability
            ``power`` by the joint test at its Holm share of ``family_alpha``.
        complete: every requested draw was made; when False the tests ran on the partial
            draws and the result is an error, never a pass.
        failures: why drawing stopped (empty when complete).
        message: one sentence: the verdict and where the evidence is.
    """

    passed: bool
    pvalue: float
    family_alpha: float
    power: float
    n_a: int
    n_b: int
    length: int
    vocab_size: int
    comparisons: tuple[Comparison, ...]
    detectable_tv: float
    complete: bool
    failures: tuple[GeneratorFailure, ...]
    message: str
    seconds: float = 0.0

    @property
    def joint(self) -> Comparison:
        return self.comparisons[0]


def compare_plan(
    vocab_size: int, length: int, family_alpha: float, delta: float, power: float
) -> int:
    """Draws per generator for the joint test to detect TV ``delta`` with ``power``.

    The joint table has at most ``vocab_size ** length`` cells and the joint test runs at its
    Holm share ``family_alpha / m`` (``m = 1 + length`` tests, 1 when ``length == 1``).

    >>> compare_plan(4, 2, 1e-3, 0.1, 0.99)
    2982
    """
    return two_sample_required_samples(
        _cells(vocab_size, length), family_alpha / _tests(length), delta, power
    )


def compare_samples(
    a: npt.NDArray[np.integer[Any]] | Any,
    b: npt.NDArray[np.integer[Any]] | Any,
    *,
    vocab_size: int,
    family_alpha: float,
    power: float = 0.99,
    seed: int = 0,
) -> CompareResult:
    """Compare two samples of first-L-token sequences (arrays of shape ``(n, length)``).

    Raises:
        InvalidArgument: samples not 2-D integer arrays of one width, ids outside
            ``[0, vocab_size)``, or a bad ``family_alpha`` / ``power``.
    """
    A, B = _matrix("a", a, vocab_size), _matrix("b", b, vocab_size)
    if A.shape[1] != B.shape[1]:
        raise InvalidArgument(
            "b", f"<shape {B.shape}>", f"has {B.shape[1]} tokens per draw, a has {A.shape[1]}"
        )
    return _compare(A, B, vocab_size, family_alpha, power, seed, complete=True, failures=())


def compare_generators(
    generator_a: str,
    generator_b: str,
    *,
    length: int,
    vocab_size: int,
    n: int | None = None,
    delta: float = 0.1,
    family_alpha: float = 1e-3,
    power: float = 0.99,
    root_seed: int = 0,
    workers: int | None = None,
    timeout: float = 60.0,
    progress: Progress | None = None,
) -> CompareResult:
    """Draw from two generators and compare their laws of the first ``length`` tokens.

    Args:
        generator_a, generator_b: ``python:module:function`` (or ``python:file.py:function``):
            functions taking an int seed and returning token ids (new tokens only).
        length: tokens compared per draw.
        vocab_size: ids must lie in ``[0, vocab_size)``.
        n: draws per generator; by default ``compare_plan(...)``. A smaller ``n`` than the
            plan is refused.
        delta: the TV distance (between the joint laws) to detect with probability ``power``.
        family_alpha: family-wise false-alarm rate over the joint and per-position tests.
        root_seed: A draws seeds ``root_seed + 2j``, B ``root_seed + 2j + 1``.
        workers, timeout, progress: as ``draw_sequences``.

    Returns:
        A ``CompareResult``; a generator that raises, hangs or returns garbage gives a result
        with ``complete=False`` and its failure, not an exception.

    Raises:
        InvalidArgument: bad arguments (a generator whose module or file does not exist among
            them: ``UnknownImplementation``), or ``n`` too small for the declared power.
    """
    _check_generators({"A": generator_a, "B": generator_b})
    _, family_alpha, delta, power = _check_plan(2, family_alpha, delta, power)
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise InvalidArgument("length", length, "must be an integer >= 1")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
        raise InvalidArgument("vocab_size", vocab_size, "must be an integer >= 2")
    planned = compare_plan(vocab_size, length, family_alpha, delta, power)
    if n is None:
        n = planned
    elif isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidArgument("n", n, "must be a positive integer")
    elif n < planned:
        try:
            reach = two_sample_detectable_delta(
                _cells(vocab_size, length), family_alpha / _tests(length), n, n, power
            )
        except InvalidArgument:
            reach = math.inf  # not even delta = 1
        reached = f"they reach TV {reach:.3g}" if reach <= 1 else "they detect no TV at all"
        fix = f"draw n >= {planned} per generator" + (
            f", or declare delta >= {reach:.3g}" if reach <= 1 else ""
        )
        raise InvalidArgument(
            "n",
            n,
            f"{n} draws per generator detect a TV of {delta:g} between the laws of the first "
            f"{length} tokens (V={vocab_size}) with power below {power:g} at family "
            f"alpha {family_alpha:g} ({reached})",
            fix,
        )
    outcome = draw_sequences(
        {"A": generator_a, "B": generator_b},
        n,
        length=length,
        vocab_size=vocab_size,
        root_seed=root_seed,
        workers=workers,
        timeout=timeout,
        progress=progress,
    )
    return _from_outcome(outcome, vocab_size, family_alpha, power, root_seed)


def _check_generators(specs: dict[str, Any]) -> None:
    """Each generator's module or file exists (``spec_verify._specs.check_generator``) before
    any worker starts: a typo is a usage error with the closest name, never a comparison
    without a verdict."""
    from spec_verify._specs import check_generator

    for label, spec in specs.items():
        check_generator(spec, label)


def _from_outcome(
    outcome: DrawOutcome, vocab_size: int, family_alpha: float, power: float, seed: int
) -> CompareResult:
    A, B = outcome.tokens["A"], outcome.tokens["B"]
    if len(A) >= 1 and len(B) >= 1:
        result = _compare(
            A,
            B,
            vocab_size,
            family_alpha,
            power,
            seed,
            complete=outcome.complete,
            failures=outcome.failures,
        )
        return _with_seconds(result, outcome.seconds)
    length = A.shape[1]
    message = (
        "no verdict: "
        + "; ".join(f.describe() for f in outcome.failures)
        + f" (partial: {len(A)} draws from A, {len(B)} from B, nothing tested)"
    )
    return CompareResult(
        passed=False,
        pvalue=math.nan,
        family_alpha=family_alpha,
        power=power,
        n_a=len(A),
        n_b=len(B),
        length=length,
        vocab_size=vocab_size,
        comparisons=(),
        detectable_tv=math.nan,
        complete=False,
        failures=outcome.failures,
        message=message,
        seconds=outcome.seconds,
    )


def _compare(
    A: npt.NDArray[np.int64],
    B: npt.NDArray[np.int64],
    vocab_size: int,
    family_alpha: float,
    power: float,
    seed: int,
    *,
    complete: bool,
    failures: tuple[GeneratorFailure, ...],
) -> CompareResult:
    family_alpha = check_open_unit("family_alpha", family_alpha)
    length = A.shape[1]
    m = _tests(length)
    alpha = family_alpha / m
    rng = np.random.default_rng(seed)
    tests: list[tuple[int | None, TwoSampleResult]] = [
        (None, two_sample_test(A, B, alpha=alpha, seed=rng))
    ]
    if length > 1:
        tests.extend(
            (i, two_sample_test(A[:, i], B[:, i], alpha=alpha, seed=rng)) for i in range(length)
        )
    pvalues = [t.pvalue for _, t in tests]
    rejected = holm(pvalues, family_alpha)
    thresholds = holm_thresholds(pvalues, family_alpha)
    comparisons = []
    for (position, test), reject, threshold in zip(tests, rejected, thresholds, strict=True):
        tv, low, high = test.total_variation_interval(0.95)
        comparisons.append(Comparison(position, test, reject, threshold, tv, low, high))
    cells = _cells(vocab_size, length)
    try:
        detectable = two_sample_detectable_delta(cells, alpha, len(A), len(B), power)
    except InvalidArgument:
        detectable = 1.0  # too few draws to detect anything at this power
    adjusted = min(1.0, m * min(pvalues))
    passed = complete and not any(rejected)
    joint = comparisons[0]
    sizes = f"n_a={len(A)}, n_b={len(B)}"
    if not complete:
        message = (
            "no verdict: "
            + "; ".join(f.describe() for f in failures)
            + f" (partial: tests ran on {len(A)} draws from A and {len(B)} from B)"
        )
    elif passed:
        message = (
            f"same law: no test rejected (smallest Holm-adjusted p={adjusted:.3g} >= "
            f"{family_alpha:g}, {sizes}); a TV of {detectable:.3g} or more between the joint "
            f"laws would have been found with probability {power:g}"
        )
    else:
        first = next(c for c in comparisons if c.rejected)
        message = (
            f"different laws: {', '.join(c.name for c in comparisons if c.rejected)} "
            f"rejected at family alpha {family_alpha:g} ({sizes}); estimated joint TV "
            f"{joint.tv:.3g} [{joint.tv_low:.3g}, {joint.tv_high:.3g}]; {first.name}: "
            f"{first.test.message}"
        )
    return CompareResult(
        passed=passed,
        pvalue=adjusted,
        family_alpha=family_alpha,
        power=power,
        n_a=len(A),
        n_b=len(B),
        length=length,
        vocab_size=vocab_size,
        comparisons=tuple(comparisons),
        detectable_tv=detectable,
        complete=complete,
        failures=failures,
        message=message,
    )


def _with_seconds(result: CompareResult, seconds: float) -> CompareResult:
    from dataclasses import replace

    return replace(result, seconds=seconds)


def _tests(length: int) -> int:
    return 1 if length == 1 else 1 + length


def _cells(vocab_size: int, length: int) -> int:
    cells: int = min(vocab_size**length, MAX_VOCABULARY)
    return cells


def _matrix(name: str, sample: Any, vocab_size: int) -> npt.NDArray[np.int64]:
    array = np.asarray(sample)
    if (
        array.ndim != 2
        or array.shape[0] == 0
        or array.shape[1] == 0
        or array.dtype.kind not in "iu"
    ):
        raise InvalidArgument(
            name, sample, "must be a non-empty 2-D integer array of shape (draws, length)"
        )
    bad = (array < 0) | (array >= vocab_size)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise InvalidArgument(
            name,
            f"<shape {array.shape}>",
            f"draw {row} holds token {int(array[row, column])} at position {column}, outside "
            f"[0, {vocab_size})",
        )
    return array.astype(np.int64)
