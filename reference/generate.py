"""Plain ``generate`` (L8.2) and ``speculative_generate`` (seed section 2.1).

One round: the draft proposes, the target scores the pending token and the drafts in one pass,
``verify_draft`` keeps a prefix and adds a token of its own, and the cache is truncated back to
the kept length; the added token is pending for the next round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .drafts import DraftModel, check_k
from .errors import ContextTooLong, InvalidDraft, InvalidParams, InvalidPrompt
from .models import LanguageModel, Tokenizer
from .pcg32 import request_rng
from .sampling import SamplingParams, UniformSource, sample, sampling_distribution, token_logprobs
from .sampling import validate_ids as _validate_ids
from .verify import verify_draft

__all__ = ["Generation", "generate", "speculative_generate"]


@dataclass
class Generation:
    """The result of a generation.

    ``finish_reason`` is ``"eos"`` (an EOS id was produced; it is not in ``ids``), ``"stop"``
    (a stop string was found; the text is cut before it), or ``"length"`` (``max_tokens``
    reached or the model's context is full).
    """

    ids: list[int]
    text: str
    logprobs: list[float]
    finish_reason: str
    stats: dict[str, Any] = field(default_factory=dict)


def _check_common(
    model: LanguageModel,
    tok: Tokenizer,
    prompt: Sequence[int],
    p: SamplingParams,
    eos_ids: Sequence[int],
) -> tuple[list[int], frozenset[int]]:
    if not isinstance(p, SamplingParams):
        raise InvalidParams("p", p, "must be a SamplingParams")
    if isinstance(prompt, str):
        raise InvalidPrompt("prompt", prompt, "must be token ids", "use tok.encode(text)")
    if len(prompt) == 0:
        raise InvalidPrompt("prompt", list(prompt), "must hold at least one token")
    if getattr(tok, "vocab_size", model.vocab_size) != model.vocab_size:
        raise InvalidParams("tok", tok, f"vocabulary differs from the model's {model.vocab_size}")
    ids = _validate_ids("prompt", prompt, model.vocab_size)
    if len(ids) >= model.max_positions:
        raise ContextTooLong(
            "prompt",
            f"<{len(ids)} tokens>",
            f"has {len(ids)} tokens; the model holds {model.max_positions} positions, so a "
            f"prompt may have at most {model.max_positions - 1}",
            "shorten the prompt",
        )
    eos = frozenset(_validate_ids("eos_ids", list(eos_ids), model.vocab_size))
    return ids, eos


class _Output:
    """Emitted tokens with EOS, stop strings and the budget applied (shared by both loops)."""

    def __init__(self, tok: Tokenizer, p: SamplingParams, eos: frozenset[int], room: int) -> None:
        self.tok = tok
        self.p = p
        self.eos = eos
        self.limit = min(p.max_tokens, room)
        self.ids: list[int] = []
        self.logprobs: list[float] = []
        self.finish_reason = ""

    @property
    def remaining(self) -> int:
        return self.limit - len(self.ids)

    def extend(self, tokens: Sequence[int], logprobs: Sequence[float]) -> bool:
        """Append tokens one by one; True when generation is finished."""
        for token, logprob in zip(tokens, logprobs, strict=False):
            if token in self.eos:
                self.finish_reason = "eos"
                return True
            self.ids.append(token)
            self.logprobs.append(logprob)
            if self._cut_at_stop():
                return True
            if self.remaining == 0:
                self.finish_reason = "length"
                return True
        return False

    def _cut_at_stop(self) -> bool:
        if not self.p.stop:
            return False
        text = self.tok.decode(self.ids)
        hits = [text.find(s) for s in self.p.stop if s in text]
        if not hits:
            return False
        cut = min(hits)
        while self.ids and len(self.tok.decode(self.ids)) > cut:
            self.ids.pop()
            self.logprobs.pop()
        self.finish_reason = "stop"
        return True

    def text(self) -> str:
        text = self.tok.decode(self.ids)
        if self.finish_reason == "stop":
            hits = [text.find(s) for s in self.p.stop if s in text]
            text = text[: min(hits)] if hits else text
        return text


def generate(
    model: LanguageModel,
    tok: Tokenizer,
    prompt: Sequence[int],
    p: SamplingParams,
    kv_dtype: Any = np.float32,
    eos_ids: Sequence[int] = (),
    rng: UniformSource | None = None,
) -> Generation:
    """Plain decoding: one target pass per token (the reference speculative output must match).

    ``rng`` defaults to ``request_rng(p.seed)``; greedy draws nothing.
    """
    ids, eos = _check_common(model, tok, prompt, p, eos_ids)
    rng = None if p.greedy else (rng if rng is not None else request_rng(p.seed))
    out = _Output(tok, p, eos, model.max_positions - len(ids))
    cache = model.new_cache(kv_dtype)
    calls = 0
    logits = model.forward(ids, cache, 0)[-1]
    calls += 1
    while True:
        dist = sampling_distribution(logits, p, out.ids, ids)
        token = sample(dist, rng)
        if out.extend([token], token_logprobs(logits, [token])):
            break
        logits = model.forward([token], cache, len(ids) + len(out.ids) - 1)[-1]
        calls += 1
    stats = {"drafted": 0, "accepted": 0, "acceptance_rate": 0.0, "target_calls": calls}
    return Generation(out.ids, out.text(), out.logprobs, out.finish_reason or "length", stats)


def speculative_generate(
    target: LanguageModel,
    draft: DraftModel,
    tok: Tokenizer,
    prompt: Sequence[int],
    p: SamplingParams,
    k: int = 4,
    kv_dtype: Any = np.float32,
    eos_ids: Sequence[int] = (),
    rng: UniformSource | None = None,
    verify: Callable[..., Any] | None = None,
) -> Generation:
    """Speculative decoding: greedy output equals ``generate``'s; sampled output follows it.

    One request stream (``rng``, default ``request_rng(p.seed)``) serves the draft and the
    verifier in program order. ``stats`` holds drafted, accepted, acceptance_rate (accepted
    over drafted, 0.0 when nothing was drafted) and target_calls.

    ``verify`` plugs in another verification rule (block verification, say) with
    ``verify_draft``'s signature and result, ``(emitted, n)``: the first ``n`` drafts kept, then
    one token; the generation loop (rollback, stop rules, logprobs) stays the reference's.

    Raises:
        InvalidParams: ``k < 0``, bad parameters; InvalidPrompt / ContextTooLong: empty prompt,
        ids out of range, a prompt that fills the model; InvalidDraft: a draft that proposes
        more than asked or ids out of range.
    """
    k = check_k(k)
    ids, eos = _check_common(target, tok, prompt, p, eos_ids)
    if not callable(getattr(draft, "propose", None)):
        raise InvalidParams("draft", draft, "must have propose(ctx, k, rng)")
    if verify is not None and not callable(verify):
        raise InvalidParams("verify", verify, "must be a function with verify_draft's signature")
    rule = verify_draft if verify is None else verify
    rng = None if p.greedy else (rng if rng is not None else request_rng(p.seed))
    out = _Output(tok, p, eos, target.max_positions - len(ids))
    cache = target.new_cache(kv_dtype)
    pending = list(ids)
    committed = 0
    drafted = accepted = calls = 0
    while True:
        k_round = max(0, min(k, out.remaining - 1))
        draft_ids, draft_probs = draft.propose(ids + out.ids, k_round, rng)
        draft_ids = _check_proposal(draft_ids, k_round, target.vocab_size)
        m = len(draft_ids)
        logits = target.forward(pending + draft_ids, cache, committed)
        calls += 1
        rows = logits[-(m + 1) :]
        emitted, n = rule(rows, draft_ids, draft_probs, p, out.ids, rng, ids)
        if verify is not None:
            emitted, n = _check_verified(emitted, n, draft_ids, target.vocab_size)
        drafted += m
        accepted += n
        committed += len(pending) + n
        cache.truncate(committed)
        pending = [emitted[-1]]
        logprobs = [token_logprobs(rows[i], [t])[0] for i, t in enumerate(emitted)]
        if out.extend(emitted, logprobs):
            break
    stats = {
        "drafted": drafted,
        "accepted": accepted,
        "acceptance_rate": accepted / drafted if drafted else 0.0,
        "target_calls": calls,
    }
    return Generation(out.ids, out.text(), out.logprobs, out.finish_reason, stats)


def _check_verified(emitted: Any, n: Any, draft_ids: list[int], V: int) -> tuple[list[int], int]:
    """A plugged-in rule's result, held to verify_draft's: ``n`` drafts kept, then one token."""
    ids = _validate_ids("verify (emitted)", [int(t) for t in emitted], V)
    if not (isinstance(n, int) and 0 <= n <= len(draft_ids) and len(ids) == n + 1
            and ids[:n] == draft_ids[:n]):
        raise InvalidParams(
            "verify", (ids, n),
            f"must return (emitted, n): the first n of the {len(draft_ids)} drafts "
            f"{draft_ids}, then one token",
        )
    return ids, n


def _check_proposal(draft_ids: Any, k: int, V: int) -> list[int]:
    ids = _validate_ids("draft_ids", list(draft_ids), V)
    if len(ids) > k:
        raise InvalidDraft(
            "draft_ids", ids, f"the draft proposed {len(ids)} tokens when asked for at most {k}"
        )
    return ids
