"""The seed's test catalogue (section 4), all 17 names, written for the reference.

Enumeration tests compare ``Fraction``s for equality: the float path is driven with a float in
the middle of every exact cell of [0, 1) and each outcome is weighted by the cell's width.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from spec_verify.reference import (
    AttentionLM,
    BagLM,
    CharTokenizer,
    ContextTooLong,
    InvalidDraft,
    InvalidLogits,
    InvalidParams,
    InvalidPrompt,
    ModelDraft,
    NGramDraft,
    NGramLM,
    PromptLookupDraft,
    SamplingParams,
    generate,
    request_rng,
    sampling_distribution,
    speculative_generate,
    token_logprobs,
    verify_draft,
)
from spec_verify.reference.exact import exact_speculative_sequences, exact_target_sequences
from spec_verify.uniforms import NoDraws, ScriptedUniforms

from ._cells import (
    enumerate_verify,
    logits_of,
    one_hot,
    random_dist,
)

F = Fraction
SAMPLED = SamplingParams()
GREEDY = SamplingParams(temperature=0)


def _verify_with(rows, draft_ids, q_rows, p=SAMPLED, history=(), prompt=()):
    """A ``call(uniforms)`` for the enumerator that also checks every uniform was drawn."""
    logits = logits_of(rows)
    probs = None if q_rows is None else np.array([[float(v) for v in r] for r in q_rows])

    def call(uniforms):
        rng = ScriptedUniforms(uniforms)
        result = verify_draft(logits, draft_ids, probs, p, list(history), rng, list(prompt))
        assert rng.drawn == len(uniforms), f"drew {rng.drawn} of {len(uniforms)} uniforms"
        return result

    return call


# --- section 3, sampled ------------------------------------------------------------------

HAND_P = (F(1, 2), F(1, 4), F(1, 4))
HAND_Q = (F(1, 4), F(1, 2), F(1, 4))
BONUS_ROW = (F(0), F(0), F(1))

HAND_CASES = [
    # uniforms, emitted, accepted: 0.7 rejects (threshold 1/2), 0.4 picks residual token 0
    ((0.7, 0.4), [0], 0),
    # 0.3 keeps x = 1, 0.9 is drawn and ignored, 0.1 draws the bonus from the next row
    ((0.3, 0.9, 0.1), [1, 2], 1),
    ((0.49, 0.0, 0.99), [1, 2], 1),
    ((0.51, 0.99), [0], 0),
]


@pytest.mark.parametrize(("uniforms", "emitted", "accepted"), HAND_CASES)
def test_hand_example(uniforms, emitted, accepted):
    rng = ScriptedUniforms(uniforms)
    out = verify_draft(
        logits_of([HAND_P, BONUS_ROW]),
        [1],
        np.array([[float(v) for v in HAND_Q]]),
        SAMPLED,
        [],
        rng,
    )
    assert out == (emitted, accepted)
    assert rng.drawn == len(uniforms)


def test_hand_example_draws_in_the_contract_order():
    # A kept draft consumes u_accept and u_resample before the bonus: the bonus sees the 3rd.
    rng = request_rng(7)
    draws = [rng.random() for _ in range(3)]
    rows = [HAND_P, (F(1, 3), F(1, 3), F(1, 3))]
    q = np.array([[0.0, 1.0, 0.0]])  # q(1) = 1 > p(1): kept iff u_accept < 1/4
    out = verify_draft(logits_of(rows), [1], q, SAMPLED, [], request_rng(7))
    if draws[0] < 0.25:
        assert out == ([1, min(int(draws[2] * 3), 2)], 1)
    else:
        assert out[1] == 0


# --- section 3, greedy --------------------------------------------------------------------

GREEDY_ROWS = [[0, 1, 3], [2, 1, 0], [0, 5, 1]]
GREEDY_CASES = [
    ([2, 1], [2, 0], 1),  # mismatch at position 1: emit the argmax 0 and stop
    ([2, 0], [2, 0, 1], 2),  # both kept: the bonus is row 2's argmax
    ([0, 1], [2], 0),  # mismatch at once
    ([1, 0], [2], 0),
]


@pytest.mark.parametrize(("draft", "emitted", "accepted"), GREEDY_CASES)
def test_hand_example_greedy(draft, emitted, accepted):
    out = verify_draft(np.array(GREEDY_ROWS, float), draft, None, GREEDY, [], NoDraws())
    assert out == (emitted, accepted)


def test_hand_example_greedy_ties_go_to_the_lowest_id():
    assert verify_draft(np.array([[4.0, 4.0, 1.0]]), [], None, GREEDY, [], None) == ([0], 0)
    assert verify_draft(np.array([[1.0, 4.0, 4.0]]), [], None, GREEDY, [], None) == ([1], 0)


# --- exactness by enumeration ---------------------------------------------------------------


def _first_token(dist_by_emitted):
    out = defaultdict(Fraction)
    for emitted, prob in dist_by_emitted.items():
        out[emitted[0]] += prob
    return {t: v for t, v in out.items() if v}


def _as_map(dist):
    return {t: v for t, v in enumerate(dist) if v}


ONE_TOKEN_CASES = [
    ("seed section 3", HAND_P, HAND_Q),
    (
        "V=5 overlap",
        (F(1, 2), F(1, 8), F(1, 8), F(1, 8), F(1, 8)),
        (F(1, 8), F(1, 2), F(1, 8), F(1, 8), F(1, 8)),
    ),
    (
        "V=5 disjoint supports",
        (F(1, 2), F(1, 2), F(0), F(0), F(0)),
        (F(0), F(0), F(1, 4), F(1, 4), F(1, 2)),
    ),
    ("V=5 q = p", (F(1, 5),) * 5, (F(1, 5),) * 5),
    ("V=5 p with zeros", (F(0), F(3, 4), F(0), F(1, 4), F(0)), (F(1, 5),) * 5),
]


@pytest.mark.parametrize(("name", "p", "q"), ONE_TOKEN_CASES, ids=[c[0] for c in ONE_TOKEN_CASES])
def test_one_token_output_is_the_target_exactly(name, p, q):
    """Over x ~ q and every cell of (u_accept, u_resample), the first token is p, as Fractions."""
    total = defaultdict(Fraction)
    V = len(p)
    for x, qx in enumerate(q):
        if not qx:
            continue
        bonus = (F(1, V),) * V
        dist = enumerate_verify(_verify_with([p, bonus], [x], [q]), [p, bonus], [q], [x])
        assert sum(dist.values()) == 1
        for token, prob in _first_token(dist).items():
            total[token] += qx * prob
    assert dict(total) == _as_map(p)


def test_one_token_output_is_the_target_exactly_on_random_cases():
    rng = np.random.default_rng(2024)
    for _ in range(30):
        V = int(rng.integers(2, 7))
        p = random_dist(rng, V, zeros=int(rng.integers(0, V - 1)))
        q = random_dist(rng, V, zeros=int(rng.integers(0, V - 1)))
        total = defaultdict(Fraction)
        for x, qx in enumerate(q):
            if qx:
                rows = [p, (F(1, V),) * V]
                dist = enumerate_verify(_verify_with(rows, [x], [q]), rows, [q], [x])
                for token, prob in _first_token(dist).items():
                    total[token] += qx * prob
        assert dict(total) == _as_map(p), (p, q)


def _tables(seed, V, depth):
    """Rational target and draft tables: next-token distributions keyed by the full prefix."""
    rng = np.random.default_rng(seed)
    cache = {}

    def model(name, zeros):
        def table(prefix):
            key = (name, prefix)
            if key not in cache:
                cache[key] = random_dist(rng, V, zeros=zeros)
            return cache[key]

        return table

    return model("target", 1), model("draft", 0)


def _round_by_enumeration(target, draft, context, k, V):
    """Distribution of one round's emitted ids from the float path, over x ~ draft."""
    out = defaultdict(Fraction)

    def drafts(prefix, weight):
        if len(prefix) == k:
            rows = [target(context + prefix[:i]) for i in range(k + 1)]
            q_rows = [draft(context + prefix[:i]) for i in range(k)]
            dist = enumerate_verify(
                _verify_with(rows, list(prefix), q_rows), rows, q_rows, list(prefix)
            )
            for emitted, prob in dist.items():
                out[emitted] += weight * prob
            return
        for token, prob in enumerate(draft(context + prefix)):
            if prob:
                drafts((*prefix, token), weight * prob)

    drafts((), F(1))
    return dict(out)


