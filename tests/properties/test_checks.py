"""Property checks: the contract's oracles on hand cases; every check passes on the reference
and fails, naming its property, on an implementation with a planted bug."""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from spec_verify.adapters import Implementation
from spec_verify.adapters._implementations import PythonImplementation
from spec_verify.adapters._loader import load_implementation
from spec_verify.properties import PROPERTIES, PropertyViolation, checks
from spec_verify.properties import strategies as sv
from spec_verify.properties.checks import contract_greedy_token, contract_prompt_lookup
from spec_verify.properties.strategies import GenerationCase, VerifyCase
from spec_verify.reference import Generation

ACCEPT_ALL = "python:tests.properties.impls.accept_all"
QUICK = settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])


def test_property_names_are_stable() -> None:
    assert PROPERTIES == (
        "emitted_is_accepted_plus_one",
        "ids_in_range",
        "no_zero_probability_tokens",
        "greedy_is_argmax_chain",
        "uniform_draw_count",
        "same_stream_same_output",
        "prompt_lookup_rules",
        "cache_holds_kept_positions",
        "greedy_speculative_equals_plain",
        "max_tokens_respected",
        "eos_and_stop_strings",
        "logprobs_equal_plain",
        "tree_result_is_a_path",
        "tree_no_zero_probability_tokens",
    )


def test_violations_name_the_property_and_pickle() -> None:
    import pickle

    error = PropertyViolation("ids_in_range", "emitted [9]")
    assert str(error) == "property ids_in_range violated: emitted [9]"
    assert isinstance(error, AssertionError)
    again = pickle.loads(pickle.dumps(error))
    assert (again.property, again.message) == ("ids_in_range", "emitted [9]")


# --- the contract's rules, written out -------------------------------------------------------

GREEDY_TOKEN_CASES = [
    # logits, params, history, prompt, token
    ([0.0, 1.0, 3.0], {}, [], [], 2),
    ([4.0, 4.0, 1.0], {}, [], [], 0),  # ties to the lowest id
    ([1.0, 4.0, 4.0], {}, [], [], 1),
    ([1.0, 3.0, 2.0], {"repetition_penalty": 2.0}, [1], [], 2),  # 3 / 2 < 2
    ([1.0, 3.0, 2.0], {"repetition_penalty": 2.0}, [], [1], 2),  # the prompt counts too
    ([-1.0, -3.0, -1.5], {"repetition_penalty": 2.0}, [0], [], 2),  # negative: multiplied
    ([1.0, 3.0, 2.0], {"presence_penalty": 1.5}, [1], [1], 2),  # presence sees history
    ([1.0, 3.0, 2.0], {"presence_penalty": 1.5}, [], [1], 1),  # ...not the prompt
    ([1.0, 3.0, 2.5], {"frequency_penalty": 0.3}, [1, 1], [], 2),  # 3 - 0.6 < 2.5
    ([1.0, 3.0, 2.5], {"frequency_penalty": 0.3}, [1], [], 1),
]


@pytest.mark.parametrize(("logits", "params", "history", "prompt", "token"), GREEDY_TOKEN_CASES)
def test_contract_greedy_token(
    logits: list[float], params: dict[str, Any], history: list[int], prompt: list[int], token: int
) -> None:
    assert contract_greedy_token(logits, params, history, prompt) == token


LOOKUP_CASES = [
    # ctx, k, max_ngram, min_ngram, draft (the seed's and the catalogue's hand cases)
    ([1, 2, 3, 9, 1, 2], 3, 3, 1, [3, 9, 1]),
    ([1, 2, 5, 1, 2, 7, 1, 2], 3, 2, 1, [7, 1, 2]),
    ([5, 2, 8, 1, 2, 9, 3, 2, 4, 1, 2], 3, 2, 1, [9, 3, 2]),
    ([5, 2, 8, 1, 2, 9, 3, 2, 4, 1, 2], 3, 1, 1, [4, 1, 2]),
    ([1, 2, 3, 9, 1, 2], 1, 3, 1, [3]),
    ([1, 2, 3, 9, 1, 2], 0, 3, 1, []),
    ([1, 2, 3, 4], 3, 3, 1, []),
    ([7, 7, 7], 3, 3, 1, [7]),
    ([1, 2, 3, 9, 1, 2], 3, 3, 3, []),
]


