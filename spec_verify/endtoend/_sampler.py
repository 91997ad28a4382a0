"""A custom sampler against the target law, case by case: ``check_sampler(sampler)``.

For a researcher's sampler that is neither a contract module nor a whole ``generate()``: any
function ``sampler(case, n, seed)`` that, for one case (the target's and the draft's rows after
every prefix of the round), drafts ``case.draft_length`` tokens from the draft rows itself,
verifies them, and returns everything each of ``n`` independent rounds emitted. Whatever the
acceptance rule, a lossless round's emitted tokens, continued with the target's own draws to
``draft_length + 1`` tokens, follow the target's joint law of that many tokens: each case is a
``g_test`` of that joint law, Holm across the cases, with the sample size from the power plan.
A bonus taken from the wrong row, one uniform reused across positions or a draft row read at
the wrong offset keep the first token's law and move the joint one. Two cases have targets
and drafts whose rows depend on the tokens before them; in the others every row is the same.

The distributions are handed over in the dtype the sampler computes in (``float64``,
``float32``, ``float16``, or torch's ``bfloat16`` / ``float16`` / ``float32`` tensors with
``backend="torch"``), and the law tested is the target *as rounded to that dtype*
(renormalised in float64): rounding is the sampler's input, not its fault. Cases where
probabilities underflow in float16 (entries below 6e-8, the smallest float16 subnormal) are
generated on purpose: a ratio ``p/q`` with ``q`` rounded to 0 must not become NaN or garbage.
The dtype is named in every case's result.

``shape="propose_and_verify"`` is the round an engine runs on its own stream (CONTRACT.md
section 14): ``sampler(target_probs, draft_probs, n, seed)`` gets the target's ``(k + 1, V)``
rows and the draft's ``(k, V)`` rows (row ``i`` for the ``i``-th position, whatever came
before), draws the ``k`` drafts itself from the draft rows with its own generator, verifies
them, and returns what ``n`` rounds emitted. Each of its cases (``propose_cases``) is sized
for the TV that noise shared between the draft and the verifier has on its rows (vLLM PR
#47386, fixed in #54282: 4/91 and 0.15, computed exactly by
``spec_verify.tiers._own_stream.coupled_law``; planned at 0.04 and 0.14), whatever larger
``delta`` is asked.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from spec_verify.errors import InvalidArgument
from spec_verify.stats._gof import GofResult, g_test
from spec_verify.stats._multiple import holm, holm_thresholds
from spec_verify.stats._power import required_samples
from spec_verify.stats._validate import check_open_unit

__all__ = [
    "SamplerCase",
    "SamplerCaseResult",
    "SamplerCheckResult",
    "check_sampler",
    "propose_cases",
    "sampler_cases",
]

_NUMPY_DTYPES = ("float64", "float32", "float16")
_TORCH_DTYPES = ("float32", "float16", "bfloat16")
Sampler = Callable[..., Any]
_SHAPES = ("rounds", "propose_and_verify")


@dataclass(frozen=True)
class SamplerCase:
    """One case: ``draft_length`` tokens to draft per round, and the rows of the target and
    the draft after every prefix of the round, in ``dtype`` (numpy arrays, or torch tensors with
    ``backend == "torch"``): ``target_row(prefix)`` (V,) for prefixes of up to
    ``draft_length`` tokens (the last one is the bonus row), ``draft_row(prefix)`` (V,) for
    prefixes of up to ``draft_length - 1``. ``target_probs`` and ``draft_probs`` are the rows
    of the empty prefix (all rows, when ``context_free``)."""

    name: str
    description: str
    target_rows: Mapping[tuple[int, ...], Any]
    draft_rows: Mapping[tuple[int, ...], Any]
    draft_length: int
    dtype: str
    backend: str
    context_free: bool
    planned_delta: float = 0.0  # the TV of the bug the case is sized for (0: the run's delta)

    @property
    def vocab_size(self) -> int:
        return int(self.target_probs.shape[0])

    @property
    def target_probs(self) -> Any:
        return self.target_rows[()]

    @property
    def draft_probs(self) -> Any:
        return self.draft_rows[()]

    def target_row(self, prefix: Sequence[int]) -> Any:
        """The target's row after ``prefix`` (the tokens of this round before the position)."""
        return self._row(self.target_rows, prefix, self.draft_length, "target_row")

    def draft_row(self, prefix: Sequence[int]) -> Any:
        """The draft's row after ``prefix`` (the tokens drafted before the position)."""
        return self._row(self.draft_rows, prefix, self.draft_length - 1, "draft_row")

    def _row(
        self, rows: Mapping[tuple[int, ...], Any], prefix: Sequence[int], depth: int, name: str
    ) -> Any:
        key = tuple(int(t) for t in prefix)
        if key not in rows:
            raise InvalidArgument(
                f"{name}(prefix)", list(key),
                f"must be at most {depth} token ids in [0, {self.vocab_size})",
            )  # fmt: skip
        return rows[key]