@pytest.mark.parametrize("seed", range(4))
def test_two_token_draft_is_exact_at_each_position(seed):
    """k = 2: the first token follows p_1 and, given it, the second follows p(. | y_1)."""
    V, k, context = 3, 2, (0,)
    target, draft = _tables(seed, V, 3)
    round_dist = _round_by_enumeration(target, draft, context, k, V)
    assert sum(round_dist.values()) == 1
    # Complete every round to two tokens with plain target sampling, then compare joints.
    joint = defaultdict(Fraction)
    for emitted, prob in round_dist.items():
        if len(emitted) >= 2:
            joint[emitted[:2]] += prob
        else:
            for token, p2 in enumerate(target(context + emitted)):
                if p2:
                    joint[(*emitted, token)] += prob * p2
    assert dict(joint) == exact_target_sequences(target, context, 2)
    # The Fraction path agrees with the float path round for round.
    assert exact_speculative_sequences(target, draft, context, k, 2) == dict(joint)


@pytest.mark.parametrize("explicit_probs", [False, True], ids=["probs=None", "one-hot rows"])
def test_deterministic_draft_is_exact(explicit_probs):
    """One-hot drafts at every x, including x with p(x) = 0, give exactly p."""
    p = (F(0), F(1, 2), F(1, 3), F(1, 6))
    V = len(p)
    bonus = (F(1, V),) * V
    for x in range(V):
        q = one_hot(x, V)
        rows = [p, bonus]
        call = _verify_with(rows, [x], [q] if explicit_probs else None)
        dist = enumerate_verify(call, rows, [q], [x])
        assert _first_token(dist) == _as_map(p), f"drafted token {x}"
        if p[x] == 0:
            assert all(e[0] != x for e in dist), "a zero-probability draft was kept"


