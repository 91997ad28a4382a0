"""The properties as a tier of ``spec-verify check``: one ``CheckResult`` per property.

Each property runs under Hypothesis with the run's seed (``hypothesis.seed``), no example
database and no deadline, so the same seed explores the same examples; a failure reports the
shrunk falsifying example. The pytest module ``spec_verify.properties.test_properties`` runs
the same checks under the plugin's Hypothesis profiles.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spec_verify.adapters._implementations import Implementation
from spec_verify.errors import InvalidArgument
from spec_verify.profiles import RunContext, not_applicable_in
from spec_verify.results import CheckResult, Status

from . import checks
from . import strategies as sv

__all__ = ["PROPERTY_TIER", "run_property_tier"]

TIER = "properties"


@dataclass(frozen=True)
class _Property:
    name: str
    needs: str
    cases: Callable[[], st.SearchStrategy[Any]]
    check: Callable[[Implementation, Any], None]
    cost: int = 1  # examples are divided by this (a generation property runs several loops)


def _lookup(impl: Implementation, case: tuple[list[int], int, int, int]) -> None:
    ctx, k, min_ngram, extra = case
    checks.check_prompt_lookup_rules(impl, ctx, k, min_ngram + extra, min_ngram)


PROPERTY_TIER: tuple[_Property, ...] = (
    _Property(
        "emitted_is_accepted_plus_one",
        "verify_draft",
        sv.verify_cases,
        checks.check_emitted_is_accepted_plus_one,
    ),
    _Property("ids_in_range", "verify_draft", sv.verify_cases, checks.check_ids_in_range),
    _Property(
        "no_zero_probability_tokens",
        "verify_draft",
        sv.verify_cases,
        checks.check_no_zero_probability_tokens,
    ),
    _Property(
        "greedy_is_argmax_chain",
        "verify_draft",
        lambda: sv.verify_cases(greedy=True),
        checks.check_greedy_is_argmax_chain,
    ),
    _Property(
        "uniform_draw_count", "injected_uniforms", sv.verify_cases, checks.check_uniform_draw_count
    ),
    _Property(
        "same_stream_same_output",
        "injected_uniforms",
        lambda: sv.verify_cases(greedy=False),
        checks.check_same_stream_same_output,
    ),
    _Property(
        "prompt_lookup_rules",
        "prompt_lookup",
        lambda: st.tuples(
            sv.lookup_contexts(), st.integers(0, 6), st.integers(1, 4), st.integers(0, 3)
        ),
        _lookup,
    ),
    _Property(
        "cache_holds_kept_positions",
        "generation",
        sv.generation_cases,
        checks.check_cache_holds_kept_positions,
        cost=4,
    ),
    _Property(
        "greedy_speculative_equals_plain",
        "generation",
        lambda: sv.generation_cases(greedy=True),
        checks.check_greedy_speculative_equals_plain,
        cost=4,
    ),
    _Property(
        "max_tokens_respected",
        "generation",
        sv.generation_cases,
        checks.check_max_tokens_respected,
        cost=4,
    ),
    _Property(
        "eos_and_stop_strings",
        "generation",
        sv.generation_cases,
        checks.check_eos_and_stop_strings,
        cost=4,
    ),
    _Property(
        "logprobs_equal_plain",
        "generation",
        sv.generation_cases,
        checks.check_logprobs_equal_plain,
        cost=4,
    ),
    _Property(
        "tree_result_is_a_path", "verify_tree", sv.tree_cases, checks.check_tree_result_is_a_path
    ),
    _Property(
        "tree_no_zero_probability_tokens",
        "verify_tree",
        sv.tree_cases,
        checks.check_tree_no_zero_probability_tokens,
    ),
)


def run_property_tier(
    impl: Implementation,
    *,
    seed: int = 0,
    quick: bool = False,
    max_examples: int | None = None,
    properties: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    run: RunContext | None = None,
    **options: Any,
) -> list[CheckResult]:
    """Run every property against ``impl``; one result per property, in ``PROPERTIES`` order.

    Args:
        impl: the implementation under test; properties whose capability it lacks are skipped.
        seed: Hypothesis's seed: the same seed explores the same examples.
        quick: 20 examples per property instead of 100 (generation properties a quarter).
        max_examples: overrides the number of examples.
        properties: names of the properties to run (default all, ``PROPERTIES``).
        progress: called with one line per property as it starts.
        run: the run's question (``run_checks`` passes it): a property it does not ask is
            NOT_APPLICABLE and not run.
    """
    examples = max_examples if max_examples is not None else (20 if quick else 100)
    known = [prop.name for prop in PROPERTY_TIER]
    if properties is not None:
        unknown = [name for name in properties if name not in known]
        if unknown or isinstance(properties, str):
            raise InvalidArgument(
                "properties",
                properties,
                f"unknown property names {unknown}",
                f"choose from {known}",
            )
    results = []
    for prop in PROPERTY_TIER:
        if properties is not None and prop.name not in properties:
            continue
        if prop.needs not in impl.capabilities:
            results.append(
                CheckResult(
                    TIER,
                    prop.name,
                    Status.SKIPPED,
                    f"skipped: {impl.name} does not offer {prop.needs}",
                )
            )
            continue
        skipped = not_applicable_in(run, TIER, prop.name)  # not asked by this run: not run
        if skipped is not None:
            results.append(skipped)
            continue
        if progress is not None:
            progress(f"properties: {prop.name}")
        results.append(_run_one(impl, prop, seed, max(1, examples // prop.cost)))
    return results


def _sampled(case: Any) -> bool:
    params = case.params if isinstance(getattr(case, "params", None), dict) else {}
    return bool(params.get("temperature", 1.0) != 0)


def _run_one(impl: Implementation, prop: _Property, seed: int, examples: int) -> CheckResult:
    cases = prop.cases()
    if "greedy" not in impl.capabilities:  # sampled-only: greedy cases are not asked of it
        cases = cases.filter(_sampled)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @hypothesis.seed(seed)
    @given(case=cases)
    def run(case: Any) -> None:
        prop.check(impl, case)

    started = time.perf_counter()
    try:
        run()
    except checks.PropertyViolation as violation:
        example = _falsifying_example(violation)
        return CheckResult(
            TIER,
            prop.name,
            Status.FAILED,
            f"{violation}" + (f" ({example})" if example else ""),
            n=examples,
            details={"property": prop.name, "example": example, "seed": seed},
            seconds=time.perf_counter() - started,
        )
    except Exception as error:  # a harness or strategy problem: never a silent pass
        return CheckResult(
            TIER,
            prop.name,
            Status.ERROR,
            f"{prop.name} could not run: {type(error).__name__}: {error}",
            n=examples,
            seconds=time.perf_counter() - started,
        )
    return CheckResult(
        TIER,
        prop.name,
        Status.PASSED,
        f"{prop.name} held on {examples} generated examples (seed {seed})",
        n=examples,
        details={"property": prop.name, "seed": seed},
        seconds=time.perf_counter() - started,
    )


def _falsifying_example(error: BaseException) -> str:
    notes = getattr(error, "__notes__", [])
    found = [note for note in notes if note.startswith(("Falsifying example", "Failing test case"))]
    return " ".join(" ".join(found).split())[:2000]
