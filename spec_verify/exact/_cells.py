"""The cell enumerator: an implementation's exact output distribution, cell by cell.

An implementation that takes an injected uniform source is a deterministic function of the
uniforms it draws. For one call of ``verify_draft`` each draw falls in one *cell* of ``[0, 1)``
and the output only depends on which cells the draws fall in, so the enumerator walks the tree
of draws depth first, calls the implementation with a float strictly inside each chosen cell
(``GUARD`` = 1e-9 from its edges), and weights each outcome by the product of the exact cell
widths: the exact distribution of ``emitted_ids`` as ``Fraction``s.

In short: cells come from the contract's draw order first, then from other orders, then from
the implementation's own breakpoints located by bisection; every leaf is audited by moving
each draw to both guarded edges of its cell; a cell narrower than ``4 * GUARD`` is "not
provable". A pass is a proof under a stated model (thresholds along each draw that depend only
on the other draws' cells), and the calls stay within a small factor of the lower bound
``sum over leaves (draws + 1)`` that any sound black-box method needs. The derivation, the
model and the cost argument are in ``docs/exact-engine.md``.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from spec_verify.errors import ImplementationError, InvalidArgument, InvalidDistribution
from spec_verify.reference.exact import Dist, accept_probability
from spec_verify.uniforms import ScriptedUniforms, TooManyDraws

if TYPE_CHECKING:  # the engine takes any implementation; it imports no adapter
    from spec_verify.adapters import Implementation

__all__ = [
    "DEFAULT_UNIFORM",
    "GUARD",
    "NEAR",
    "Breakpoint",
    "Cell",
    "Dist",
    "Draw",
    "Enumeration",
    "Leaf",
    "Round",
    "check_dist",
    "contract_output",
    "enumerate_round",
    "format_fraction",
    "logits_of",
    "one_hot",
    "parse_dist",
    "residual",
    "round_arguments",
]

Emitted = tuple[int, ...]
Outcome = tuple[Emitted, int]  # (emitted ids, uniforms consumed)

GUARD = Fraction(1, 10**9)
"""Probes sit at least this far inside their cell (see the module docstring)."""

NEAR = Fraction(1, 10**5)
"""A located breakpoint this close to an exact one is rounding (float32 sums), not a new rule."""

DEFAULT_UNIFORM = 0.6180339887498949
"""What draws past the script return while a draw is probed (no small-denominator neighbour)."""

_MAX_CALLS = 400_000
_MAX_RESTARTS = 1000
_CONTRACT_KINDS = ("accept", "resample", "sample")
_FIT_CHUNK = 64  # cells whose probes are prefetched together (a role may not fit: bounded waste)
_DENOMINATOR_STEPS = tuple(10**e for e in range(1, 9))

EnumerationStatus = Literal["complete", "not_provable", "error"]


# ---------------------------------------------------------------------------------------------
# exact distributions


def format_fraction(value: Fraction) -> str:
    """``'1/4'``, ``'0'``, ``'1'``: how exact numbers are shown and serialised."""
    return str(value)


def check_dist(values: Iterable[object], argument: str = "p") -> Dist:
    """Exact probabilities from ints, Fractions or strings like ``'1/4'``; they must sum to 1.

    Raises:
        InvalidDistribution: an entry is not an exact rational, is negative, or the sum is not 1.

    >>> check_dist(["1/2", "1/4", "1/4"])
    (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))
    """
    items = list(values)
    dist: list[Fraction] = []
    for i, value in enumerate(items):
        if isinstance(value, float):
            raise InvalidDistribution(
                argument, items, f"entry {i} is the float {value!r}; exact entries are needed",
                "write it as a fraction like 1/4",
            )
        try:
            dist.append(Fraction(value))  # type: ignore[call-overload]
        except (TypeError, ValueError, ZeroDivisionError) as exc:
            raise InvalidDistribution(
                argument, items, f"entry {i} ({value!r}) is not an exact rational ({exc})",
                "write entries like 1/4, 0.25 or 3",
            ) from exc
    if not dist:
        raise InvalidDistribution(argument, items, "is empty; a distribution needs V >= 1 entries")
    negative = [i for i, v in enumerate(dist) if v < 0]
    if negative:
        raise InvalidDistribution(
            argument, [str(v) for v in dist], f"has negative entries at ids {negative}",
            "probabilities are >= 0",
        )
    total = sum(dist, Fraction(0))
    if total != 1:
        raise InvalidDistribution(
            argument, [str(v) for v in dist], f"sums to {total}, not 1",
            "normalise it (divide every entry by the sum)",
        )
    return tuple(dist)


def parse_dist(text: str, argument: str = "p") -> Dist:
    """A distribution from the command line: ``'1/2,1/4,1/4'`` (spaces allowed).

    >>> parse_dist("1/2, 1/4,1/4")
    (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))
    """
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise InvalidDistribution(argument, text, "has an empty entry", "write e.g. 1/2,1/4,1/4")
    return check_dist(parts, argument)


def residual(p: Dist, q: Dist) -> Dist:
    """``max(0, p - q) / Z``; ``p`` itself when ``Z = 0`` (the contract's fallback)."""
    d = [max(Fraction(0), a - b) for a, b in zip(p, q, strict=True)]
    z = sum(d, Fraction(0))
    return p if z == 0 else tuple(v / z for v in d)


def one_hot(x: int, V: int) -> Dist:
    """The draft row of a deterministic draft that proposes ``x``."""
    return tuple(Fraction(int(i == x)) for i in range(V))


def logits_of(rows: Sequence[Dist]) -> tuple[tuple[float, ...], ...]:
    """Logits whose temperature-1, unfiltered distribution is each row: ``log p``, ``-inf`` at 0.

    ``exp(log p)`` is not exactly ``p`` in floats; the error is rounding, far inside ``GUARD``.
    """
    return tuple(
        tuple(math.log(v.numerator) - math.log(v.denominator) if v else -math.inf for v in row)
        for row in rows
    )


# ---------------------------------------------------------------------------------------------
# the round under test


@dataclass(frozen=True)
class Round:
    """One call of ``verify_draft`` and the exact distributions its decisions should follow.

    Attributes:
        p_rows: the ``m + 1`` exact target sampling distributions (after penalties and filters,
            for the kept drafts before each row), one per target row.
        draft_ids: the drafted tokens ``x_1..x_m``.
        q_rows: the ``m`` exact draft rows, or ``None`` for a deterministic draft (one-hot
            ``q``; the implementation then gets ``draft_probs=None``).
        logits: the target logits fed to the implementation; default ``log p_rows``. With
            ``params`` they must make the implementation's sampling distribution ``p_rows``.
        params: ``SamplingParams`` fields (default: temperature 1, no filters, no penalties).
        history, prompt: passed through to ``verify_draft`` (penalties see them).
    """

    p_rows: tuple[Dist, ...]
    draft_ids: tuple[int, ...]
    q_rows: tuple[Dist, ...] | None = None
    logits: tuple[tuple[float, ...], ...] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    history: tuple[int, ...] = ()
    prompt: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        m = len(self.draft_ids)
        if len(self.p_rows) != m + 1:
            raise InvalidArgument(
                "p_rows", len(self.p_rows), f"has {len(self.p_rows)} rows; it must have m + 1 = "
                f"{m + 1} for {m} drafted ids", "one target row per draft and one for the bonus",
            )
        rows = tuple(check_dist(row, f"p_rows[{i}]") for i, row in enumerate(self.p_rows))
        object.__setattr__(self, "p_rows", rows)
        V = len(rows[0])
        for i, row in enumerate(rows):
            if len(row) != V:
                raise InvalidDistribution(
                    f"p_rows[{i}]", [str(v) for v in row],
                    f"has {len(row)} entries; row 0 has {V}: every row has length V",
                )
        for i, x in enumerate(self.draft_ids):
            if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < V:
                raise InvalidArgument(
                    "draft_ids", list(self.draft_ids), f"entry {i} is {x!r}; ids are in [0, {V})",
                )
        if self.q_rows is not None:
            if len(self.q_rows) != m:
                raise InvalidArgument(
                    "q_rows", len(self.q_rows), f"has {len(self.q_rows)} rows; it must have "
                    f"m = {m}", "one draft row per drafted id, or None for a deterministic draft",
                )
            q_rows = tuple(check_dist(row, f"q_rows[{i}]") for i, row in enumerate(self.q_rows))
            for i, (row, x) in enumerate(zip(q_rows, self.draft_ids, strict=True)):
                if len(row) != V:
                    raise InvalidDistribution(
                        f"q_rows[{i}]", [str(v) for v in row],
                        f"has {len(row)} entries; the target rows have V = {V}",
                        "p and q must have the same length",
                    )
                if row[x] == 0:
                    raise InvalidDistribution(
                        f"q_rows[{i}]", [str(v) for v in row],
                        f"gives the drafted token {x} probability 0; a draft only proposes "
                        "tokens it can draw", "draft x from q, or pass q_rows=None (one-hot)",
                    )
            object.__setattr__(self, "q_rows", q_rows)
        if self.logits is not None and (
            len(self.logits) != m + 1 or any(len(row) != V for row in self.logits)
        ):
            raise InvalidArgument(
                "logits", f"{len(self.logits)} rows", f"must be (m + 1, V) = ({m + 1}, {V})",
            )

    @property
    def m(self) -> int:
        return len(self.draft_ids)

    @property
    def V(self) -> int:  # noqa: N802 - the seed's notation for the vocabulary size
        return len(self.p_rows[0])

    def q(self, i: int) -> Dist:
        """The exact draft row at position ``i`` (one-hot for a deterministic draft)."""
        if self.q_rows is None:
            return one_hot(self.draft_ids[i], self.V)
        return self.q_rows[i]

    def accept_probability(self, i: int) -> Fraction:
        """``min(1, p_i(x_i) / q_i(x_i))``."""
        x = self.draft_ids[i]
        return accept_probability(self.p_rows[i], self.q(i), x)

    def to_json(self) -> dict[str, Any]:
        return {
            "p_rows": [[format_fraction(v) for v in row] for row in self.p_rows],
            "draft_ids": list(self.draft_ids),
            "q_rows": None if self.q_rows is None
            else [[format_fraction(v) for v in row] for row in self.q_rows],
            "params": dict(self.params),
            "history": list(self.history),
            "prompt": list(self.prompt),
        }


def contract_output(rnd: Round, uniforms: Sequence[float]) -> Emitted | None:
    """What the contract's rule emits on these uniforms, in exact arithmetic.

    Per position ``u_accept`` (keep iff ``u < p(x)/q(x)``) then ``u_resample`` (inverse CDF of
    the residual), the bonus by inverse CDF of the last row. ``None`` when the uniforms run
    out. Used to pick counterexamples where an implementation departs from the rule.
    """
    draws = iter(Fraction(u) for u in uniforms)

    def inverse_cdf(dist: Dist, u: Fraction) -> int:
        running = Fraction(0)
        for token, prob in enumerate(dist):
            running += prob
            if prob and u < running:
                return token
        return max(t for t, v in enumerate(dist) if v)

    kept: list[int] = []
    try:
        for i, x in enumerate(rnd.draft_ids):
            u_accept, u_resample = next(draws), next(draws)
            if u_accept < rnd.accept_probability(i):
                kept.append(x)
                continue
            return (*kept, inverse_cdf(residual(rnd.p_rows[i], rnd.q(i)), u_resample))
        return (*kept, inverse_cdf(rnd.p_rows[rnd.m], next(draws)))
    except StopIteration:
        return None


# ---------------------------------------------------------------------------------------------
# cells, draws, leaves


@dataclass(frozen=True)
class Cell:
    """``[low, high)`` with what the contract makes of a draw there (``label``)."""

    low: Fraction
    high: Fraction
    label: str
    tag: str = ""  # "accept" / "reject" for an acceptance draw

    @property
    def width(self) -> Fraction:
        return self.high - self.low

    def __str__(self) -> str:
        return f"[{self.low}, {self.high})"


@dataclass(frozen=True)
class Role:
    """What a draw is used for, and the cells that follow from it."""

    kind: str  # accept, resample, sample, sample_q, unused, located
    position: int
    name: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Draw:
    """One draw on a path: its role, its cell and the float the script returned."""

    role: str
    kind: str
    position: int
    cell: Cell
    uniform: float

    @property
    def accepted(self) -> bool | None:
        return {"accept": True, "reject": False}.get(self.cell.tag)


@dataclass(frozen=True)
class Leaf:
    """One complete path of draws and the implementation's output on it."""

    draws: tuple[Draw, ...]
    emitted: Emitted

    @property
    def weight(self) -> Fraction:
        out = Fraction(1)
        for draw in self.draws:
            out *= draw.cell.width
        return out

    @property
    def uniforms(self) -> tuple[float, ...]:
        """A concrete uniform sequence that reproduces this outcome."""
        return tuple(draw.uniform for draw in self.draws)

    @property
    def n_accepted(self) -> int:
        return len(self.emitted) - 1

    def to_json(self) -> dict[str, Any]:
        return {
            "draws": [
                {"role": d.role, "cell": [str(d.cell.low), str(d.cell.high)],
                 "label": d.cell.label, "uniform": d.uniform}
                for d in self.draws
            ],
            "uniforms": list(self.uniforms),
            "weight": format_fraction(self.weight),
            "emitted": list(self.emitted),
        }


@dataclass(frozen=True)
class Breakpoint:
    """A breakpoint the enumerator located on its own (no predicted role fitted).

    ``value`` is within ``GUARD`` of the implementation's breakpoint, which lies in
    ``(bracket[0], bracket[1]]``; ``source`` says how ``value`` was chosen (``known``: a
    breakpoint of the round's exact distributions; ``rational``: the simplest fraction in the
    window; ``float``: the float itself); ``offset`` is its distance to the nearest known one.
    """

    draw: int
    value: Fraction
    bracket: tuple[float, float]
    source: str
    offset: Fraction

    def to_json(self) -> dict[str, Any]:
        return {
            "draw": self.draw, "value": format_fraction(self.value),
            "bracket": list(self.bracket), "source": self.source, "offset": float(self.offset),
        }


@dataclass(frozen=True)
class Enumeration:
    """The exact output distribution of one round, with how it was obtained.

    Attributes:
        status: ``complete`` (every draw's cells fitted or were located), ``not_provable``
            (a cell too narrow to probe, too many draws or calls; ``reason`` says which), or
            ``error`` (the implementation raised, hung or returned garbage: ``reason``).
        distribution: ``{emitted_ids: probability}`` over the leaves found (partial unless
            complete).
        leaves: every path of draws, with the uniforms that reproduce it.
        calls: calls into the implementation (``audit_calls`` of them by the leaf audits).
        boundaries: interior cell boundaries used over all nodes of the tree.
        located: breakpoints located by bisection (none for the contract's draw order).
        notes: where the draws followed another order than the contract's.
    """

    round: Round
    status: EnumerationStatus
    distribution: dict[Emitted, Fraction]
    leaves: tuple[Leaf, ...]
    calls: int
    boundaries: int
    located: tuple[Breakpoint, ...] = ()
    notes: tuple[str, ...] = ()
    reason: str = ""
    script: tuple[float, ...] = ()  # the uniforms of the call that failed, for an error
    audit_calls: int = 0  # of ``calls``, those the leaf audits made
    unresolved: Fraction = Fraction(0)  # mass of cells too narrow to probe

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def tolerance(self) -> Fraction:
        """How far the distribution may be from the implementation's true one, plus rounding.

        Each boundary is within ``GUARD`` of the implementation's, so each outcome's true
        probability is within ``2 * GUARD * boundaries`` of the computed one; a located
        breakpoint within ``NEAR`` of an exact one (float32 sums) adds twice its offset, so a
        deviation that rounding of this size explains is reported not provable, never failed.
        A cell narrower than the guard band that no probe could see adds its mass.
        """
        slack = 2 * GUARD * self.boundaries + self.unresolved
        for point in self.located:
            if point.source != "known" and point.offset <= NEAR:
                slack += 2 * point.offset
        return slack

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round.to_json(),
            "status": self.status,
            "reason": self.reason,
            "calls": self.calls,
            "distribution": {
                ",".join(map(str, k)): format_fraction(v) for k, v in self.distribution.items()
            },
            "leaves": [leaf.to_json() for leaf in self.leaves],
            "located": [b.to_json() for b in self.located],
            "notes": list(self.notes),
            "script": list(self.script),
        }


