"""Takes 50 ms a call and is wrong: a run of it must end at its budget, not hours later."""

import time
from typing import Any

from ._wrong import *  # noqa: F403
from ._wrong import wrong_verify_draft


def verify_draft(*args: Any, **kwargs: Any) -> Any:
    time.sleep(0.05)
    return wrong_verify_draft()
