"""A small cell enumerator for ``verify_tree`` in the contract's draw order (CONTRACT.md 6).

Per child in index order ``u_accept`` (keep cell ``[0, a)``, reject cell ``[a, 1)``) then
``u_resample`` (the residual's cells after the last child's rejection, else unused: fed 1/2);
a node without children ends with the bonus draw over its row's cells. Each outcome is weighted
by the exact widths of its cells, and every call must consume exactly the scripted uniforms.
Each outcome is checked at both edges of every cell too (each draw moved, the others kept), so
a rule whose breakpoints differ from the contract's inside a cell is caught, not averaged away.
It shares no code with the reference's tree modules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction

from spec_verify.uniforms import ScriptedUniforms

from ._cells import cells, mid, one_hot, residual

Dist = tuple[Fraction, ...]
TreeCall = Callable[[ScriptedUniforms], tuple[list[int], list[int]]]
Cell = tuple[Fraction, Fraction] | None  # a draw's cell; None: unused (fed 1/2)
EDGE = Fraction(1, 10**9)


def _middle(cell: Cell) -> float:
    return 0.5 if cell is None else mid(*cell)


def without(q: Dist, x: int) -> Dist:
    rest = sum(v for i, v in enumerate(q) if i != x)
    return tuple(Fraction(0) if i == x or not rest else v / rest for i, v in enumerate(q))


def enumerate_tree(
    call: TreeCall,
    p_rows: Sequence[Dist],
    parents: Sequence[int],
    token_ids: Sequence[int],
    q_rows: Sequence[Dist | None] | None,
    rule: str = "with_replacement",
) -> dict[tuple[int, ...], Fraction]:
    """Exact law of ``emitted_ids`` as ``call`` produces it, cell by cell."""
    V = len(p_rows[0])
    kids: dict[int, list[int]] = defaultdict(list)
    for i, parent in enumerate(parents):
        kids[parent].append(i)
    out: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)

    def once(uniforms: list[float]) -> tuple[int, ...]:
        rng = ScriptedUniforms(uniforms)
        emitted, nodes = call(rng)
        assert rng.drawn == len(uniforms), f"drew {rng.drawn} of {len(uniforms)} uniforms"
        assert len(emitted) == len(nodes) + 1
        return tuple(emitted)

    def run(draws: list[Cell], weight: Fraction) -> None:
        emitted = once([_middle(c) for c in draws])
        for i, cell in enumerate(draws):
            if cell is None:
                continue
            for edge in (float(cell[0] + EDGE), float(cell[1] - EDGE)):
                moved = [_middle(c) for c in draws]
                moved[i] = edge
                assert once(moved) == emitted, (
                    f"draw {i} at {edge} in its cell [{cell[0]}, {cell[1]}) gives {once(moved)}, "
                    f"the middle {emitted}: a breakpoint inside the contract's cell")
        out[emitted] += weight

    def node_walk(node: int, uniforms: list[Cell], weight: Fraction) -> None:
        r = tuple(p_rows[node + 1])
        children = kids[node]
        if not children:
            for _, lo, hi in cells(r):
                run([*uniforms, (lo, hi)], weight * (hi - lo))
            return
        q = None if q_rows is None else q_rows[node + 1]
        for j, child in enumerate(children):
            x = token_ids[child]
            q_j = q if q is not None else one_hot(x, V)
            a = min(Fraction(1), r[x] / q_j[x])
            if a > 0:
                node_walk(child, [*uniforms, (Fraction(0), a), None], weight * a)
            if a == 1:
                return
            weight *= 1 - a
            r = residual(r, q_j)
            if j == len(children) - 1:
                for _, lo, hi in cells(r):
                    run([*uniforms, (a, Fraction(1)), (lo, hi)], weight * (hi - lo))
                return
            uniforms = [*uniforms, (a, Fraction(1)), None]
            if rule == "without_replacement" and q is not None:
                q = without(q, x)

    node_walk(-1, [], Fraction(1))
    return dict(out)
