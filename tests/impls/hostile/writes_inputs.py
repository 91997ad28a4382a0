"""Writes into its input array (and would hide a wrong answer that way)."""

from typing import Any

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft


def verify_draft(target_logits: Any, *args: Any, **kwargs: Any) -> Any:
    target_logits[...] = 0.0
    return wrong_verify_draft(target_logits, *args, **kwargs)
