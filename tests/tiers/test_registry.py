"""The tier registry: every entry point resolves and takes the one signature."""

from __future__ import annotations

import inspect

import pytest

from spec_verify.tiers import TIER_NAMES, TIERS, TierEntryPointError, TierSpec, resolve_entry_point


@pytest.mark.parametrize("spec", TIERS, ids=TIER_NAMES)
def test_every_entry_point_resolves_with_the_one_signature(spec: TierSpec) -> None:
    run = resolve_entry_point(spec)
    parameters = inspect.signature(run).parameters
    first, *rest = parameters.values()
    assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD  # the implementation
    by_name = {p.name: p for p in rest}
    for name in ("seed", "quick", "progress"):
        assert by_name[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in rest)


def test_names_are_unique_and_in_run_order() -> None:
    assert len(set(TIER_NAMES)) == len(TIER_NAMES)
    assert TIER_NAMES[:2] == ("contract", "greedy")


@pytest.mark.parametrize(
    ("entry_point", "says"),
    [
        ("spec_verify.no_such_module:run", "failed to import"),
        ("spec_verify.tiers.greedy:no_such_function", "does not exist"),
        ("spec_verify.tiers.greedy:__doc__", "does not exist"),  # exists, not callable
    ],
)
def test_an_entry_point_that_does_not_resolve_raises(entry_point: str, says: str) -> None:
    spec = TierSpec("greedy", frozenset({"verify_draft"}), entry_point, "x")
    with pytest.raises(TierEntryPointError, match=says):
        resolve_entry_point(spec)
