"""The reference, but a sampling ``ModelDraft`` writes every draft row into one reused buffer,
so all rows it returns are the last one: the drafted ids are right, the rows the rejection step
divides by are not (the output distribution is then wrong from the second draft on)."""

from __future__ import annotations

from typing import Any

import numpy as np

from spec_verify.reference import *  # noqa: F403
from spec_verify.reference import ModelDraft as _ModelDraft


class ModelDraft(_ModelDraft):
    def propose(self, ctx: Any, k: int, rng: Any) -> Any:
        ids, rows = super().propose(ctx, k, rng)
        if rows is None or len(rows) == 0:
            return ids, rows
        return ids, np.repeat(rows[-1:], len(rows), axis=0)
