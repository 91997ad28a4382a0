"""The efficiency oracle for chains: the largest expected accepted length any lossless rule
can reach with a given draft, by a linear program over couplings (small cases only).

A round sees the drafts ``x ~ Q`` (the draft's law of ``k`` tokens) and emits ``x[:tau]``
then a token ``y``. Any rule, however randomised, is a joint law ``pi(x, tau, y) >= 0`` with
``sum_{tau, y} pi(x, tau, y) = Q(x)``; it is lossless iff the emission continued with the
target's own sampling to ``k + 1`` tokens has the target's law ``P``:
``sum pi(x, tau, y) P(s[tau+1:] | s[:tau+1]) = P(s)`` over the ``(x, tau, y)`` that emit
``s[:tau+1]``. Maximising ``E[tau]`` over that polytope bounds every lossless rule; Sun et al.
(ICLR 2025, Theorem 2) prove block verification reaches it, which ``prove --rule`` shows
case by case. The program is solved in floats (scipy's HiGHS): its value is an oracle to
compare against, never a proof.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spec_verify.reference.exact import TableModel

__all__ = [
    "MAX_LP_VARIABLES",
    "optimal_accepted",
    "optimal_chains_accepted",
    "optimal_multidraft_acceptance",
]

MAX_LP_VARIABLES = 4000  # V^k (k + 1) V: V = 4, k = 3 is 1,024; V = 6, k = 3 is 5,184


def _prob(model: TableModel, context: tuple[int, ...], seq: tuple[int, ...],
          start: int = 0) -> Fraction:
    prob = Fraction(1)
    for i in range(start, len(seq)):
        prob *= model(context + seq[:i])[seq[i]]
        if not prob:
            break
    return prob


def optimal_accepted(target: TableModel, draft: TableModel, context: tuple[int, ...],
                     k: int) -> float | None:
    """The LP's optimum of ``E[tau]`` (None when the program would exceed the bound)."""
    import numpy as np
    from scipy.optimize import linprog

    V = len(target(context))
    if V**k * (k + 1) * V > MAX_LP_VARIABLES:
        return None
    drafts = [x for x in product(range(V), repeat=k) if _prob(draft, context, x)]
    sequences = list(product(range(V), repeat=k + 1))
    seq_index = {s: j for j, s in enumerate(sequences)}
    variables = [(x, tau, y) for x in drafts for tau in range(k + 1) for y in range(V)]
    n = len(variables)
    a_eq = np.zeros((len(drafts) + len(sequences), n))
    b_eq = np.zeros(len(drafts) + len(sequences))
    for i, x in enumerate(drafts):
        b_eq[i] = float(_prob(draft, context, x))
    for s in sequences:
        b_eq[len(drafts) + seq_index[s]] = float(_prob(target, context, s))
    row_of_draft = {x: i for i, x in enumerate(drafts)}
    tails: dict[tuple[int, ...], float] = {}
    for j, (x, tau, y) in enumerate(variables):
        a_eq[row_of_draft[x], j] = 1.0
        emitted = (*x[:tau], y)
        for rest in product(range(V), repeat=k - tau):
            s = emitted + rest
            key = (*s, tau)
            if key not in tails:
                tails[key] = float(_prob(target, context, s, tau + 1))
            a_eq[len(drafts) + seq_index[s], j] += tails[key]
    cost = -np.array([float(tau) for _, tau, _ in variables])
    solved = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if not solved.success:  # pragma: no cover - the target's own rule is always feasible
        raise RuntimeError(f"the coupling program failed: {solved.message}")
    return float(-solved.fun)


