"""The contract's types on the wire: registers them with the transport's codec.

The value and exception schema is ``spec_verify.ipc.codec`` (it knows no contract type). This
module adds what the adapters' workers exchange beyond plain data: the reference's
``SamplingParams`` by value (``{"$sp": {...}}``, rebuilt and validated from its fields) and
the project's data-only errors (``ERROR_TYPES`` with their ``argument``, ``value``, ``rule``
and ``fix``; ``ImplementationError`` and its subclasses with their ``impl``, ``call`` and
``reason``), rebuilt from their fields. Decoding never builds an object of any other type the
message names. Import the codec's functions from here, so the registrations are made.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from spec_verify.errors import (
    ImplementationError,
    InvalidArgument,
    InvalidDistribution,
    UnknownImplementation,
)
from spec_verify.ipc.codec import (
    ArrayTable,
    NotData,
    RemoteAssertionError,
    RemoteAttributeError,
    RemoteValueError,
    decode_error,
    decode_value,
    encode_error,
    encode_value,
    register_error,
    register_value,
)
from spec_verify.ipc.errors import RemoteError, WireError
from spec_verify.reference.errors import (
    ContextTooLong,
    ContractError,
    InvalidDraft,
    InvalidLogits,
    InvalidParams,
    InvalidPrompt,
)
from spec_verify.reference.sampling import SamplingParams

__all__ = [
    "ERROR_TYPES",
    "ArrayTable",
    "NotData",
    "RemoteAssertionError",
    "RemoteAttributeError",
    "RemoteError",
    "RemoteValueError",
    "decode_error",
    "decode_value",
    "encode_error",
    "encode_value",
]

# The project's errors that cross as (type name, validated fields) and are rebuilt as such.
ERROR_TYPES: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (
        ContractError,
        InvalidLogits,
        InvalidDraft,
        InvalidParams,
        InvalidPrompt,
        ContextTooLong,
        InvalidArgument,
        InvalidDistribution,
        UnknownImplementation,
    )
}


def _param_fields(params: SamplingParams) -> dict[str, Any]:
    return {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}


def _sampling_params(fields: Any) -> SamplingParams:
    """The reference's ``SamplingParams`` from its fields, validated as any construction is;
    anything else is a protocol breach."""
    names = {f.name for f in dataclasses.fields(SamplingParams)}
    if not isinstance(fields, dict) or set(fields) != names:
        raise WireError("sampling parameters without exactly the contract's fields")
    try:
        return SamplingParams(**fields)
    except (TypeError, ValueError) as exc:
        raise WireError(f"sampling parameters that do not validate ({exc})") from None


register_value(SamplingParams, "$sp", _param_fields, _sampling_params)
# First, and for subclasses too: an implementation's failure crosses as one.
register_error(ImplementationError, ("impl", "call", "reason"), subclasses=True)
for _kind in ERROR_TYPES.values():
    register_error(_kind, ("argument", "rule", "fix"), data="value")
