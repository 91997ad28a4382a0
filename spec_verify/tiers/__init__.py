"""The tiers that drive an implementation, one module each, and what they share."""

from spec_verify._exports import check_exports

__all__ = [
]

check_exports(__name__, __all__, globals())
