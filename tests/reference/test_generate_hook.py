"""speculative_generate's ``verify=`` hook: another rule inside the reference's generation loop."""

from __future__ import annotations

import pytest

from spec_verify.reference import (
    BagLM,
    CharTokenizer,
    InvalidParams,
    ModelDraft,
    SamplingParams,
    speculative_generate,
    verify_draft,
)


def _setup():  # type: ignore[no-untyped-def]
    tok = CharTokenizer("abcdefg")  # V = 8, id 0 is <eos>
    target = BagLM(tok.vocab_size, seed=11)
    draft = ModelDraft(BagLM(tok.vocab_size, seed=12))
    return tok, target, draft, [1, 2, 3, 1, 2]


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_the_contract_rule_plugged_in_gives_the_same_generation(temperature) -> None:  # type: ignore[no-untyped-def]
    calls = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(args[1]))
        return verify_draft(*args, **kwargs)

    p = SamplingParams(temperature=temperature, max_tokens=30, seed=5)
    tok, target, draft, prompt = _setup()
    plain = speculative_generate(target, draft, tok, prompt, p, k=3)
    tok, target, draft, prompt = _setup()
    hooked = speculative_generate(target, draft, tok, prompt, p, k=3, verify=counted)
    assert (hooked.ids, hooked.stats) == (plain.ids, plain.stats)
    assert len(calls) == plain.stats["target_calls"]


def test_a_rule_that_keeps_nothing_still_generates_and_rolls_back() -> None:
    def keep_none(rows, draft_ids, draft_probs, p, history, rng, prompt):  # type: ignore[no-untyped-def]
        emitted, _ = verify_draft(rows[:1], [], None, p, history, rng, prompt)
        return emitted, 0

    tok, target, draft, prompt = _setup()
    p = SamplingParams(temperature=0.0, max_tokens=12)
    out = speculative_generate(target, draft, tok, prompt, p, k=3, verify=keep_none)
    tok, target2, _, _ = _setup()
    plain = speculative_generate(target2, draft, tok, prompt, p, k=0)
    assert out.ids == plain.ids and out.stats["accepted"] == 0


@pytest.mark.parametrize(
    ("result", "rule"),
    [
        (([1, 2], 0), "the first n of the"),  # two tokens for n = 0
        (([], 0), "the first n of the"),
        (([9], 0), "verify \\(emitted\\)"),  # id out of range
    ],
)
def test_a_plugged_in_rule_returning_garbage_is_refused(result, rule) -> None:  # type: ignore[no-untyped-def]
    tok, target, draft, prompt = _setup()
    p = SamplingParams(temperature=0.0, max_tokens=5)
    with pytest.raises(Exception, match=rule) as error:
        speculative_generate(target, draft, tok, prompt, p, k=2, verify=lambda *a: result)
    assert isinstance(error.value, ValueError)


def test_verify_must_be_callable() -> None:
    tok, target, draft, prompt = _setup()
    with pytest.raises(InvalidParams, match="verify_draft's signature"):
        speculative_generate(target, draft, tok, prompt, SamplingParams(), verify="block")