@dataclass(frozen=True)
class SamplerCaseResult:
    """One case's verdict: ``test`` (a G-test of the first emitted token, or None when the
    sampler failed), whether Holm rejected it, its threshold, and an ``error`` naming what the
    sampler did wrong (raised, wrong shape, ids out of range)."""

    case: str
    dtype: str
    n: int
    test: GofResult | None
    rejected: bool
    threshold: float
    error: str = ""
    mean_emitted: float = 0.0


@dataclass(frozen=True)
class SamplerCheckResult:
    """The verdict over all cases (Holm at ``family_alpha``); ``passed`` needs every case to
    have run and none to be rejected."""

    passed: bool
    pvalue: float
    family_alpha: float
    delta: float
    power: float
    dtype: str
    cases: tuple[SamplerCaseResult, ...]
    message: str


def sampler_cases(dtype: str = "float64", backend: str = "numpy") -> list[SamplerCase]:
    """The cases, with distributions in ``dtype`` on ``backend`` ("numpy" or "torch").

    Raises:
        InvalidArgument: an unknown dtype or backend, or torch asked for but not installed.
    """
    convert = _converter(dtype, backend)
    cases = [
        _context_free_case(name, text, convert(p), convert(q), k, dtype, backend)
        for name, text, p, q, k in _CONTEXT_FREE
    ]
    for name, text, V, k, seed in _IN_CONTEXT:
        target, draft = _context_tables(V, k, seed)
        cases.append(SamplerCase(
            name, text, {key: convert(row) for key, row in target.items()},
            {key: convert(row) for key, row in draft.items()}, k, dtype, backend, False,
        ))  # fmt: skip
    return cases


_CONTEXT_FREE = [
    ("seed_v5", "the seed's V = 5 case, two drafted tokens",
     [0.4, 0.3, 0.15, 0.1, 0.05], [0.1, 0.2, 0.3, 0.2, 0.2], 2),
    ("disjoint_supports", "the draft never proposes a token the target can emit",
     [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.6, 0.4], 1),
    ("target_zeros", "tokens the target rules out are the draft's favourites",
     [0.0, 0.7, 0.3, 0.0, 0.0], [0.4, 0.1, 0.1, 0.2, 0.2], 3),
    ("float16_underflow", "draft entries of 1e-9 (0 in float16) where the target has mass",
     [0.3, 0.3, 0.2, 0.2 - 2e-9, 1e-9, 1e-9], [1e-9, 1e-9, 0.5, 0.5 - 4e-9, 1e-9, 1e-9], 2),
    ("tiny_both", "target and draft both below 6e-8 on half the vocabulary",
     [0.5, 0.5 - 3e-8, 1e-8, 1e-8, 1e-8], [0.6, 0.4 - 3e-8, 1e-8, 1e-8, 1e-8], 2),
]  # fmt: skip
_IN_CONTEXT = [
    ("context_v3_k3", "V = 3, three drafts, every row depends on the tokens before it", 3, 3, 43),
    ("context_v4_k2", "V = 4, two drafts, every row depends on the tokens before it", 4, 2, 44),
]