# ---------------------------------------------------------------------------------------------
# the enumerator


# Where the deeper audit puts the later draws in their cells: (1 - 1/phi)^2, 1 - 1/phi and
# 1/phi^(1/2), far from the simple fractions that rational tables' cell boundaries are.
_OTHER = (Fraction(1458980337503155, 10**16), Fraction(3819660112501051, 10**16),
          Fraction(7861513777574233, 10**16))


class _Abort(Exception):
    def __init__(self, status: EnumerationStatus, reason: str, script: tuple[float, ...] = ()):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.script = script


class _Restart(Exception):
    """A leaf audit split a cell: explore again (every call is cached, so this is cheap)."""


def _float_at_least(value: Fraction) -> float:
    f = float(value)
    if Fraction(f) < value:
        f = math.nextafter(f, math.inf)
    return f


def _float_at_most(value: Fraction) -> float:
    f = float(value)
    if Fraction(f) > value:
        f = math.nextafter(f, -math.inf)
    return f


def _cells_of(dist: Dist, what: str) -> tuple[Cell, ...]:
    cells = []
    low = Fraction(0)
    for token, prob in enumerate(dist):
        if prob:
            cells.append(Cell(low, low + prob, f"{what} {token}"))
        low += prob
    return tuple(cells)


def round_arguments(
    impl: Implementation, rnd: Round
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, Any]:
    """``verify_draft``'s target logits, draft rows and parameters (temperature 1 unless the
    round says otherwise) for ``rnd``, at the implementation's float boundary.

    Raises:
        Exception: whatever the implementation's ``params`` raises.
    """
    logits = rnd.logits if rnd.logits is not None else logits_of(rnd.p_rows)
    draft_probs: NDArray[np.float64] | None = None
    if rnd.q_rows is not None:
        draft_probs = np.array(
            [[float(v) for v in row] for row in rnd.q_rows], dtype=np.float64
        ).reshape(rnd.m, rnd.V)
    params = impl.params(**{"temperature": 1.0, **rnd.params})
    return np.array(logits, dtype=np.float64), draft_probs, params


