"""The exact law of the first L tokens of a generation, by enumeration, and a test against it.

When the target is small (a few tokens of a small vocabulary), the law of what plain sampling
emits is computable: walk every prefix with positive probability, ask the target for its next
logits, and apply the reference's processors (``spec_verify.reference.sampling_distribution``:
penalties, temperature, top-k, top-p, min-p, in the contract's order). Any lossless sampler,
speculative or not, must emit first-L-token sequences with exactly these probabilities; the
test is a ``g_test`` of the joint law and of each position's marginal, Holm across them.

The law is float64 (the reference's sampling path), not Fractions: it is what a float sampler
is compared with, and its rounding (about 1e-16 per entry) is far below what any sample size
can see.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from spec_verify.errors import InvalidArgument
from spec_verify.reference.sampling import SamplingParams, sampling_distribution
from spec_verify.stats._gof import GofResult, g_test
from spec_verify.stats._multiple import holm
from spec_verify.stats._power import required_samples
from spec_verify.stats._validate import check_open_unit

__all__ = [
    "LawTestResult",
    "SequenceLaw",
    "law_required_samples",
    "law_test",
    "sequence_law",
]

NextTokenLogits = Callable[[tuple[int, ...]], Any]
_MAX_SEQUENCES = 1_000_000


@dataclass(frozen=True)
class SequenceLaw:
    """The exact law of the first ``length`` tokens: ``probability_by_sequence`` holds every
    sequence of positive probability (they sum to 1)."""

    length: int
    vocab_size: int
    probability_by_sequence: dict[tuple[int, ...], float]
    prompt: tuple[int, ...] = ()

    def marginal(self, position: int) -> npt.NDArray[np.float64]:
        """The law of the token at ``position`` (0-based), a vector of ``vocab_size``."""
        if not 0 <= position < self.length:
            raise InvalidArgument("position", position, f"must be in [0, {self.length})")
        probs = np.zeros(self.vocab_size)
        for sequence, probability in self.probability_by_sequence.items():
            probs[sequence[position]] += probability
        return probs

    def sequences(self) -> list[tuple[int, ...]]:
        """The support, sorted."""
        return sorted(self.probability_by_sequence)


def sequence_law(
    next_token_logits: NextTokenLogits,
    params: SamplingParams,
    *,
    length: int,
    prompt: Sequence[int] = (),
    max_sequences: int = _MAX_SEQUENCES,
) -> SequenceLaw:
    """Enumerate the law of the first ``length`` tokens that plain sampling emits.

    Args:
        next_token_logits: the target: a function from the full token prefix (prompt then the
            tokens generated so far, a tuple) to one row of V logits (a list, numpy array or
            torch tensor).
        params: the sampling parameters (``spec_verify.reference.SamplingParams``).
        length: tokens to enumerate, at least 1.
        prompt: the prompt's token ids (the penalties see them).
        max_sequences: refuse supports larger than this (the enumeration would not end).

    Returns:
        The ``SequenceLaw``; sequences of probability 0 (filtered out by top-k, top-p, min-p)
        are absent.

    Raises:
        InvalidArgument: ``length`` below 1, logits of varying width, or a support larger
            than ``max_sequences`` (the message says how large it grew).
    """
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise InvalidArgument("length", length, "must be an integer >= 1")
    prompt = tuple(int(t) for t in prompt)
    layer: dict[tuple[int, ...], float] = {(): 1.0}
    vocab_size: int | None = None
    for _ in range(length):
        following: dict[tuple[int, ...], float] = {}
        for prefix, mass in layer.items():
            row = _row(next_token_logits(prompt + prefix))
            if vocab_size is None:
                vocab_size = len(row)
            elif len(row) != vocab_size:
                raise InvalidArgument(
                    "next_token_logits",
                    next_token_logits,
                    f"returned {len(row)} logits after prefix {prompt + prefix}, earlier "
                    f"{vocab_size}",
                    "return one logit per vocabulary token, always",
                )
            probs = sampling_distribution(row, params, history=prefix, prompt=prompt)
            for token in np.flatnonzero(probs):
                following[(*prefix, int(token))] = mass * float(probs[token])
            if len(following) > max_sequences:
                raise InvalidArgument(
                    "length",
                    length,
                    f"the support of the first {length} tokens exceeds {max_sequences:,} sequences",
                    "lower the length, use top-k/top-p, or compare two generators instead",
                )
        layer = following
    assert vocab_size is not None
    total = math.fsum(layer.values())
    return SequenceLaw(
        length=length,
        vocab_size=vocab_size,
        probability_by_sequence={s: p / total for s, p in layer.items()},
        prompt=prompt,
    )


@dataclass(frozen=True)
class LawTestResult:
    """Samples against an exact ``SequenceLaw``: the joint test and each position's marginal.

    Attributes:
        passed: Holm at ``family_alpha`` rejects none of the ``1 + length`` tests.
        pvalue: the smallest Holm-adjusted p-value (``min_i p_(i) * (m - i)``, capped at 1).
        family_alpha: the family-wise false-alarm rate.
        n: number of samples.
        joint: the G-test of the joint law (cells: the support, sorted; a sequence outside the
            support fails it at once).
        marginals: the G-test of each position's law.
        unexpected: sampled sequences outside the support (probability 0), with counts.
        message: one sentence: the verdict and where the evidence is.
    """

    passed: bool
    pvalue: float
    family_alpha: float
    n: int
    joint: GofResult
    marginals: tuple[GofResult, ...]
    unexpected: tuple[tuple[tuple[int, ...], int], ...]
    message: str

    def total_variation(self) -> float:
        """TV between the empirical joint law and the exact one (plug-in; biased upward)."""
        return self.joint.total_variation()


def law_test(
    samples: Sequence[Sequence[int]] | npt.NDArray[np.integer[Any]],
    law: SequenceLaw,
    *,
    family_alpha: float,
) -> LawTestResult:
    """Test sampled first-L-token sequences against the exact law.

    Args:
        samples: one sequence of at least ``law.length`` token ids per draw (only the first
            ``law.length`` are used).
        law: from ``sequence_law``.
        family_alpha: family-wise false-alarm rate over the joint and the ``length`` marginal
            tests (Holm).

    Raises:
        InvalidArgument: samples empty, too short, or ids out of range; too few samples for
            the G-test (the message says how many).
    """
    family_alpha = check_open_unit("family_alpha", family_alpha)
    rows = _rows(samples, law)
    support = law.sequences()
    index = {s: i for i, s in enumerate(support)}
    counts = np.zeros(len(support) + 1, dtype=np.int64)  # last cell: probability 0
    unexpected: dict[tuple[int, ...], int] = {}
    for row in rows:
        cell = index.get(row)
        if cell is None:
            unexpected[row] = unexpected.get(row, 0) + 1
            counts[-1] += 1
        else:
            counts[cell] += 1
    probs = [law.probability_by_sequence[s] for s in support] + [0.0]
    probs_array = np.asarray(probs) / math.fsum(probs)
    def sequence_name(cell: int) -> str:
        if cell == len(support):
            return "a sequence the target rules out"
        return f"sequence {support[cell]}"

    joint = g_test(counts, probs_array, alpha=family_alpha, cell_name=sequence_name)
    marginals = []
    matrix = np.array(rows, dtype=np.int64)
    for position in range(law.length):
        observed = np.bincount(matrix[:, position], minlength=law.vocab_size)
        marginals.append(g_test(observed, law.marginal(position), alpha=family_alpha))
    results = [joint, *marginals]
    pvalues = [r.pvalue for r in results]
    rejected = holm(pvalues, family_alpha)
    passed = not any(rejected)
    # The smallest Holm-adjusted p-value is Bonferroni's: m times the smallest p-value.
    adjusted = min(1.0, len(pvalues) * min(pvalues))
    names = ["joint"] + [f"position {i}" for i in range(law.length)]
    if unexpected:
        sequence, count = next(iter(unexpected.items()))
        message = (
            f"sequence {sequence} has probability 0 under the law but was sampled {count} "
            f"times ({len(unexpected)} such sequences)"
        )
    elif passed:
        message = (
            f"consistent with the exact law: {len(results)} tests, smallest Holm-adjusted "
            f"p={adjusted:.3g} >= family alpha {family_alpha:g} (n={len(rows)})"
        )
    else:
        failed = [name for name, r in zip(names, rejected, strict=True) if r]
        worst = results[names.index(failed[0])]
        message = f"not the exact law: {', '.join(failed)} rejected; {worst.message}"
    return LawTestResult(
        passed=passed,
        pvalue=adjusted,
        family_alpha=family_alpha,
        n=len(rows),
        joint=joint,
        marginals=tuple(marginals),
        unexpected=tuple(sorted(unexpected.items())),
        message=message,
    )


def law_required_samples(law: SequenceLaw, family_alpha: float, delta: float, power: float) -> int:
    """Samples for the joint test to detect TV ``delta`` at its Holm share of the alpha."""
    cells = max(len(law.probability_by_sequence), 2)
    return required_samples(cells, family_alpha / (1 + law.length), delta, power)


def _row(logits: Any) -> npt.NDArray[np.float64]:
    if hasattr(logits, "detach"):  # a torch tensor: float64 on the CPU, no graph
        logits = logits.detach().to("cpu").double().numpy()
    row = np.asarray(logits, dtype=np.float64)
    if row.ndim == 2 and row.shape[0] == 1:
        row = row[0]
    return row


def _rows(samples: Any, law: SequenceLaw) -> list[tuple[int, ...]]:
    raw = samples.tolist() if hasattr(samples, "tolist") else list(samples)
    if not raw:
        raise InvalidArgument("samples", samples, "holds no draws", "draw samples first")
    rows = []
    for index, sample in enumerate(raw):
        values = sample.tolist() if hasattr(sample, "tolist") else list(sample)
        if len(values) < law.length:
            raise InvalidArgument(
                "samples",
                f"<{len(raw)} draws>",
                f"draw {index} has {len(values)} tokens, fewer than the law's length {law.length}",
            )
        row = tuple(int(t) for t in values[: law.length])
        bad = [t for t in row if not 0 <= t < law.vocab_size]
        if bad:
            raise InvalidArgument(
                "samples",
                f"<{len(raw)} draws>",
                f"draw {index} holds token {bad[0]}, outside [0, {law.vocab_size})",
            )
        rows.append(row)
    return rows
