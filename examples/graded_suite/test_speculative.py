"""A student's graded suite for the speculative sampler (seed rung R5).

It imports the contract as ``spec_verify.reference``: the grader runs it against the clean
reference, a canary, and the reference with one planted bug at a time.
"""

from collections import Counter

import numpy as np
import pytest

from spec_verify.reference import (
    BagLM,
    CharTokenizer,
    ModelDraft,
    PromptLookupDraft,
    SamplingParams,
    generate,
    request_rng,
    speculative_generate,
    verify_draft,
)

GREEDY = SamplingParams(temperature=0)
SAMPLED = SamplingParams()


class Uniforms:
    """Hands out the given uniforms in order."""

    def __init__(self, *values):
        self.values = list(values)

    def random(self):
        return self.values.pop(0)


def logits(*rows):
    with np.errstate(divide="ignore"):  # log 0 = -inf: a token the target never emits
        return np.log(np.array(rows, dtype=float))


# --- the worked examples of section 3 ---------------------------------------------------


def test_sampled_hand_example_rejects_and_resamples():
    rows = logits([0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3])
    q = np.array([[0.25, 0.5, 0.25]])
    assert verify_draft(rows, [1], q, SAMPLED, [], Uniforms(0.7, 0.4)) == ([0], 0)


def test_sampled_hand_example_keeps_and_adds_a_bonus():
    rows = logits([0.5, 0.25, 0.25], [0.0, 0.0, 1.0])
    q = np.array([[0.25, 0.5, 0.25]])
    assert verify_draft(rows, [1], q, SAMPLED, [], Uniforms(0.3, 0.9, 0.1)) == ([1, 2], 1)


def test_greedy_hand_example():
    rows = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
    assert verify_draft(rows, [2, 1], None, GREEDY, [], None) == ([2, 0], 1)
    assert verify_draft(rows, [2, 0], None, GREEDY, [], None) == ([2, 0, 1], 2)


# --- exactness, measured ------------------------------------------------------------------


def test_first_token_follows_the_target():
    """Draw x ~ q, verify it, count the first token: it must follow p, not q."""
    p = np.array([0.5, 0.25, 0.25])
    q = np.array([0.25, 0.5, 0.25])
    rows = np.log(np.array([p, [1 / 3, 1 / 3, 1 / 3]]))
    rng = request_rng(2024)
    counts = Counter()
    n = 4000
    for _ in range(n):
        x = int(np.searchsorted(np.cumsum(q), rng.random(), side="right"))
        emitted, _ = verify_draft(rows, [x], q[None, :], SAMPLED, [], rng)
        counts[emitted[0]] += 1
    for token, prob in enumerate(p):
        assert counts[token] / n == pytest.approx(prob, abs=0.03)


def test_deterministic_draft_is_kept_with_probability_p():
    """A one-hot draft of token 1 (p = 1/4) is kept for u_accept < 1/4 only."""
    rows = logits([0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3])
    kept = 0
    grid = np.linspace(0.005, 0.995, 100)
    for u in grid:
        _, accepted = verify_draft(rows, [1], None, SAMPLED, [], Uniforms(u, 0.5, 0.5))
        kept += accepted
    assert kept == 25


def test_repetition_penalty_sees_the_kept_draft():
    rows = np.array([[0.0, 1.0, 1.5]] * 3)
    p = SamplingParams(temperature=0, repetition_penalty=2.0)
    assert verify_draft(rows, [2, 2], None, p, [], None) == ([2, 1], 1)


# --- drafts ---------------------------------------------------------------------------------


def test_prompt_lookup():
    draft = PromptLookupDraft()
    assert draft.propose([1, 2, 3, 9, 1, 2], 3, None) == ([3, 9, 1], None)
    assert draft.propose([1, 2, 3, 9, 1, 2], 1, None) == ([3], None)
    assert draft.propose([1, 2, 5, 1, 2, 7, 1, 2], 3, None)[0] == [7, 1, 2]


def test_model_draft_follows_a_changing_context():
    tok = CharTokenizer("abcdefg")
    draft = ModelDraft(BagLM(tok.vocab_size, seed=3))
    for ctx in ([1, 2, 3], [1, 2, 3, 4, 5], [1, 2, 6], [1, 2, 6, 6, 2]):
        fresh = ModelDraft(BagLM(tok.vocab_size, seed=3))
        assert draft.propose(ctx, 3, None) == fresh.propose(ctx, 3, None)
        model = BagLM(tok.vocab_size, seed=3)
        chain = list(ctx)
        for _ in range(3):
            chain.append(int(np.argmax(model.forward(chain, model.new_cache(), 0)[-1])))
        assert draft.propose(ctx, 3, None)[0] == chain[len(ctx) :]


# --- generation -------------------------------------------------------------------------------


def _setup():
    tok = CharTokenizer("abcdefg")
    return tok, (lambda: BagLM(tok.vocab_size, seed=11)), [1, 2, 3, 1, 2]


@pytest.mark.parametrize("k", [1, 3])
def test_greedy_speculation_equals_plain_greedy(k):
    tok, make, prompt = _setup()
    p = SamplingParams(temperature=0, max_tokens=25)
    plain = generate(make(), tok, prompt, p)
    for draft in (PromptLookupDraft(), ModelDraft(BagLM(tok.vocab_size, seed=5))):
        assert speculative_generate(make(), draft, tok, prompt, p, k=k).ids == plain.ids


def test_eos_is_not_emitted():
    tok, make, prompt = _setup()
    plain = generate(make(), tok, prompt, SamplingParams(temperature=0, max_tokens=25))
    eos = plain.ids[4]
    out = speculative_generate(
        make(),
        PromptLookupDraft(),
        tok,
        prompt,
        SamplingParams(temperature=0, max_tokens=25),
        k=3,
        eos_ids=[eos],
    )
    assert eos not in out.ids
    assert out.finish_reason == "eos"


def test_stop_string_cuts_the_text():
    tok, make, prompt = _setup()
    plain = generate(make(), tok, prompt, SamplingParams(temperature=0, max_tokens=25))
    stop = plain.text[5:7]
    p = SamplingParams(temperature=0, max_tokens=25, stop=(stop,))
    out = speculative_generate(make(), PromptLookupDraft(), tok, prompt, p, k=3)
    assert stop not in out.text
    assert out.text == plain.text[: plain.text.index(stop)]


def test_never_more_than_max_tokens():
    tok, make, prompt = _setup()
    for max_tokens in (1, 2, 5):
        p = SamplingParams(temperature=0, max_tokens=max_tokens)
        out = speculative_generate(make(), ModelDraft(make()), tok, prompt, p, k=4)
        assert len(out.ids) <= max_tokens