# --- penalties ------------------------------------------------------------------------------


def test_penalties_see_the_accepted_drafts():
    """After a kept draft 2, a repetition penalty makes a second 2 lose to token 1."""
    rows = np.array([[0.0, 1.0, 1.5], [0.0, 1.0, 1.5], [0.0, 1.0, 1.5]])
    plain = verify_draft(rows, [2, 2], None, GREEDY, [], None)
    assert plain == ([2, 2, 2], 2)
    penalised = SamplingParams(temperature=0, repetition_penalty=2.0)
    assert verify_draft(rows, [2, 2], None, penalised, [], None) == ([2, 1], 1)
    # Presence/frequency penalties see the kept drafts too.
    presence = SamplingParams(temperature=0, presence_penalty=1.0)
    assert verify_draft(rows, [2, 2], None, presence, [], None) == ([2, 1], 1)


def test_penalties_see_the_accepted_drafts_sampled():
    """Sampled: row 1's distribution is the penalised one given the kept draft, exactly."""
    p_params = SamplingParams(frequency_penalty=float(np.log(2)))
    logits = np.log(np.array([[0.25, 0.25, 0.5], [0.25, 0.25, 0.5]]))
    q = np.array([[0.0, 0.0, 1.0]])
    # Token 2 kept (p(2) = 1/2): the bonus row sees history [2]: weights 1/4, 1/4, 1/4 -> 1/3.
    expected = sampling_distribution(logits[1], p_params, [2])
    assert np.allclose(expected, [1 / 3, 1 / 3, 1 / 3])
    counts = Counter()
    for u in np.linspace(0.005, 0.995, 100):
        emitted, n = verify_draft(logits, [2], q, p_params, [], ScriptedUniforms([0.1, 0.5, u]))
        assert n == 1
        counts[emitted[1]] += 1
    assert counts == {0: 33, 1: 34, 2: 33}


