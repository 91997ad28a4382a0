"""End-to-end checks without torch: compare (library and CLI), bad generators, the exact law."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from spec_verify.cli import main
from spec_verify.endtoend import (
    compare_generators,
    compare_plan,
    compare_samples,
    draw_sequences,
    law_required_samples,
    law_test,
    sequence_law,
)
from spec_verify.errors import InvalidArgument
from spec_verify.reference.sampling import SamplingParams

ROOT = Path(__file__).resolve().parents[2]
GENERATORS = Path(__file__).with_name("generators.py")
BIGRAM = ROOT / "examples" / "bigram_speculative.py"
sys.path.insert(0, str(ROOT / "examples"))
import bigram_speculative  # noqa: E402

# Declared for every verdict below: family alpha 1e-3, power 0.99 at the stated delta.
ALPHA = 1e-3


def gen(name: str) -> str:
    return f"python:{GENERATORS}:{name}"


def bigram(name: str) -> str:
    return f"python:{BIGRAM}:{name}"


def test_same_law_passes_and_a_skewed_one_is_caught() -> None:
    # delta 0.3 between the joint laws over 9 cells; the skewed generator is at TV 0.27 on
    # its first token alone (0.4 * (1 - 1/3)), far above what the plan detects.
    same = compare_generators(
        gen("uniform"),
        gen("uniform_array"),
        length=2,
        vocab_size=3,
        delta=0.3,
        family_alpha=ALPHA,
        workers=2,
    )
    assert same.complete and same.passed, same.message
    assert same.n_a == same.n_b == compare_plan(3, 2, ALPHA, 0.3, 0.99)
    assert same.detectable_tv <= 0.3
    assert [c.name for c in same.comparisons] == ["joint", "position 0", "position 1"]
    different = compare_generators(
        gen("uniform"),
        gen("skewed"),
        length=2,
        vocab_size=3,
        delta=0.3,
        family_alpha=ALPHA,
        workers=2,
    )
    assert not different.passed and different.complete
    rejected = {c.name for c in different.comparisons if c.rejected}
    assert "position 0" in rejected and "position 1" not in rejected
    assert "different laws" in different.message


@pytest.mark.parametrize(
    ("name", "reason", "fix"),
    [
        ("raises", "raised RuntimeError: the model fell over", "call it by hand with seed 7"),
        ("hangs", "did not return within 2 s", "raise --timeout"),
        ("too_short", "returned 1 tokens, fewer than length=2", "max_new_tokens"),
        ("out_of_range", "returned token id 3, outside [0, 3)", "declared vocabulary"),
        ("exits", "ended its process (exit code 4)", "must return"),
        ("not_ids", "not an integer id", "call it by hand"),
        ("no_such_function", "could not be loaded", "function name"),
    ],
)
def test_a_misbehaving_generator_is_named_with_its_seed_and_the_fix(name, reason, fix) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    result = compare_generators(
        gen("uniform"),
        gen(name),
        length=2,
        vocab_size=3,
        n=60,
        delta=1.0,
        family_alpha=0.05,
        power=0.5,
        timeout=2,
        workers=2,
    )
    assert time.monotonic() - started < 60  # nothing hangs
    assert not result.passed and not result.complete
    (failure,) = result.failures
    assert failure.label == "B" and failure.spec == gen(name)
    assert reason in failure.reason and fix in failure.fix
    if name in ("raises", "hangs", "out_of_range"):
        assert failure.seed == 7
    assert "no verdict" in result.message and "partial" in result.message
    assert f"generator B ({gen(name)})" in result.message


def test_prints_do_not_corrupt_the_channel() -> None:
    outcome = draw_sequences({"A": gen("chatty")}, 20, length=2, vocab_size=3, workers=1)
    assert outcome.complete and outcome.tokens["A"].shape == (20, 2)


def test_draws_are_reproducible_and_seeds_disjoint() -> None:
    first = draw_sequences(
        {"A": gen("uniform"), "B": gen("uniform")}, 30, length=2, vocab_size=3, workers=2
    )
    again = draw_sequences(
        {"A": gen("uniform"), "B": gen("uniform")}, 30, length=2, vocab_size=3, workers=1
    )
    assert np.array_equal(first.tokens["A"], again.tokens["A"])
    assert not set(first.seeds["A"]) & set(first.seeds["B"])
    expected = [
        [int(x) for x in np.random.default_rng(s).integers(0, 3, 2)] for s in first.seeds["A"]
    ]
    assert first.tokens["A"].tolist() == expected


def test_too_few_draws_for_the_declared_power_is_refused() -> None:
    with pytest.raises(InvalidArgument, match=r"n >= \d+ per generator, or declare delta"):
        compare_generators(gen("uniform"), gen("uniform"), length=2, vocab_size=3, n=50)
    with pytest.raises(InvalidArgument, match="python:module:function"):
        compare_generators("mygen.sample", gen("uniform"), length=2, vocab_size=3)


def test_compare_samples_checks_its_input() -> None:
    with pytest.raises(InvalidArgument, match="token 5 at position 1"):
        compare_samples(np.array([[0, 5]]), np.array([[0, 1]]), vocab_size=3, family_alpha=0.01)
    with pytest.raises(InvalidArgument, match="2 tokens per draw"):
        compare_samples(
            np.zeros((5, 3), int), np.zeros((5, 2), int), vocab_size=3, family_alpha=0.01
        )


def test_cli_compare_verdicts_table_json_and_plot(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["--vocab", "3", "--length", "2", "--delta", "0.3", "--workers", "2"]
    code = main(["compare", gen("uniform"), gen("skewed"), *args, "--plots", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 1
    assert out.out.startswith("DIFFERENT: ")
    assert "position 0" in out.out and "REJECTED" in out.out
    assert "reproduce: spec-verify compare" in out.out
    assert "drawing" in out.err  # progress
    assert (tmp_path / "compare.png").stat().st_size > 1000
    code = main(["compare", gen("uniform"), gen("uniform_array"), *args, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["passed"] and report["complete"]
    assert [t["test"] for t in report["tests"]] == ["joint", "position 0", "position 1"]
    code = main(["compare", gen("uniform"), gen("uniform"), "--vocab", "3", "--samples", "10"])
    assert code == 2
    assert "--samples 10: 10 draws per generator" in capsys.readouterr().err
    code = main(["compare", gen("uniform"), gen("raises"), *args])
    assert code == 1
    assert "NO VERDICT" in capsys.readouterr().out


# --- the exact law -------------------------------------------------------------------------


def test_sequence_law_of_a_bigram_in_closed_form() -> None:
    table = np.log(np.array([[1.0, 3.0], [1.0, 1.0]]))  # p(.|0) = (1/4, 3/4), p(.|1) = 1/2

    def logits(prefix: tuple[int, ...]) -> np.ndarray:
        return table[prefix[-1]]

    law = sequence_law(logits, SamplingParams(), length=2, prompt=(0,))
    assert law.probability_by_sequence == pytest.approx(
        {(0, 0): 1 / 16, (0, 1): 3 / 16, (1, 0): 3 / 8, (1, 1): 3 / 8}
    )
    assert law.marginal(1) == pytest.approx([7 / 16, 9 / 16])
    greedy = sequence_law(logits, SamplingParams(temperature=0), length=3, prompt=(0,))
    assert greedy.probability_by_sequence == {(1, 0, 1): 1.0}  # ties to the lowest id
    top1 = sequence_law(logits, SamplingParams(top_k=1), length=2, prompt=(1,))
    assert top1.probability_by_sequence == {(0, 1): 1.0}


def test_law_test_passes_the_honest_sampler_and_catches_the_planted_bias() -> None:
    law = sequence_law(
        bigram_speculative.next_token_logits,
        SamplingParams(),
        length=bigram_speculative.LENGTH,
        prompt=bigram_speculative.PROMPT,
    )
    assert math.fsum(law.probability_by_sequence.values()) == pytest.approx(1.0)
    n = law_required_samples(law, ALPHA, 0.1, 0.99)
    honest = [bigram_speculative.speculative(s) for s in range(n)]
    biased = [bigram_speculative.speculative_biased(s) for s in range(n)]
    good = law_test(honest, law, family_alpha=ALPHA)
    assert good.passed, good.message
    bad = law_test(biased, law, family_alpha=ALPHA)
    assert not bad.passed and "not the exact law" in bad.message
    assert len(bad.marginals) == bigram_speculative.LENGTH


def test_law_test_fails_at_once_on_a_zero_probability_sequence() -> None:
    law = sequence_law(lambda prefix: [0.0, 0.0, -math.inf], SamplingParams(), length=2)
    result = law_test([(0, 1)] * 50 + [(2, 0)], law, family_alpha=ALPHA)
    assert not result.passed
    assert result.unexpected == (((2, 0), 1),)
    assert "probability 0" in result.message


@pytest.mark.parametrize(
    ("samples", "match"),
    [([], "holds no draws"), ([(0,)], "fewer than the law's length"), ([(0, 7)], "token 7")],
)
def test_law_test_rejects_bad_samples(samples, match) -> None:  # type: ignore[no-untyped-def]
    law = sequence_law(lambda prefix: [0.0, 0.0], SamplingParams(), length=2)
    with pytest.raises(InvalidArgument, match=match):
        law_test(samples, law, family_alpha=ALPHA)


def test_sequence_law_refuses_an_endless_enumeration() -> None:
    with pytest.raises(InvalidArgument, match="exceeds 100 sequences"):
        sequence_law(lambda prefix: [0.0] * 10, SamplingParams(), length=3, max_sequences=100)


def test_compare_the_bigram_example_both_ways() -> None:
    # The tutorial's commands: the honest sampler passes, the planted bias is caught.
    args = dict(length=3, vocab_size=4, delta=0.2, family_alpha=ALPHA, workers=2)
    honest = compare_generators(bigram("speculative"), bigram("plain"), **args)  # type: ignore[arg-type]
    assert honest.passed, honest.message
    biased = compare_generators(bigram("speculative_biased"), bigram("plain"), **args)  # type: ignore[arg-type]
    assert not biased.passed and biased.complete, biased.message
