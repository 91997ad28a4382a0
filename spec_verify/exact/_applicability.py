"""Whether the cells apply: is the implementation driven by the injected uniforms?

The enumerator (``_cells``) assumes the output is a deterministic function of the uniforms the
implementation draws from the injected source, constant on each cell. A correct sampler that
draws from its own generator (seeded from one harness uniform, or ignoring the source) breaks
that assumption, and the enumerator would then "prove" a wrong distribution with a witness that
only happened to come out that way once. Three observations tell such a sampler apart; each
makes the exact tier *not applicable* (never WRONG), and the statistical tier decides:

- it drew no uniform from the injected source on a sampled round;
- replaying the same uniforms gave a different output;
- a witness's output changes between probe points inside its own cells.

A WRONG verdict therefore always comes with a witness whose output is the same at every probe
point of its cells and on replay (``witness_holds``): a wrong sampler that is driven by the
injected uniforms stays WRONG.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from spec_verify.errors import ImplementationError
from spec_verify.exact._cells import GUARD, Leaf, Round, round_arguments
from spec_verify.uniforms import ScriptedUniforms

if TYPE_CHECKING:  # the engine takes any implementation; it imports no adapter
    from spec_verify.adapters import Implementation

__all__ = ["Applicability", "injection_probe", "witness_holds"]

_F = Fraction
# The seed's hand example (p = (1/2, 1/4, 1/4), draft token 1 with q = (1/4, 1/2, 1/4)) and a
# two-draft round: every draw of the contract matters on them.
_PROBE_ROUNDS = (
    Round(((_F(1, 2), _F(1, 4), _F(1, 4)),) * 2, (1,), ((_F(1, 4), _F(1, 2), _F(1, 4)),)),
    Round(
        ((_F(1, 8), _F(5, 8), _F(1, 4)), (_F(1, 2), _F(1, 6), _F(1, 3)),
         (_F(1, 3), _F(1, 3), _F(1, 3))),
        (1, 0),
        ((_F(1, 4), _F(1, 2), _F(1, 4)), (_F(2, 3), _F(1, 6), _F(1, 6))),
    ),
)  # fmt: skip
PROBE_SCRIPTS = 6  # scripts per probe round, each called twice
WITNESS_POINTS = 8  # probe points inside a witness's cells


@dataclass(frozen=True)
class Applicability:
    """Whether the cells apply to an implementation, and why not when they do not."""

    applies: bool
    reason: str = ""
    calls: int = 0


def _call(impl: Implementation, rnd: Round, script: Sequence[float]) -> tuple[tuple[int, ...], int]:
    logits, draft_probs, params = round_arguments(impl, rnd)
    source = ScriptedUniforms(script, then=0.5)
    emitted, _ = impl.verify_draft(
        logits, list(rnd.draft_ids), draft_probs, params, list(rnd.history), source,
        list(rnd.prompt),
    )  # fmt: skip
    return tuple(int(t) for t in emitted), source.drawn


def injection_probe(impl: Implementation, seed: int = 0) -> Applicability:
    """Call ``impl`` on two small sampled rounds with scripted uniforms, each script twice.

    Not applicable when it drew no uniform at all, or when the same script gave two outputs.
    A call that raises is left to the theorems (they report it as the implementation's error).
    """
    rng = np.random.default_rng([seed, 0x1A7EC7])
    calls = 0
    drawn = 0
    try:
        for rnd in _PROBE_ROUNDS:
            for _ in range(PROBE_SCRIPTS):
                script = [float(u) for u in rng.random(2 * rnd.m + 1)]
                first, count = _call(impl, rnd, script)
                second, _ = _call(impl, rnd, script)
                calls += 2
                drawn += count
                if first != second:
                    return Applicability(
                        False,
                        f"the same uniforms {script} gave {list(first)} and then {list(second)} "
                        f"(drafts {list(rnd.draft_ids)}): the output is not a function of the "
                        "injected uniforms (own randomness)",
                        calls,
                    )
    except (ValueError, ImplementationError):
        return Applicability(True, "", calls)
    if drawn == 0:
        return Applicability(
            False,
            f"no uniform was drawn from the injected source in {calls} sampled calls: the "
            "implementation uses its own randomness",
            calls,
        )
    return Applicability(True, "", calls)


def _inside(low: Fraction, high: Fraction, t: float) -> float:
    """A float at fraction ``t`` of the guarded part of ``[low, high)``."""
    lo, hi = low + GUARD, high - GUARD
    if hi <= lo:
        lo, hi = low, high
    value = float(lo + (hi - lo) * Fraction(t))
    return min(max(value, float(low)), float(np.nextafter(float(high), 0.0)))


def witness_holds(
    impl: Implementation, rnd: Round, leaf: Leaf, seed: int = 0, points: int = WITNESS_POINTS
) -> Applicability:
    """Whether ``leaf`` is a witness the cells can stand on: replaying its uniforms, and
    ``points`` random points inside the box of its cells, all give its output.

    Returns an ``Applicability`` whose ``applies`` is False (with the two calls that disagree)
    when the output changes inside the box.
    """
    rng = np.random.default_rng([seed, 0x517E55])
    scripts = [leaf.uniforms]
    for _ in range(points):
        scripts.append(
            tuple(_inside(d.cell.low, d.cell.high, float(rng.random())) for d in leaf.draws)
        )
    calls = 0
    for script in scripts:
        try:
            emitted, _ = _call(impl, rnd, script)
        except (ValueError, ImplementationError) as exc:
            return Applicability(True, f"a probe inside the witness's cells raised: {exc}", calls)
        calls += 1
        if emitted != leaf.emitted:
            cells = ", ".join(str(d.cell) for d in leaf.draws)
            return Applicability(
                False,
                f"inside one cell box ({cells}) the output changes: uniforms "
                f"{list(leaf.uniforms)} gave {list(leaf.emitted)} in the enumeration, "
                f"{list(script)} gave {list(emitted)}; the implementation is not driven by the "
                "injected uniforms as the cells assume (own randomness)",
                calls,
            )
    return Applicability(True, "", calls)
