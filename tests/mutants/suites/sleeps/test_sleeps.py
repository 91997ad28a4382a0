"""A suite that takes long: the grading is stopped (SIGTERM) while it runs."""

from __future__ import annotations

import time


def test_sleeps() -> None:
    time.sleep(60)
