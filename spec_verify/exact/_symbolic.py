"""Symbolic proofs (sympy) of the two identities the exact tier rests on.

1. The per-token identity of speculative sampling (seed section 2.2): for distributions ``p``
   and ``q`` over ``V`` tokens, with ``a = sum min(p, q)`` and ``Z = sum max(0, p - q)``,

       P(out = v) = q(v) min(1, p(v)/q(v)) + (1 - a) max(0, p(v) - q(v)) / Z = p(v).

   Steps: ``min(x, y) + max(0, x - y) = x`` for all reals (two cases); so
   ``1 - a = sum p - sum min(p, q) = Z``; and ``q min(1, p/q) = min(q, p)`` (two cases). Each
   step is checked by sympy on symbols; then the whole identity is checked for V = 2, 3, 4 with
   symbolic entries (``p_V = 1 - p_1 - ... - p_{V-1}``, same for q) in every sign pattern of
   ``p - q`` (each pattern fixes every min and max to one linear expression, and sympy
   simplifies ``P(out = v) - p(v)`` to 0); the pattern ``p <= q`` everywhere forces ``p = q``
   (``Z = 0``, nothing is rejected, ``P(out = v) = min(q, p) = p``).

2. The expected number of tokens per round (seed section 2.4): if each of ``k`` positions is
   kept with probability ``a`` given the ones before, ``P(N > n) = a^n`` for ``n <= k``, so
   ``E[N] = sum_{n=0..k} a^n = (1 - a^(k+1)) / (1 - a)`` (``k + 1`` at ``a = 1``); checked by
   sympy's summation for symbolic ``k``, and again from the distribution
   ``P(N = n) = a^(n-1) (1 - a)`` (``n <= k``), ``P(N = k + 1) = a^k``.

``derivations()`` returns both as printable step lists; ``spec-verify prove --symbolic``
prints them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from spec_verify.errors import InvalidArgument

__all__ = ["Derivation", "Step", "derivations", "expected_length", "per_token_identity"]


@dataclass(frozen=True)
class Step:
    """One step: the claim, the expression sympy reduced, and whether it reduced to 0/True."""

    claim: str
    check: str
    verified: bool

    def to_json(self) -> dict[str, Any]:
        return {"claim": self.claim, "check": self.check, "verified": self.verified}


@dataclass(frozen=True)
class Derivation:
    """A titled list of steps; proven when every step was verified."""

    title: str
    statement: str
    steps: tuple[Step, ...]

    @property
    def proven(self) -> bool:
        return all(step.verified for step in self.steps)

    def render(self) -> str:
        lines = [self.title, f"  claim: {self.statement}"]
        for number, step in enumerate(self.steps, 1):
            mark = "ok" if step.verified else "FAILED"
            lines.append(f"  {number}. {step.claim}")
            lines.append(f"     sympy: {step.check}  [{mark}]")
        lines.append(f"  {'proven' if self.proven else 'NOT proven'}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title, "statement": self.statement, "proven": self.proven,
            "steps": [s.to_json() for s in self.steps],
        }


def _zero(expr: Any) -> bool:
    import sympy as sp

    return bool(sp.simplify(expr) == 0)


def per_token_identity(
    sizes: tuple[int, ...] = (2, 3, 4), resample: str = "residual"
) -> Derivation:
    """The per-token identity, step by step, then in full for each V in ``sizes``.

    ``resample="p"`` checks the seed's pitfall 3 instead (resampling from ``p``, not from the
    residual): a negative control, whose full checks must fail.
    """
    if resample not in ("residual", "p"):
        raise InvalidArgument("resample", resample, "must be 'residual' or 'p'")
    import sympy as sp

    x, y = sp.symbols("x y", real=True)
    t = sp.symbols("t", nonnegative=True)
    s = sp.symbols("s", positive=True)
    steps: list[Step] = []

    lemma = sp.Min(x, y) + sp.Max(0, x - y) - x
    ok = _zero(lemma.subs(y, x - t)) and _zero(lemma.subs(y, x + s))
    steps.append(Step(
        "min(x, y) + max(0, x - y) = x for all reals x, y (case y = x - t, t >= 0; case "
        "y = x + s, s > 0)",
        f"{lemma} -> 0 in both cases", ok,
    ))

    p, q = sp.symbols("p q", positive=True)
    kept = q * sp.Min(1, p / q) - sp.Min(q, p)
    ok = _zero(kept.subs(p, q + s)) and _zero(kept.subs(p, q - t))
    steps.append(Step(
        "kept mass: q(v) min(1, p(v)/q(v)) = min(q(v), p(v)) for q(v) > 0 (and both are 0 "
        "when q(v) = 0, a token never drafted)",
        f"{kept} -> 0 for p >= q and p < q", ok,
    ))
    steps.append(Step(
        "summing step 1 over v with sum p = 1: 1 - a = 1 - sum min(p, q) = sum max(0, p - q) "
        "= Z, so the replaced mass is (1 - a) r(v) = Z max(0, p - q)/Z = max(0, p(v) - q(v))",
        "linear in step 1; checked in full below", steps[0].verified,
    ))
    steps.append(Step(
        "P(out = v) = min(q(v), p(v)) + max(0, p(v) - q(v)) = p(v) by steps 2, 3 and 1",
        "see the full check", all(st.verified for st in steps),
    ))

    for V in sizes:
        ps = list(sp.symbols(f"p1:{V}", nonnegative=True))
        qs = list(sp.symbols(f"q1:{V}", nonnegative=True))
        ps.append(1 - sum(ps))
        qs.append(1 - sum(qs))
        patterns = 0
        ok = True
        for signs in itertools.product((True, False), repeat=V):  # True: p_v >= q_v
            if not any(signs):
                continue  # p < q everywhere contradicts sum p = sum q
            pairs = list(zip(ps, qs, signs, strict=True))
            mins = [qv if up else pv for pv, qv, up in pairs]
            maxs = [pv - qv if up else sp.Integer(0) for pv, qv, up in pairs]
            a = sum(mins)
            Z = sum(maxs)
            if all(signs):
                # p >= q everywhere with equal sums: p = q, Z = 0, every draft is kept
                ok = ok and _zero(Z.subs({qv: pv for pv, qv in zip(ps[:-1], qs[:-1], strict=True)}))
                patterns += 1
                continue
            ok = ok and _zero(1 - a - Z)
            for v in range(V):
                replaced = maxs[v] / Z if resample == "residual" else ps[v]
                ok = ok and _zero(mins[v] + (1 - a) * replaced - ps[v])
            patterns += 1
        steps.append(Step(
            f"in full for V = {V}: p_{V} = 1 - (the other p), same for q; every sign pattern "
            f"of p - q ({patterns} feasible)",
            "min(q,p)_v + (1 - a) max(0, p - q)_v / Z - p_v -> 0 for every v and pattern", ok,
        ))
    return Derivation(
        "Per-token identity of speculative sampling (seed 2.2)",
        "min(q, p) + (1 - sum min(p, q)) * max(0, p - q) / Z = p,  Z = sum max(0, p - q)",
        tuple(steps),
    )


def expected_length(check_k: int = 6) -> Derivation:
    """``E[tokens per round] = (1 - a^(k+1)) / (1 - a)``, two ways, for symbolic ``k``."""
    import sympy as sp
    from sympy import Rational

    a = sp.symbols("a", positive=True)
    k = sp.symbols("k", integer=True, nonnegative=True)
    n = sp.symbols("n", integer=True)
    formula = (1 - a ** (k + 1)) / (1 - a)
    steps: list[Step] = []

    tail = sp.summation(a**n, (n, 0, k))
    generic = tail.args[-1][0] if isinstance(tail, sp.Piecewise) else tail
    at_one = tail.args[0][0] if isinstance(tail, sp.Piecewise) else sp.limit(formula, a, 1)
    ok = _zero(generic - formula) and _zero(at_one - (k + 1))
    steps.append(Step(
        "N = 1 + accepted drafts; P(N > n) = a^n for n = 0..k (each position kept with "
        "probability a given the ones before), so E[N] = sum_{n=0..k} a^n",
        f"summation = {tail}", ok,
    ))

    by_dist = sp.piecewise_fold(
        sp.summation(n * a ** (n - 1) * (1 - a), (n, 1, k)) + (k + 1) * a**k
    )
    generic = by_dist.args[-1][0] if isinstance(by_dist, sp.Piecewise) else by_dist
    ok = _zero(generic - formula)
    steps.append(Step(
        "from the distribution: P(N = n) = a^(n-1) (1 - a) for n <= k, P(N = k+1) = a^k; "
        "sum n P(N = n) equals the formula",
        "sum n a^(n-1) (1-a) + (k+1) a^k - formula -> 0 (a != 1)", ok,
    ))

    total = sp.piecewise_fold(sp.summation(a ** (n - 1) * (1 - a), (n, 1, k)) + a**k)
    generic = total.args[-1][0] if isinstance(total, sp.Piecewise) else total
    steps.append(Step(
        "the distribution sums to 1", f"sum P(N = n) - 1 -> {sp.simplify(generic - 1)}",
        _zero(generic - 1),
    ))

    ok = all(
        sp.expand(sp.cancel(formula.subs(k, kk))
                  - sum(a**j for j in range(kk + 1))) == 0
        for kk in range(check_k + 1)
    )
    steps.append(Step(
        f"as polynomials for k = 0..{check_k}: (1 - a^(k+1))/(1 - a) = 1 + a + ... + a^k",
        "cancel(formula) - sum a^j -> 0", ok,
    ))
    seed_value = formula.subs({a: Rational(4, 5), k: 4})
    steps.append(Step(
        "seed 2.4's example: a = 0.8, k = 4 gives 3.36 tokens per target pass (rounded)",
        f"formula(4/5, 4) = {seed_value} = {float(seed_value)}",
        seed_value == Rational(2101, 625) and round(float(seed_value), 2) == 3.36,
    ))
    return Derivation(
        "Expected tokens per round (seed 2.4)",
        "E[N] = 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a),  a = sum min(p, q)",
        tuple(steps),
    )


def derivations() -> list[Derivation]:
    """Both derivations, in the order the CLI prints them."""
    return [per_token_identity(), expected_length()]
