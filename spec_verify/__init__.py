"""spec-verify: prove that a speculative sampler produces exactly the target's output.

The reference sampler is ``spec_verify.reference``; the checks, the exact engine, statistics,
mutants and the grader live in the submodules named in ARCHITECTURE.md. This module stays
light (no scipy, no sympy): importing ``spec_verify.reference`` imports it first.
"""

from .errors import (
    ImplementationError,
    InvalidArgument,
    InvalidDistribution,
    SpecVerifyError,
    UnknownImplementation,
)
from .implementations import Implementation, load_implementation
from .results import CheckResult, Status

__version__ = "0.1.0"

__all__ = [
    "CheckResult",
    "Implementation",
    "ImplementationError",
    "InvalidArgument",
    "InvalidDistribution",
    "SpecVerifyError",
    "Status",
    "UnknownImplementation",
    "__version__",
    "load_implementation",
]
