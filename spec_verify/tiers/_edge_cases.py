"""Boundary cases: inputs built to sit exactly on the edge of one rule of CONTRACT.md.

Random cases almost never hit a threshold exactly, so a port that writes ``<=`` where the
contract says ``<`` passes them (issue 12 measured 1 seed in 5). Each kind below puts the edge
in every case of its kind, so the parity tier's distribution check differs from such a port on
every case of the kind, and every run holds cases of every kind:

- ``top_p_exact``: dyadic probabilities (``exp(0) = 1``, ``exp(-ln 2) = 1/2``,
  ``exp(-2 ln 2) = 1/4`` exactly in float64, with a power-of-two sum), so a running sum of the
  sorted probabilities equals ``top_p`` exactly: the contract stops there (``c < top_p``),
  an inclusive port keeps one more token;
- ``min_p_exact``: the same rows with ``min_p`` a ratio of two levels, so some tokens sit
  exactly on ``min_p * max`` (kept: the contract drops ``prob < min_p * max`` only);
- ``top_k_tie``: small-integer logits whose ``k``-th and ``(k+1)``-th largest are equal
  (the tie goes to the lowest id, and exactly ``k`` are kept);
- ``long_history``: 1,025 to 4,096 history tokens whose penalised tokens occur only before the
  last 1,024, and a top logit that the penalty moves below another token (a port that looks at
  a recent window only picks another greedy token and another distribution); a bait token
  takes over once the runner-up is kept and penalised (penalties must see kept drafts).

Each builder is a pure function of a numpy generator, so a case replays from its seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BOUNDARY_EVERY",
    "BOUNDARY_KINDS",
    "BoundaryCase",
    "boundary_case",
    "boundary_kind",
]

BOUNDARY_EVERY = 50  # case i of a run is a boundary case when i % 50 < len(BOUNDARY_KINDS)
BOUNDARY_KINDS = ("top_p_exact", "min_p_exact", "top_k_tie", "long_history")
WINDOW = 1024  # the recent window a penalty bug looks at; long histories reach past it
_LEVELS = (0.0, -math.log(2.0), -2.0 * math.log(2.0))  # exp gives 1, 1/2, 1/4 exactly
_WEIGHTS = (1.0, 0.5, 0.25)
_OFF: dict[str, Any] = {
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}


@dataclass(frozen=True)
class BoundaryCase:
    """The inputs of one ``verify_draft`` call on a boundary (no uniforms: the tier adds them)."""

    kind: str
    target_logits: NDArray[np.float64]
    draft_ids: tuple[int, ...]
    draft_probs: NDArray[np.float64] | None
    params: dict[str, Any]
    history: tuple[int, ...]
    prompt: tuple[int, ...]


def boundary_kind(case_seed: int) -> str | None:
    """The boundary kind of a case seed (``seed * 1_000_000 + i``), or None for a random case."""
    position = case_seed % BOUNDARY_EVERY
    return BOUNDARY_KINDS[position] if position < len(BOUNDARY_KINDS) else None


def boundary_case(rng: np.random.Generator, kind: str) -> BoundaryCase:
    """A case of ``kind`` (one of ``BOUNDARY_KINDS``) drawn from ``rng``."""
    builders = {
        "top_p_exact": _top_p_exact,
        "min_p_exact": _min_p_exact,
        "top_k_tie": _top_k_tie,
        "long_history": _long_history,
    }
    return builders[kind](rng)


def _dyadic_levels(rng: np.random.Generator) -> list[int]:
    """Levels (indices into ``_WEIGHTS``) whose weights sum to a power of two, at least one
    of level 0 (so the row's maximum is 0 and ``l - max`` is exact)."""
    total_quarters = 4 * 2 ** int(rng.integers(1, 4))  # the sum is 2, 4 or 8
    levels = [0]
    left = total_quarters - 4
    while left > 0:
        options = [lv for lv, w in enumerate(_WEIGHTS) if 4 * w <= left]
        level = int(rng.choice(options))
        levels.append(level)
        left -= int(4 * _WEIGHTS[level])
    rng.shuffle(levels)
    return levels


def _dyadic_row(rng: np.random.Generator, levels: list[int], V: int) -> NDArray[np.float64]:
    """A row of ``V`` logits: the levels at random ids, ``-inf`` elsewhere."""
    row = np.full(V, -np.inf)
    ids = rng.choice(V, size=len(levels), replace=False)
    row[ids] = [_LEVELS[lv] for lv in levels]
    return row


def _sorted_probs(levels: list[int]) -> list[float]:
    total = sum(_WEIGHTS[lv] for lv in levels)
    return sorted((_WEIGHTS[lv] / total for lv in levels), reverse=True)


def _dyadic_case(
    rng: np.random.Generator, kind: str, levels: list[int], threshold: dict[str, float]
) -> BoundaryCase:
    """Rows on ``levels`` (every row the same multiset of probabilities at other ids), a
    power-of-two temperature (``l * T / T`` is exact) and drafts among the finite tokens,
    so some propose a token the threshold drops (always rejected by the contract)."""
    V = int(rng.integers(len(levels), len(levels) + 24))
    m = int(rng.integers(0, 4))
    temperature = float(rng.choice([1.0, 0.5, 2.0]))
    rows = np.vstack([_dyadic_row(rng, levels, V) for _ in range(m + 1)]) * temperature
    ids = tuple(int(rng.choice(np.flatnonzero(np.isfinite(rows[i])))) for i in range(m))
    params = {**_OFF, **threshold, "temperature": temperature}
    return BoundaryCase(kind, rows, ids, None, params, (), ())


def _top_p_exact(rng: np.random.Generator) -> BoundaryCase:
    levels = _dyadic_levels(rng)
    while len(levels) < 2:
        levels = _dyadic_levels(rng)
    probs = _sorted_probs(levels)
    cut = int(rng.integers(1, len(probs)))
    top_p = math.fsum(probs[:cut])  # the running sum after `cut` tokens, exactly
    return _dyadic_case(rng, "top_p_exact", levels, {"top_p": top_p})


def _min_p_exact(rng: np.random.Generator) -> BoundaryCase:
    levels = _dyadic_levels(rng)
    min_p = _WEIGHTS[int(rng.choice(sorted(set(levels))))]  # the level 0 weight is 1
    return _dyadic_case(rng, "min_p_exact", levels, {"min_p": min_p})


def _top_k_tie(rng: np.random.Generator) -> BoundaryCase:
    V = int(rng.integers(8, 300))
    m = int(rng.integers(0, 4))
    rows = rng.integers(-2, 3, size=(m + 1, V)).astype(np.float64)
    # top_k cuts inside the block of the largest value that has more than one token: the
    # k-th and (k+1)-th largest of row 0 are equal.
    ordered = np.sort(rows[0])[::-1]
    ties = [k for k in range(1, V) if ordered[k - 1] == ordered[k]]
    top_k = int(rng.choice(ties))
    temperature = float(rng.choice([0.0, 1.0, 0.7]))
    ids = tuple(int(t) for t in rng.integers(0, V, size=m))
    params = {**_OFF, "top_k": top_k, "temperature": temperature}
    return BoundaryCase("top_k_tie", rows, ids, None, params, (), ())


def _long_history(rng: np.random.Generator) -> BoundaryCase:
    V = int(rng.integers(8, 513))
    m = int(rng.integers(1, 4))
    tokens = rng.permutation(V)
    early = [int(t) for t in tokens[:3]]  # penalised, seen only before the last WINDOW
    target, runner_up = early[0], int(tokens[3])  # runner_up: never in the history
    bait = int(tokens[4])  # the argmax once a kept runner_up is penalised (never in history)
    filler = [int(t) for t in tokens[5 : 5 + int(rng.integers(1, min(6, V - 5) + 1))]]
    length = int(rng.integers(WINDOW + 1, 4 * WINDOW + 1))
    recent = int(rng.integers(WINDOW, length))  # the last `recent` tokens are filler only
    history = [int(rng.choice(early)) for _ in range(length - recent)]
    history[0] = target
    history += [int(rng.choice(filler)) for _ in range(recent)]
    count = history.count(target)
    penalty = str(rng.choice(["repetition", "presence", "frequency"]))
    rows = rng.normal(-4.0, 1.0, size=(m + 1, V))
    rows[:, runner_up] = 2.0
    params = dict(_OFF)
    if penalty == "repetition":
        factor = float(rng.choice([2.0, 3.0, 4.0]))
        params["repetition_penalty"] = factor
        rows[:, target] = 2.0 * factor * 0.9  # above 2 unpenalised, 1.8 after the division
        kept_once = 2.0 - 2.0 / factor  # what a kept runner_up loses
    elif penalty == "presence":
        params["presence_penalty"] = float(rng.choice([1.5, 3.0]))
        rows[:, target] = 2.0 + params["presence_penalty"] / 2
        kept_once = params["presence_penalty"]
    else:
        params["frequency_penalty"] = 1.0 / count + float(rng.choice([0.0, 0.5]))
        rows[:, target] = 2.0 + 0.5 * params["frequency_penalty"] * count
        kept_once = params["frequency_penalty"]
    # Below the runner-up, above it once a kept runner-up is penalised: the greedy chain turns
    # there, so penalties that miss the drafts kept this round differ too (seed pitfall 7).
    rows[:, bait] = 2.0 - kept_once / 4
    params["temperature"] = float(rng.choice([0.0, 1.0]))
    prompt = tuple(int(rng.choice(filler)) for _ in range(int(rng.integers(0, 6))))
    # filler only: a kept target would enter the recent window, a kept runner-up its penalty
    ids = tuple(int(rng.choice(filler)) for _ in range(m))
    return BoundaryCase("long_history", rows, ids, None, params, tuple(history), prompt)
