"""The cell enumerator on trees: an implementation's exact output law for one fixed draft tree.

The same method as ``_cells`` (read its docstring for why a pass is a proof, and under which
model): the implementation's ``verify_tree`` is called with scripted uniforms, each strictly
inside a cell of ``[0, 1)``; outcomes are weighted by exact cell widths; every leaf is audited
by moving each draw to both guarded edges of its cell; where the predicted cells do not fit,
the implementation's own breakpoints are located by bisection. Only the predicted cells differ:
they come from the tree contract's draw order (CONTRACT.md section 6), replayed along the path
of cells drawn so far:

- per child of the current node ``u_accept`` (keep ``[0, a)``, reject ``[a, 1)`` with
  ``a = min(1, r(x) / q_j(x))``), then ``u_resample`` (unused, one cell ``[0, 1)``, except after
  the last child's rejection: the cells of the residual ``r``);
- a node without children: the bonus, the cells of its row.

A draw the replay cannot interpret (after a located cell, or past the contract's last draw) is
taken as unused and located if that does not fit, so another draw order costs calls, never
soundness. Combined with ``tree_exact``'s proof that the reference's rules are lossless averaged
over the draft draws, an implementation whose law per fixed tree equals the reference's is
lossless too, without enumerating sibling draws at large V.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from spec_verify.errors import ImplementationError, InvalidArgument, InvalidDistribution
from spec_verify.exact._cells import (
    DEFAULT_UNIFORM,
    GUARD,
    NEAR,
    Breakpoint,
    Cell,
    Dist,
    Draw,
    EnumerationStatus,
    Leaf,
    Role,
    _Abort,
    _cells_of,
    _Explorer,
    check_dist,
    explore_with_restarts,
    format_fraction,
    logits_of,
    one_hot,
    residual,
)
from spec_verify.reference.exact import accept_probability
from spec_verify.uniforms import ScriptedUniforms, TooManyDraws

if TYPE_CHECKING:  # the engine takes any implementation; it imports no adapter
    from spec_verify.adapters._implementations import TreeImplementation

__all__ = [
    "TreeEnumeration",
    "TreeRound",
    "contract_tree_law",
    "enumerate_tree_round",
]

Emitted = tuple[int, ...]
_MAX_CALLS = 400_000
_MAX_RESTARTS = 1000
_LOSSLESS = ("with_replacement", "without_replacement")


def _without(q: Dist, x: int) -> Dist:
    rest = sum((v for i, v in enumerate(q) if i != x), Fraction(0))
    return tuple(Fraction(0) if i == x or rest == 0 else v / rest for i, v in enumerate(q))


@dataclass(frozen=True)
class TreeRound:
    """One call of ``verify_tree`` and the exact rows its decisions should follow.

    Attributes:
        p_rows: ``n + 1`` exact target rows (root first).
        parents, token_ids: the tree (CONTRACT.md section 6).
        q_rows: ``None`` or ``n + 1`` entries, ``None`` where a node's children are
            deterministic (a leaf's entry is ignored and may be ``None``).
        rule: ``with_replacement`` or ``without_replacement``.
    """

    p_rows: tuple[Dist, ...]
    parents: tuple[int, ...]
    token_ids: tuple[int, ...]
    q_rows: tuple[Dist | None, ...] | None = None
    rule: str = "with_replacement"
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.parents)
        if self.rule not in _LOSSLESS:
            raise InvalidArgument("rule", self.rule, f"must be one of {', '.join(_LOSSLESS)}")
        if len(self.token_ids) != n or len(self.p_rows) != n + 1:
            raise InvalidArgument(
                "p_rows", len(self.p_rows), f"must have n + 1 = {n + 1} rows and token_ids "
                f"n = {n} entries")
        rows = tuple(check_dist(row, f"p_rows[{i}]") for i, row in enumerate(self.p_rows))
        object.__setattr__(self, "p_rows", rows)
        V = len(rows[0])
        for i, parent in enumerate(self.parents):
            if not -1 <= parent < i:
                raise InvalidArgument("parents", list(self.parents),
                                      f"node {i} has parent {parent}; it must be -1 or < {i}")
            if not 0 <= self.token_ids[i] < V:
                raise InvalidArgument("token_ids", list(self.token_ids),
                                      f"node {i} has token {self.token_ids[i]}; V = {V}")
        if self.q_rows is not None:
            if len(self.q_rows) != n + 1:
                raise InvalidArgument("q_rows", len(self.q_rows), f"must have n + 1 = {n + 1}")
            q_rows = tuple(None if row is None else check_dist(row, f"q_rows[{i}]")
                           for i, row in enumerate(self.q_rows))
            for node, kids in self.children().items():
                q = q_rows[node + 1]
                if q is None:
                    continue
                for child in kids:
                    if q[self.token_ids[child]] == 0:
                        raise InvalidDistribution(
                            f"q_rows[{node + 1}]", [str(v) for v in q],
                            f"gives node {child}'s token {self.token_ids[child]} probability 0")
            object.__setattr__(self, "q_rows", q_rows)

    @property
    def n(self) -> int:
        return len(self.parents)

    @property
    def V(self) -> int:  # noqa: N802 - the seed's notation for the vocabulary size
        return len(self.p_rows[0])

    def children(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {i: [] for i in range(-1, self.n)}
        for i, parent in enumerate(self.parents):
            out[parent].append(i)
        return out

    def q(self, node: int) -> Dist | None:
        return None if self.q_rows is None else self.q_rows[node + 1]

    def to_json(self) -> dict[str, Any]:
        return {
            "p_rows": [[format_fraction(v) for v in row] for row in self.p_rows],
            "parents": list(self.parents), "token_ids": list(self.token_ids),
            "q_rows": None if self.q_rows is None else [
                None if row is None else [format_fraction(v) for v in row]
                for row in self.q_rows],
            "rule": self.rule,
        }


def contract_tree_law(rnd: TreeRound) -> dict[Emitted, Fraction]:
    """The reference rule's exact law for this fixed tree (``tree_exact.exact_tree_verify``)."""
    from spec_verify.reference.tree_exact import exact_tree_verify

    return exact_tree_verify(rnd.p_rows, rnd.parents, rnd.token_ids, rnd.q_rows, rnd.rule)


def _accept_role(rnd: TreeRound, child: int, r: Dist, q_j: Dist) -> Role:
    x = rnd.token_ids[child]
    a = accept_probability(r, q_j, x)
    cells = []
    if a > 0:
        cells.append(Cell(Fraction(0), a, f"keep node {child}", "accept"))
    if a < 1:
        cells.append(Cell(a, Fraction(1), f"reject node {child}", "reject"))
    return Role("accept", child, f"u_accept[node {child}]", tuple(cells))


_UNUSED = Role("unused", -1, "unused", (Cell(Fraction(0), Fraction(1), "any"),))


def _expected_role(  # noqa: PLR0911 - one return per state of the contract's walk
    rnd: TreeRound, path: Sequence[Draw]
) -> Role | None:
    """The contract's role for draw ``len(path)``, replaying the path; ``None`` when the path
    left the contract's order (or its last draw was already made)."""
    kids = rnd.children()
    node, j, pending = -1, 0, ""
    r = rnd.p_rows[0]
    q = rnd.q(-1)
    for draw in path:
        children = kids[node]
        x = rnd.token_ids[children[j]] if children else -1
        q_j = (q if q is not None else one_hot(x, rnd.V)) if children else r
        if pending == "after_keep":  # the kept child's u_resample, then move
            if draw.kind != "unused":
                return None
            node, j, pending = children[j], 0, ""
            r, q = rnd.p_rows[node + 1], rnd.q(node)
            continue
        if pending == "after_reject":
            last = j == len(children) - 1
            if draw.kind != ("resample" if last else "unused"):
                return None
            if last:
                return None  # the round is over
            if rnd.rule == "without_replacement" and q is not None:
                q = _without(q, x)
            j, pending = j + 1, ""
            continue
        if not children:
            return None  # the bonus was the last draw
        if draw.kind != "accept" or draw.position != children[j]:
            return None
        if draw.cell.tag == "accept":
            pending = "after_keep"
        else:
            pending = "after_reject"
            r = residual(r, q_j)
    children = kids[node]
    if pending == "after_keep":
        return _UNUSED
    if pending == "after_reject":
        if j == len(children) - 1:
            return Role("resample", children[j], f"u_resample[node {children[j]}]",
                        _cells_of(r, "residual"))
        return _UNUSED
    if not children:
        name = "bonus" if node == -1 else f"bonus[node {node}]"
        return Role("sample", node, name, _cells_of(r, "token"))
    x = rnd.token_ids[children[j]]
    q = rnd.q(node) if j == 0 else q
    return _accept_role(rnd, children[j], r, q if q is not None else one_hot(x, rnd.V))


def _library(rnd: TreeRound) -> set[Fraction]:
    """Every cell boundary the contract's walk can produce (breakpoints to snap to)."""
    kids = rnd.children()
    points: set[Fraction] = set()

    def walk(node: int) -> None:
        r = rnd.p_rows[node + 1]
        children = kids[node]
        q = rnd.q(node)
        for cell in _cells_of(r, "token"):
            points.update((cell.low, cell.high))
        for child in children:
            x = rnd.token_ids[child]
            q_j = q if q is not None else one_hot(x, rnd.V)
            # a repeated sibling after its token was removed (K chains sharing a prefix,
            # section 12) is never kept: no boundary of its own
            a = accept_probability(r, q_j, x) if q_j[x] else Fraction(0)
            points.update((a, 1 - a))
            if a > 0:
                walk(child)
            r = residual(r, q_j)
            for cell in _cells_of(r, "residual"):
                points.update((cell.low, cell.high))
            if rnd.rule == "without_replacement" and q is not None:
                q = _without(q, x)

    walk(-1)
    return points


class _TreeExplorer(_Explorer):
    """``_Explorer`` with the tree contract's roles and ``verify_tree`` calls."""

    def __init__(self, impl: Any, rnd: TreeRound, guard: Fraction, max_calls: int,
                 hints: Iterable[Fraction], deep_audit: bool = False) -> None:
        # The chain explorer's state, set here: its constructor reads chain rounds.
        self.impl = impl
        self.tree_impl: TreeImplementation = impl
        self.tree = rnd
        self.rnd = rnd  # type: ignore[assignment]  # only .V is read by the shared methods
        self.guard = guard
        self.max_calls = max_calls
        self.max_draws = 4 * (rnd.n + 1) + 16
        self.logits = np.array(logits_of(rnd.p_rows), dtype=np.float64)
        self.tree_probs: list[Any] | None = None
        if rnd.q_rows is not None:
            self.tree_probs = [None if row is None else np.array([float(v) for v in row])
                               for row in rnd.q_rows]
        self.params = _params(impl, {"temperature": 1.0, **rnd.params})
        self.cache: dict[tuple[float, ...], tuple[Emitted, int]] = {}
        self.calls = 0
        self.audit_calls = 0
        self.auditing = False
        self.leaves: list[Leaf] = []
        self.boundaries = 0
        self.located: list[Breakpoint] = []
        self.notes: dict[str, int] = {}
        self.forced: dict[tuple[tuple[Fraction, Fraction], ...], list[Breakpoint]] = {}
        self.findings: list[str] = []
        self.deep_audit = deep_audit  # also audit with the later draws moved (_cells)
        self.roles: dict[tuple[str, int], Role] = {}
        points = _library(rnd)
        points.update(Fraction(h) for h in hints)
        self.library = sorted(v for v in points if 0 < v < 1)

    def outcome(self, script: tuple[float, ...]) -> tuple[Emitted, int]:
        cached = self.cache.get(script)
        if cached is not None:
            return cached
        if self.calls >= self.max_calls:
            raise _Abort("not_provable", f"needed more than {self.max_calls} calls", script)
        self.calls += 1
        self.audit_calls += self.auditing
        source = ScriptedUniforms(script, then=DEFAULT_UNIFORM, limit=self.max_draws)
        rnd = self.tree
        try:
            emitted, _ = self.tree_impl.verify_tree(
                self.logits, list(rnd.parents), list(rnd.token_ids), self.tree_probs,
                self.params, [], source, [], rule=rnd.rule,
            )
        except TooManyDraws:
            raise _Abort(
                "not_provable",
                f"drew more than {self.max_draws} uniforms for a tree of {rnd.n} nodes (the "
                f"contract draws at most {2 * rnd.n + 1})", script,
            ) from None
        except ImplementationError as exc:
            raise _Abort("error", str(exc), script) from exc
        except ValueError as exc:
            raise _Abort("error", f"{self.impl.name}: verify_tree rejected valid input: "
                         f"{type(exc).__name__}: {exc}", script) from exc
        out = (tuple(emitted), source.drawn)
        self.cache[script] = out
        return out

    def prefetch(self, scripts: Iterable[tuple[float, ...]], audit: bool = False) -> None:
        """Tree calls are made one by one (``verify_tree`` has no scripted batch; tree rounds
        are small)."""

    def _catalogue(self) -> list[tuple[str, int]]:  # pragma: no cover - not used on trees
        return []

    def candidates(self, path: tuple[Draw, ...]) -> list[Role]:
        role = _expected_role(self.tree, path)
        return [_UNUSED] if role is None or role.kind == "unused" else [role, _UNUSED]


def _params(impl: Any, fields: Mapping[str, Any]) -> Any:
    make = getattr(impl, "params", None)
    if callable(make):
        return make(**fields)
    from spec_verify.reference import SamplingParams

    return SamplingParams(**fields)


@dataclass(frozen=True)
class TreeEnumeration:
    """The exact law of ``emitted_ids`` for one fixed tree, and how it was obtained (the fields
    mean what ``Enumeration``'s do)."""

    round: TreeRound
    status: EnumerationStatus
    distribution: dict[Emitted, Fraction]
    leaves: tuple[Leaf, ...]
    calls: int
    boundaries: int
    located: tuple[Breakpoint, ...] = ()
    notes: tuple[str, ...] = ()
    reason: str = ""
    script: tuple[float, ...] = ()
    audit_calls: int = 0

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    @property
    def lower_bound(self) -> int:
        """Calls any sound black-box method needs here: ``sum over leaves (draws + 1)``."""
        return sum(len(leaf.draws) + 1 for leaf in self.leaves)

    def tolerance(self) -> Fraction:
        slack = 2 * GUARD * self.boundaries
        for point in self.located:
            if point.source != "known" and point.offset <= NEAR:
                slack += 2 * point.offset
        return slack


def enumerate_tree_round(
    impl: TreeImplementation,
    rnd: TreeRound,
    *,
    guard: Fraction = GUARD,
    max_calls: int = _MAX_CALLS,
    hints: Iterable[Fraction] = (),
    deep_audit: bool = False,
) -> TreeEnumeration:
    """The exact law of ``impl``'s ``emitted_ids`` on one fixed tree, by cells.

    ``deep_audit`` also audits every leaf with the draws after the moved one at another point
    of their cells (``_Explorer._audit_later``): for draw orders other than the contract's,
    whose two sides of a breakpoint may emit the same ids at the leaf's later values.

    Never raises for the implementation's misbehaviour (status ``error`` or ``not_provable``).

    >>> from spec_verify.adapters._loader import load_implementation
    >>> F = Fraction
    >>> p = (F(0), F(1, 2), F(1, 2)); q = (F(1, 2), F(1, 3), F(1, 6))
    >>> rnd = TreeRound((p, (F(1, 3),) * 3, (F(0), F(0), F(1))), (-1, -1), (0, 1),
    ...                 (q, None, None), "without_replacement")
    >>> e = enumerate_tree_round(load_implementation("reference"), rnd)
    >>> e.status, {k: str(v) for k, v in e.distribution.items()}
    ('complete', {(1, 2): '1/2', (2,): '1/2'})
    """
    guard = Fraction(guard)
    if not 0 < guard < Fraction(1, 8):
        raise InvalidArgument("guard", guard, "must be in (0, 1/8)")
    try:
        explorer = _TreeExplorer(impl, rnd, guard, max_calls, hints, deep_audit)
    except Exception as exc:  # the implementation's own params() failed
        return TreeEnumeration(rnd, "error", {}, (), 0, 0,
                               reason=f"{impl.name}: building its sampling parameters raised "
                               f"{type(exc).__name__}: {exc}")
    status, reason, script, distribution = explore_with_restarts(explorer)
    return TreeEnumeration(
        round=rnd, status=status, distribution=dict(sorted(distribution.items())),
        leaves=tuple(explorer.leaves), calls=explorer.calls, boundaries=explorer.boundaries,
        located=tuple(explorer.located),
        notes=tuple(t if c == 1 else f"{t} ({c} times)" for t, c in explorer.notes.items())
        + tuple(explorer.findings),
        reason=reason, script=script, audit_calls=explorer.audit_calls,
    )
