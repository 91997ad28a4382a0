"""The tiers that drive an implementation, one module each, and what they share.

This package imports no tier: the registry names each entry point by path and the runner
imports it when the tier runs.
"""

from spec_verify._exports import check_exports
from spec_verify.tiers._registry import (
    TIER_NAMES,
    TIERS,
    TierEntryPointError,
    TierSpec,
    resolve_entry_point,
)

__all__ = ["TIERS", "TIER_NAMES", "TierEntryPointError", "TierSpec", "resolve_entry_point"]

check_exports(__name__, __all__, globals())
