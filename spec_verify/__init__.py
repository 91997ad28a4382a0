"""spec-verify: prove that a speculative sampler produces exactly the target's output.

The reference sampler is ``spec_verify.reference``; the checks, the exact engine, statistics,
mutants and the grader live in the submodules named in ARCHITECTURE.md.
"""

from .errors import (
    ImplementationError,
    InvalidArgument,
    InvalidDistribution,
    SpecVerifyError,
    UnknownImplementation,
)
from .results import CheckResult, Status

__version__ = "0.1.0"

__all__ = [
    "CheckResult",
    "ImplementationError",
    "InvalidArgument",
    "InvalidDistribution",
    "SpecVerifyError",
    "Status",
    "UnknownImplementation",
    "__version__",
]
