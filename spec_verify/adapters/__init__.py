"""How an implementation is called: the ``Implementation`` protocol, the loaders of
``python:``, ``ffi:`` and ``mutant:`` specs, the FFI worker and the Rust port build."""

from spec_verify._exports import check_exports
from spec_verify.adapters._calls import Call, CallOutcome, Draws, Outcome, UniformPlan
from spec_verify.adapters._ffi import (
    ABI_VERSION,
    CANARY_WORDS,
    REQUEST_STREAM,
    STATUS_NAMES,
    SYMBOLS,
    CallbackFailed,
    Library,
    SvSamplingParams,
    params_struct,
)
from spec_verify.adapters._ffi_adapter import (
    DEFAULT_TIMEOUT,
    FfiImplementation,
    load_ffi,
)
from spec_verify.adapters._gpu_kernels import (
    flashinfer_chain_kernel,
    gpu_unavailable_reason,
)
from spec_verify.adapters._guard import (
    guarded_call,
)
from spec_verify.adapters._implementations import (
    CAPABILITIES,
    AbiImplementation,
    Implementation,
    PythonImplementation,
    TreeImplementation,
    check_tree_result,
)
from spec_verify.adapters._loader import (
    load_implementation,
)
from spec_verify.adapters._rust_build import (
    CRATE_ENV,
    CRATE_NAME,
    PortBuildError,
    build_port,
    find_cargo,
    find_crate,
    library_filename,
    port_features,
    variant_target_dir,
)

__all__ = [
    "ABI_VERSION",
    "CANARY_WORDS",
    "CAPABILITIES",
    "CRATE_ENV",
    "CRATE_NAME",
    "DEFAULT_TIMEOUT",
    "REQUEST_STREAM",
    "STATUS_NAMES",
    "SYMBOLS",
    "AbiImplementation",
    "Call",
    "CallOutcome",
    "CallbackFailed",
    "Draws",
    "FfiImplementation",
    "Implementation",
    "Library",
    "Outcome",
    "PortBuildError",
    "PythonImplementation",
    "SvSamplingParams",
    "TreeImplementation",
    "UniformPlan",
    "build_port",
    "check_tree_result",
    "find_cargo",
    "find_crate",
    "flashinfer_chain_kernel",
    "gpu_unavailable_reason",
    "guarded_call",
    "library_filename",
    "load_ffi",
    "load_implementation",
    "params_struct",
    "port_features",
    "variant_target_dir",
]

check_exports(__name__, __all__, globals())
