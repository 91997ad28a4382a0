"""A vLLM-style batched rejection kernel checked through ``--impl python:...``.

Engines verify drafts with one kernel call per batch (``spec_verify.endtoend._batched`` gives
the shape: flattened draft ids, per-request draft lengths, draft and target probability rows,
bonus tokens sampled by the caller, the kernel's own seed; ``(batch, max_k + 1)`` ids padded
with -1). A ``python:`` module that offers such a kernel instead of the contract's
``verify_draft`` declares it by name::

    SPEC_VERIFY_KERNEL = "rejection_sample"

and ``KernelImplementation`` is then its ``Implementation``: each ``verify_draft`` is one
request in a batch of one. The harness applies the contract's processors to the target
logits (``sampling_distribution``, with the kept drafts in the penalties' history, as the
reference does), gives a deterministic draft (and every draft at temperature 0, where the
contract ignores draft probabilities) one-hot rows, samples the bonus token from the
target's last row with one uniform of the harness's source, draws the kernel's seed from the
next, and reads the kernel's first row back. The kernel draws from its own generator, so it
offers ``verify_draft`` and ``greedy`` but not ``injected_uniforms``: under ``--profile
lossless`` its law is what is checked (greedy identity and the statistical tier); the exact
tier and draw-order checks do not apply. The kernel itself runs wherever its module does (a
worker, by default); the processors, the bonus and the reading of its answer are the harness's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._implementations import (
    Implementation,
    apply_capabilities,
    check_capabilities,
)
from spec_verify.errors import ImplementationError, InvalidArgument

__all__ = ["KERNEL_DECLARATION", "KernelImplementation"]

KERNEL_DECLARATION = "SPEC_VERIFY_KERNEL"
_SEED_BOUND = 2**53  # the kernel's seed: an exact integer from one uniform


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
        seed = 0 if greedy else int(float(rng.random()) * _SEED_BOUND)
        args = (np.array(ids, dtype=np.int64), np.array([m], dtype=np.int64), q, rows[:m],
                np.array([bonus], dtype=np.int64), seed)  # fmt: skip
        kernel = getattr(self.host.module, self.kernel)
        out = self.host.call_guarded("verify_draft", self.timeout, kernel, *args)
        return self._read(out, m, V)

    def _read(self, out: Any, m: int, V: int) -> tuple[list[int], int]:
        """The first row of the kernel's answer as ``(emitted, n_accepted)``; anything that
        is not a row of ids followed only by -1 padding is the kernel's failure."""
        try:
            row = np.asarray(out.tolist() if hasattr(out, "tolist") else out)
            row = row.reshape(1, -1)[0] if row.ndim == 2 and row.shape[0] == 1 else row
            if row.ndim != 1 or row.shape[0] != m + 1 or not np.all(row == np.round(row)):
                raise ValueError(f"shape {row.shape}")
            values = [int(t) for t in row]
        except (TypeError, ValueError) as exc:
            raise ImplementationError(
                self.name, self.kernel,
                f"returned {out!r:.120} ({exc}); a kernel returns (batch, max_k + 1) token "
                "ids with -1 padding",
            ) from None  # fmt: skip
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