# --- shapes ---------------------------------------------------------------------------------

SHAPE_CASES = [
    # target_logits, draft_ids, draft_probs, error, argument
    (np.zeros((2, 3)), [1, 2], None, InvalidLogits, "target_logits"),  # rows must be m + 1
    (np.zeros((4, 3)), [1, 2], None, InvalidLogits, "target_logits"),
    (np.zeros(3), [], None, InvalidLogits, "target_logits"),  # not 2-D
    (np.zeros((3, 3)), [1, 2], np.full((1, 3), 1 / 3), InvalidDraft, "draft_probs"),
    (np.zeros((3, 3)), [1, 2], np.full((2, 4), 1 / 4), InvalidDraft, "draft_probs"),
    (np.zeros((3, 3)), [1, 2], np.full(3, 1 / 3), InvalidDraft, "draft_probs"),
    (np.zeros((3, 3)), [1, 3], None, InvalidParams, "draft_ids"),  # id out of range
    (np.zeros((3, 3)), [1, -1], None, InvalidParams, "draft_ids"),
    (
        np.zeros((3, 3)),
        [1, 2],
        np.array([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5]]),
        InvalidDraft,
        "draft_probs",
    ),  # q(x) = 0 for the drafted x = 1
    (
        np.zeros((3, 3)),
        [1, 2],
        np.array([[0.5, 0.5, 0.5], [0.2, 0.3, 0.5]]),
        InvalidDraft,
        "draft_probs",
    ),  # a row summing to 1.5
    (np.array([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0]]), [1], None, InvalidLogits, "target_logits"),
]


@pytest.mark.parametrize(("logits", "ids", "probs", "error", "argument"), SHAPE_CASES)
def test_verify_checks_shapes(logits, ids, probs, error, argument):
    with pytest.raises(error, match=argument) as info:
        verify_draft(logits, ids, probs, SAMPLED, [], request_rng(0))
    assert isinstance(info.value, ValueError)
    assert info.value.argument == argument


# --- prompt lookup --------------------------------------------------------------------------

LOOKUP_CASES = [
    # ctx, k, max_ngram, min_ngram, draft
    ([1, 2, 3, 9, 1, 2], 3, 3, 1, [3, 9, 1]),  # seed section 3
    ([1, 2, 5, 1, 2, 7, 1, 2], 3, 2, 1, [7, 1, 2]),  # most recent occurrence wins
    ([5, 2, 8, 1, 2, 9, 3, 2, 4, 1, 2], 3, 2, 1, [9, 3, 2]),  # longest n-gram first
    ([5, 2, 8, 1, 2, 9, 3, 2, 4, 1, 2], 3, 1, 1, [4, 1, 2]),  # only unigrams: most recent 2
    ([1, 2, 3, 9, 1, 2], 1, 3, 1, [3]),  # at most k
    ([1, 2, 3, 9, 1, 2], 0, 3, 1, []),  # k = 0
    ([1, 2, 3, 4], 3, 3, 1, []),  # no earlier occurrence
    ([7, 7, 7], 3, 3, 1, [7]),  # overlapping occurrence, short continuation
    ([1, 2, 3, 9, 1, 2], 3, 3, 3, []),  # min_ngram 3: the 2-gram match is not allowed
]


@pytest.mark.parametrize(("ctx", "k", "max_ngram", "min_ngram", "draft"), LOOKUP_CASES)
def test_prompt_lookup_hand_example(ctx, k, max_ngram, min_ngram, draft):
    ids, probs = PromptLookupDraft(max_ngram, min_ngram).propose(ctx, k, None)
    assert ids == draft
    assert probs is None


# --- drafts ---------------------------------------------------------------------------------


