"""Root seeds: what a seed may be, in one place for ``run_checks``, the commands' ``--seed``
and the pytest plugin's ``--spec-seed``.

A seed reaches numpy's ``SeedSequence`` (non-negative integers only) and, plus small offsets,
the contract's PCG32 ``initstate`` (below 2**64); so a root seed is an integer in
``[0, 2**63)``. Before this rule, ``--seed -1`` was reported as a harness bug in the parity
tier and ``--seed 2**64`` failed the correct reference's generation tier.
"""

from __future__ import annotations

import argparse
import secrets
from collections.abc import Callable
from typing import Any, TypeGuard

from spec_verify.errors import InvalidArgument

__all__ = ["MAX_SEED", "DrawnSeed", "check_seed", "seed_option"]

MAX_SEED = 2**63
_RULE = "must be an integer in [0, 2**63)"


class DrawnSeed(int):
    """A seed drawn at random for this run (``--seed random``): the run must print it."""


def _is_seed(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_SEED


def check_seed(value: Any, argument: str = "seed") -> int:
    """``value`` when it is a valid root seed, else ``InvalidArgument`` naming ``argument``."""
    if not _is_seed(value):
        raise InvalidArgument(argument, value, _RULE, "e.g. 0")
    return value


def seed_option(option: str, *, allow_random: bool = False) -> Callable[[str], int]:
    """An argparse ``type`` for ``option``: a valid root seed, or with ``allow_random`` the word
    ``random``, drawn from the operating system's entropy (a ``DrawnSeed``)."""

    def parse(text: str) -> int:
        if allow_random and text == "random":
            return DrawnSeed(secrets.randbelow(MAX_SEED))
        try:
            value: int | None = int(text)
        except ValueError:
            value = None
        if not _is_seed(value):
            extra = " or the word 'random'" if allow_random else ""
            raise argparse.ArgumentTypeError(
                f"{option} {text!r}: {_RULE}{extra} (e.g. {option} 0)")
        return value

    return parse
