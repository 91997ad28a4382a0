"""Symbolic identities (sympy) behind the reference rules other than the token rule.

1. K-SEQ (reference/kseq.py): trying ``K`` i.i.d. drafts in order, each kept with
   ``min(1, p(x) / (rho q(x)))``, keeps token ``x`` with ``sum_{i=1..K} (1 - a)^(i-1) m(x) =
   c m(x)``, ``m = min(q, p / rho)``, ``a = sum m``, ``c = (1 - (1 - a)^K) / a`` (a geometric
   sum, checked for symbolic ``K``); the residual's mass is ``1 - c a = (1 - a)^K``, so
   ``r = (p - c m) / (1 - a)^K`` is a distribution and ``c m(x) + (1 - a)^K r(x) = p(x)``.
2. Sampler-match (reference/sampler_match.py): the first emitted token is the target's sample
   whatever the draft: ``sum_x q(x) ([x = t] p(t) + [x != t] p(t)) = p(t)``, checked for V = 3
   with symbolic rows.
"""

from __future__ import annotations

from spec_verify.exact._symbolic import Derivation, Step

__all__ = ["kseq_identity", "rule_derivations", "sampler_match_identity"]


def kseq_identity(wrong_c: bool = False) -> Derivation:
    """K-SEQ keeps ``x`` with ``c m(x)``, and the residual's mass is ``(1 - a)^K``.

    ``wrong_c`` takes ``c = K`` (each try as if it were the first): a negative control that
    must not be proven.
    """
    import sympy as sp

    a, m = sp.symbols("a m", positive=True)
    i, K = sp.symbols("i K", integer=True, positive=True)
    kept = sp.summation((1 - a) ** (i - 1) * m, (i, 1, K))
    c = K if wrong_c else (1 - (1 - a) ** K) / a
    first = sp.simplify(kept - c * m)
    second = sp.simplify(1 - c * a - (1 - a) ** K)
    steps = (
        Step("keeping x over K tries: sum_{i=1..K} (1 - a)^(i-1) m = c m",
             f"simplify(sum - c m) = {first}", first == 0),
        Step("the residual's mass: sum_x (p - c m) = 1 - c a = (1 - a)^K, so it normalises",
             f"simplify(1 - c a - (1 - a)^K) = {second}", second == 0),
    )
    return Derivation("K-SEQ keeps x with c m(x), the residual completes p (SpecTr)",
                      "P(out = x) = c m(x) + (1 - a)^K (p(x) - c m(x)) / (1 - a)^K = p(x)",
                      steps)


def sampler_match_identity() -> Derivation:
    """Sampler-match's first emitted token has the target's law for V = 3."""
    import sympy as sp

    p1, p2, q1, q2 = sp.symbols("p1 p2 q1 q2", positive=True)
    p, q = (p1, p2, 1 - p1 - p2), (q1, q2, 1 - q1 - q2)
    steps = []
    for t in range(3):
        out = sum(q[x] * (p[t] if x == t else 0) + q[x] * (p[t] if x != t else 0)
                  for x in range(3))
        residue = sp.simplify(out - p[t])
        steps.append(Step(f"token {t}: kept when x = t, emitted at the mismatch otherwise",
                          f"simplify(P(out = {t}) - p{t}) = {residue}", residue == 0))
    return Derivation("Sampler-match emits the target's own sample (V = 3)",
                      "P(out = t) = sum_x q(x) p(t) = p(t)", tuple(steps))


def rule_derivations() -> list[Derivation]:
    """The rules' derivations, K-SEQ first."""
    return [kseq_identity(), sampler_match_identity()]
