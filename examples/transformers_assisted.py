"""Is transformers' assisted generation lossless? Tiny random GPT-2 models, no download.

Generators for ``spec-verify compare`` (each takes a seed, returns the new token ids):

- ``plain``: ``target.generate(do_sample=True)``, the law every lossless sampler must keep;
- ``assisted``: ``target.generate(assistant_model=assistant, do_sample=True)``;
- ``speculative``: a hand-written speculative sampler on the same two models (draft
  ``LENGTH`` tokens, accept with probability ``min(1, p/q)``, resample from ``(p - q)+``);
- ``speculative_biased``: the same with a planted bug, the acceptance ratio inverted
  (``min(1, q/p)``): the kind of mistake the checks must catch.

``next_token_logits`` is the target as a function of the token prefix, for the exact law
(``spec_verify.endtoend.sequence_law``). The models are built from configs with fixed seeds
(``initializer_range`` 0.3, so the target and the assistant disagree, with a TV of about 0.3
per position: a near-uniform pair would hide a biased sampler), once per process.

Run (needs the torch extra: pip install 'spec-verify[torch]'):

    spec-verify compare python:examples/transformers_assisted.py:assisted \\
        python:examples/transformers_assisted.py:plain --vocab 5 --length 2 --delta 0.2
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB = 5
LENGTH = 2
PROMPT = (1, 2)

transformers.logging.set_verbosity_error()


@functools.cache
def models() -> tuple[Any, Any]:
    """The target (2 layers) and the assistant (1 layer), built once per process."""
    torch.set_num_threads(1)  # one core per worker process; compare runs several
    return _build(seed=0, layers=2), _build(seed=1, layers=1)


def _build(seed: int, layers: int) -> Any:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=16,
        n_embd=8,
        n_layer=layers,
        n_head=2,
        initializer_range=0.3,
        bos_token_id=0,
        eos_token_id=None,  # no token ends the generation: every draw has LENGTH tokens
        pad_token_id=0,
    )
    return GPT2LMHeadModel(config).eval()


def _generate(seed: int, **extra: Any) -> list[int]:
    target, _ = models()
    torch.manual_seed(seed)
    prompt = torch.tensor([PROMPT])
    with torch.no_grad():
        out = target.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            do_sample=True,
            max_new_tokens=LENGTH,
            min_new_tokens=LENGTH,
            top_k=0,  # transformers' default top_k=50 is moot at V=5; say it anyway
            top_p=1.0,
            temperature=1.0,
            **extra,
        )
    return [int(t) for t in out[0, len(PROMPT) :]]


def plain(seed: int) -> list[int]:
    """Plain sampling from the target."""
    return _generate(seed)


def assisted(seed: int) -> list[int]:
    """transformers' assisted generation (speculative sampling with the assistant)."""
    _, assistant = models()
    return _generate(seed, assistant_model=assistant)


def next_token_logits(prefix: tuple[int, ...]) -> Any:
    """The target's next-token logits after ``prefix`` (prompt included): float64."""
    target, _ = models()
    with torch.no_grad():
        return target(torch.tensor([prefix])).logits[0, -1].double()


def _probs(model: Any, prefix: list[int]) -> Any:
    with torch.no_grad():
        return torch.softmax(model(torch.tensor([prefix])).logits[0, -1].double(), dim=-1)


def _speculative(seed: int, *, inverted: bool) -> list[int]:
    target, assistant = models()
    rng = torch.Generator().manual_seed(seed)
    context = list(PROMPT)
    drafts, draft_probs = [], []
    for _ in range(LENGTH):
        q = _probs(assistant, context + drafts)
        drafts.append(int(torch.multinomial(q, 1, generator=rng)))
        draft_probs.append(q)
    out: list[int] = []
    for i, x in enumerate(drafts):
        p, q = _probs(target, context + drafts[:i]), draft_probs[i]
        ratio = q[x] / p[x] if inverted else p[x] / q[x]
        if float(torch.rand(1, generator=rng)) < min(1.0, float(ratio)):
            out.append(x)
            continue
        residual = torch.clamp(p - q, min=0.0)
        out.append(int(torch.multinomial(residual / residual.sum(), 1, generator=rng)))
        return out + _sample_on(target, context + out, LENGTH - len(out), rng)
    return out


def _sample_on(target: Any, context: list[int], count: int, rng: Any) -> list[int]:
    out: list[int] = []
    for _ in range(count):
        out.append(int(torch.multinomial(_probs(target, context + out), 1, generator=rng)))
    return out


def speculative(seed: int) -> list[int]:
    """A hand-written speculative sampler: lossless."""
    return _speculative(seed, inverted=False)


def speculative_biased(seed: int) -> list[int]:
    """The planted bug: acceptance ratio q/p instead of p/q."""
    return _speculative(seed, inverted=True)