@pytest.mark.parametrize(("ctx", "k", "max_ngram", "min_ngram", "draft"), LOOKUP_CASES)
def test_contract_prompt_lookup(
    ctx: list[int], k: int, max_ngram: int, min_ngram: int, draft: list[int], reference: Any
) -> None:
    assert contract_prompt_lookup(ctx, k, max_ngram, min_ngram) == draft
    checks.check_prompt_lookup_rules(reference, ctx, k, max_ngram, min_ngram)


# --- planted bugs ---------------------------------------------------------------------------------


def _module_with(name: str, **overrides: Any) -> PythonImplementation:
    """The reference as a module, with some of its functions replaced."""
    base = load_implementation("reference", in_process=True).module
    module = types.ModuleType(name)
    module.__dict__.update({key: getattr(base, key) for key in base.__all__})
    module.__dict__.update(overrides)
    return PythonImplementation(f"python:{name}", module)


def _reference_verify() -> Callable[..., tuple[list[int], int]]:
    verify: Callable[..., tuple[list[int], int]] = load_implementation(
        "reference", in_process=True
    ).module.verify_draft
    return verify


def _extra_draw(*args: Any) -> tuple[list[int], int]:
    out = _reference_verify()(*args)
    rng = args[5]
    if rng is not None:
        rng.random()
    return out


def _own_randomness(*args: Any) -> tuple[list[int], int]:
    # ignores the stream it is given: draws from an unseeded generator instead
    return _reference_verify()(*args[:5], np.random.default_rng(), *args[6:])


def _extra_token(*args: Any) -> tuple[list[int], int]:
    emitted, n = _reference_verify()(*args)
    return [*emitted, 0], n


def _wrong_kept_prefix(*args: Any) -> tuple[list[int], int]:
    emitted, n = _reference_verify()(*args)
    V = np.shape(args[0])[1]
    return ([(emitted[0] + 1) % V, *emitted[1:]], n) if n else (emitted, n)


class _OutOfRange(Implementation):
    """A raw implementation (no adapter) that emits id V."""

    name = "python:out_of_range"
    capabilities = frozenset({"verify_draft"})

    def verify_draft(self, target_logits: Any, *args: Any) -> tuple[list[int], int]:
        return [int(np.shape(target_logits)[1])], 0


def _shifted_logprobs(*args: Any, **kwargs: Any) -> Generation:
    reference = load_implementation("reference", in_process=True).module
    out: Generation = reference.speculative_generate(*args, **kwargs)
    out.logprobs = [v - 0.5 for v in out.logprobs]
    return out


HAND = VerifyCase(  # seed section 3 with a kept draft: 2 of 3 outcomes keep it
    target_logits=np.log(np.array([[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]])),
    draft_ids=(1,),
    draft_probs=np.array([[0.25, 0.5, 0.25]]),
    params={},
    seed=2,
)
GREEDY_ROWS = np.array([[0, 1, 3], [2, 1, 0], [0, 5, 1]], dtype=float)
ZERO_DRAFT = VerifyCase(  # the drafted token 2 has target probability 0
    target_logits=np.array([[0.0, 0.0, -np.inf], [0.0, 0.0, -np.inf]]),
    draft_ids=(2,),
    draft_probs=None,
    params={},
)
GREEDY_PL = GenerationCase(
    target="bag",
    model_seed=11,
    prompt=(1, 2, 3, 1, 2, 3, 1, 2),
    draft="prompt_lookup",
    k=3,
    params={"temperature": 0.0, "max_tokens": 10, "seed": 3},
)
SAMPLED = GenerationCase(
    target="bag",
    model_seed=11,
    prompt=(1, 2, 3, 1, 2, 3, 1, 2),
    draft="small_model",
    k=3,
    params={"temperature": 1.0, "max_tokens": 10, "seed": 3},
)


def _greedy(draft: list[int]) -> VerifyCase:
    return VerifyCase(GREEDY_ROWS[: len(draft) + 1], tuple(draft), None, {"temperature": 0.0})


def _lookup(ctx: list[int], k: int) -> Callable[[Any], None]:
    return lambda impl: checks.check_prompt_lookup_rules(impl, ctx, k)


