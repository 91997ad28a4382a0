"""End-to-end checks of a whole generation, black box: a seed in, tokens out.

``compare_generators`` (``spec-verify compare A B``) tests two generators' laws of the first L
tokens against each other (two-sample tests, no law needed); ``sequence_law`` enumerates the
exact law of the first L tokens of plain sampling from a small target, and ``law_test`` tests
samples against it. Generators run in worker processes (``draw_sequences``). ``check_sampler``
tests a custom sampler function case by case (target and draft distributions in a chosen dtype);
``check_batched`` a vLLM-style batched rejection sampler, law and batch invariance.
"""

from spec_verify._exports import check_exports
from spec_verify.endtoend._batched import BatchedCheckResult, check_batched
from spec_verify.endtoend._compare import (
    CompareResult,
    Comparison,
    compare_generators,
    compare_plan,
    compare_samples,
)
from spec_verify.endtoend._draw import (
    DrawOutcome,
    GeneratorFailure,
    draw_sequences,
    seeds_for,
)
from spec_verify.endtoend._law import (
    LawTestResult,
    SequenceLaw,
    law_required_samples,
    law_test,
    sequence_law,
)
from spec_verify.endtoend._sampler import (
    SamplerCase,
    SamplerCaseResult,
    SamplerCheckResult,
    check_sampler,
    propose_cases,
    sampler_cases,
)

__all__ = [
    "BatchedCheckResult",
    "CompareResult",
    "Comparison",
    "DrawOutcome",
    "GeneratorFailure",
    "LawTestResult",
    "SamplerCase",
    "SamplerCaseResult",
    "SamplerCheckResult",
    "SequenceLaw",
    "check_batched",
    "check_sampler",
    "compare_generators",
    "compare_plan",
    "compare_samples",
    "draw_sequences",
    "law_required_samples",
    "law_test",
    "propose_cases",
    "sampler_cases",
    "seeds_for",
    "sequence_law",
]

check_exports(__name__, __all__, globals())
