"""Tests that kill the real-bug family (mutants/real_bugs.py) through the reference's API.

Each is deterministic (fixed seeds, scripted uniforms or exact comparisons): it cannot flake.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from spec_verify.reference import (
    BagLM,
    CharTokenizer,
    ModelDraft,
    SamplingParams,
    request_rng,
    sampling_distribution,
    speculative_generate,
    verify_draft,
)
from spec_verify.uniforms import ScriptedUniforms


def test_a_sampled_draft_and_its_verification_use_independent_noise():
    """vLLM PR #54282: the draft sampled with the verifier's own uniforms leans the output
    towards the draft. The first token of a round with one sampled draft, over 600 seeds,
    against the target's exact row: G-test at alpha 1e-3 (cells pooled below 5 expected).
    Power: with the noise shared (mutant r01) the first token is at TV 0.10 from the target
    here (measured over 6,000 seeds), chi-square divergence 0.093 on the pooled cells: a
    noncentrality of 56 on 5 degrees of freedom, power 0.9995 at alpha 1e-3."""
    tok = CharTokenizer("abcdefg")
    prompt = [1, 2, 3, 1, 2]
    target = BagLM(tok.vocab_size, seed=11)
    expected = sampling_distribution(
        target.forward(prompt, target.new_cache(), 0)[-1], SamplingParams(), [], prompt
    )
    counts: Counter[int] = Counter()
    draws = 600
    for seed in range(draws):
        p = SamplingParams(max_tokens=2, seed=seed)
        out = speculative_generate(BagLM(tok.vocab_size, seed=11),
                                   ModelDraft(BagLM(tok.vocab_size, seed=12), temperature=0.7),
                                   tok, prompt, p, k=1)  # fmt: skip
        counts[out.ids[0]] += 1
    assert all(expected[t] > 0 for t in counts)
    obs, exp, pooled = [], [], [0, 0.0]
    for token, prob in enumerate(expected):
        if prob * draws >= 5:
            obs.append(counts[token])
            exp.append(prob * draws)
        else:
            pooled[0] += counts[token]
            pooled[1] += prob * draws
    if pooled[1] > 0:
        obs.append(pooled[0])
        exp.append(pooled[1])
    result = stats.power_divergence(obs, exp, lambda_="log-likelihood")
    assert result.pvalue > 1e-3, (result, counts)


def test_min_p_cuts_at_every_verified_position():
    """vLLM PR #42802: min-p applied to the bonus row only. Token 3 (p = 0.05, under
    min_p * max = 0.1) is banned at the verified position: whatever the uniforms, a draft
    of it is never kept, and with it banned the row is the processed one."""
    logits = np.log(np.array([[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]]))
    q = np.array([[0.1, 0.1, 0.1, 0.7]])
    p = SamplingParams(min_p=0.2)
    assert sampling_distribution(logits[0], p, [], [])[3] == 0.0
    for u_accept in np.linspace(0.0, 0.999, 40):
        for u_resample in (0.0, 0.5, 0.999):
            emitted, kept = verify_draft(logits, [3], q, p, [], ScriptedUniforms(
                [float(u_accept), u_resample, 0.5]))  # fmt: skip
            assert emitted[0] != 3 and kept == 0, (u_accept, u_resample, emitted)


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_a_model_draft_reports_the_distribution_it_sampled_from(temperature):
    """transformers PR #48007: q taken before the draft's processors. A sampled model draft
    returns, for each drafted token, the distribution it was drawn from: the draft model's
    softmax at its temperature, recomputed here with one pass over the context."""
    V = 8
    context = [1, 2, 3, 1, 2]
    draft = ModelDraft(BagLM(V, seed=12), temperature=temperature)
    ids, probs = draft.propose(context, 3, request_rng(7))
    assert probs is not None and probs.shape == (len(ids), V)
    model = BagLM(V, seed=12)
    logits = model.forward(context + ids[:-1], model.new_cache(), 0)[len(context) - 1:]
    for row, given in zip(logits, probs, strict=True):
        e = np.exp((row - row.max()) / temperature)
        assert given == pytest.approx(e / e.sum(), abs=1e-9)
