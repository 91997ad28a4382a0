"""A vLLM-style batched rejection kernel checked through ``--impl python:...``.

Engines verify drafts with one kernel call per batch (``spec_verify.endtoend._batched`` gives
the shape: flattened draft ids, per-request draft lengths, draft and target probability rows,
bonus tokens sampled by the caller, the kernel's own seed; ``(batch, max_k + 1)`` ids padded
with -1). A ``python:`` module that offers such a kernel instead of the contract's
``verify_draft`` declares it by name::

    SPEC_VERIFY_KERNEL = "rejection_sample"

and ``KernelImplementation`` is then its ``Implementation``: each ``verify_draft`` is one
request in a batch of one, and ``call_many`` (the statistical tier's rounds) sends four
rounds per call between filler requests of other draft lengths and a greedy one, in slots
permuted on every call. The harness applies the
contract's processors to the target logits (``sampling_distribution``, with the kept drafts
in the penalties' history, as the reference does), gives a deterministic draft (and every
draft at temperature 0, where the contract ignores draft probabilities) one-hot rows,
samples each bonus token from its request's last target row with one uniform of the
harness's source, draws the kernel's seed from the next, and reads each request's row back.
The kernel draws from its own generator, so it offers ``verify_draft`` and ``greedy`` but not
``injected_uniforms``: under ``--profile lossless`` its law is what is checked (greedy
identity and the statistical tier); the exact tier and draw-order checks do not apply. The
kernel itself runs wherever its module does (a worker, by default); the processors, the bonus
and the reading of its answer are the harness's.

One worker serves the whole gate: the module is imported once per run, and each kernel call is
one request (the kernel named in it, not looked up first). No check of the gate needs a fresh
module: the kernel owns no uniform source (each call gets its seed), the checks that replay a
stream (parity, ``properties/same_stream_same_output``) do not apply to it, and state a kernel
carries from one call to the next (rows kept per slot) is what the permuted batches test, so it
is left to show. A crash or hang still fails the check that made the call (the worker is killed
and the call is an ``ImplementationError``); a later call starts a fresh worker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._calls import Call, CallOutcome, Draws
from spec_verify.adapters._implementations import (
    Implementation,
    VerifyRound,
    apply_capabilities,
    check_capabilities,
)
from spec_verify.adapters._remote import call_method
from spec_verify.errors import ImplementationError, InvalidArgument

__all__ = ["KERNEL_DECLARATION", "KernelImplementation"]

KERNEL_DECLARATION = "SPEC_VERIFY_KERNEL"
_SEED_BOUND = 2**53  # the kernel's seed: an exact integer from one uniform
_GROUP = 4  # rounds under test per kernel call in ``call_many``


@dataclass(frozen=True)
class _Request:
    ids: list[int]
    q: NDArray[np.float64]  # (m, V)
    rows: NDArray[np.float64]  # (m, V): the target at each drafted position
    bonus: int
    V: int
    filler: bool = False


def _filler(V: int, m: int) -> _Request:
    """A request of another draft length in the batch (uniform rows, drafts of token 0)."""
    flat = np.full((m, V), 1.0 / V)
    return _Request([0] * m, flat, flat, 0, V, filler=True)


def _greedy_filler(V: int, m: int) -> _Request:
    """A greedy request in the batch: one-hot target rows (the argmax, token 0) and one-hot
    draft rows on token 1 (each rejected: the kernel must emit the argmax), as an engine
    hands a temperature-0 request to the same kernel as the sampled ones."""
    rows = np.zeros((m, V))
    rows[:, 0] = 1.0
    q = np.zeros((m, V))
    q[:, 1 % V] = 1.0
    return _Request([1 % V] * m, q, rows, 0, V, filler=True)


class KernelImplementation(Implementation):
    """A batched rejection kernel of a loaded module (``host``: a worker or in-process
    implementation whose ``module`` holds the kernel) as the contract's ``verify_draft``."""

    def __init__(self, host: Any, kernel: str, declared: Any = None) -> None:
        self.host = host
        self.kernel = kernel
        self.name = host.name
        self.timeout = host.timeout
        overrides = check_capabilities(declared or {}, f"{host.name}: SPEC_VERIFY_CAPABILITIES")
        self.capabilities = apply_capabilities(frozenset({"verify_draft", "greedy"}), overrides)
        self._calls = 0  # batched calls made: with the seed, each call's slot permutation

    def verify_draft(
        self,
        target_logits: NDArray[np.float64],
        draft_ids: Sequence[int],
        draft_probs: NDArray[np.float64] | None,
        p: Any,
        history: Sequence[int],
        rng: Any,
        prompt: Sequence[int] = (),
    ) -> tuple[list[int], int]:
        request = self._request(target_logits, draft_ids, draft_probs, p, history, rng, prompt)
        seed = 0 if float(p.temperature) == 0.0 else int(float(rng.random()) * _SEED_BOUND)
        return self._call([request], seed)[0]

    def call_many(
        self,
        calls: Sequence[Call],
        rng: Any = None,
        while_waiting: Callable[[], None] | None = None,
    ) -> list[CallOutcome]:
        """``LIVE`` ``verify_draft`` rounds with one ``p`` (the statistical tier's) as
        ``_verify_grouped`` batches them; any other batch one call at a time."""
        first = calls[0] if calls else None
        if first is None or any(
            c.method != "verify_draft" or c.plan.draws is not Draws.LIVE
            or c.args["p"] is not first.args["p"] for c in calls
        ):  # fmt: skip
            return super().call_many(calls, rng, while_waiting)
        if while_waiting is not None:
            while_waiting()
        rounds = [(a["target_logits"], a["draft_ids"], a["draft_probs"], a["history"],
                   a["prompt"]) for a in (c.args for c in calls)]  # fmt: skip
        return [CallOutcome.ok(r) for r in self._verify_grouped(rounds, first.args["p"], rng)]

    def _verify_grouped(
        self, rounds: Sequence[VerifyRound], p: Any, rng: Any
    ) -> list[tuple[list[int], int]]:
        """Rounds ``_GROUP`` at a time, each kernel call a batch of several requests: the
        rounds under test between filler requests of other draft lengths (none, three
        drafts, and a greedy request of two), in slots permuted on every call, as an engine
        batches them, so that a kernel reading another request's rows, bonus or offsets, or
        a slot's rows from its previous occupant, moves the law the statistical tier tests."""
        out: list[tuple[list[int], int]] = []
        for first in range(0, len(rounds), _GROUP):
            group = [self._request(logits, ids, probs, p, history, rng, prompt)
                     for logits, ids, probs, history, prompt in rounds[first:first + _GROUP]]
            seed = 0 if float(p.temperature) == 0.0 else int(float(rng.random()) * _SEED_BOUND)
            out.extend(self._call(group, seed))
        return out

    def _request(
        self,
        target_logits: NDArray[np.float64],
        draft_ids: Sequence[int],
        draft_probs: NDArray[np.float64] | None,
        p: Any,
        history: Sequence[int],
        rng: Any,
        prompt: Sequence[int],
    ) -> _Request:
        """One request of a kernel call: drafts, q rows, processed target rows, the bonus."""
        from spec_verify.reference import InvalidParams, sample, sampling_distribution

        ids = [int(t) for t in draft_ids]
        m = len(ids)
        logits = np.asarray(target_logits, dtype=np.float64)
        if logits.ndim != 2 or logits.shape[0] != m + 1:
            raise InvalidArgument(
                "target_logits", logits.shape, f"must be (m + 1, V) = ({m + 1}, V) rows"
            )
        V = logits.shape[1]
        rows = np.array([
            sampling_distribution(logits[i], p, [*history, *ids[:i]], list(prompt))
            for i in range(m + 1)
        ])  # fmt: skip
        greedy = float(p.temperature) == 0.0
        if not greedy and (rng is None or not callable(getattr(rng, "random", None))):
            raise InvalidParams("rng", rng, "sampled verification needs a uniform source")
        if draft_probs is None or greedy:
            # A deterministic draft has all its mass on the drafted token; at temperature 0
            # the contract ignores the draft's probabilities (the drafts are compared with the
            # argmax), so the kernel gets the same one-hot rows.
            q = np.zeros((m, V))
            q[np.arange(m), ids] = 1.0
        else:
            q = np.asarray(draft_probs, dtype=np.float64).reshape(m, V)
        bonus = sample(rows[m], None if greedy else rng)
        return _Request(ids, q, rows[:m], int(bonus), V)

    def _call(self, requests: list[_Request], seed: int) -> list[tuple[list[int], int]]:
        """One kernel call: ``requests`` in a batch, with fillers when there are several (a
        lone request is a batch of one, as ``verify_draft`` makes it)."""
        widths = {r.V for r in requests}
        if len(widths) > 1:  # one vocabulary per kernel call
            return [out for r in requests for out in self._call([r], seed)]
        V = widths.pop()
        batch = list(requests)
        if len(requests) > 1:
            batch = [_filler(V, 0), *requests[:2], _filler(V, 3), *requests[2:],
                     _greedy_filler(V, 2)]  # fmt: skip
            # Engines reorder their persistent batch between steps: the slots are permuted
            # on every call (from the kernel's seed, so no uniform of the source is spent),
            # and a kernel that keeps per-slot rows from a slot's previous occupant (vLLM PR
            # #41044) verifies a round with another request's rows.
            self._calls += 1
            order = np.random.default_rng([seed, self._calls]).permutation(len(batch))
            batch = [batch[int(i)] for i in order]
        ids = np.array([t for r in batch for t in r.ids], dtype=np.int64)
        lengths = np.array([len(r.ids) for r in batch], dtype=np.int64)
        q = np.concatenate([r.q for r in batch]).reshape(-1, V)
        rows = np.concatenate([r.rows for r in batch]).reshape(-1, V)
        bonus = np.array([r.bonus for r in batch], dtype=np.int64)
        # The kernel by name on the host's module: one request to a worker per call (the
        # lookup travels with the call), and after a crash the restarted worker's module.
        out = self.host.call_guarded(
            "verify_draft", self.timeout, call_method, self.host.module, self.kernel,
            ids, lengths, q, rows, bonus, seed,
        )  # fmt: skip
        matrix = self._matrix(out, len(batch), int(lengths.max()) + 1)
        out = [(self._read(matrix[i, : len(r.ids) + 1], len(r.ids), V), r)
               for i, r in enumerate(batch)]
        for (emitted, _), r in out:
            if r.filler and len(r.ids) and r.rows[0, 0] == 1.0 and emitted[0] != 0:
                raise ImplementationError(
                    self.name, self.kernel,
                    f"emitted {emitted} for a greedy request whose target is one-hot on "
                    "token 0: a kernel must emit the argmax of a one-hot row",
                )  # fmt: skip
        by_request = {id(r): result for result, r in out}
        return [by_request[id(r)] for r in requests]

    def _matrix(self, out: Any, batch: int, width: int) -> NDArray[Any]:
        try:
            matrix = np.asarray(out.tolist() if hasattr(out, "tolist") else out)
            if matrix.ndim == 1 and batch == 1:
                matrix = matrix.reshape(1, -1)
            if matrix.shape != (batch, width) or not np.all(matrix == np.round(matrix)):
                raise ValueError(f"shape {matrix.shape}, not {(batch, width)}")
        except (TypeError, ValueError) as exc:
            raise ImplementationError(
                self.name, self.kernel,
                f"returned {out!r:.120} ({exc}); a kernel returns (batch, max_k + 1) token "
                "ids with -1 padding",
            ) from None  # fmt: skip
        return matrix

    def _read(self, row: NDArray[Any], m: int, V: int) -> tuple[list[int], int]:
        """A request's row of the kernel's answer (its first ``m + 1`` ids) as ``(emitted,
        n_accepted)``; anything but ids followed only by -1 padding is the kernel's failure."""
        values = [int(t) for t in row]
        kept = values.index(-1) if -1 in values else len(values)
        emitted = values[:kept]
        if not emitted or any(t != -1 for t in values[kept:]):
            raise ImplementationError(
                self.name, self.kernel, f"returned the row {values}: ids, then only -1 padding"
            )
        bad = [t for t in emitted if not 0 <= t < V]
        if bad:
            raise ImplementationError(
                self.name, self.kernel, f"returned ids out of [0, {V}): {bad}"
            )
        return emitted, len(emitted) - 1

    def close(self) -> None:
        self.host.close()

    def __repr__(self) -> str:
        return f"KernelImplementation({self.name!r}, {self.kernel!r})"