def test_ngram_draft_follows_the_model():
    V = 6
    rng = np.random.default_rng(5)
    lm = NGramLM(3, V).train([rng.integers(0, V, 200).tolist() for _ in range(3)])
    ctx = [1, 2, 3]
    ids, probs = NGramDraft(lm).propose(ctx, 5, None)
    assert probs is None
    chain = list(ctx)
    for token in ids:  # greedy ids are the argmax chain
        assert token == int(np.argmax(lm.logprobs(chain)))
        chain.append(token)
    ids, probs = NGramDraft(lm).propose(ctx, 5, request_rng(3))
    assert probs.shape == (5, V)
    chain = list(ctx)
    for token, row in zip(ids, probs):  # sampled rows are the model's distribution
        np.testing.assert_allclose(row, np.exp(lm.logprobs(chain)), rtol=1e-12)
        assert row[token] > 0
        chain.append(token)


def test_model_draft_syncs_its_cache():
    """After rejections change the context, proposals equal a fresh draft's greedy decoding."""
    tok = CharTokenizer()
    make = lambda: AttentionLM(vocab_size=tok.vocab_size, d_model=16, n_layers=1, n_heads=2, seed=3)
    draft = ModelDraft(make())
    rng = np.random.default_rng(0)
    ctx = tok.encode("the cat")
    for _ in range(12):
        ids, _ = draft.propose(ctx, 4, None)
        fresh, _ = ModelDraft(make()).propose(ctx, 4, None)
        assert ids == fresh
        assert draft.cache.tokens == ctx + ids[:-1]
        keep = int(rng.integers(0, len(ids) + 1))  # keep a prefix, then a different token
        ctx = ctx + ids[:keep] + [int(rng.integers(1, tok.vocab_size))]
    # A context that shrinks (a new request sharing a prefix) is followed too.
    short = ctx[:5]
    assert draft.propose(short, 3, None)[0] == ModelDraft(make()).propose(short, 3, None)[0]


# --- generation -----------------------------------------------------------------------------


def _bag_setup():
    tok = CharTokenizer("abcdefg")  # V = 8, id 0 is <eos>
    return tok, lambda: BagLM(tok.vocab_size, seed=11), [1, 2, 3, 1, 2]


def _attention_setup():
    tok = CharTokenizer()
    make = lambda: AttentionLM(vocab_size=tok.vocab_size, seed=4, logit_scale=2.0)
    return tok, make, tok.encode("the cat sat on the mat. the cat")


def _drafts(tok, make_target, prompt):
    V = tok.vocab_size
    lm = NGramLM(3, V).train([prompt])
    small = AttentionLM(vocab_size=V, d_model=16, n_layers=1, n_heads=2, seed=9)
    return {
        "prompt-lookup": PromptLookupDraft(),
        "ngram": NGramDraft(lm),
        "small-model": ModelDraft(small),
        "self": ModelDraft(make_target()),
    }


def _argmax_loop(make_target, prompt, n):
    """Plain greedy with no cache reuse: a fresh full pass over the whole context per token."""
    ctx = list(prompt)
    for _ in range(n):
        model = make_target()
        logits = model.forward(ctx, model.new_cache(), 0)[-1]
        ctx.append(int(np.argmax(logits)))
    return ctx[len(prompt) :]


@pytest.mark.parametrize("setup", [_bag_setup, _attention_setup], ids=["BagLM", "AttentionLM"])
def test_speculative_greedy_equals_greedy(setup):
    tok, make_target, prompt = setup()
    p = SamplingParams(temperature=0, max_tokens=30)
    plain = generate(make_target(), tok, prompt, p)
    assert plain.ids == _argmax_loop(make_target, prompt, 30)
    for name, draft in _drafts(tok, make_target, prompt).items():
        for k in (1, 3, 5):
            spec = speculative_generate(make_target(), draft, tok, prompt, p, k=k)
            assert spec.ids == plain.ids, (name, k)
            assert spec.text == plain.text


