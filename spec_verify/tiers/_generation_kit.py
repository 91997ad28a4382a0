"""What the greedy and generation tiers need to drive ``speculative_generate``: the module's
own classes (its drafts, models and tokenizer), falling back to the reference's, and two small
setups (a ``BagLM`` and an ``AttentionLM``) with their drafts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spec_verify import reference
from spec_verify.adapters._implementations import Implementation
from spec_verify.tiers._drive import GuardedModule

__all__ = ["Kit", "Setup", "kit_for", "setups"]


class Kit:
    """Attribute access to an implementation module with the reference as the fallback."""

    def __init__(self, module: GuardedModule) -> None:
        self.module = module

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.module, name, None)
        return found if found is not None else getattr(reference, name)


def kit_for(impl: Implementation) -> Kit | None:
    """The kit of an implementation offering ``generation`` (a Python module), else None; its
    functions run under a time limit (``GuardedModule``)."""
    module = impl.generation_module()
    return None if module is None else Kit(GuardedModule(impl, module))


@dataclass(frozen=True)
class Setup:
    name: str
    tok: Any
    make_target: Callable[[], Any]
    prompt: list[int]

    def drafts(self, kit: Kit) -> dict[str, Any]:
        V = self.tok.vocab_size
        lm = kit.NGramLM(3, V).train([self.prompt])
        small = kit.AttentionLM(vocab_size=V, d_model=16, n_layers=1, n_heads=2, seed=9)
        return {
            "prompt-lookup": kit.PromptLookupDraft(),
            "ngram": kit.NGramDraft(lm),
            "small-model": kit.ModelDraft(small),
            "self": kit.ModelDraft(self.make_target()),
        }


def setups(kit: Kit) -> list[Setup]:
    bag_tok = kit.CharTokenizer("abcdefg")  # V = 8, id 0 is <eos>
    att_tok = kit.CharTokenizer()
    return [
        Setup("BagLM", bag_tok, lambda: kit.BagLM(bag_tok.vocab_size, seed=11), [1, 2, 3, 1, 2]),
        Setup(
            "AttentionLM",
            att_tok,
            lambda: kit.AttentionLM(vocab_size=att_tok.vocab_size, seed=4, logit_scale=2.0),
            att_tok.encode("the cat sat on the mat. the cat"),
        ),
    ]
