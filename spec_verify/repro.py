"""The shell command that reproduces a result (``spec-verify check`` with the run's options).

A module of its own, below the runner and the tiers, so that a tier can name its own
reproduction without importing the runner that calls it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

__all__ = ["repro_command"]


def repro_command(
    impl: str,
    tiers: Sequence[str] = (),
    *,
    seed: int = 0,
    case_seed: int | None = None,
    quick: bool = False,
    profile: str = "conformance",
    capabilities: Mapping[str, bool] | None = None,
    rule: str = "token",
) -> str:
    """One shell command that reproduces a result."""
    words = ["spec-verify", "check"]
    if impl != "reference":
        words += ["--impl", impl]
    for tier in tiers:
        words += ["--tier", tier]
    if seed:
        words += ["--seed", str(seed)]
    if case_seed is not None:
        words += ["--case-seed", str(case_seed)]
    if quick:
        words.append("--quick")
    if profile != "conformance":
        words += ["--profile", profile]
    if rule != "token":
        words += ["--rule", rule]
    for name, offered in sorted((capabilities or {}).items()):
        words += ["--capability" if offered else "--no-capability", name]
    return shlex.join(words)