class _Explorer:
    def __init__(
        self, impl: Implementation, rnd: Round, guard: Fraction, max_calls: int,
        hints: Iterable[Fraction], deep_audit: bool = False,
    ) -> None:
        self.impl = impl
        self.rnd = rnd
        self.deep_audit = deep_audit  # also audit each leaf with the later draws moved
        self.guard = guard
        self.max_calls = max_calls
        self.max_draws = 4 * (rnd.m + 1) + 16
        self.logits, self.draft_probs, self.params = round_arguments(impl, rnd)
        self.cache: dict[tuple[float, ...], Outcome] = {}
        self.failed: dict[tuple[float, ...], BaseException] = {}  # prefetched calls that raised
        self.batching = True  # False once a batch failed as a whole (calls one by one)
        self.calls = 0
        self.audit_calls = 0  # of which made by leaf audits
        self.auditing = False
        self.leaves: list[Leaf] = []
        self.boundaries = 0
        self.unresolved = Fraction(0)  # mass in cells too narrow to probe (see partition)
        self.located: list[Breakpoint] = []
        self.notes: dict[str, int] = {}
        # breakpoints found by leaf audits, by the cells of the draws before them
        self.forced: dict[tuple[tuple[Fraction, Fraction], ...], list[Breakpoint]] = {}
        self.findings: list[str] = []  # what the leaf audits found (kept across restarts)
        self.roles: dict[tuple[str, int], Role] = {}
        points: set[Fraction] = set()
        for kind, position in self._catalogue():
            for cell in self.role(kind, position).cells:
                points.update((cell.low, cell.high))
        for i in range(rnd.m):
            points.add(1 - rnd.accept_probability(i))
        points.update(Fraction(h) for h in hints)
        self.library = sorted(v for v in points if 0 < v < 1)

    # -- calling the implementation ----------------------------------------------------------

    def outcome(self, script: tuple[float, ...]) -> Outcome:
        cached = self.cache.get(script)
        if cached is not None:
            return cached
        failure = self.failed.get(script)
        if failure is None:
            if self.calls >= self.max_calls:
                raise _Abort("not_provable", f"needed more than {self.max_calls} calls", script)
            self.calls += 1
            self.audit_calls += self.auditing
            source = self._source(script)
            rnd = self.rnd
            try:
                emitted, _ = self.impl.verify_draft(
                    self.logits, list(rnd.draft_ids), self.draft_probs, self.params,
                    list(rnd.history), source, list(rnd.prompt),
                )
            except (Exception, TooManyDraws) as exc:
                failure = exc
            else:
                out = (tuple(emitted), source.drawn)
                self.cache[script] = out
                return out
        raise self._abort_for(failure, script)

    def _source(self, script: tuple[float, ...]) -> ScriptedUniforms:
        return ScriptedUniforms(script, then=DEFAULT_UNIFORM, limit=self.max_draws)

    def _abort_for(self, failure: BaseException, script: tuple[float, ...]) -> BaseException:
        """What a call that raised ``failure`` ends the enumeration with."""
        rnd = self.rnd
        if isinstance(failure, TooManyDraws):
            return _Abort(
                "not_provable",
                f"drew more than {self.max_draws} uniforms for m = {rnd.m} drafts "
                f"(the contract draws at most {2 * rnd.m + 1})",
                script,
            )
        if isinstance(failure, ImplementationError):
            return _Abort("error", str(failure), script)
        if isinstance(failure, ValueError):
            return _Abort(
                "error",
                f"{self.impl.name}: verify_draft rejected valid input: "
                f"{type(failure).__name__}: {failure}",
                script,
            )
        return failure

    def prefetch(self, scripts: Iterable[tuple[float, ...]], audit: bool = False) -> None:
        """Make the calls of ``scripts`` not made yet together (``verify_scripted_many``: one
        request to a worker instead of one per call); ``outcome`` then finds them made. Only
        calls the enumeration is about to make are prefetched; each counts as a call (and as
        an audit call when ``audit``), within ``max_calls``. A batch that fails as a whole is
        dropped, and with it batching for this round: ``outcome`` then makes the calls one by
        one and finds the one that fails.
        """
        todo = list(dict.fromkeys(
            s for s in scripts if s not in self.cache and s not in self.failed
        ))[: max(self.max_calls - self.calls, 0)]  # fmt: skip
        if len(todo) < 2 or not self.batching:
            return
        rnd = self.rnd
        sources = [self._source(script) for script in todo]
        try:
            results = self.impl.verify_scripted_many(
                self.logits, list(rnd.draft_ids), self.draft_probs, self.params,
                list(rnd.history), list(rnd.prompt), sources,
            )
        except Exception:  # the batch as a whole (see the docstring): no more batches
            self.batching = False
            return
        if len(results) != len(todo):  # an adapter's bug: make the calls one by one instead
            self.batching = False
            return
        self.calls += len(todo)
        self.audit_calls += len(todo) if audit else 0
        for script, source, result in zip(todo, sources, results, strict=True):
            if isinstance(result, BaseException):
                self.failed[script] = result
            else:
                self.cache[script] = (tuple(result[0]), source.drawn)

    # -- roles -------------------------------------------------------------------------------

    def _catalogue(self) -> list[tuple[str, int]]:
        m = self.rnd.m
        roles = [("unused", -1), ("sample", m)]
        for i in range(m):
            roles += [("accept", i), ("resample", i), ("sample", i), ("sample_q", i)]
        return roles

    def role(self, kind: str, position: int) -> Role:
        key = (kind, position)
        cached = self.roles.get(key)
        if cached is not None:
            return cached
        rnd = self.rnd
        if kind == "unused":
            role = Role(kind, position, "unused", (Cell(Fraction(0), Fraction(1), "any"),))
        elif kind == "accept":
            a = rnd.accept_probability(position)
            x = rnd.draft_ids[position]
            cells = []
            if a > 0:
                cells.append(Cell(Fraction(0), a, f"keep {x}", "accept"))
            if a < 1:
                cells.append(Cell(a, Fraction(1), f"reject {x}", "reject"))
            role = Role(kind, position, f"u_accept[{position}]", tuple(cells))
        elif kind == "resample":
            r = residual(rnd.p_rows[position], rnd.q(position))
            role = Role(kind, position, f"u_resample[{position}]", _cells_of(r, "residual"))
        elif kind == "sample":
            name = "bonus" if position == rnd.m else f"sample p[{position}]"
            role = Role(kind, position, name, _cells_of(rnd.p_rows[position], "token"))
        elif kind == "sample_q":
            role = Role(kind, position, f"sample q[{position}]",
                        _cells_of(rnd.q(position), "token"))
        else:  # pragma: no cover - internal
            raise AssertionError(kind)
        self.roles[key] = role
        return role

    def candidates(self, path: tuple[Draw, ...]) -> list[Role]:
        """The roles draw ``len(path)`` may have, the contract's first."""
        m = self.rnd.m
        unused = self.role("unused", -1)
        meaningful = [d for d in path if d.kind != "unused"]
        after_unused = bool(path) and path[-1].kind == "unused"
        if not meaningful:
            first = self.role("accept", 0) if m else self.role("sample", m)
            return [first, unused]
        last = meaningful[-1]
        if last.kind == "accept":
            i = last.position
            # after an acceptance: the next u_accept, or a later one (a draw found unused may
            # have been an acceptance certain to keep), or the bonus
            ahead = [self.role("accept", j) for j in range(i + 1, m)] + [self.role("sample", m)]
            on_reject = [self.role("resample", i), self.role("sample", i),
                         self.role("sample_q", i)]
            if last.accepted:
                if after_unused:  # the contract: u_resample was drawn and ignored
                    return [*ahead, unused, *on_reject]
                return [unused, *ahead, *on_reject]  # contract first, then skipping it
            return [*on_reject, unused]
        if last.kind in ("resample", "sample", "sample_q"):
            return [unused]
        return [unused] + [self.role(k, i) for k, i in self._catalogue() if k != "unused"]

    # -- probing -----------------------------------------------------------------------------

    def probes(self, cell: Cell, kind: str) -> list[float] | None:
        g = self.guard
        if cell.width < 4 * g:
            return None
        left = _float_at_least(cell.low + g)
        right = _float_at_most(cell.high - g)
        middle = float((cell.low + cell.high) / 2)
        if kind == "unused":
            quarter = float(cell.low + cell.width / 4)
            three = float(cell.low + 3 * cell.width / 4)
            return [left, quarter, middle, three, right]
        return [left, middle, right]

    def fits(self, prefix: tuple[float, ...], role: Role) -> bool | None:
        """Whether ``role``'s cells explain the outcomes along this draw (None: one of its
        cells is too narrow to probe, so the question cannot be answered)."""
        cells = role.cells
        if any(self.probes(cell, role.kind) is None for cell in cells):
            return None
        for begin in range(0, len(cells), _FIT_CHUNK):
            chunk = [self.probes(cell, role.kind) for cell in cells[begin : begin + _FIT_CHUNK]]
            self.prefetch((*prefix, u) for points in chunk if points is not None for u in points)
            for points in chunk:
                if points is None:
                    return False
                middle = self.outcome((*prefix, points[len(points) // 2]))
                if any(self.outcome((*prefix, u)) != middle for u in points):
                    return False
        return True

    def bisect(self, script: Callable[[float], tuple[float, ...]], lo: float,
               hi: float) -> tuple[float, float]:
        """Shrink ``(lo, hi]`` around a breakpoint to below a quarter of the guard band."""
        low_outcome = self.outcome(script(lo))
        quarter = float(self.guard) / 4
        while hi - lo > quarter:
            mid = (lo + hi) / 2
            if not lo < mid < hi:
                break
            if self.outcome(script(mid)) == low_outcome:
                lo = mid
            else:
                hi = mid
        return lo, hi

    def locate(
        self, j: int, cells: Sequence[Cell], script: Callable[[float], tuple[float, ...]],
        kind: str,
    ) -> tuple[list[Cell], list[Breakpoint]]:
        """Split ``cells`` of draw ``j`` until the outcome is one per cell along ``script``."""
        queue = list(cells)
        done: list[Cell] = []
        found: list[Breakpoint] = []
        limit = 4 * self.rnd.V + 64
        while queue:
            cell = queue.pop(0)
            points = self.probes(cell, kind)
            if points is None:
                raise _Abort(
                    "not_provable",
                    f"draw {j}: the cell {cell} is narrower than 4 x guard ({float(self.guard):g}):"
                    " the implementation's breakpoint there cannot be told from rounding",
                    script(float((cell.low + cell.high) / 2)),
                )
            self.prefetch(script(u) for u in points)
            outs = [self.outcome(script(u)) for u in points]
            split = next((k for k in range(len(outs) - 1) if outs[k] != outs[k + 1]), None)
            if split is None:
                done.append(cell)
                continue
            lo, hi = self.bisect(script, points[split], points[split + 1])
            value, source, offset = self.snap(lo, hi)
            found.append(Breakpoint(j, value, (lo, hi), source, offset))
            if len(found) > limit:
                raise _Abort("not_provable", f"draw {j}: more than {limit} breakpoints located",
                             script(lo))
            queue[:0] = [replace(cell, high=value), replace(cell, low=value)]
        done.sort(key=lambda c: c.low)
        return done, found

    def snap(self, lo: float, hi: float) -> tuple[Fraction, str, Fraction]:
        """A rational within ``GUARD`` of every point of ``(lo, hi]``, and how it was found."""
        g = self.guard
        low, high = Fraction(hi) - g, Fraction(lo) + g
        centre = (Fraction(lo) + Fraction(hi)) / 2
        lib = self.library
        start = bisect.bisect_left(lib, low)
        inside = [v for v in lib[start : start + 8] if v <= high]
        if inside:
            return min(inside, key=lambda v: abs(v - centre)), "known", Fraction(0)
        value, source = Fraction(hi), "float"
        for limit in _DENOMINATOR_STEPS:
            simple = centre.limit_denominator(limit)
            if low <= simple <= high:
                value, source = simple, "rational"
                break
        offset = min((abs(value - v) for v in self._neighbours(value)), default=Fraction(1))
        return value, source, offset

    def _neighbours(self, value: Fraction) -> list[Fraction]:
        i = bisect.bisect_left(self.library, value)
        return self.library[max(0, i - 1) : i + 1]

    def refine(self, path: tuple[Draw, ...], start: Role) -> Role:
        """Locate the implementation's own breakpoints for draw ``len(path)``."""
        prefix = tuple(d.uniform for d in path)
        j = len(path)
        kind = "unused" if start.kind == "unused" else ""
        cells = [Cell(c.low, c.high, "located") for c in start.cells]
        done, found = self.locate(j, cells, lambda u: (*prefix, u), kind)
        self.located.extend(found)
        shown = ", ".join(f"{b.value} ({b.source})" for b in found[:6])
        more = f" and {len(found) - 6} more" if len(found) > 6 else ""
        self.note(
            f"draw {j} after {_describe(path)}: no predicted role fitted; located "
            f"{len(found)} breakpoint(s): {shown}{more}"
        )
        return Role("located", -1, "located", tuple(done))

    def note(self, text: str) -> None:
        """Record a departure from the contract's order (reported; every leaf is audited
        whatever the order)."""
        self.notes[text] = self.notes.get(text, 0) + 1

    def partition(self, path: tuple[Draw, ...]) -> Role:
        prefix = tuple(d.uniform for d in path)
        candidates = self.candidates(path)
        narrow = Fraction(0)  # mass of cells too narrow to probe in the roles passed over
        for number, role in enumerate(candidates):
            fit = self.fits(prefix, role)
            if fit is None:
                narrow += sum((c.width for c in role.cells if c.width < 4 * self.guard),
                              Fraction(0))
                continue
            if fit:
                if narrow:
                    # Probes cannot see a cell narrower than the guard band: the outcomes
                    # there are unresolved, and a difference this small is not provable.
                    weight = math.prod((d.cell.width for d in path), start=Fraction(1))
                    self.unresolved += weight * narrow
                    self.note(f"draw {len(path)}: a cell of {candidates[0].name} narrower "
                              f"than 4 x guard ({float(self.guard):g}) could not be probed")
                if number:
                    self.note(
                        f"draw {len(path)} is {role.name} where the contract's order has "
                        f"{candidates[0].name}"
                    )
                return role
        return self.refine(path, candidates[0])

    def explore(self, path: tuple[Draw, ...]) -> None:
        script = tuple(d.uniform for d in path)
        emitted, consumed = self.outcome(script)
        j = len(path)
        if consumed <= j:
            if consumed < j:
                raise _Abort(
                    "not_provable",
                    f"drew {consumed} uniforms where a probe of the same cells drew more than "
                    f"{j - 1}: how many uniforms it draws depends on more than the cells",
                    script,
                )
            self.audit(path, (emitted, consumed))
            self.leaves.append(Leaf(path, emitted))
            return
        role = self.partition(path)
        forced = self.forced.get(_key(path), [])
        cells = list(role.cells)
        if forced:
            for point in forced:
                cells = _split(cells, point.value, self.guard, j, script)
            self.located.extend(forced)
        self.boundaries += len(cells) - 1
        mids = [float((cell.low + cell.high) / 2) for cell in cells]
        self.prefetch((*script, u) for u in mids)
        outs = [self.outcome((*script, u)) for u in mids]
        children = [
            (*path, Draw(role.name, role.kind, role.position, cell, middle))
            for cell, middle in zip(cells, mids, strict=True)
        ]
        # the leaves among the children: their audits' calls together
        self.prefetch(
            (s for child, out in zip(children, outs, strict=True) if out[1] == j + 1
             for s in self.audit_scripts(child)),
            audit=True,
        )  # fmt: skip
        if (
            len(cells) > 1 and not forced and role.kind in _CONTRACT_KINDS
            and any(outs[i] == outs[i + 1] for i in range(len(outs) - 1))
        ):
            # the contract's multi-cell roles change the outcome across each boundary; one
            # that does not is used some other way (the leaf audits check how)
            self.note(f"draw {j} ({role.name}): the outcome does not change across every "
                      "boundary of its cells")
        for child in children:
            self.explore(child)

    def audit(self, path: tuple[Draw, ...], outcome: Outcome) -> None:
        """Star check at a leaf: moving any one draw to either guarded edge of its cell, the
        others fixed at the leaf's values, must not change the outcome. Every draw of every
        leaf is checked, whatever its node showed: a draw whose cells changed the outcome there
        (with the later draws at their defaults) may still be used again below it.

        A failed check locates the breakpoints along that draw, records them for the draw's
        node, and restarts the exploration (every call is cached, so a restart is cheap).
        """
        uniforms = tuple(d.uniform for d in path)
        self.prefetch(self.audit_scripts(path), audit=True)
        for j, draw in enumerate(path):
            kind = "unused" if draw.kind == "unused" else ""
            points = self._edges(draw.cell)
            if points is None:  # pragma: no cover - cells this narrow never reach a leaf
                continue

            def script(u: float, j: int = j) -> tuple[float, ...]:
                return (*uniforms[:j], u, *uniforms[j + 1 :])

            self.auditing = True
            try:
                same = all(self.outcome(script(u)) == outcome for u in points)
            finally:
                self.auditing = False
            if same:
                continue
            _, found = self.locate(j, [draw.cell], script, kind)
            key = _key(path[:j])
            known = {b.value for b in self.forced.get(key, [])}
            self.forced.setdefault(key, []).extend(b for b in found if b.value not in known)
            self.findings.append(
                f"draw {j} ({draw.role}) in {draw.cell} after {_describe(path[:j])} changes "
                f"the outcome when another draw differs: located "
                f"{', '.join(str(b.value) for b in found)}"
            )
            raise _Restart
        if self.deep_audit:
            self._audit_later(path, outcome)

    def _audit_later(self, path: tuple[Draw, ...], outcome: Outcome) -> None:
        """The star check again with every draw after the moved one at other points of its
        cell (``_OTHER``: irrational, so never a rational table's boundary, and spread over the
        cell). Two sides of a breakpoint can emit the same ids at the leaf's later values
        (K-SEQ: keep the first draft then take the residual's token 2, or keep the second and
        draw the bonus 2, which the bonus row does on three quarters of its draws), which the
        plain star check cannot see; other later values split them."""
        uniforms = tuple(d.uniform for d in path)
        self.prefetch(self._later_scripts(path), audit=True)
        for other in _OTHER:
            at = tuple(_float_at_least(d.cell.low + d.cell.width * other) for d in path)
            for j, draw in enumerate(path[:-1]):
                points = self._edges(draw.cell)
                if points is None:  # pragma: no cover - cells this narrow never reach a leaf
                    continue
                later = at[j + 1 :]
                self.auditing = True
                try:
                    base = self.outcome((*uniforms[: j + 1], *later))
                    moved = [self.outcome((*uniforms[:j], u, *later)) for u in points]
                finally:
                    self.auditing = False
                if base != outcome:  # a later draw's cell is not one outcome: find which
                    k = next(k for k in range(j + 1, len(path)) if self.outcome(
                        (*uniforms[: j + 1], *at[j + 1 : k + 1], *uniforms[k + 1 :])) != outcome)
                    head = (*uniforms[: j + 1], *at[j + 1 : k])

                    def at_k(u: float, k: int = k, head: tuple[float, ...] = head
                             ) -> tuple[float, ...]:
                        return (*head, u, *uniforms[k + 1 :])

                    self._force(path, k, at_k, "earlier draws at other points of their cells")
                if any(m != base for m in moved):
                    def at_j(u: float, j: int = j, later: tuple[float, ...] = later
                             ) -> tuple[float, ...]:
                        return (*uniforms[:j], u, *later)

                    self._force(path, j, at_j, "the later draws at other points of their cells")

    def _force(self, path: tuple[Draw, ...], j: int, script: Callable[[float], tuple[float, ...]],
               when: str) -> None:
        """Locate draw ``j``'s breakpoints along ``script``, record them, restart."""
        draw = path[j]
        kind = "unused" if draw.kind == "unused" else ""
        _, found = self.locate(j, [draw.cell], script, kind)
        key = _key(path[:j])
        known = {b.value for b in self.forced.get(key, [])}
        fresh = [b for b in found if b.value not in known]
        if not fresh:
            raise _Abort("not_provable", f"draw {j} ({draw.role}) changes the outcome with "
                         f"{when}, but no new breakpoint was located", script(draw.uniform))
        self.forced.setdefault(key, []).extend(fresh)
        self.findings.append(f"draw {j} ({draw.role}) in {draw.cell} after {_describe(path[:j])}"
                             f" changes the outcome with {when}: located "
                             f"{', '.join(str(b.value) for b in fresh)}")
        raise _Restart

    def _edges(self, cell: Cell) -> list[float] | None:
        """Both guarded edges of ``cell`` (a leaf audit's probes; the leaf is the midpoint)."""
        points = self.probes(cell, "")
        return None if points is None else [points[0], points[-1]]

    def audit_scripts(self, path: tuple[Draw, ...]) -> list[tuple[float, ...]]:
        """The calls of the leaf audit of ``path``: each draw at both edges of its cell (and,
        with ``deep_audit``, the deeper audit's: ``_later_scripts``)."""
        uniforms = tuple(d.uniform for d in path)
        scripts = []
        for j, draw in enumerate(path):
            for u in self._edges(draw.cell) or ():
                scripts.append((*uniforms[:j], u, *uniforms[j + 1 :]))
        return scripts + (self._later_scripts(path) if self.deep_audit else [])

    def _later_scripts(self, path: tuple[Draw, ...]) -> list[tuple[float, ...]]:
        """The calls ``_audit_later`` makes when the leaf holds: per point of ``_OTHER`` and
        per draw but the last, the later draws there with the draw at the leaf's value and at
        both edges of its cell (made together, one request to a worker)."""
        uniforms = tuple(d.uniform for d in path)
        scripts = []
        for other in _OTHER:
            at = tuple(_float_at_least(d.cell.low + d.cell.width * other) for d in path)
            for j, draw in enumerate(path[:-1]):
                later = at[j + 1 :]
                scripts.append((*uniforms[: j + 1], *later))
                scripts.extend((*uniforms[:j], u, *later) for u in self._edges(draw.cell) or ())
        return scripts


def _key(path: tuple[Draw, ...]) -> tuple[tuple[Fraction, Fraction], ...]:
    return tuple((d.cell.low, d.cell.high) for d in path)


def _split(cells: list[Cell], value: Fraction, guard: Fraction, j: int,
           script: tuple[float, ...]) -> list[Cell]:
    out: list[Cell] = []
    for cell in cells:
        if cell.low < value < cell.high:
            if min(value - cell.low, cell.high - value) < 4 * guard:
                raise _Abort(
                    "not_provable",
                    f"draw {j}: a breakpoint at {value} lies within 4 x guard of {cell}: it "
                    "cannot be told from rounding",
                    script,
                )
            out += [replace(cell, high=value), replace(cell, low=value)]
        else:
            out.append(cell)
    return out


def _describe(path: tuple[Draw, ...]) -> str:
    if not path:
        return "nothing"
    return " ".join(f"{d.role}:{d.cell.label}" for d in path)


def enumerate_round(
    impl: Implementation,
    rnd: Round,
    *,
    guard: Fraction = GUARD,
    max_calls: int = _MAX_CALLS,
    hints: Iterable[Fraction] = (),
    deep_audit: bool = False,
) -> Enumeration:
    """The exact distribution of ``impl``'s ``emitted_ids`` on one round, by cells.

    Args:
        impl: an implementation with the ``injected_uniforms`` capability.
        rnd: the round: exact target rows, drafted ids, exact draft rows (or one-hot).
        guard: how far inside its cell every probe sits (see the module docstring).
        max_calls: give up (not provable) after this many calls into the implementation.
        hints: extra exact breakpoints to snap located ones to, besides those of the round's
            distributions and those the implementation offers (``breakpoint_hints(rnd)``, as
            the lossy rules do).
        deep_audit: also audit every leaf with the draws after the moved one at three
            irrational points of their cells (``_Explorer._audit_later``): a breakpoint inside
            a cell whose two sides emit the same ids at the leaf's own later values, but not at
            others, is found (the plain audit misses it). The exact tier's theorems use it.

    Returns:
        An ``Enumeration``; it never raises for the implementation's misbehaviour (status
        ``error`` or ``not_provable`` with the reason and the uniforms of the failing call).

    Raises:
        InvalidArgument: ``guard`` is not in ``(0, 1/8)``.

    >>> from spec_verify.adapters._loader import load_implementation
    >>> F = Fraction
    >>> rnd = Round(((F(1, 2), F(1, 4), F(1, 4)),) * 2, (1,), ((F(1, 4), F(1, 2), F(1, 4)),))
    >>> e = enumerate_round(load_implementation("reference"), rnd)
    >>> {k: str(v) for k, v in sorted(e.distribution.items())}
    {(0,): '1/2', (1, 0): '1/4', (1, 1): '1/8', (1, 2): '1/8'}
    """
    guard = Fraction(guard)
    if not 0 < guard < Fraction(1, 8):
        raise InvalidArgument("guard", guard, "must be in (0, 1/8)")
    hints = [*hints, *impl.breakpoint_hints(rnd)]
    try:
        explorer = _Explorer(impl, rnd, guard, max_calls, hints, deep_audit)
    except Exception as exc:  # the implementation's own params() failed
        return Enumeration(rnd, "error", {}, (), 0, 0,
                           reason=f"{impl.name}: building its sampling parameters raised "
                           f"{type(exc).__name__}: {exc}")
    status, reason, script, distribution = explore_with_restarts(explorer)
    return Enumeration(
        round=rnd,
        status=status,
        distribution=dict(sorted(distribution.items())),
        leaves=tuple(explorer.leaves),
        calls=explorer.calls,
        boundaries=explorer.boundaries,
        located=tuple(explorer.located),
        notes=tuple(
            text if count == 1 else f"{text} ({count} times)"
            for text, count in explorer.notes.items()
        ) + tuple(explorer.findings),
        reason=reason,
        script=script,
        audit_calls=explorer.audit_calls,
        unresolved=explorer.unresolved,
    )


def explore_with_restarts(
    explorer: Any,
) -> tuple[EnumerationStatus, str, tuple[float, ...], dict[Emitted, Fraction]]:
    """Explore from the root, restarting after each split cell (calls are cached), and sum the
    leaves' weights per output: ``(status, reason, script, distribution)``. Shared by the chain
    and tree explorers."""
    status: EnumerationStatus = "complete"
    reason = ""
    script: tuple[float, ...] = ()
    for _ in range(_MAX_RESTARTS):
        explorer.leaves, explorer.located, explorer.boundaries = [], [], 0
        explorer.unresolved = Fraction(0)
        explorer.notes = {}
        try:
            explorer.explore(())
        except _Restart:
            continue
        except _Abort as stop:
            status, reason, script = stop.status, stop.reason, stop.script
        break
    else:
        status, reason = "not_provable", f"more than {_MAX_RESTARTS} restarts"
    distribution: dict[Emitted, Fraction] = defaultdict(Fraction)
    for leaf in explorer.leaves:
        distribution[leaf.emitted] += leaf.weight
    return status, reason, script, distribution

