"""Statistics with declared error rates: the public API (``from spec_verify.stats import ...``).

Every test returns a frozen result that reads like a scipy.stats result: ``passed``,
``statistic``, ``pvalue``, ``alpha``, the sample size, then the evidence and a one-sentence
``message``. Every test states when it is valid and its error rates in its docstring.

=====================================  ==================================================
against a known law                    ``g_test`` (fixed n), ``SequentialGofTest`` (an
                                       e-process: stop whenever), ``acceptance_rate_test``
                                       (exact binomial), ``clopper_pearson``
two samples, no law known              ``two_sample_test`` (ids or token sequences; chi-square
                                       limit on pooled cells, or permutation p-values)
sample sizes and power                 ``required_samples``, ``detectable_delta``,
                                       ``achieved_power``, ``two_sample_required_samples``,
                                       ``two_sample_detectable_delta``, ``max_vocabulary``
many tests at once                     ``holm``, ``holm_thresholds``, ``per_test_alpha``
=====================================  ==================================================

>>> from spec_verify.stats import g_test, two_sample_test
>>> g_test([52, 48], [0.5, 0.5], alpha=1e-3).passed
True
>>> two_sample_test([0, 1] * 30, [1, 1, 0] * 20, alpha=1e-3).method
'chi2'
"""

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
from spec_verify.stats._two_sample import (
    TwoSampleDeviation,
    TwoSampleResult,
    two_sample_detectable_delta,
    two_sample_required_samples,
    two_sample_test,
)

__all__ = [
    "MAX_VOCABULARY",
    "MIN_EXPECTED",
    "BinomialResult",
    "Deviation",
    "GofResult",
    "SequentialGofTest",
    "SequentialResult",
    "TwoSampleDeviation",
    "TwoSampleResult",
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
    "two_sample_detectable_delta",
    "two_sample_required_samples",
    "two_sample_test",
]

check_exports(__name__, __all__, globals())
