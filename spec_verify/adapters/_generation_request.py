"""One end-to-end generation described as data, so it can run next to the implementation.

The statistical tier samples the first tokens of ``speculative_generate`` thousands of times.
Driven through a worker's proxies, each generation would be some thirty round trips (the
parameters, the draft, the call, then every pass of the harness's target model and every
tokenizer use as a callback). A ``GenerationRequest`` is plain data instead: the worker builds
the bundled toy models from it next to the implementation and returns only token ids, one
request for many seeds.

What the harness trusts is unchanged: it never runs the implementation's code, and it tests
the returned ids against the law it computes itself with its own copy of the models. An
implementation that tampered with the worker's copy of the models would only make its own
samples follow a different law, which the test rejects.

>>> request = GenerationRequest(alphabet="abc", prompt=(1, 2), k=2, length=2,
...                             params={"temperature": 1.0})
>>> GenerationRequest.from_data(request.to_data()) == request
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DRAFT_KINDS", "GENERATION_TIMEOUT", "GenerationRequest", "draw_generation"]

GENERATION_TIMEOUT = 30.0  # seconds for one speculative_generate or generate call
DRAFT_KINDS = ("model", "prompt_lookup")
_FIELDS = ("draft_kind", "alphabet", "target_seed", "draft_seed", "prompt", "k", "length")


@dataclass(frozen=True)
class GenerationRequest:
    """The first ``length`` tokens of ``speculative_generate(BagLM(V, target_seed), draft,
    CharTokenizer(alphabet), prompt, params(max_tokens=length, seed=seed, **params), k=k)``
    where ``V = len(alphabet) + 1`` and the draft is ``ModelDraft(BagLM(V, draft_seed))`` or
    ``PromptLookupDraft()`` (the implementation's own classes when it has them)."""

    draft_kind: str = "model"
    alphabet: str = "abcdefg"
    target_seed: int = 11
    draft_seed: int = 99
    prompt: tuple[int, ...] = (1, 2, 3, 1, 2)
    k: int = 3
    length: int = 2
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.draft_kind not in DRAFT_KINDS:
            raise ValueError(f"draft_kind={self.draft_kind!r}: must be one of {DRAFT_KINDS}")

    def to_data(self) -> dict[str, Any]:
        """The request as wire data (``_codec`` values: strings, ints, lists, a dict)."""
        data: dict[str, Any] = {name: getattr(self, name) for name in _FIELDS}
        data["prompt"] = [int(t) for t in self.prompt]
        data["params"] = dict(self.params)
        return data

    @classmethod
    def from_data(cls, data: Any) -> GenerationRequest:
        """The request from ``to_data``'s form.

        Raises:
            ValueError: a field is missing or of the wrong type.
        """
        if not isinstance(data, dict) or set(data) != {*_FIELDS, "params"}:
            raise ValueError(f"a generation request has the fields {_FIELDS} and params")
        types = {"draft_kind": str, "alphabet": str, "target_seed": int, "draft_seed": int,
                 "k": int, "length": int}  # fmt: skip
        for name, kind in types.items():
            if type(data[name]) is not kind:
                raise ValueError(f"a generation request's {name} is not {kind.__name__}")
        prompt = data["prompt"]
        if not isinstance(prompt, list) or not all(type(t) is int for t in prompt):
            raise ValueError("a generation request's prompt is not a list of ints")
        if not isinstance(data["params"], dict):
            raise ValueError("a generation request's params are not a dict")
        return cls(**{**data, "prompt": tuple(prompt)})


def draw_generation(module: Any, request: GenerationRequest, seed: int) -> list[int]:
    """One generation of ``request`` by ``module`` (a ``python:`` module or the reference) with
    ``seed``: the ids it emitted, as ints.

    The draft comes from the module when it has its own ``ModelDraft``/``PromptLookupDraft``
    (its bugs are its bugs), else from the reference; the target and the tokenizer are always
    the reference's.
    """
    from spec_verify import reference

    vocab = len(request.alphabet) + 1
    if request.draft_kind == "model":
        model_draft = getattr(module, "ModelDraft", None) or reference.ModelDraft
        draft = model_draft(reference.BagLM(vocab, request.draft_seed))
    else:
        draft = (getattr(module, "PromptLookupDraft", None) or reference.PromptLookupDraft)()
    make_params = getattr(module, "SamplingParams", None) or reference.SamplingParams
    params = make_params(max_tokens=request.length, seed=seed, **request.params)
    out = module.speculative_generate(
        reference.BagLM(vocab, seed=request.target_seed),
        draft,
        reference.CharTokenizer(request.alphabet),
        list(request.prompt),
        params,
        k=request.k,
    )
    return [int(t) for t in out.ids]
