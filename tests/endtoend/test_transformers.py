"""transformers end to end, for real: assisted generate() against plain generate() and the exact
law, on tiny random GPT-2 models built from configs (examples/transformers_assisted.py).

Skipped only when torch or transformers is absent; CI installs both (the ``torch`` extra).
Declared for every verdict: family alpha 1e-3, power 0.99 at TV 0.2 between the joint laws of
the first two tokens (V = 5), sample sizes from the power plan.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from spec_verify.endtoend import (
    compare_plan,
    compare_samples,
    draw_sequences,
    law_required_samples,
    law_test,
    sequence_law,
)
from spec_verify.reference.sampling import SamplingParams

# torch and transformers are imported by the tests that use them, not at collection: every xdist
# worker collects this file, and importing both costs seconds of CPU a worker may never use.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the torch extra (torch and transformers)",
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transformers_assisted.py"

ALPHA = 1e-3
DELTA = 0.2
POWER = 0.99


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/transformers_assisted.py (it imports torch and transformers)."""
    if str(EXAMPLE.parent) not in sys.path:
        sys.path.insert(0, str(EXAMPLE.parent))
    return importlib.import_module("transformers_assisted")


@pytest.fixture(scope="module")
def law(example):  # type: ignore[no-untyped-def]
    return sequence_law(
        example.next_token_logits, SamplingParams(), length=example.LENGTH, prompt=example.PROMPT
    )


def test_the_exact_law_is_the_targets_softmax(law, example) -> None:  # type: ignore[no-untyped-def]
    import torch

    target, _ = example.models()
    with torch.no_grad():
        first = torch.softmax(target(torch.tensor([example.PROMPT])).logits[0, -1].double(), -1)
    assert law.marginal(0) == pytest.approx(first.numpy(), abs=1e-12)
    assert math.fsum(law.probability_by_sequence.values()) == pytest.approx(1.0)
    assert len(law.probability_by_sequence) == example.VOCAB**example.LENGTH


def test_generators_return_new_token_ids_and_are_seeded(example) -> None:  # type: ignore[no-untyped-def]
    for name in ("plain", "assisted", "speculative", "speculative_biased"):
        generator = getattr(example, name)
        draws = [generator(seed) for seed in range(3)]
        for tokens in draws:
            assert len(tokens) == example.LENGTH
            assert all(0 <= t < example.VOCAB for t in tokens)
        assert generator(1) == draws[1]


def test_the_planted_bias_is_caught_by_the_exact_law(law, example) -> None:  # type: ignore[no-untyped-def]
    # The inverted acceptance ratio moves the joint law by about 0.4 in TV; planned to detect
    # 0.3 with power 0.99 (fast: the slow test below plans for DELTA).
    n = law_required_samples(law, ALPHA, 0.3, POWER)
    draws = [example.speculative_biased(seed) for seed in range(n)]
    result = law_test(draws, law, family_alpha=ALPHA)
    assert not result.passed, result.message


@pytest.mark.slow
def test_assisted_generate_is_lossless_and_the_bias_is_caught(law, example) -> None:  # type: ignore[no-untyped-def]
    n = compare_plan(example.VOCAB, example.LENGTH, ALPHA, DELTA, POWER)
    spec = f"python:{EXAMPLE}"
    outcome = draw_sequences(
        {
            "assisted": f"{spec}:assisted",
            "plain": f"{spec}:plain",
            "biased": f"{spec}:speculative_biased",
        },
        n,
        length=example.LENGTH,
        vocab_size=example.VOCAB,
        timeout=120,
    )
    assert outcome.complete, [f.describe() for f in outcome.failures]
    assisted, plain, biased = (outcome.tokens[k] for k in ("assisted", "plain", "biased"))
    same = compare_samples(assisted, plain, vocab_size=example.VOCAB, family_alpha=ALPHA)
    assert same.passed, same.message
    assert same.detectable_tv <= DELTA
    different = compare_samples(biased, plain, vocab_size=example.VOCAB, family_alpha=ALPHA)
    assert not different.passed, different.message
    assert law_test(assisted, law, family_alpha=ALPHA).passed
    assert law_test(plain, law, family_alpha=ALPHA).passed
    assert not law_test(biased, law, family_alpha=ALPHA).passed
    assert np.unique(assisted, axis=0).shape[0] > 10  # the law is not degenerate