def propose_cases(dtype: str = "float64", backend: str = "numpy") -> list[SamplerCase]:
    """The cases of ``shape="propose_and_verify"``: rows fixed per position (the target's row
    ``i`` after any ``i`` tokens), each with the TV of noise coupling it is planned for."""
    convert = _converter(dtype, backend)
    cases = []
    for name, text, target, draft, planned in _PROPOSE:
        k = len(draft)
        V = len(target[0])
        rows = [convert(row) for row in target]
        q_rows = [convert(row) for row in draft]
        cases.append(SamplerCase(
            name, text, {pre: rows[len(pre)] for pre in _prefixes(V, k)},
            {pre: q_rows[len(pre)] for pre in _prefixes(V, k - 1)}, k, dtype, backend, False,
            planned,
        ))  # fmt: skip
    return cases


_PROPOSE = [
    ("own_stream_v3_k2", "V = 3, two drafts, rows per position (statistical/own_stream's); "
     "noise coupling moves three tokens' law by TV 4/91",
     [[5 / 13, 4 / 13, 4 / 13], [1 / 4, 5 / 8, 1 / 8], [1 / 4, 1 / 3, 5 / 12]],
     [[3 / 7, 2 / 7, 2 / 7], [3 / 10, 3 / 10, 2 / 5]], 0.04),
    ("seed_v5_k2", "the seed's V = 5 rows at both positions, two drafts; noise coupling: "
     "TV 0.15", [[0.4, 0.3, 0.15, 0.1, 0.05]] * 3, [[0.1, 0.2, 0.3, 0.2, 0.2]] * 2, 0.14),
]  # fmt: skip


def _prefixes(V: int, depth: int) -> list[tuple[int, ...]]:
    return [p for d in range(depth + 1) for p in itertools.product(range(V), repeat=d)]


def _context_free_case(
    name: str, text: str, p: Any, q: Any, k: int, dtype: str, backend: str
) -> SamplerCase:
    V = int(p.shape[0])
    target = dict.fromkeys(_prefixes(V, k), p)
    draft = dict.fromkeys(_prefixes(V, k - 1), q)
    return SamplerCase(name, text, target, draft, k, dtype, backend, True)


def _context_tables(
    V: int, k: int, seed: int
) -> tuple[dict[tuple[int, ...], list[float]], dict[tuple[int, ...], list[float]]]:
    """Rows after every prefix: small integer weights (every entry positive), so rows differ
    from one prefix to the next by far more than any dtype's rounding."""
    rng = np.random.default_rng(seed)
    target: dict[tuple[int, ...], list[float]] = {}
    draft: dict[tuple[int, ...], list[float]] = {}
    for prefix in _prefixes(V, k):
        weights = rng.integers(1, 8, size=V)
        target[prefix] = [float(w) / float(weights.sum()) for w in weights]
        if len(prefix) < k:
            weights = rng.integers(1, 8, size=V)
            draft[prefix] = [float(w) / float(weights.sum()) for w in weights]
    return target, draft


