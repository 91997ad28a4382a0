"""``transformers``: Hugging Face transformers' ``_speculative_sampling`` as an implementation.

A real sampler no one here wrote, for the harness to be judged on (issue 12). Specs:

- ``transformers``: as transformers runs it, with torch's own generator (``torch.rand_like``
  and ``torch.multinomial`` on the global generator, seeded from one harness uniform per call so
  a run is reproducible). It takes no injected uniforms and has no greedy path (transformers
  verifies greedy drafts elsewhere), and its arithmetic is float32.
- ``transformers:injected``: the same function with ``torch.rand_like`` and
  ``torch.multinomial`` answered from the harness's uniform source (the acceptance uniforms of
  all positions first, then one for the resample or bonus: transformers' own draw order), so
  the exact and edge-uniform tiers can drive it.
- ``transformers:ensemble=W``: with ``assistant_ensemble_weight=W`` (a lossy rule: the target
  is relaxed to ``W p + (1 - W) q``); combine with ``injected`` as ``injected,ensemble=W``.

The law is the contract's: the adapter hands transformers the harness's processed target rows
(``log`` of the reference's ``sampling_distribution`` with the pinned processors, ``-inf`` where
it is 0) and the draft rows, so only the verification rule is transformers'. Needs the
``torch`` extra (``pip install 'spec-verify[torch]'``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import UnknownImplementation

__all__ = ["TransformersImplementation", "load_transformers"]

_PATCH_LOCK = threading.Lock()  # torch.rand_like / torch.multinomial are patched per call


class TransformersImplementation(Implementation):
    """transformers' ``_speculative_sampling`` behind the ``Implementation`` protocol."""

    def __init__(self, name: str, *, injected: bool, ensemble: float | None) -> None:
        import torch
        from transformers.generation import utils

        self.name = name
        self.injected = injected
        self.ensemble = ensemble
        self._torch: Any = torch  # patched per call (rand_like, multinomial)
        self._speculative_sampling = utils._speculative_sampling
        self.capabilities = frozenset(
            {"verify_draft", "float32", *({"injected_uniforms"} if injected else set())}
        )

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
        from spec_verify.reference import sampling_distribution

        torch = self._torch
        rows = np.asarray(target_logits, dtype=np.float64)
        m, V = len(draft_ids), rows.shape[1]
        ids = [int(x) for x in draft_ids]
        # the target rows with the contract's processors, each after the drafts kept before it
        target = np.stack(
            [sampling_distribution(rows[i], p, [*history, *ids[:i]], list(prompt))
             for i in range(m + 1)]
        )  # fmt: skip
        if draft_probs is None:
            q = np.zeros((m, V))
            q[np.arange(m), ids] = 1.0
        else:
            q = np.asarray(draft_probs, dtype=np.float64).reshape(m, V)
        with np.errstate(divide="ignore"):
            new_logits = torch.tensor(np.log(target), dtype=torch.float32)[None]
            candidate_logits = torch.tensor(np.log(q), dtype=torch.float32)[None]
        candidates = torch.tensor([list(prompt) + ids], dtype=torch.long)
        with self._randomness(rng):
            if m == 0:  # transformers never verifies zero candidates: the bonus alone
                tokens = torch.multinomial(new_logits[0].softmax(dim=-1), num_samples=1)[0]
                return [int(tokens[0])], 0
            valid, n_matches = self._speculative_sampling(
                candidates, candidate_logits, m, new_logits, self.ensemble
            )
        emitted = [int(t) for t in valid[0].tolist()]
        return emitted, int(n_matches)

    @contextlib.contextmanager
    def _randomness(self, rng: Any) -> Iterator[None]:
        """torch's generator seeded from one harness uniform, or every draw from ``rng``."""
        torch = self._torch
        if not self.injected:
            torch.manual_seed(int(float(rng.random()) * 2**53))
            yield
            return

        def rand_like(tensor: Any, **_: Any) -> Any:
            values = [float(rng.random()) for _ in range(tensor.numel())]
            return torch.tensor(values, dtype=tensor.dtype).reshape(tensor.shape)

        def multinomial(probs: Any, num_samples: int = 1, **_: Any) -> Any:
            rows = probs.reshape(-1, probs.shape[-1]).double().numpy()
            picks = [_inverse_cdf(row, float(rng.random())) for row in rows]
            return torch.tensor(picks, dtype=torch.long).reshape(*probs.shape[:-1], 1)

        with _PATCH_LOCK:
            saved = torch.rand_like, torch.multinomial
            torch.rand_like, torch.multinomial = rand_like, multinomial
            try:
                yield
            finally:
                torch.rand_like, torch.multinomial = saved

    def __repr__(self) -> str:
        return f"TransformersImplementation({self.name!r})"


def _inverse_cdf(row: NDArray[np.float64], u: float) -> int:
    """The token whose cumulative cell holds ``u`` (ascending ids; never a zero-weight token)."""
    cumulative = np.cumsum(row)
    index = int(np.searchsorted(cumulative, u * cumulative[-1], side="right"))
    positive = np.flatnonzero(row > 0)
    return index if index < len(row) and row[index] > 0 else int(positive[-1])


def load_transformers(spec: str, rest: str) -> TransformersImplementation:
    """Load ``transformers[:injected][,ensemble=W]``.

    Raises:
        UnknownImplementation: torch or transformers is not installed, or the options are bad.
    """
    injected, ensemble = False, None
    for option in filter(None, (o.strip() for o in rest.split(","))):
        key, _, value = option.partition("=")
        if key == "injected" and not value:
            injected = True
        elif key == "ensemble" and value:
            try:
                ensemble = float(value)
            except ValueError:
                ensemble = -1.0
            if not 0.0 < ensemble < 1.0:
                raise UnknownImplementation(
                    "impl", spec, f"ensemble weight {value!r} is not in (0, 1)",
                    "transformers:ensemble=0.5",
                )
        else:
            raise UnknownImplementation(
                "impl", spec, f"unknown option {option!r}",
                "transformers, transformers:injected or transformers:injected,ensemble=0.5",
            )
    try:
        return TransformersImplementation(spec, injected=injected, ensemble=ensemble)
    except ImportError as exc:
        raise UnknownImplementation(
            "impl", spec, f"needs torch and transformers ({exc})",
            "pip install 'spec-verify[torch]'",
        ) from exc
    except AttributeError as exc:  # a transformers without _speculative_sampling
        raise UnknownImplementation(
            "impl", spec, f"this transformers has no _speculative_sampling ({exc})",
            "pip install 'spec-verify[torch]' (transformers 5.x)",
        ) from exc