def _check_rollback(target, prompt, ids):
    context = list(prompt) + list(ids)
    calls = target.call_log
    assert calls[0][0] == 0
    assert list(calls[0][1][: len(prompt)]) == list(prompt)
    expected_start = 0
    pending = len(prompt)
    for start, chunk in calls:
        assert start == expected_start, "a pass did not start at the kept length"
        assert list(chunk[:pending]) == context[start : start + pending], "wrong pending token"
        drafts = chunk[pending:]
        kept = 0
        for i, token in enumerate(drafts):
            if start + pending + i < len(context) and context[start + pending + i] == token:
                kept += 1
            else:
                break
        expected_start = start + pending + kept
        pending = 1


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("setup", [_bag_setup, _attention_setup], ids=["BagLM", "AttentionLM"])
def test_rejected_drafts_are_rolled_back(setup, temperature):
    """Every target pass starts at the kept length with the right token (the pending one)."""
    tok, make_target, prompt = setup()
    for seed in range(3):
        p = SamplingParams(temperature=temperature, max_tokens=40, seed=seed)
        for name, draft in _drafts(tok, make_target, prompt).items():
            target = make_target()
            out = speculative_generate(target, draft, tok, prompt, p, k=3)
            assert out.stats["accepted"] < out.stats["drafted"] or name == "self"
            _check_rollback(target, prompt, out.ids)


def test_stats_and_one_pass_per_round():
    tok, make_target, prompt = _bag_setup()
    p = SamplingParams(temperature=0, max_tokens=40)
    out = speculative_generate(make_target(), ModelDraft(make_target()), tok, prompt, p, k=4)
    assert len(out.ids) == 40
    assert out.stats == {"drafted": 32, "accepted": 32, "acceptance_rate": 1.0, "target_calls": 8}
    out = speculative_generate(make_target(), ModelDraft(make_target()), tok, prompt, p, k=0)
    assert out.stats == {"drafted": 0, "accepted": 0, "acceptance_rate": 0.0, "target_calls": 40}
    target = make_target()
    out = speculative_generate(target, PromptLookupDraft(), tok, prompt, p, k=4)
    assert out.stats["target_calls"] == len(target.call_log)
    assert len(out.ids) == out.stats["accepted"] + out.stats["target_calls"]


def _exact_bag_joint(make_target, prompt, length):
    """Exact-as-float joint of the first ``length`` tokens under plain sampling from BagLM."""
    out = {(): 1.0}
    for _ in range(length):
        grown = {}
        for seq, prob in out.items():
            model = make_target()
            logits = model.forward(list(prompt) + list(seq), model.new_cache(), 0)[-1]
            dist = sampling_distribution(logits, SAMPLED, list(seq), list(prompt))
            for token, q in enumerate(dist):
                grown[(*seq, token)] = prob * q
        out = grown
    return out


def test_sampled_speculation_matches_the_target_distribution():
    """End to end over 400 seeds: the first two tokens follow the target's exact joint.

    G-test at alpha = 1e-3 with cells pooled by expected count (< 5). The seeds are fixed, so
    the verdict is deterministic: it cannot flake. Power: a draft-following sampler (mutant
    s01) moves the joint by TV > 0.3 here, far beyond what 400 samples detect.
    """
    tok, make_target, prompt = _bag_setup()
    small = BagLM(tok.vocab_size, seed=99)
    expected = _exact_bag_joint(make_target, prompt, 2)
    counts = Counter()
    for seed in range(400):
        p = SamplingParams(max_tokens=2, seed=seed)
        out = speculative_generate(make_target(), ModelDraft(small), tok, prompt, p, k=3)
        counts[tuple(out.ids)] += 1
    assert set(counts) <= {s for s, v in expected.items() if v > 0}
    keys = sorted(expected, key=lambda s: -expected[s])
    obs, exp, pooled_obs, pooled_exp = [], [], 0, 0.0
    for key in keys:
        e = expected[key] * 400
        if e >= 5:
            obs.append(counts[key])
            exp.append(e)
        else:
            pooled_obs += counts[key]
            pooled_exp += e
    obs.append(pooled_obs)
    exp.append(pooled_exp)
    result = stats.power_divergence(obs, exp, lambda_="log-likelihood")
    assert result.pvalue > 1e-3, (result, counts)


