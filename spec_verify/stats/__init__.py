"""Statistics with declared error rates: G-test, sample sizes and power, exact binomial
intervals, Holm, the sequential test, calibration."""

from spec_verify._exports import check_exports
from spec_verify.stats._binomial import (
    BinomialResult,
    acceptance_rate_test,
    clopper_pearson,
)
from spec_verify.stats._gof import (
    MIN_EXPECTED,
    Deviation,
    GofResult,
    g_test,
)
from spec_verify.stats._multiple import (
    holm,
    holm_thresholds,
    per_test_alpha,
)
from spec_verify.stats._power import (
    MAX_VOCABULARY,
    achieved_power,
    detectable_delta,
    max_vocabulary,
    noncentrality,
    required_samples,
)
from spec_verify.stats._sequential import (
    SequentialGofTest,
    SequentialResult,
)

__all__ = [
    "MAX_VOCABULARY",
    "MIN_EXPECTED",
    "BinomialResult",
    "Deviation",
    "GofResult",
    "SequentialGofTest",
    "SequentialResult",
    "acceptance_rate_test",
    "achieved_power",
    "clopper_pearson",
    "detectable_delta",
    "g_test",
    "holm",
    "holm_thresholds",
    "max_vocabulary",
    "noncentrality",
    "per_test_alpha",
    "required_samples",
]

check_exports(__name__, __all__, globals())
