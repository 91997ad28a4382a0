"""The tier registry: each tier's name, what it needs, and its one entry point.

Every entry point has the same signature, ``run(impl, *, seed, quick, progress, **options)
-> list[CheckResult]`` (options a tier does not use are ignored), and is imported lazily by its
``module:function`` path so that building the CLI costs nothing (pip's ``commands_dict``). An
entry point that does not resolve is an ERROR of that tier, never a silent skip:
``tests/tiers/test_registry.py`` imports every one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TIERS", "TIER_NAMES", "TierEntryPointError", "TierSpec", "resolve_entry_point"]


class TierEntryPointError(ImportError):
    """A tier's entry point does not resolve: a broken installation, reported as ERROR."""


@dataclass(frozen=True)
class TierSpec:
    """A tier: its name, the capabilities it needs (any of ``needs_any``), its entry point
    (``module:function``) and a one-line summary for progress and reports."""

    name: str
    needs_any: frozenset[str]
    entry_point: str
    summary: str


_PORT = frozenset({"verify_draft", "sampling_distribution", "prompt_lookup", "pcg32"})
# Tiers with tree checks run for a tree-only module too; their chain checks skip with a reason.

TIERS: tuple[TierSpec, ...] = (
    TierSpec(
        "contract",
        _PORT,
        "spec_verify.tiers.contract:run_contract_tier",
        "shapes, types, id ranges, errors on bad input",
    ),
    TierSpec(
        "greedy",
        frozenset({"verify_draft", "verify_tree"}),
        "spec_verify.tiers.greedy:run_greedy_tier",
        "temperature 0 equals the argmax chain and plain greedy generation",
    ),
    TierSpec(
        "exact",
        # without injected uniforms: NOT_APPLICABLE, said why
        frozenset({"verify_draft", "verify_tree"}),
        "spec_verify.tiers.exact:run_exact_tier",
        "the output distribution equals the target as Fractions",
    ),
    TierSpec(
        "edges",
        frozenset({"verify_draft"}),  # without injected uniforms: NOT_APPLICABLE, said why
        "spec_verify.tiers.edges:run_edge_tier",
        "no zero-probability token at the edge uniforms 0.0, 2^-53, 2^-24, 1-2^-24, 1-2^-53",
    ),
    TierSpec(
        "parity",
        _PORT | {"verify_tree"},
        "spec_verify.tiers.parity:run_parity_tier",
        "the reference's decisions on shared logits and streams",
    ),
    TierSpec(
        "properties",
        frozenset({"verify_draft"}),
        "spec_verify.properties:run_property_tier",
        "hypothesis properties that any implementation must have",
    ),
    TierSpec(
        "statistical",
        frozenset({"verify_draft", "verify_tree"}),
        "spec_verify.tiers.statistical:run_statistical_tier",
        "goodness of fit with a declared false-alarm rate and power",
    ),
    TierSpec(
        "generation",
        frozenset({"generation"}),
        "spec_verify.tiers.generation:run_generation_tier",
        "rollback, stats, EOS/stop/budget and logprobs of speculative_generate",
    ),
)
TIER_NAMES: tuple[str, ...] = tuple(t.name for t in TIERS)


def resolve_entry_point(spec: TierSpec) -> Callable[..., Any]:
    """Import ``spec.entry_point``; raise ``TierEntryPointError`` saying why it does not resolve."""
    module_name, _, function = spec.entry_point.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise TierEntryPointError(
            f"the {spec.name} tier's module {module_name} failed to import: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    found = getattr(module, function, None)
    if not callable(found):
        raise TierEntryPointError(
            f"the {spec.name} tier's entry point {spec.entry_point} does not exist: reinstall "
            "spec-verify (a broken installation)"
        )
    run: Callable[..., Any] = found
    return run