def _tree_case(temperature: float = 1.0) -> Any:
    """A root with two children: token 0 (target probability 0) and token 1."""
    from fractions import Fraction as F

    from spec_verify.exact._tree_cells import TreeRound
    from spec_verify.properties.strategies import TreeCase

    rows = ((F(0), F(1, 2), F(1, 2)), (F(1, 3),) * 3, (F(0), F(0), F(1)))
    q = (F(1, 2), F(1, 3), F(1, 6))
    return TreeCase(TreeRound(rows, (-1, -1), (0, 1), (q, None, None)), temperature, 3)


def _tree_accepts_the_first_child(*args: Any, **kwargs: Any) -> Any:
    """Keeps node 0 whatever the target says, then emits token 2."""
    return [0, 2], [0]


def _tree_path_skips_a_level(*args: Any, **kwargs: Any) -> Any:
    """Claims node 1 (a child of the root) after node 0, which is no path."""
    return [0, 1, 2], [0, 1]


PLANTED = [
    (
        "tree_result_is_a_path",
        lambda: _module_with("tree_no_path", verify_tree=_tree_path_skips_a_level),
        lambda impl: checks.check_tree_result_is_a_path(impl, _tree_case()),
        "must be a path down from the root",
    ),
    (
        "tree_no_zero_probability_tokens",
        lambda: _module_with("tree_zero", verify_tree=_tree_accepts_the_first_child),
        lambda impl: checks.check_tree_no_zero_probability_tokens(impl, _tree_case()),
        "has probability 0 in target row 0",
    ),
    # property, implementation (spec or factory), the check on one case, message fragment
    (
        "emitted_is_accepted_plus_one",
        lambda: _module_with("extra_token", verify_draft=_extra_token),
        lambda impl: checks.check_emitted_is_accepted_plus_one(impl, HAND),
        "n_accepted + 1",
    ),
    (
        "emitted_is_accepted_plus_one",
        lambda: _module_with("wrong_prefix", verify_draft=_wrong_kept_prefix),
        lambda impl: checks.check_emitted_is_accepted_plus_one(impl, _greedy([2, 0])),
        "is not the draft's first",
    ),
    (
        "ids_in_range",
        _OutOfRange,
        lambda impl: checks.check_ids_in_range(impl, HAND),
        "outside [0, 3)",
    ),
    (
        "no_zero_probability_tokens",
        ACCEPT_ALL,
        lambda impl: checks.check_no_zero_probability_tokens(impl, ZERO_DRAFT),
        "token 2 at position 0 has target probability 0",
    ),
    (
        "greedy_is_argmax_chain",
        "mutant:s05",
        lambda impl: checks.check_greedy_is_argmax_chain(impl, _greedy([2, 1])),
        "the argmax chain is [2, 0]",
    ),
    (
        "greedy_is_argmax_chain",
        "mutant:s06",
        lambda impl: checks.check_greedy_is_argmax_chain(impl, _greedy([2, 0])),
        "the argmax chain is [2, 0, 1]",
    ),
    (
        "greedy_is_argmax_chain",
        ACCEPT_ALL,
        lambda impl: checks.check_greedy_is_argmax_chain(impl, _greedy([0, 1])),
        "argmax chain",
    ),
    (
        "uniform_draw_count",
        lambda: _module_with("extra_draw", verify_draft=_extra_draw),
        lambda impl: checks.check_uniform_draw_count(impl, HAND),
        "the contract's draw order takes",
    ),
    (
        "same_stream_same_output",
        lambda: _module_with("own_randomness", verify_draft=_own_randomness),
        lambda impl: [
            checks.check_same_stream_same_output(impl, HAND.with_params()) for _ in range(20)
        ],
        "the same stream gave",
    ),
    (
        "prompt_lookup_rules",
        "mutant:s10",
        _lookup([1, 2, 9, 1, 2, 7, 1, 2], 2),
        "it matches the oldest occurrence",
    ),
    (
        "prompt_lookup_rules",
        "mutant:s11",
        _lookup([1, 2, 3, 4, 9, 3, 1, 2, 3], 3),
        "it matches the shortest n-gram first",
    ),
    ("prompt_lookup_rules", "mutant:s12", _lookup([1, 2, 3, 9, 1, 2], 1), "more than k=1"),
    (
        "cache_holds_kept_positions",
        "mutant:s17",
        lambda impl: checks.check_cache_holds_kept_positions(impl, GREEDY_PL),
        "wrong cache",
    ),
    (
        "cache_holds_kept_positions",
        "mutant:s18",
        lambda impl: checks.check_cache_holds_kept_positions(impl, GREEDY_PL),
        "n=12",
    ),
    (
        "cache_holds_kept_positions",
        "mutant:s19",
        lambda impl: checks.check_cache_holds_kept_positions(impl, GREEDY_PL),
        "a pass needs",
    ),
    (
        "cache_holds_kept_positions",
        "mutant:s20",
        lambda impl: checks.check_cache_holds_kept_positions(impl, SAMPLED),
        "the kept length is",
    ),
    (
        "greedy_speculative_equals_plain",
        "mutant:s05",
        lambda impl: checks.check_greedy_speculative_equals_plain(impl, GREEDY_PL),
        "with the prompt_lookup draft",
    ),
    (
        "greedy_speculative_equals_plain",
        ACCEPT_ALL,
        lambda impl: checks.check_greedy_speculative_equals_plain(impl, GREEDY_PL),
        "plain greedy gives",
    ),
    (
        "max_tokens_respected",
        "mutant:s24",
        lambda impl: checks.check_max_tokens_respected(impl, GREEDY_PL),
        "11 ids",
    ),
    (
        "max_tokens_respected",
        "mutant:s24",
        lambda impl: checks.check_max_tokens_respected(impl, SAMPLED),
        "drafts with 3 tokens left",
    ),
    (
        "eos_and_stop_strings",
        "mutant:s22",
        lambda impl: checks.check_eos_and_stop_strings(impl, GREEDY_PL),
        "EOS id 0 was emitted",
    ),
    (
        "eos_and_stop_strings",
        "mutant:s23",
        lambda impl: checks.check_eos_and_stop_strings(impl, GREEDY_PL),
        "is in the text",
    ),
    (
        "logprobs_equal_plain",
        lambda: _module_with("shifted", speculative_generate=_shifted_logprobs),
        lambda impl: checks.check_logprobs_equal_plain(impl, GREEDY_PL),
        "differ from the target's",
    ),
]


