"""Appends to its history list argument."""

from typing import Any

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft


def verify_draft(target_logits: Any, draft_ids: Any, draft_probs: Any, p: Any, history: Any,
                 *args: Any, **kwargs: Any) -> Any:  # fmt: skip
    history.append(0)
    return wrong_verify_draft()
