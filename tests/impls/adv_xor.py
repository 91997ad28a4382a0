"""Hides a rule in two unused draws at once: ``u_resample[0]`` and ``u_resample[1]`` (draws 1
and 3). When every draft is kept (``m >= 2``), the bonus is the last token ``T`` and exactly one
of them is below 1/4, it emits ``T - 1``: wrong by ``(3/8) a_0 ... a_(m-1) p_m(T)``. Moving both
draws together (to the same edge) never shows it; moving each on its own does."""

from __future__ import annotations

from spec_verify.reference import SamplingParams

from ._hidden import hiding_verify_draft

__all__ = ["SamplingParams", "verify_draft"]


def _rule(draws: list[float]) -> bool:
    return (draws[1] < 0.25) != (draws[3] < 0.25)


verify_draft = hiding_verify_draft(_rule, 2)