def _load(impl: Any) -> Any:
    return load_implementation(impl) if isinstance(impl, str) else impl()


@pytest.mark.parametrize(
    ("name", "impl", "run", "fragment"),
    PLANTED,
    ids=[f"{row[0]}-{row[1] if isinstance(row[1], str) else i}" for i, row in enumerate(PLANTED)],
)
def test_every_property_fails_on_a_planted_bug_naming_itself(
    name: str, impl: Any, run: Callable[[Any], None], fragment: str, reference: Any
) -> None:
    run(reference)  # the same case passes on the reference: the check can tell them apart
    planted = _load(impl)
    try:
        with pytest.raises(PropertyViolation, match=re.escape(fragment)) as info:
            run(planted)
    finally:
        getattr(planted, "close", lambda: None)()
    assert info.value.property == name
    assert str(info.value).startswith(f"property {name} violated: ")


def test_every_property_has_a_planted_bug() -> None:
    assert {row[0] for row in PLANTED} == set(PROPERTIES)


# --- the properties hold on the reference (a few examples; the full runs go through the
# plugin in tests/test_plugin.py) -----------------------------------------------------------------


@QUICK
@given(case=sv.verify_cases())
def test_verify_properties_hold_on_the_reference(reference_worker, case: VerifyCase) -> None:
    impl = reference_worker  # session-scoped: hypothesis runs many examples per call
    for check in checks.VERIFY_PROPERTIES.values():
        check(impl, case)


@settings(QUICK, max_examples=5)
@given(case=sv.generation_cases())
def test_generation_properties_hold_on_the_reference(
    reference_worker, case: GenerationCase
) -> None:
    impl = reference_worker  # session-scoped: hypothesis runs many examples per call
    for check in checks.GENERATION_PROPERTIES.values():
        check(impl, case)


def test_implementations_without_their_own_params_get_the_contracts() -> None:
    module = types.ModuleType("verify_only")
    module.verify_draft = _reference_verify()  # type: ignore[attr-defined]
    impl = PythonImplementation("python:verify_only", module)
    checks.check_emitted_is_accepted_plus_one(impl, HAND)
    # ...and no sampling_distribution: the zero-probability oracle is the contract's
    checks.check_no_zero_probability_tokens(impl, ZERO_DRAFT)
