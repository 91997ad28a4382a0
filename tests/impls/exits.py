"""The reference, but ``verify_draft`` calls ``sys.exit(0)`` on two drafted tokens: the gate
must fail it, not end with exit code 0 and no report."""

from __future__ import annotations

import sys
from typing import Any

from spec_verify.reference import *  # noqa: F403
from spec_verify.reference import verify_draft as _verify_draft


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    if len(args[1]) == 2:
        sys.exit(0)
    return _verify_draft(*args, **kwargs)