def optimal_multidraft_acceptance(p: tuple[Fraction, ...], q: tuple[Fraction, ...],
                                  K: int) -> float | None:
    """The largest probability that a lossless rule emits one of ``K`` i.i.d. drafts of one
    position (Hu et al., ICLR 2025, as an LP): couplings ``pi(xs, y)`` of ``xs ~ q^K`` and
    ``y ~ p``, maximising ``P(y in xs)``. None when the program would exceed the bound."""
    import numpy as np
    from scipy.optimize import linprog

    V = len(p)
    if V**K * V > MAX_LP_VARIABLES:
        return None
    drafts = [xs for xs in product(range(V), repeat=K)]
    weight = [float(np.prod([float(q[x]) for x in xs])) for xs in drafts]
    n = len(drafts) * V
    a_eq = np.zeros((len(drafts) + V, n))
    for i in range(len(drafts)):
        a_eq[i, i * V:(i + 1) * V] = 1.0
        for y in range(V):
            a_eq[len(drafts) + y, i * V + y] = 1.0
    b_eq = np.array([*weight, *(float(v) for v in p)])
    cost = -np.array([float(y in xs) for xs in drafts for y in range(V)])
    solved = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if not solved.success:  # pragma: no cover - the independent coupling is feasible
        raise RuntimeError(f"the coupling program failed: {solved.message}")
    return float(-solved.fun)


def optimal_chains_accepted(target: TableModel, draft: TableModel, context: tuple[int, ...],
                            K: int, L: int, without_replacement: bool = False,
                            branching: tuple[int, ...] | None = None) -> float | None:
    """The largest expected number of kept drafts any lossless rule reaches with ``K`` draft
    chains of ``L`` tokens (i.i.d., or drawn without replacement: ``drafted_chains``, with
    ``branching`` the drawn tree's children per depth), by the coupling LP of
    ``optimal_accepted`` over the chains: ``pi(chains, emitted) >= 0`` where ``emitted`` is a
    prefix of one chain and a token, summing to the chains' probability, and the emission
    continued by the target to ``L + 1`` tokens has the target's law. With ``K = 1`` it is
    ``optimal_accepted``; with ``L = 1`` and i.i.d. heads ``optimal_multidraft_acceptance``
    (Hu et al.'s multi-draft optimum, a tree of depth one). None past ``MAX_LP_VARIABLES``."""
    import numpy as np
    from scipy.optimize import linprog

    from spec_verify.reference.multidraft_exact import drafted_chains

    V = len(target(context))
    rule = "rrs" if without_replacement else "kseq"
    draws = [(chains, w) for chains, w in drafted_chains(rule, draft, context, K, L, branching)
             if w]
    variables: list[tuple[int, tuple[int, ...], int]] = []  # (draw, emitted, kept)
    for d, (chains, _) in enumerate(draws):
        options = {(*c[:tau], y): tau for c in chains for tau in range(L + 1) for y in range(V)}
        variables += [(d, e, tau) for e, tau in options.items()]
    if len(variables) > MAX_LP_VARIABLES:
        return None
    sequences = list(product(range(V), repeat=L + 1))
    seq_index = {s: j for j, s in enumerate(sequences)}
    a_eq = np.zeros((len(draws) + len(sequences), len(variables)))
    b_eq = np.zeros(len(draws) + len(sequences))
    for d, (_, w) in enumerate(draws):
        b_eq[d] = float(w)
    for s in sequences:
        b_eq[len(draws) + seq_index[s]] = float(_prob(target, context, s))
    tails: dict[tuple[int, ...], float] = {}
    for j, (d, emitted, tau) in enumerate(variables):
        a_eq[d, j] = 1.0
        for rest in product(range(V), repeat=L - tau):
            s = emitted + rest
            key = (*s, tau)
            if key not in tails:
                tails[key] = float(_prob(target, context, s, tau + 1))
            a_eq[len(draws) + seq_index[s], j] += tails[key]
    cost = -np.array([float(tau) for _, _, tau in variables])
    solved = linprog(cost, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if not solved.success:  # pragma: no cover - every lossless rule is a feasible point
        raise RuntimeError(f"the coupling program failed: {solved.message}")
    return float(-solved.fun)
