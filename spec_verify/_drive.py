"""Driving an implementation from a tier: parameters, uniform sources, generation pieces.

The properties and the statistical tier see an implementation only through the
``Implementation`` protocol. What the protocol leaves open, they settle here, in one place:

- **Parameters**: ``impl.params(**fields)`` when the implementation offers it (the Python and
  C ABI adapters do), else the reference's ``SamplingParams`` (the contract's field names).
- **Uniform sources**: for a Python implementation with ``request_rng``, its own PCG32 stream;
  otherwise a numpy ``Generator`` (anything with ``random()`` is a uniform source).
- **Generation**: the implementation's ``speculative_generate``, ``generate`` and drafts when
  its module has them, run on the reference's models, which check the cache on every pass and
  log every pass (they are the harness's instruments, not the implementation under test).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .errors import InvalidArgument
from .implementations import Implementation

__all__ = [
    "CountingUniforms",
    "generation_module",
    "implementation_rng",
    "make_params",
    "module_attr",
]


def make_params(impl: Implementation, **fields: Any) -> Any:
    """Sampling parameters for ``impl`` from the contract's field names.

    A Python module without its own ``SamplingParams`` gets the reference's (the contract's
    field names and ranges).

    Raises:
        ValueError: the fields break the contract's ranges (the implementation's own error).
    """
    build = getattr(impl, "params", None)
    module = getattr(impl, "module", None)
    own_type = module is None or hasattr(module, "SamplingParams")
    if callable(build) and own_type:
        return build(**fields)
    from .reference import SamplingParams

    return SamplingParams(**fields)


def implementation_rng(impl: Implementation, seed_sequence: np.random.SeedSequence) -> Any:
    """The uniform source ``impl`` draws from in a tier, seeded from ``seed_sequence``.

    A Python implementation with ``request_rng`` gets its own PCG32 stream (seeded with 64 bits
    of the sequence); anything else gets a numpy ``Generator`` (its ``random()`` is a uniform
    source). Either way the run is reproducible from the root seed.
    """
    module = getattr(impl, "module", None)
    request_rng = getattr(module, "request_rng", None)
    if "pcg32" in impl.capabilities and callable(request_rng):
        seed = int(seed_sequence.generate_state(1, dtype=np.uint64)[0])
        return request_rng(seed)
    return np.random.Generator(np.random.PCG64(seed_sequence))


def generation_module(impl: Implementation) -> ModuleType:
    """The module holding ``speculative_generate`` and ``generate`` for the generation checks.

    Raises:
        InvalidArgument: ``impl`` does not offer the ``generation`` capability.
    """
    module = getattr(impl, "module", None)
    if "generation" not in impl.capabilities or not isinstance(module, ModuleType):
        raise InvalidArgument(
            "impl",
            impl.name,
            "does not offer generation (speculative_generate, generate, SamplingParams)",
            "generation checks need a Python implementation module",
        )
    return module


def module_attr(impl: Implementation, name: str) -> Any:
    """``impl.module.<name>`` if the implementation's module has it, else the reference's.

    Drafts and the n-gram model come from the implementation when it has its own (their bugs
    are its bugs); the tiers take models and the tokenizer from the reference always, because
    they are the instruments that check the cache and log every pass.
    """
    module = getattr(impl, "module", None)
    if module is not None and hasattr(module, name):
        return getattr(module, name)
    from . import reference

    return getattr(reference, name)


class CountingUniforms:
    """A uniform source that counts its draws (it wraps any other source).

    >>> source = CountingUniforms(np.random.default_rng(0))
    >>> _ = source.random(), source.random()
    >>> source.drawn
    2
    """

    __slots__ = ("_source", "drawn")

    def __init__(self, source: Any) -> None:
        self._source = source
        self.drawn = 0

    def random(self) -> float:
        self.drawn += 1
        value: float = float(self._source.random())
        return value

    def __repr__(self) -> str:
        return f"CountingUniforms(drawn={self.drawn})"
