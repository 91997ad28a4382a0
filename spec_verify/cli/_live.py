"""What ``spec-verify check`` says on stderr while it runs: the plan and an estimate before the
first tier, each check's verdict as it is recorded, and the progress line between them.

The estimate comes from a table of measured costs: the seconds each tier took on the bundled
reference (``REFERENCE_SECONDS``, measured on 2 cores), summed over the tiers that will run.
Once the first tier has finished, the rest is re-estimated from how long that tier took this
implementation against the reference: a slow port is seen after its first tier, not after the
budget. The statistical tier's checks and draws come from its own plan (``plan_statistical_tier``),
the other tiers' check counts from the same measured runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TextIO

from spec_verify.summary_table import terminal_width

__all__ = ["REFERENCE_CHECKS", "REFERENCE_SECONDS", "LiveLines", "estimate_seconds",
           "format_duration"]

# Seconds per tier of `spec-verify check` on the bundled reference, read from the tier_seconds
# of `spec-verify check [--quick] --json F` on a shared 2-core machine (load 4-10, so an idle
# machine is faster and the estimate errs long): full 220 s; --quick 33 s under the lossless
# profile, whose parity tier does not run (its quick figure is half the full run's).
REFERENCE_SECONDS: dict[str, dict[str, float]] = {
    "full": {"contract": 19.5, "greedy": 13.8, "exact": 18.0, "edges": 0.3, "parity": 51.0,
             "properties": 20.2, "statistical": 79.3, "generation": 1.9},
    "quick": {"contract": 0.5, "greedy": 0.8, "exact": 2.1, "edges": 0.4, "parity": 25.5,
              "properties": 4.1, "statistical": 21.4, "generation": 2.1},
}  # fmt: skip
# Checks per tier in the same runs (the statistical tier's come from its plan instead).
REFERENCE_CHECKS: dict[str, int] = {
    "contract": 4, "greedy": 3, "exact": 7, "edges": 2, "parity": 5, "properties": 14,
    "statistical": 18, "generation": 5,
}  # fmt: skip
# A full run estimated longer than this is offered --quick first.
OFFER_QUICK_AFTER = 90.0


def estimate_seconds(tiers: Sequence[str], quick: bool) -> float:
    """The reference's measured seconds for ``tiers`` (a tier not in the table counts 0)."""
    table = REFERENCE_SECONDS["quick" if quick else "full"]
    return sum(table.get(tier, 0.0) for tier in tiers)


