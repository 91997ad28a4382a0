"""spec-verify: prove that a speculative sampler produces exactly the target's output.

The reference sampler is ``spec_verify.reference``. The harness is arranged in packages
(ARCHITECTURE.md): ``adapters`` (how an implementation is called), ``tiers`` (the checks),
``exact`` (the exact engine), ``stats`` (statistics), ``cli``; ``run_checks`` and
``CheckReport`` (``runner``) are the one entry point that the CLI and the pytest plugin share.

This module imports nothing heavy: the names below load on first use (PEP 562), so importing
``spec_verify.reference`` or building the CLI parser costs no numpy, scipy or sympy.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

from spec_verify._checkout import installed_copy

__version__ = "0.1.0"

# Run from a clone after a regular install, the clone's folder comes first on sys.path but is
# not the package (spec_verify._checkout): hand the import over to the installed copy.
_installed = installed_copy(__file__)
if _installed is not None and _installed.loader is not None:
    del sys.modules["spec_verify._checkout"]  # the installed copy loads its own
    _module = importlib.util.module_from_spec(_installed)
    sys.modules[__name__] = _module
    try:
        _installed.loader.exec_module(_module)
    except BaseException:
        del sys.modules[__name__]
        raise

# name -> module that defines it (loaded on first attribute access)
_LAZY = {
    "CheckReport": "spec_verify.runner",
    "CheckResult": "spec_verify.results",
    "ExitCode": "spec_verify.results",
    "Implementation": "spec_verify.adapters",
    "ImplementationError": "spec_verify.errors",
    "InvalidArgument": "spec_verify.errors",
    "InvalidDistribution": "spec_verify.errors",
    "SpecVerifyError": "spec_verify.errors",
    "Status": "spec_verify.results",
    "UnknownImplementation": "spec_verify.errors",
    "load_implementation": "spec_verify.adapters",
    "run_checks": "spec_verify.runner",
}

__all__ = [
    "CheckReport",
    "CheckResult",
    "ExitCode",
    "Implementation",
    "ImplementationError",
    "InvalidArgument",
    "InvalidDistribution",
    "SpecVerifyError",
    "Status",
    "UnknownImplementation",
    "__version__",
    "load_implementation",
    "run_checks",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'spec_verify' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