def check_sampler(
    sampler: Sampler,
    *,
    dtype: str = "float64",
    backend: str = "numpy",
    family_alpha: float = 1e-3,
    delta: float = 0.1,
    power: float = 0.99,
    seed: int = 0,
    shape: str = "rounds",
) -> SamplerCheckResult:
    """Test ``sampler(case, n, seed) -> what n rounds emitted`` on every case.

    Args:
        sampler: called once per case with the case, the number of rounds ``n`` and a seed;
            returns, for each round, every token it emitted (accepted drafts, then the
            correction or bonus token): an (n, m) integer array (a list of lists, numpy array
            or torch tensor) with each row padded with -1 after its last token, ``m`` at most
            ``case.draft_length + 1``, or a list of ``n`` token lists.
        dtype, backend: how the distributions are handed over (see the module doc).
        family_alpha: family-wise false-alarm rate (Holm across the cases).
        delta, power: each case detects a sampler whose joint law of ``draft_length + 1``
            tokens is at TV ``delta`` from the target's with probability ``power`` (``n`` from
            ``required_samples`` over the law's support, at the case's Holm share).
        seed: case ``i`` gets ``seed + i``; the continuation draws use their own stream.
        shape: ``"rounds"`` (above) or ``"propose_and_verify"``: the sampler is called as
            ``sampler(target_probs, draft_probs, n, seed)`` with ``(k + 1, V)`` and ``(k, V)``
            rows per position (``propose_cases``), drafts itself and returns the same;
            each case's ``n`` is planned at ``min(delta, case.planned_delta)``.

    Returns:
        A ``SamplerCheckResult``; a sampler that raises or returns garbage fails its case
        (named in ``message``), it does not raise here.
    """
    family_alpha = check_open_unit("family_alpha", family_alpha)
    if shape not in _SHAPES:
        raise InvalidArgument("shape", shape, f"must be one of {_SHAPES}",
                              "shape='propose_and_verify' for a sampler that drafts itself")
    propose = shape == "propose_and_verify"
    cases = propose_cases(dtype, backend) if propose else sampler_cases(dtype, backend)
    per_case = family_alpha / len(cases)
    results: list[tuple[SamplerCase, int, GofResult | None, str, float]] = []
    for index, case in enumerate(cases):
        rows = _rows_as_seen(case)
        law = _joint_law(rows, case.vocab_size, case.draft_length + 1)
        planned = min(delta, case.planned_delta) if case.planned_delta else delta
        n = required_samples(max(int(np.count_nonzero(law)), 2), per_case, planned, power)
        try:
            args = _positional(case) if propose else (case,)
            rounds = _rounds(sampler(*args, n, seed + index), n, case)
        except _BadOutput as error:
            results.append((case, n, None, str(error), 0.0))
            continue
        except Exception as error:  # the sampler under test may raise anything
            results.append((case, n, None, f"raised {type(error).__name__}: {error}", 0.0))
            continue
        continuation = np.random.default_rng([seed, index, 0x5EC])
        cells = [_continued(r, rows, case, continuation) for r in rounds]
        counts = np.bincount(cells, minlength=law.size)
        mean = sum(map(len, rounds)) / n
        named = functools.partial(_sequence_name, case.vocab_size, case.draft_length + 1)
        test = g_test(counts, law, alpha=per_case, cell_name=named)
        results.append((case, n, test, "", mean))
    pvalues = [0.0 if test is None else test.pvalue for _, _, test, _, _ in results]
    rejected = holm(pvalues, family_alpha)
    thresholds = holm_thresholds(pvalues, family_alpha)
    case_results = tuple(
        SamplerCaseResult(case.name, dtype, n, test, reject, threshold, error, mean)
        for (case, n, test, error, mean), reject, threshold in zip(
            results, rejected, thresholds, strict=True
        )
    )
    passed = not any(rejected)
    failed = [c for c in case_results if c.rejected]
    if passed:
        message = (
            f"every case follows the target's joint law of everything a round emits "
            f"({len(cases)} cases, {dtype} on {backend}, family alpha {family_alpha:g}; "
            f"TV {delta:g} detected with power {power:g}"
            + ("; each case at least at its noise-coupling TV)" if propose else ")")
        )
        if all(c.mean_emitted == 1.0 for c in case_results):
            message += (
                "; every round emitted one token, so only the first token's law was tested: "
                "return every token a round emits"
            )
    else:
        parts = [f"{c.case}: {c.error or (c.test.message if c.test else '')}" for c in failed]
        message = f"not the target law ({dtype} on {backend}): " + "; ".join(parts)
    return SamplerCheckResult(
        passed=passed,
        pvalue=min(1.0, len(pvalues) * min(pvalues)),
        family_alpha=family_alpha,
        delta=delta,
        power=power,
        dtype=dtype,
        cases=case_results,
        message=message,
    )


class _BadOutput(Exception):
    pass


def _positional(case: SamplerCase) -> tuple[Any, Any]:
    """A per-position case's rows as ``(k + 1, V)`` target and ``(k, V)`` draft arrays."""
    k = case.draft_length
    target = [case.target_row((0,) * i) for i in range(k + 1)]
    draft = [case.draft_row((0,) * i) for i in range(k)]
    if case.backend == "torch":
        import torch

        return torch.stack(target), torch.stack(draft)
    return np.stack(target), np.stack(draft)


def _rows_as_seen(case: SamplerCase) -> dict[tuple[int, ...], npt.NDArray[np.float64]]:
    """The target's rows as handed over (rounded to the dtype), renormalised in float64."""
    seen = {}
    for prefix, values in case.target_rows.items():
        plain = values.double().numpy() if case.backend == "torch" else values
        row = np.asarray(plain, dtype=np.float64)
        seen[prefix] = row / math.fsum(row)
    return seen