def format_duration(seconds: float) -> str:
    """``40 s``, ``3 min``, ``1 h 5 min``: an estimate needs no more digits."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


_VERDICT = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "not_provable": "n/p",
            "skipped": "skip", "not_applicable": "n/a"}  # fmt: skip


class LiveLines:
    """stderr while a check runs. On a terminal the progress is one line redrawn in place, and
    verdicts print above it; on a pipe, a line per tier (and at most one per topic every 10 s)."""

    def __init__(self, stream: TextIO, *, quick: bool, fail_fast: bool, verbose: bool) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.quick, self.fail_fast, self.verbose = quick, fail_fast, verbose
        self.started = time.monotonic()
        self.last_topic = ""
        self.last_print = 0.0
        self.width = 0  # of the progress line drawn last (a terminal only)
        self.planned: tuple[str, ...] = ()
        self.reestimated = False
        self.plan_at = self.started
        self.told_fail_fast = False

    # --- the progress line (runner.Progress) ---
    def __call__(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        text = f"[{elapsed:6.1f}s] {message}"
        if self.tty:
            text = text[: terminal_width() - 1]  # a redrawn line must not wrap
            pad = max(0, self.width - len(text))
            self.stream.write("\r" + text + " " * pad)
            self.width = len(text)
        else:
            topic = message.split(":", 1)[0]
            now = time.monotonic()
            if topic == self.last_topic and now - self.last_print < 10:
                return
            self.last_topic, self.last_print = topic, now
            self.stream.write(text + "\n")
        self.stream.flush()

    def _line(self, text: str) -> None:
        """A line that stays: the progress line is cleared first and redrawn by the next one."""
        self.done()
        self.stream.write(text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0

    # --- the plan (run_checks' on_plan) ---
    def plan(self, impl: Any, tiers: tuple[str, ...]) -> None:
        self.planned = tiers
        self.plan_at = time.monotonic()
        if not tiers:
            return
        checks, draws = _statistical_plan(impl, self.quick) if "statistical" in tiers \
            else (0, 0)
        count = sum(REFERENCE_CHECKS.get(t, 0) for t in tiers if t != "statistical") + checks
        mode = "--quick" if self.quick else "full"
        plural = "tier" if len(tiers) == 1 else "tiers"
        text = f"plan ({mode}): {len(tiers)} {plural} ({', '.join(tiers)}), about {count} checks"
        if checks:
            text += f"; statistical: {checks} checks, {draws:,} planned draws"
        self._line(text)
        estimate = estimate_seconds(tiers, self.quick)
        self._line(
            f"estimate: about {format_duration(estimate)} (the bundled reference's measured "
            "tier times on 2 cores; a slower implementation takes longer, re-estimated after "
            "the first tier)"
        )
        quick = estimate_seconds(tiers, True)
        if not self.quick and estimate > OFFER_QUICK_AFTER:
            self._line(f"for a first verdict in about {format_duration(quick)}: add --quick "
                       "(the same checks on fewer cases and draws)")

    # --- verdicts (run_checks' on_result) ---
    def result(self, result: Any, blocks: bool) -> None:
        now = time.monotonic()
        status = result.status.value
        if status not in ("skipped", "not_applicable"):
            self._maybe_reestimate(result.tier, now)
        if status in ("skipped", "not_applicable") and not self.verbose:
            return  # counted and folded in the final table
        from spec_verify.profiles import claim_of

        claim = claim_of(result.tier, result.name).value
        first = result.message.strip().splitlines()[0] if result.message.strip() else ""
        text = f"{_VERDICT[status]:<5} {result.tier}/{result.name} [{claim}]"
        if first:
            text += f": {first}"
        if blocks:
            text += " (blocks the run)"
        width = terminal_width()
        self._line(text if len(text) <= width else text[: width - 3] + "...")
        if blocks and claim == "law" and not self.fail_fast and not self.told_fail_fast:
            self.told_fail_fast = True
            self._line("      the run fails; -x (--fail-fast) would stop after this tier")

    def _maybe_reestimate(self, tier: str, now: float) -> None:
        """Once the first planned tier is done (a result of a later tier arrives), the rest is
        estimated again at this implementation's speed on that tier."""
        if self.reestimated or len(self.planned) < 2 or tier == self.planned[0]:
            return
        if tier not in self.planned:
            return
        self.reestimated = True
        first = self.planned[0]
        took = now - self.plan_at
        reference = estimate_seconds([first], self.quick)
        if reference <= 0:
            return
        ratio = took / reference
        rest = estimate_seconds(self.planned[1:], self.quick) * max(ratio, 0.25)
        self._line(f"estimate: {first} took {took:.1f} s ({ratio:.1f}x the reference's); "
                   f"the rest: about {format_duration(rest)}")


def _statistical_plan(impl: Any, quick: bool) -> tuple[int, int]:
    """The statistical tier's checks and planned draws for ``impl`` (the tier's own plan)."""
    from spec_verify.tiers.statistical import DEFAULT_DELTA, QUICK_DELTA, plan_statistical_tier

    try:
        plan = plan_statistical_tier(impl, delta=QUICK_DELTA if quick else DEFAULT_DELTA)
    except Exception:  # the tier reports a plan it cannot make; the plan line is no place
        return 0, 0
    return len(plan.active()), plan.total_samples()
