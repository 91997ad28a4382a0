"""Hypothesis strategies for speculative samplers (plural nouns, as Hypothesis names them).

Everything here generates *inputs*: logit rows, sampling parameters (as the contract's field
names, so each implementation builds its own parameter object), drafts and draft rows,
histories, prompt-lookup contexts, and whole cases for ``verify_draft`` and for generation.
The edge cases the seed warns about are generated on purpose: ties at the maximum, ``-inf``
logits, very large and very small magnitudes, vocabularies from 2 to over 8,192, draft rows
with zeros, supports disjoint from the target's, ``q = p``, and contexts with planted repeats.

Small vocabularies are drawn entry by entry (so failures shrink to readable rows); large ones
from a seeded numpy generator with the same features planted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from numpy.typing import NDArray

__all__ = [
    "LARGE_VOCABULARIES",
    "GenerationCase",
    "TreeCase",
    "VerifyCase",
    "boundary_verify_cases",
    "draft_rows",
    "drafts",
    "generation_cases",
    "histories",
    "logit_rows",
    "lookup_contexts",
    "sampling_params",
    "verify_cases",
    "vocab_sizes",
]

# Sizes that cross the boundaries ports get wrong: powers of two and one past them, 8,192 + 1.
LARGE_VOCABULARIES = (16, 255, 256, 257, 1024, 4097, 8192, 8193, 10_000)
_SMALL_VOCABULARY = 16  # up to this size rows are drawn entry by entry
_HUGE = 1e30  # large magnitudes that stay finite through temperature and float32 ports
_TINY = 1e-300


def vocab_sizes(max_size: int | None = None) -> st.SearchStrategy[int]:
    """Vocabulary sizes: mostly small (2 to 12), sometimes large (up to 10,000)."""
    large = [v for v in LARGE_VOCABULARIES if max_size is None or v <= max_size]
    small = st.integers(2, 12 if max_size is None else max(2, min(12, max_size)))
    if not large:
        return small
    return st.one_of(small, small, small, st.sampled_from(large))


_LOGIT_VALUES = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0, 2.5, 2.5, -np.inf]),  # repeats make ties likely
    st.floats(-30.0, 30.0, allow_nan=False),
    st.sampled_from([_HUGE, -_HUGE, _HUGE / 2, _TINY, -_TINY, 2 * _TINY, 1e-12]),
)


@st.composite
def logit_rows(
    draw: st.DrawFn, vocab_size: int | None = None, *, allow_neg_inf: bool = True
) -> NDArray[np.float64]:
    """One row of ``V`` logits: finite or ``-inf`` (never NaN or ``+inf``), at least one finite.

    Features: ties (also at the maximum), ``-inf`` entries, magnitudes up to 1e30 and down to
    1e-300, and ``V`` from 2 to 10,000 when ``vocab_size`` is None.
    """
    V = draw(vocab_sizes()) if vocab_size is None else vocab_size
    if V <= _SMALL_VOCABULARY:
        values = _LOGIT_VALUES if allow_neg_inf else _LOGIT_VALUES.filter(np.isfinite)
        row = np.array(draw(st.lists(values, min_size=V, max_size=V)), dtype=np.float64)
    else:
        row = _large_row(draw, V, allow_neg_inf)
    if not np.isfinite(row).any():
        row[draw(st.integers(0, V - 1))] = draw(st.floats(-5.0, 5.0))
    return row


def _large_row(draw: st.DrawFn, V: int, allow_neg_inf: bool) -> NDArray[np.float64]:
    seed = draw(st.integers(0, 2**32 - 1))
    style = draw(st.sampled_from(["normal", "peaked", "huge", "tiny", "flat"]))
    rng = np.random.default_rng(seed)
    scale = {"normal": 2.0, "peaked": 8.0, "huge": _HUGE, "tiny": _TINY, "flat": 0.0}[style]
    row = rng.normal(0.0, 1.0, V) * scale
    if draw(st.booleans()):  # ties at the maximum
        top = float(np.max(row))
        row[rng.choice(V, size=draw(st.integers(2, 5)), replace=False)] = top + 1.0
    if allow_neg_inf and draw(st.booleans()):
        banned = rng.random(V) < draw(st.sampled_from([0.01, 0.5, 0.99]))
        row[banned] = -np.inf
    return row


@st.composite
def sampling_params(draw: st.DrawFn, greedy: bool | None = None) -> dict[str, Any]:
    """Sampling parameters as the contract's field names (``impl.params(**fields)``).

    Temperature 0 (greedy) and positive; top-k off, 1 and larger; top-p at its edges (1, just
    below 1, tiny); min-p off, small and 1; repetition, presence and frequency penalties.
    ``greedy=True`` or ``False`` fixes the mode.
    """
    if greedy is None:
        greedy = draw(st.booleans())
    temperature = (
        0.0 if greedy else draw(st.one_of(st.sampled_from([1.0, 0.5, 2.0]), st.floats(0.05, 5.0)))
    )
    return {
        "temperature": temperature,
        "top_k": draw(st.one_of(st.sampled_from([0, 0, 1, 2]), st.integers(0, 50))),
        "top_p": draw(
            st.one_of(
                st.sampled_from([1.0, 1.0, float(np.nextafter(1.0, 0.0)), 0.5, 1e-9]),
                st.floats(1e-6, 1.0),
            )
        ),
        "min_p": draw(st.sampled_from([0.0, 0.0, 0.05, 0.5, 1.0])),
        "repetition_penalty": draw(st.sampled_from([1.0, 1.0, 1.3, 0.7, 2.0])),
        "presence_penalty": draw(st.sampled_from([0.0, 0.0, 0.5, -0.5])),
        "frequency_penalty": draw(st.sampled_from([0.0, 0.0, 0.25])),
    }


def histories(vocab_size: int, max_size: int = 12) -> st.SearchStrategy[list[int]]:
    """Earlier tokens, with repeats (small ids are favoured so penalties have counts)."""
    ids = st.one_of(st.integers(0, min(vocab_size, 4) - 1), st.integers(0, vocab_size - 1))
    return st.lists(ids, max_size=max_size)


def drafts(vocab_size: int, max_length: int = 5) -> st.SearchStrategy[list[int]]:
    """Drafted ids: any ids in range, often repeating."""
    return histories(vocab_size, max_size=max_length)


@st.composite
def draft_rows(
    draw: st.DrawFn,
    vocab_size: int,
    target: Sequence[float] | NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """One draft distribution ``q`` over ``vocab_size`` tokens (sums to 1 within 1e-12).

    Kinds: random with zeros, one-hot, uniform, and, given the ``target`` row ``p``: ``q = p``
    exactly and ``q`` with a support disjoint from ``p``'s (when ``p`` leaves room).
    """
    V = vocab_size
    kinds = ["random", "one_hot", "uniform"]
    p = None if target is None else np.asarray(target, dtype=np.float64)
    if p is not None:
        kinds += ["equal", "equal"]
        if (p == 0).any():
            kinds.append("disjoint")
    kind = draw(st.sampled_from(kinds))
    if kind == "equal" and p is not None:
        return p.copy()
    if kind == "uniform":
        return np.full(V, 1.0 / V)
    if kind == "one_hot":
        q = np.zeros(V)
        q[draw(st.integers(0, V - 1))] = 1.0
        return q
    allowed = np.flatnonzero(p == 0) if kind == "disjoint" and p is not None else np.arange(V)
    if len(allowed) <= _SMALL_VOCABULARY:
        weights = np.array(
            draw(
                st.lists(
                    st.sampled_from([0, 0, 1, 2, 5]), min_size=len(allowed), max_size=len(allowed)
                )
            ),
            dtype=np.float64,
        )
    else:
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        weights = rng.random(len(allowed)) * (rng.random(len(allowed)) < 0.5)
    if not weights.any():
        weights[draw(st.integers(0, len(allowed) - 1))] = 1.0
    q = np.zeros(V)
    q[allowed] = weights / weights.sum()
    return q


@dataclass(frozen=True, eq=False)
class VerifyCase:
    """One call of ``verify_draft``: ``(m + 1, V)`` target logits, ``m`` drafts, parameters.

    ``draft_probs`` is ``(m, V)`` or None (a deterministic draft); ``params`` holds the
    contract's field names; ``seed`` seeds the uniform source the checks give the call.
    """

    target_logits: NDArray[np.float64]
    draft_ids: tuple[int, ...]
    draft_probs: NDArray[np.float64] | None
    params: Mapping[str, Any]
    history: tuple[int, ...] = ()
    prompt: tuple[int, ...] = ()
    seed: int = 0

    @property
    def m(self) -> int:
        return len(self.draft_ids)

    @property
    def vocab_size(self) -> int:
        return int(self.target_logits.shape[1])

    @property
    def greedy(self) -> bool:
        return float(self.params.get("temperature", 1.0)) == 0.0

    def with_params(self, **fields: Any) -> VerifyCase:
        """The same case with some parameters replaced."""
        return VerifyCase(
            self.target_logits,
            self.draft_ids,
            self.draft_probs,
            {**self.params, **fields},
            self.history,
            self.prompt,
            self.seed,
        )


@st.composite
def verify_cases(
    draw: st.DrawFn,
    *,
    greedy: bool | None = None,
    max_drafts: int = 4,
    max_vocab_size: int | None = None,
) -> VerifyCase:
    """Valid ``verify_draft`` calls: every drafted token has ``q(x) > 0`` in its draft row.

    Each draft row is drawn against the target's distribution at its position (the reference's
    ``sampling_distribution``, with the drafts before it in the history), so ``q = p`` and
    disjoint supports are real; deterministic drafts propose any id, often one the target
    favours, sometimes one it rules out.
    """
    from spec_verify.reference import SamplingParams, sampling_distribution

    # One case in ten sits on a rule's edge (never the shrink target: 9 is the last value).
    fits = max_drafts >= 3 and (max_vocab_size is None or max_vocab_size >= 512)
    if fits and draw(st.integers(0, 9)) == 9:
        return draw(boundary_verify_cases(greedy=greedy))
    V = draw(vocab_sizes(max_vocab_size))
    m = draw(st.integers(0, max_drafts))
    fields = draw(sampling_params(greedy))
    history = draw(histories(V))
    prompt = draw(histories(V, max_size=6))
    rows = np.vstack([draw(logit_rows(V)) for _ in range(m + 1)])
    deterministic = draw(st.booleans())
    p = SamplingParams(**fields)
    ids: list[int] = []
    q_rows: list[NDArray[np.float64]] = []
    for i in range(m):
        target = sampling_distribution(rows[i], p, [*history, *ids], prompt)
        favoured = [int(t) for t in np.flatnonzero(target > 0)]
        if deterministic:
            x = draw(st.one_of(st.sampled_from(favoured), st.integers(0, V - 1)))
        else:
            q = draw(draft_rows(V, target))
            q_rows.append(q)
            x = draw(st.sampled_from([int(t) for t in np.flatnonzero(q > 0)]))
        ids.append(x)
    probs = None if deterministic or m == 0 else np.vstack(q_rows)
    if m == 0 and not deterministic:
        probs = np.zeros((0, V))
    return VerifyCase(
        target_logits=rows,
        draft_ids=tuple(ids),
        draft_probs=probs,
        params=fields,
        history=tuple(history),
        prompt=tuple(prompt),
        seed=draw(st.integers(0, 2**32 - 1)),
    )


@st.composite
def boundary_verify_cases(draw: st.DrawFn, *, greedy: bool | None = None) -> VerifyCase:
    """``verify_draft`` calls on a rule's edge (``spec_verify.tiers._edge_cases``): top-p and
    min-p thresholds hit exactly by dyadic probabilities, top-k cutting inside a tie, and
    histories of 1,025 to 4,096 tokens whose penalised tokens occur only before the last 1,024
    (so a port that penalises a recent window only picks another greedy token).

    ``greedy=True`` draws the kinds where temperature 0 still meets the edge (top-k ties at
    the maximum, long histories); ``greedy=False`` makes every case sampled.
    """
    from spec_verify.tiers._edge_cases import BOUNDARY_KINDS, boundary_case

    kinds = ("top_k_tie", "long_history") if greedy else BOUNDARY_KINDS
    kind = draw(st.sampled_from(kinds))
    edge = boundary_case(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), kind)
    params = dict(edge.params)
    if greedy is not None and (params["temperature"] == 0.0) != greedy:
        params["temperature"] = 0.0 if greedy else 1.0
    return VerifyCase(
        target_logits=edge.target_logits,
        draft_ids=edge.draft_ids,
        draft_probs=edge.draft_probs,
        params=params,
        history=edge.history,
        prompt=edge.prompt,
        seed=draw(st.integers(0, 2**32 - 1)),
    )


@st.composite
def lookup_contexts(draw: st.DrawFn, vocab_size: int | None = None) -> list[int]:
    """Contexts for prompt lookup, with planted repeats.

    A base sequence over a small alphabet, then a copy of one of its segments (so the context's
    tail n-grams occurred earlier, sometimes more than once), sometimes followed by a token.
    """
    alphabet = draw(st.integers(2, 6)) if vocab_size is None else vocab_size
    ids = st.integers(0, alphabet - 1)
    base = draw(st.lists(ids, min_size=1, max_size=14))
    start = draw(st.integers(0, len(base) - 1))
    stop = draw(st.integers(start + 1, len(base)))
    tail = draw(st.lists(ids, max_size=2))
    return [*base, *base[start:stop], *tail]


_DRAFT_KINDS = ("prompt_lookup", "ngram", "small_model", "self")


@dataclass(frozen=True)
class GenerationCase:
    """One generation on a bundled model: the target, the draft, the prompt and the budget.

    ``target`` is ``"bag"`` (``BagLM``, V = 8, alphabet ``abcdefg``) or ``"attention"``
    (``AttentionLM``, V = 32, the bundled character alphabet); ``params`` holds the contract's
    field names (``max_tokens`` and ``seed`` included).
    """

    target: str
    model_seed: int
    prompt: tuple[int, ...]
    draft: str
    k: int
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def max_tokens(self) -> int:
        return int(self.params.get("max_tokens", 16))

    @property
    def greedy(self) -> bool:
        return float(self.params.get("temperature", 1.0)) == 0.0


@st.composite
def generation_cases(
    draw: st.DrawFn, *, greedy: bool | None = None, max_tokens: int = 12
) -> GenerationCase:
    """Generations on the bundled ``BagLM`` (mostly) or ``AttentionLM``, with every draft kind,
    ``k`` from 0 to 5, budgets from 1 to ``max_tokens``, and penalties and filters."""
    target = draw(st.sampled_from(["bag", "bag", "bag", "attention"]))
    V = 8 if target == "bag" else 32
    prompt = draw(lookup_contexts(vocab_size=draw(st.integers(2, V - 1))))
    prompt = [t + 1 for t in prompt[:20]]  # id 0 is <eos> in the bundled tokenizers
    prompt = [min(t, V - 1) for t in prompt]
    fields = draw(sampling_params(greedy))
    fields["max_tokens"] = draw(st.integers(1, max_tokens))
    fields["seed"] = draw(st.integers(0, 2**32 - 1))
    return GenerationCase(
        target=target,
        model_seed=draw(st.integers(0, 50)),
        prompt=tuple(prompt),
        draft=draw(st.sampled_from(_DRAFT_KINDS)),
        k=draw(st.integers(0, 5)),
        params=fields,
    )


@dataclass(frozen=True, eq=False)
class TreeCase:
    """One call of ``verify_tree``: a random tree (``spec_verify.tiers.tree.random_tree_round``:
    branching up to 3, distinct siblings, target rows with exact zeros), the rule, whether the
    children are deterministic, the temperature, and the seed of the harness's uniform source."""

    round: Any
    temperature: float
    seed: int

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": self.temperature}

    @property
    def target_logits(self) -> NDArray[np.float64]:
        rows = np.array([[float(v) for v in row] for row in self.round.p_rows])
        with np.errstate(divide="ignore"):
            logits: NDArray[np.float64] = np.log(rows)
        return logits

    @property
    def draft_probs(self) -> list[NDArray[np.float64] | None] | None:
        if self.round.q_rows is None:
            return None
        return [None if row is None else np.array([float(v) for v in row])
                for row in self.round.q_rows]  # fmt: skip

    def __repr__(self) -> str:
        r = self.round
        return (f"TreeCase(V={len(r.p_rows[0])}, parents={list(r.parents)}, "
                f"tokens={list(r.token_ids)}, rule={r.rule!r}, "
                f"deterministic={r.q_rows is None}, temperature={self.temperature}, "
                f"seed={self.seed})")  # fmt: skip


@st.composite
def tree_cases(draw: st.DrawFn) -> TreeCase:
    """Random trees of 1 to 6 nodes over 3 to 8 tokens, both lossless rules, sampled and
    deterministic children, sampled and greedy verification."""
    from spec_verify.tiers.tree import TREE_RULES_CHECKED, random_tree_round

    seed = draw(st.integers(0, 2**32 - 1))
    V = draw(st.integers(3, 8))
    n = draw(st.integers(1, 6))
    rule = draw(st.sampled_from(TREE_RULES_CHECKED))
    deterministic = draw(st.booleans())
    temperature = draw(st.sampled_from((1.0, 0.0)))
    tree = random_tree_round(np.random.default_rng(seed), V, n, rule, deterministic)
    return TreeCase(tree, temperature, seed)