def test_eos_stop_and_budget():
    tok, make_target, prompt = _attention_setup()
    greedy = SamplingParams(temperature=0, max_tokens=30)
    plain = generate(make_target(), tok, prompt, greedy)
    draft = PromptLookupDraft()
    # EOS: generation ends at the first EOS, which is not emitted.
    eos = plain.ids[6]
    first = plain.ids.index(eos)
    for k in (0, 2, 4):
        out = speculative_generate(make_target(), draft, tok, prompt, greedy, k=k, eos_ids=[eos])
        assert out.ids == plain.ids[:first]
        assert eos not in out.ids
        assert out.finish_reason == "eos"
    # A stop string cuts the text before it; the ids stop with the text.
    stop = plain.text[8:10]
    cut = plain.text.index(stop)
    stopped = SamplingParams(temperature=0, max_tokens=30, stop=(stop,))
    for k in (0, 2, 4):
        out = speculative_generate(make_target(), draft, tok, prompt, stopped, k=k)
        assert out.text == plain.text[:cut]
        assert stop not in out.text
        assert tok.decode(out.ids) == out.text
        assert out.finish_reason == "stop"
    # Never more than max_tokens, whatever k.
    for max_tokens in (1, 2, 3, 7, 10):
        for k in (1, 4, 9):
            budget = SamplingParams(temperature=0, max_tokens=max_tokens)
            target = make_target()
            out = speculative_generate(target, ModelDraft(make_target()), tok, prompt, budget, k=k)
            assert out.ids == plain.ids[:max_tokens]
            assert out.finish_reason == "length"
            assert all(
                len(chunk) - (start == 0) * (len(prompt) - 1) <= max_tokens
                for start, chunk in target.call_log
            )


BAD_GENERATION_ARGS = [
    # (overrides, error, argument)
    ({"k": -1}, InvalidParams, "k"),
    ({"k": 1.5}, InvalidParams, "k"),
    ({"prompt": []}, InvalidPrompt, "prompt"),
    ({"prompt": "abc"}, InvalidPrompt, "prompt"),
    ({"prompt": [1] * 64}, ContextTooLong, "prompt"),  # the model holds 64 positions
    ({"prompt": [1, 99]}, InvalidPrompt, "prompt"),
    ({"eos_ids": [99]}, InvalidParams, "eos_ids"),
    ({"p": "greedy"}, InvalidParams, "p"),
]


@pytest.mark.parametrize(("overrides", "error", "argument"), BAD_GENERATION_ARGS)
def test_bad_arguments(overrides, error, argument):
    tok = CharTokenizer("abcdefg")
    args = {
        "target": BagLM(8, max_positions=64),
        "draft": PromptLookupDraft(),
        "tok": tok,
        "prompt": [1, 2],
        "p": GREEDY,
        "k": 2,
    }
    args.update(overrides)
    with pytest.raises(error, match=argument) as info:
        speculative_generate(**args)
    assert info.value.argument == argument
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("fields", "argument"),
    [
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_k": -2}, "top_k"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"min_p": -0.1}, "min_p"),
        ({"repetition_penalty": 0.0}, "repetition_penalty"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": "x"}, "stop"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_sampling_params(fields, argument):
    with pytest.raises(InvalidParams, match=argument):
        SamplingParams(**fields)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_logprobs_are_the_targets(temperature):
    tok, make_target, prompt = _attention_setup()
    p = SamplingParams(temperature=temperature, max_tokens=25, seed=5)
    plain = generate(make_target(), tok, prompt, p)
    spec = speculative_generate(make_target(), ModelDraft(make_target()), tok, prompt, p, k=3)
    # Recompute with one full pass over the final context: the target's own numbers.
    for out in (plain, spec):
        model = make_target()
        logits = model.forward(list(prompt) + out.ids, model.new_cache(), 0)
        rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(out.ids)]
        assert out.logprobs == pytest.approx(token_logprobs(rows, out.ids), abs=1e-12)
    if temperature == 0:
        assert spec.logprobs == plain.logprobs