def _joint_law(
    rows: Mapping[tuple[int, ...], Any], V: int, length: int
) -> npt.NDArray[np.float64]:
    """The target's law of ``length`` tokens from its rows after every prefix, indexed as
    base-V numbers (``_sequence_index``)."""
    law = np.ones(1)
    for depth in range(length):
        prefixes = itertools.product(range(V), repeat=depth)
        step = np.array([rows[prefix] for prefix in prefixes])  # (V**depth, V)
        law = (law[:, None] * step).reshape(-1)
    return law


def _continued(
    emitted: tuple[int, ...],
    rows: dict[tuple[int, ...], npt.NDArray[np.float64]],
    case: SamplerCase,
    rng: np.random.Generator,
) -> int:
    """A round's emitted tokens continued with the target's draws to ``draft_length + 1``
    tokens, as the base-V index of the sequence."""
    V, length = case.vocab_size, case.draft_length + 1
    sequence = list(emitted)
    while len(sequence) < length:
        cdf = np.cumsum(rows[tuple(sequence)])
        token = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
        sequence.append(min(token, V - 1))
    return _sequence_index(sequence, V)


def _sequence_index(sequence: Sequence[int], V: int) -> int:
    """A sequence of token ids as a base-V number, its first token the most significant."""
    index = 0
    for token in sequence:
        index = index * V + token
    return index


def _sequence_name(V: int, length: int, index: int) -> str:
    tokens = []
    for _ in range(length):
        index, token = divmod(index, V)
        tokens.append(token)
    return f"sequence {tuple(reversed(tokens))}"


def _rounds(output: Any, n: int, case: SamplerCase) -> list[tuple[int, ...]]:
    """Each round's emitted ids: one or more ids in [0, V), at most ``draft_length + 1``."""
    V, most = case.vocab_size, case.draft_length + 1
    raw = output.tolist() if hasattr(output, "tolist") else output
    try:
        rounds = [_as_list(r) for r in raw] if len(raw) and not _is_id(raw[0]) else None
    except TypeError:
        rounds = None
    if rounds is None or len(rounds) != n:
        shape = np.shape(raw) if rounds is None else (len(rounds), "...")
        raise _BadOutput(
            f"returned {shape}, not the emitted ids of {n} rounds: return an (n, m) array "
            f"padded with -1 (m <= {most}) or {n} lists of ids"
        )
    out = []
    for number, ids in enumerate(rounds):
        if not all(_is_id(t) for t in ids):
            raise _BadOutput(f"round {number} returned {ids}, not integer token ids")
        count = next((i for i, t in enumerate(ids) if t == -1), len(ids))
        emitted, padding = ids[:count], ids[count:]
        if not emitted or len(emitted) > most or any(t != -1 for t in padding):
            raise _BadOutput(
                f"round {number} returned {ids}: a round emits 1 to {most} ids "
                f"(draft_length {case.draft_length} + 1), then only -1 padding"
            )
        bad = [t for t in emitted if not 0 <= t < V]
        if bad:
            raise _BadOutput(f"round {number} returned token id {bad[0]}, outside [0, {V})")
        out.append(tuple(int(t) for t in emitted))
    return out


def _as_list(row: Any) -> list[Any]:
    return list(row.tolist() if hasattr(row, "tolist") else row)


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _converter(dtype: str, backend: str) -> Callable[[list[float]], Any]:
    if backend == "numpy":
        if dtype not in _NUMPY_DTYPES:
            raise InvalidArgument("dtype", dtype, f"numpy takes one of {_NUMPY_DTYPES}")
        return lambda values: np.asarray(values, dtype=np.float64).astype(dtype)
    if backend == "torch":
        if dtype not in _TORCH_DTYPES:
            raise InvalidArgument("dtype", dtype, f"torch takes one of {_TORCH_DTYPES}")
        try:
            import torch
        except ImportError as error:
            raise InvalidArgument(
                "backend", backend, "needs torch", "pip install 'spec-verify[torch]'"
            ) from error
        torch_dtype = getattr(torch, dtype)
        return lambda values: torch.tensor(values, dtype=torch.float64).to(torch_dtype)
    raise InvalidArgument("backend", backend, "must be 'numpy' or 'torch'")
