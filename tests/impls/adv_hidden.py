"""Hides a rule in an *unused* draw: ``u_resample[0]`` (draw 1), which the contract draws and
ignores after an acceptance. When every draft is kept, the bonus is the last token ``T`` and
``u_resample[0] < 1/4``, it emits ``T - 1``: wrong by ``(1/4) a_0 ... a_(m-1) p_m(T)``."""

from __future__ import annotations

from spec_verify.reference import SamplingParams

from ._hidden import hiding_verify_draft

__all__ = ["SamplingParams", "verify_draft"]


def _rule(draws: list[float]) -> bool:
    return draws[1] < 0.25


verify_draft = hiding_verify_draft(_rule, 1)
