"""Results are values: one frozen record per check, shared by every tier and report."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CheckResult", "ExitCode", "Progress", "Status"]

# What a long run reports as it goes: one short status line at a time (the CLI draws it).
Progress = Callable[[str], None]


class Status(str, enum.Enum):
    """The verdict of one check.

    ``NOT_PROVABLE`` is never a pass: the exact tier says it when the implementation's decisions
    do not line up with the exact cells, and leaves the verdict to the statistical tier.
    ``NOT_APPLICABLE`` never blocks a run: the check asks something of the implementation that
    it does not claim (injected uniforms, a greedy path, the contract's draw order under the
    lossless profile); the message says why.
    """

    PASSED = "passed"
    FAILED = "failed"
    NOT_PROVABLE = "not_provable"
    SKIPPED = "skipped"
    NOT_APPLICABLE = "not_applicable"
    ERROR = "error"  # the implementation crashed, hung or returned garbage

    @property
    def ok(self) -> bool:
        """Whether this verdict is no failure or error of the implementation. Not provable is
        neither, but it is no pass either: ``CheckReport`` fails a run on it unless told to
        accept it."""
        return self in (Status.PASSED, Status.SKIPPED, Status.NOT_PROVABLE, Status.NOT_APPLICABLE)


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict and its evidence.

    Attributes:
        tier: contract, greedy, exact, parity, properties, statistical or generation.
        name: the check's stable name within its tier.
        status: the verdict.
        message: one human sentence: what was proven, or what went wrong and where.
        statistic / pvalue / alpha / n: filled by statistical checks.
        details: the evidence (observed vs expected, counterexample), JSON-serialisable.
        repro: one command line that reproduces this result.
    """

    tier: str
    name: str
    status: Status
    message: str = ""
    statistic: float | None = None
    pvalue: float | None = None
    alpha: float | None = None
    n: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    repro: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    def to_json(self) -> dict[str, Any]:
        """A plain-JSON view (Fractions in details must already be strings)."""
        return {
            "tier": self.tier,
            "name": self.name,
            "status": self.status.value,
            "message": self.message,
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "alpha": self.alpha,
            "n": self.n,
            "details": self.details,
            "repro": self.repro,
            "seconds": self.seconds,
        }


class ExitCode(enum.IntEnum):
    """The process exit codes of ``spec-verify``; every face reads the verdict from here."""

    PASSED = 0  # every requested check passed, as computed by the harness
    FAILED = 1  # at least one check failed, errored, or was not proven (see CheckReport)
    USAGE_ERROR = 2  # bad arguments: nothing was checked
    HARNESS_ERROR = 3  # the harness itself could not finish (a bug, or a hung implementation)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: the run is incomplete


SCHEMA_VERSION = 1  # of every JSON report the tool writes


def versioned(report: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` led by the schema version, the tool's version and the report's name."""
    from spec_verify import __version__

    return {"schema_version": SCHEMA_VERSION, "spec_verify_version": __version__,
            "report": report, **data}  # fmt: skip
