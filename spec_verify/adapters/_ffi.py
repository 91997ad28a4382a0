"""A thin ctypes wrapper of the C ABI in ``spec_verify.h`` (version 2), in-process.

One class, ``Library``, loads a shared library, checks ``sv_abi_version`` and that every symbol
is there, and offers each C function as a method over numpy arrays. Status codes become the
exceptions the reference raises (``InvalidLogits``, ``InvalidDraft``, ``InvalidParams``,
``InvalidPrompt``: all ``ValueError``), named after the argument that ``sv_last_error`` names.

It also checks what a C caller cannot take on trust: every output buffer is followed by canary
words that the library must not touch, inputs must come back unchanged, and returned ids and
counts must be in range. A breach is an ``ImplementationError`` (the port's bug, not the
caller's). A crash or a hang cannot be caught here: ``_adapter_ffi`` runs this module in a
worker process for that.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spec_verify.errors import ImplementationError, UnknownImplementation
from spec_verify.ipc.frames import is_shared
from spec_verify.reference.errors import (
    ContractError,
    InvalidDraft,
    InvalidLogits,
    InvalidParams,
    InvalidPrompt,
)

__all__ = [
    "ABI_VERSION",
    "CANARY_WORDS",
    "CAPABILITY_BITS",
    "OPTIONAL_SYMBOLS",
    "REQUEST_STREAM",
    "STATUS_NAMES",
    "SYMBOLS",
    "TREE_RULE_CODES",
    "CallbackFailed",
    "Library",
    "SvSamplingParams",
    "params_struct",
]

ABI_VERSION = 2
REQUEST_STREAM = 54
CANARY_WORDS = 4  # words after every output buffer that the library must leave alone

SV_OK = 0
SV_E_SHAPE = -1
SV_E_ID_RANGE = -2
SV_E_NAN = -3
SV_E_ZERO_DRAFT_PROB = -4
SV_E_BAD_PARAM = -5
SV_E_BUFFER = -6
SV_E_CALLBACK = -7
SV_E_DISTRIBUTION = -8
SV_E_NULL = -9
SV_E_INTERNAL = -100

STATUS_NAMES = {
    SV_OK: "SV_OK",
    SV_E_SHAPE: "SV_E_SHAPE",
    SV_E_ID_RANGE: "SV_E_ID_RANGE",
    SV_E_NAN: "SV_E_NAN",
    SV_E_ZERO_DRAFT_PROB: "SV_E_ZERO_DRAFT_PROB",
    SV_E_BAD_PARAM: "SV_E_BAD_PARAM",
    SV_E_BUFFER: "SV_E_BUFFER",
    SV_E_CALLBACK: "SV_E_CALLBACK",
    SV_E_DISTRIBUTION: "SV_E_DISTRIBUTION",
    SV_E_NULL: "SV_E_NULL",
    SV_E_INTERNAL: "SV_E_INTERNAL",
}

# Canary patterns: unlikely values for an id, a uniform or a count.
_CANARY_I64 = np.int64(-0x5A5A5A5A5A5A5A5B)
_CANARY_F64 = -1.2345678910111213e-300
_CANARY_U32 = np.uint32(0xDEADBEEF)


_CANARY_BY_CHAR: dict[str, Any] = {
    np.dtype(np.int64).char: _CANARY_I64,
    np.dtype(np.uint32).char: _CANARY_U32,
    np.dtype(np.float64).char: _CANARY_F64,
}
_CANARY_BYTES = {
    char: np.full(CANARY_WORDS, value, dtype=np.dtype(char)).tobytes()
    for char, value in _CANARY_BY_CHAR.items()
}


class SvSamplingParams(ctypes.Structure):
    """``sv_sampling_params``: seven 8-byte fields, no padding (56 bytes)."""

    _fields_ = (
        ("temperature", ctypes.c_double),
        ("top_k", ctypes.c_int64),
        ("top_p", ctypes.c_double),
        ("min_p", ctypes.c_double),
        ("repetition_penalty", ctypes.c_double),
        ("presence_penalty", ctypes.c_double),
        ("frequency_penalty", ctypes.c_double),
    )


PARAM_FIELDS = tuple(name for name, _ in SvSamplingParams._fields_)

_UniformFn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)

# Arrays cross as plain addresses (``void*`` to ctypes): numpy's ``ctypes.data`` is an int,
# which is an order of magnitude cheaper than building typed pointers on every call.
_I64P = ctypes.c_void_p
_F64P = ctypes.c_void_p
_U32P = ctypes.c_void_p
_I32P = ctypes.c_void_p
_PARAMSP = ctypes.POINTER(SvSamplingParams)
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_f64 = ctypes.c_double

# name -> (restype, argtypes): the header, function by function.

# The arguments every chain symbol ends with (sv_verify_draft, its rule variants and
# sv_propose_and_verify): the context, the uniform source and the outputs.
_CHAIN_TAIL = (
    _I64P,  # history
    _i64,  # n_history
    _I64P,  # prompt
    _i64,  # n_prompt
    _UniformFn,  # uniform
    ctypes.c_void_p,  # uniform_ctx
    _u64,  # pcg_seed
    _I64P,  # out_ids
    _i64,  # out_capacity
    _I64P,  # out_n_emitted
    _I64P,  # out_n_accepted
)

SYMBOLS: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "sv_abi_version": (ctypes.c_uint32, ()),
    "sv_last_error": (ctypes.c_char_p, ()),
    "sv_status_name": (ctypes.c_char_p, (ctypes.c_int32,)),
    "sv_pcg32_u32": (ctypes.c_int32, (_u64, _u64, _i64, _U32P)),
    "sv_pcg32_uniforms": (ctypes.c_int32, (_u64, _u64, _i64, _F64P)),
    "sv_sampling_distribution": (
        ctypes.c_int32,
        (_F64P, _i64, _PARAMSP, _I64P, _i64, _I64P, _i64, _F64P),
    ),
    "sv_sample": (ctypes.c_int32, (_F64P, _i64, _f64, _I64P)),
    "sv_speculative_step": (
        ctypes.c_int32,
        (_F64P, _F64P, _i64, _i64, _f64, _f64, _I64P, _I32P),
    ),
    "sv_verify_draft": (
        ctypes.c_int32,
        (
            _F64P,  # target_logits
            _i64,  # m
            _i64,  # V
            _I64P,  # draft_ids
            _F64P,  # draft_probs
            _PARAMSP,  # params
            *_CHAIN_TAIL,
        ),
    ),
    "sv_prompt_lookup": (
        ctypes.c_int32,
        (_I64P, _i64, _i64, _i64, _i64, _I64P, _i64, _I64P),
    ),
}


# The chain symbol of each verification rule (``check --rule``; CONTRACT.md 3, 8, 9): the
# same arguments as sv_verify_draft; the two besides it are optional, each with its SV_CAP bit.
RULE_SYMBOLS = {
    "token": "sv_verify_draft",
    "block": "sv_verify_block",
    "sampler_match": "sv_verify_sampler_match",
}

# The SV_CAP_* bits of sv_capabilities (spec_verify.h), by capability name.
CAPABILITY_BITS: dict[str, int] = {
    "injected_uniforms": 1 << 0,
    "greedy": 1 << 1,
    "sampling_distribution": 1 << 2,
    "prompt_lookup": 1 << 3,
    "pcg32": 1 << 4,
    "verify_tree": 1 << 5,
    "float32": 1 << 6,
    "propose_and_verify": 1 << 10,
}

# Each optional symbol whose SV_CAP bit must agree with exporting it (else the library is
# refused): symbol -> (bit name, bit).
SYMBOL_BITS = {
    "sv_verify_tree": ("SV_CAP_VERIFY_TREE", CAPABILITY_BITS["verify_tree"]),
    "sv_verify_block": ("SV_CAP_VERIFY_BLOCK", 1 << 8),
    "sv_verify_sampler_match": ("SV_CAP_VERIFY_SAMPLER_MATCH", 1 << 9),
    "sv_propose_and_verify": ("SV_CAP_PROPOSE_AND_VERIFY", CAPABILITY_BITS["propose_and_verify"]),
}

# Optional symbols: a library without them is still ABI version 2 (a capability less).
OPTIONAL_SYMBOLS: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "sv_capabilities": (ctypes.c_uint32, ()),
    "sv_verify_block": SYMBOLS["sv_verify_draft"],
    "sv_verify_sampler_match": SYMBOLS["sv_verify_draft"],
    "sv_propose_and_verify": (
        ctypes.c_int32,
        (
            _F64P,  # target_logits, (k + 1) * V
            _F64P,  # draft_logits, k * V
            _i64,  # k
            _i64,  # V
            _PARAMSP,  # params
            _PARAMSP,  # draft_params (NULL: params)
            *_CHAIN_TAIL,
        ),
    ),
    "sv_verify_tree": (
        ctypes.c_int32,
        (
            _F64P,  # target_logits, (n + 1) * V
            _i64,  # n
            _i64,  # V
            _I64P,  # parents
            _I64P,  # token_ids
            _F64P,  # draft_probs, (n + 1) * V or NULL
            ctypes.POINTER(ctypes.c_uint8),  # draft_present, n + 1 flags or NULL
            ctypes.c_int32,  # rule
            _f64,  # epsilon
            _f64,  # delta
            _PARAMSP,  # params
            _I64P,  # history
            _i64,  # n_history
            _I64P,  # prompt
            _i64,  # n_prompt
            _UniformFn,  # uniform
            ctypes.c_void_p,  # uniform_ctx
            _u64,  # pcg_seed
            _I64P,  # out_ids
            _I64P,  # out_nodes
            _i64,  # out_capacity
            _I64P,  # out_n_emitted
        ),
    ),
}
TREE_RULE_CODES = {"with_replacement": 0, "without_replacement": 1, "typical": 2}


class CallbackFailed(Exception):
    """The uniform source raised (carried back to the caller unchanged as ``__cause__``)."""


def params_struct(p: Any) -> SvSamplingParams:
    """``sv_sampling_params`` from any object with the seven fields (e.g. ``SamplingParams``).

    Raises:
        InvalidParams: a field is missing or not a number (the ranges are the library's to check).
    """
    values: dict[str, Any] = {}
    for name in PARAM_FIELDS:
        if not hasattr(p, name):
            raise InvalidParams("p", p, f"has no field {name!r}; pass impl.params(...)")
        value = getattr(p, name)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InvalidParams(name, value, "must be a real number")
        if name == "top_k":
            if float(value) != int(value) or not -(2**63) <= int(value) < 2**63:
                raise InvalidParams("top_k", value, "must be an integer >= 0 (0 turns it off)")
            values[name] = int(value)
        else:
            values[name] = float(value)
    return SvSamplingParams(**values)


def _ptr(array: NDArray[Any] | None, kind: Any = None) -> int | None:
    """The array's address, or None (NULL) for a missing or empty array."""
    if array is None or array.size == 0:
        return None
    address: int = array.ctypes.data
    return address


def _ids(argument: str, values: Sequence[int] | NDArray[Any]) -> NDArray[np.int64]:
    """Token ids as a contiguous int64 array; non-integers raise like the reference does."""
    if isinstance(values, (str, bytes)):
        raise InvalidParams(argument, values, "must be a sequence of integer token ids")
    out = np.empty(len(values), dtype=np.int64)
    for i, token in enumerate(values):
        if isinstance(token, bool) or not isinstance(token, (int, np.integer)):
            error = InvalidPrompt if argument == "prompt" else InvalidParams
            raise error(argument, list(values), f"entry {i} is {token!r}; ids must be integers")
        if not -(2**63) <= int(token) < 2**63:
            error = InvalidPrompt if argument == "prompt" else InvalidParams
            raise error(argument, list(values), f"entry {i} is {token!r}; not a 64-bit id")
        out[i] = int(token)
    return out


def _same_bits(a: NDArray[Any], b: NDArray[Any]) -> bool:
    """Whether two arrays hold the same bytes, compared in place (no copies: inputs of a
    large vocabulary are megabytes, and every call checks each of them)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not (a.flags.c_contiguous and b.flags.c_contiguous):
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)))


def _before(array: NDArray[Any]) -> NDArray[Any] | None:
    """What ``array`` held before the call, to compare after it; None for a shared array
    mapped read-only (``ipc.frames.is_shared``): a store into it faults, so it cannot change
    and needs no copy (a large vocabulary's rows are megabytes)."""
    return None if is_shared(array) else array.copy()


def _with_canary(n: int, dtype: Any, fill: Any) -> NDArray[Any]:
    buffer = np.empty(n + CANARY_WORDS, dtype=dtype)
    buffer[:] = fill
    return buffer


class Library:
    """A loaded spec-verify C-ABI library (``ctypes.CDLL``) with checked calls.

    Args:
        path: the shared library.

    Raises:
        UnknownImplementation: not a loadable library, a symbol of the header missing, or
            ``sv_abi_version()`` not ``ABI_VERSION``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        spec = f"ffi:{self.path}"
        if not os.path.exists(self.path):
            raise UnknownImplementation(
                "impl", spec, "no such file", "build the library first, or fix the path"
            )
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise UnknownImplementation(
                "impl",
                spec,
                f"is not a loadable shared library ({exc})",
                "pass a .so/.dylib/.dll that exports the functions of spec_verify.h",
            ) from exc
        missing = [name for name in SYMBOLS if not hasattr(self._lib, name)]
        if missing:
            raise UnknownImplementation(
                "impl",
                spec,
                f"does not export {', '.join(missing)} (spec_verify.h, ABI v{ABI_VERSION})",
                "export every function of the header with C linkage",
            )
        for name, (restype, argtypes) in SYMBOLS.items():
            function = getattr(self._lib, name)
            function.restype = restype
            function.argtypes = argtypes
        self.optional = frozenset(name for name in OPTIONAL_SYMBOLS if hasattr(self._lib, name))
        for name in self.optional:
            restype, argtypes = OPTIONAL_SYMBOLS[name]
            function = getattr(self._lib, name)
            function.restype = restype
            function.argtypes = argtypes
        self.abi_version = int(self._lib.sv_abi_version())
        if self.abi_version != ABI_VERSION:
            raise UnknownImplementation(
                "impl",
                spec,
                f"reports ABI version {self.abi_version}; this harness speaks version "
                f"{ABI_VERSION} (spec_verify.h)",
                "rebuild the library against this spec_verify.h",
            )
        self.declared = self._declared_capabilities(spec)

    def _declared_capabilities(self, spec: str) -> dict[str, bool] | None:
        """What ``sv_capabilities`` declares, ``{capability: offered}`` over ``CAPABILITY_BITS``
        (unknown bits ignored), or None when the library does not export it.

        Raises:
            UnknownImplementation: a bit of ``SYMBOL_BITS`` set without its symbol exported,
                or the other way round.
        """
        if "sv_capabilities" not in self.optional:
            return None
        mask = int(self._lib.sv_capabilities())
        declared = {name: bool(mask & bit) for name, bit in CAPABILITY_BITS.items()}
        for symbol, (cap, bit) in SYMBOL_BITS.items():
            claimed, exported = bool(mask & bit), symbol in self.optional
            if claimed != exported:
                raise UnknownImplementation(
                    "impl", spec,
                    f"sv_capabilities() = {mask:#x} says {cap} is "
                    f"{'set' if claimed else 'clear'} but the library "
                    f"{'exports' if exported else 'does not export'} {symbol}",
                    f"set {cap} exactly when {symbol} is exported",
                )  # fmt: skip
        return declared

    # ---- errors -------------------------------------------------------------------------

    def last_error(self) -> str:
        raw = self._lib.sv_last_error()
        return raw.decode("utf-8", "replace") if raw else ""

    def status_name(self, status: int) -> str:
        raw = self._lib.sv_status_name(status)
        return raw.decode("utf-8", "replace") if raw else "SV_E_UNKNOWN"

    def _implementation_error(self, call: str, reason: str) -> ImplementationError:
        return ImplementationError(f"ffi:{self.path}", call, reason)

    def _raise(self, status: int, call: str, values: dict[str, Any]) -> None:
        """Turn a status into the reference's exception (or an ImplementationError)."""
        message = self.last_error() or f"(the library gave no message for {status})"
        name = STATUS_NAMES.get(status, f"status {status}")
        # "argument: rule", "argument=value: rule" or "params.field=value: rule"
        match = re.match(r"\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:=([^:]*))?:\s*", message)
        argument = match.group(1) if match else ""
        if not argument.startswith("draft_params."):  # the draft's processors stay named so
            argument = argument.rsplit(".", 1)[-1]
        shown_value = match.group(2) if match and match.group(2) is not None else None
        rule = message[match.end() :] if match and message[match.end() :] else message
        error: type[ContractError]
        if status in (SV_E_NULL, SV_E_BUFFER, SV_E_INTERNAL) or status not in STATUS_NAMES:
            raise self._implementation_error(
                call,
                f"returned {name} on input the harness built correctly: {message}",
            )
        if status == SV_E_CALLBACK:
            raise InvalidParams("rng", values.get("rng"), message)
        if status == SV_E_NAN:
            error = InvalidLogits
            if argument not in values:
                argument = "target_logits" if "target_logits" in values else "logits"
        elif status == SV_E_ID_RANGE:
            if argument not in values:
                argument = "draft_ids" if "draft_ids" in values else "x"
            error = InvalidPrompt if argument == "prompt" else InvalidParams
            if call == "speculative_step":
                error = InvalidDraft
        elif status == SV_E_ZERO_DRAFT_PROB:
            error = InvalidDraft
            if argument not in values:
                argument = "draft_probs" if "draft_probs" in values else "q"
        elif status == SV_E_DISTRIBUTION:
            if argument not in values:
                argument = "draft_probs" if "draft_probs" in values else "dist"
            error = InvalidDraft if argument in ("draft_probs", "q") else InvalidLogits
        elif status == SV_E_BAD_PARAM:
            error = InvalidParams
            if not argument:
                argument = "p"
        elif argument in ("target_logits", "logits", "V"):  # SV_E_SHAPE from here on
            error = InvalidLogits
        elif argument.startswith("draft"):
            error = InvalidDraft
        else:
            error = InvalidParams
        value = values.get(argument, shown_value if shown_value is not None else message)
        raise error(argument, value, rule, f"[{name} from the library]")

    def _check_canary(self, call: str, argument: str, buffer: NDArray[Any], n: int) -> None:
        tail = buffer[n:]
        if tail.tobytes() != _CANARY_BYTES[buffer.dtype.char]:
            fill = tail.dtype.type(_CANARY_BY_CHAR[buffer.dtype.char])
            changed = [int(i) for i in np.flatnonzero(tail != fill)]
            raise self._implementation_error(
                call,
                f"wrote past the end of {argument}: its declared length is {n}, yet the "
                f"canary words {changed} after it (of {CANARY_WORDS}) were overwritten",
            )

    def _check_unchanged(
        self, call: str, argument: str, before: NDArray[Any] | None, after: NDArray[Any]
    ) -> None:
        # bitwise: NaN payloads and -0.0 count too (None: a shared input, which cannot change)
        if before is not None and not _same_bits(before, after):
            raise self._implementation_error(
                call, f"modified its input {argument} (a const array in spec_verify.h)"
            )

    # ---- PCG32 ----------------------------------------------------------------------------

    def pcg32_u32(self, initstate: int, initseq: int, n: int) -> NDArray[np.uint32]:
        """The first ``n`` 32-bit outputs of ``Pcg32(initstate, initseq)``."""
        _check_u64("initstate", initstate)
        _check_u64("initseq", initseq)
        _check_count(n)
        out = _with_canary(n, np.uint32, _CANARY_U32)
        status = self._lib.sv_pcg32_u32(initstate, initseq, n, _ptr(out, _U32P))
        self._check_canary("pcg32_u32", "out", out, n)
        if status != SV_OK:
            self._raise(status, "pcg32_u32", {"n": n})
        return out[:n].copy()

    def pcg32_uniforms(self, initstate: int, initseq: int, n: int) -> NDArray[np.float64]:
        """The first ``n`` uniforms of ``Pcg32(initstate, initseq)``."""
        _check_u64("initstate", initstate)
        _check_u64("initseq", initseq)
        _check_count(n)
        out = _with_canary(n, np.float64, _CANARY_F64)
        status = self._lib.sv_pcg32_uniforms(initstate, initseq, n, _ptr(out, _F64P))
        self._check_canary("pcg32_uniforms", "out", out, n)
        if status != SV_OK:
            self._raise(status, "pcg32_uniforms", {"n": n})
        values = out[:n].copy()
        if n and not ((values >= 0.0) & (values < 1.0)).all():
            raise self._implementation_error(
                "pcg32_uniforms", f"returned values outside [0, 1): {values[:8].tolist()}"
            )
        return values

    # ---- sampling -------------------------------------------------------------------------

    def sampling_distribution(
        self,
        logits: NDArray[np.float64],
        params: SvSamplingParams,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
    ) -> NDArray[np.float64]:
        """``sv_sampling_distribution`` for one row of logits (1-D, V >= 1)."""
        row = _row("logits", logits)
        V = row.shape[0]
        history_ids = _ids("history", history)
        prompt_ids = _ids("prompt", prompt)
        before = _before(row)
        out = _with_canary(V, np.float64, _CANARY_F64)
        status = self._lib.sv_sampling_distribution(
            _ptr(row, _F64P),
            V,
            ctypes.byref(params),
            _ptr(history_ids, _I64P),
            len(history_ids),
            _ptr(prompt_ids, _I64P),
            len(prompt_ids),
            _ptr(out, _F64P),
        )
        self._check_canary("sampling_distribution", "out_probs", out, V)
        self._check_unchanged("sampling_distribution", "logits", before, row)
        if status != SV_OK:
            self._raise(
                status,
                "sampling_distribution",
                {"logits": logits, "history": list(history), "prompt": list(prompt), "V": V},
            )
        return out[:V].copy()

    def sample(self, dist: NDArray[np.float64], u: float) -> int:
        """``sv_sample``: inverse CDF at the given uniform."""
        row = _row("dist", dist)
        out = _with_canary(1, np.int64, _CANARY_I64)
        status = self._lib.sv_sample(_ptr(row, _F64P), row.shape[0], float(u), _ptr(out, _I64P))
        self._check_canary("sample", "out_id", out, 1)
        if status != SV_OK:
            self._raise(status, "sample", {"dist": dist, "u": u})
        token = int(out[0])
        if not 0 <= token < row.shape[0]:
            raise self._implementation_error(
                "sample", f"returned id {token}, outside [0, {row.shape[0]})"
            )
        return token

    def speculative_step(
        self,
        p: NDArray[np.float64],
        q: NDArray[np.float64],
        x: int,
        u_accept: float,
        u_resample: float,
    ) -> tuple[int, bool]:
        """``sv_speculative_step``: ``(token, accepted)``."""
        p_row = _row("p", p)
        q_row = _row("q", q)
        if q_row.shape != p_row.shape:
            raise InvalidDraft("q", q, f"has length {q_row.shape[0]}; it must match p's")
        token = _with_canary(1, np.int64, _CANARY_I64)
        accepted = (ctypes.c_int32 * (1 + CANARY_WORDS))(*([7] * (1 + CANARY_WORDS)))
        status = self._lib.sv_speculative_step(
            _ptr(p_row, _F64P),
            _ptr(q_row, _F64P),
            p_row.shape[0],
            int(x),
            float(u_accept),
            float(u_resample),
            _ptr(token, _I64P),
            ctypes.addressof(accepted),
        )
        self._check_canary("speculative_step", "out_token", token, 1)
        if list(accepted[1:]) != [7] * CANARY_WORDS:
            raise self._implementation_error(
                "speculative_step", "wrote past the end of out_accepted"
            )
        if status != SV_OK:
            self._raise(
                status,
                "speculative_step",
                {"p": p, "q": q, "x": x, "u_accept": u_accept, "u_resample": u_resample},
            )
        out_token = int(token[0])
        if not 0 <= out_token < p_row.shape[0] or accepted[0] not in (0, 1):
            raise self._implementation_error(
                "speculative_step",
                f"returned token {out_token} (V={p_row.shape[0]}), accepted={accepted[0]}",
            )
        return out_token, bool(accepted[0])

    # ---- verification ---------------------------------------------------------------------

    def verify_draft(
        self,
        target_logits: NDArray[np.float64],
        draft_ids: Sequence[int] | NDArray[np.int64],
        draft_probs: NDArray[np.float64] | None,
        params: SvSamplingParams,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
        uniform: Callable[[], float] | None = None,
        pcg_seed: int = 0,
        rule: str = "token",
    ) -> tuple[list[int], int]:
        """``sv_verify_draft``, or the chain symbol of another ``rule`` (``RULE_SYMBOLS``).

        Args:
            target_logits: ``(m + 1, V)`` float64 (shape checked here: the ABI has no shapes).
            draft_ids: ``m`` ids.
            draft_probs: ``(m, V)`` or None (a deterministic draft); not read when greedy.
            params: from ``params_struct``.
            uniform: called for each uniform (in [0, 1)), or None for the library's own
                ``request_rng(pcg_seed)``. If it raises, the call fails with ``CallbackFailed``
                whose ``__cause__`` is the exception.

        Returns:
            ``(emitted_ids, n_accepted)``.
        """
        ids = _ids("draft_ids", draft_ids)
        m = len(ids)
        rows = np.asarray(target_logits, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[0] != m + 1 or rows.shape[1] < 1:
            raise InvalidLogits(
                "target_logits",
                target_logits,
                f"has shape {rows.shape}; it must be (m + 1, V) = ({m + 1}, V) for m = {m} drafts",
                "pass the last m + 1 rows of the target's pass",
            )
        rows = np.ascontiguousarray(rows)
        V = rows.shape[1]
        greedy = params.temperature == 0.0
        q: NDArray[np.float64] | None = None
        if draft_probs is not None and not greedy:
            q = np.ascontiguousarray(np.asarray(draft_probs, dtype=np.float64))
            if q.shape != (m, V):
                raise InvalidDraft(
                    "draft_probs",
                    draft_probs,
                    f"has shape {q.shape}; it must be (m, V) = ({m}, {V})",
                    "one draft distribution per drafted token, or None for a deterministic draft",
                )
        symbol = RULE_SYMBOLS.get(rule)
        if symbol is None or (symbol != "sv_verify_draft" and symbol not in self.optional):
            raise self._implementation_error(
                "verify_draft", f"--rule {rule}: the library does not export {symbol}")
        inputs = {"target_logits": rows, "draft_ids": ids}
        if q is not None:
            inputs["draft_probs"] = q
        values = {"target_logits": target_logits, "draft_ids": list(draft_ids),
                  "draft_probs": draft_probs}  # fmt: skip
        leading = (_ptr(rows, _F64P), m, V, _ptr(ids, _I64P), _ptr(q, _F64P), ctypes.byref(params))
        return self._chain_call("verify_draft", symbol, leading, inputs, values, m, V, history,
                                prompt, uniform, pcg_seed)  # fmt: skip

    def propose_and_verify(
        self,
        target_logits: NDArray[np.float64],
        draft_logits: NDArray[np.float64],
        params: SvSamplingParams,
        draft_params: SvSamplingParams | None = None,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
        uniform: Callable[[], float] | None = None,
        pcg_seed: int = 0,
    ) -> tuple[list[int], int]:
        """``sv_propose_and_verify`` (optional symbol): the library draws the ``k`` drafts from
        ``draft_logits`` (``(k, V)``) after ``draft_params`` (None: ``params``) and verifies
        them against ``target_logits`` (``(k + 1, V)``); ``uniform`` as for ``verify_draft``
        (None: the library's own ``request_rng(pcg_seed)``). Returns ``(emitted_ids,
        n_accepted)``."""
        if "sv_propose_and_verify" not in self.optional:
            raise self._implementation_error(
                "propose_and_verify", "is not exported by this library (sv_propose_and_verify)")
        draft = np.asarray(draft_logits, dtype=np.float64)
        if draft.ndim != 2 or draft.shape[1] < 1:
            raise InvalidLogits("draft_logits", draft_logits, f"has shape {draft.shape}; it "
                                "must be (k, V)", "one draft row per drafted token")
        k, V = draft.shape
        rows = np.asarray(target_logits, dtype=np.float64)
        if rows.shape != (k + 1, V):
            raise InvalidLogits("target_logits", target_logits, f"has shape {rows.shape}; it "
                                f"must be (k + 1, V) = ({k + 1}, {V})",
                                "one target row more than the draft's")  # fmt: skip
        rows, draft = np.ascontiguousarray(rows), np.ascontiguousarray(draft)
        inputs = {"target_logits": rows, "draft_logits": draft}
        values = {"target_logits": target_logits, "draft_logits": draft_logits, "k": k}
        leading = (_ptr(rows, _F64P), _ptr(draft, _F64P), k, V, ctypes.byref(params),
                   None if draft_params is None else ctypes.byref(draft_params))  # fmt: skip
        return self._chain_call("propose_and_verify", "sv_propose_and_verify", leading, inputs,
                                values, k, V, history, prompt, uniform, pcg_seed)  # fmt: skip

    def _chain_call(
        self,
        call: str,
        symbol: str,
        leading: tuple[Any, ...],
        inputs: dict[str, NDArray[Any]],
        values: dict[str, Any],
        m: int,
        V: int,
        history: Sequence[int],
        prompt: Sequence[int],
        uniform: Callable[[], float] | None,
        pcg_seed: int,
    ) -> tuple[list[int], int]:
        """One call of a chain-shaped symbol: ``leading`` (its arguments up to the sampling
        parameters), then ``history, n_history, prompt, n_prompt, uniform, uniform_ctx,
        pcg_seed, out_ids, out_capacity (m + 1), out_n_emitted, out_n_accepted``; canaries,
        ``inputs`` unchanged, the status and the counts checked (``values``: the caller's
        arguments by name, for the errors)."""
        history_ids = _ids("history", history)
        prompt_ids = _ids("prompt", prompt)
        _check_u64("pcg_seed", pcg_seed)
        inputs = {**inputs, "history": history_ids, "prompt": prompt_ids}
        before = {name: _before(array) for name, array in inputs.items()}
        failure: list[BaseException] = []
        returned_bad: list[float] = []

        def trampoline(_ctx: Any) -> float:
            if failure:
                return -1.0
            try:
                u = uniform() if uniform is not None else -1.0
            except BaseException as exc:  # carried to the caller below, never into C
                failure.append(exc)
                return -1.0
            try:
                value = float(u)
            except (TypeError, ValueError) as exc:
                failure.append(exc)
                return -1.0
            if not 0.0 <= value < 1.0:
                returned_bad.append(value)
            return value

        callback = _UniformFn(trampoline) if uniform is not None else _UniformFn()
        capacity = m + 1
        out = _with_canary(capacity, np.int64, _CANARY_I64)
        n_emitted = _with_canary(1, np.int64, _CANARY_I64)
        n_accepted = _with_canary(1, np.int64, _CANARY_I64)
        status = getattr(self._lib, symbol)(
            *leading,
            _ptr(history_ids, _I64P),
            len(history_ids),
            _ptr(prompt_ids, _I64P),
            len(prompt_ids),
            callback,
            None,
            pcg_seed,
            _ptr(out, _I64P),
            capacity,
            _ptr(n_emitted, _I64P),
            _ptr(n_accepted, _I64P),
        )
        self._check_canary(call, "out_ids", out, capacity)
        self._check_canary(call, "out_n_emitted", n_emitted, 1)
        self._check_canary(call, "out_n_accepted", n_accepted, 1)
        for argument, array in inputs.items():
            self._check_unchanged(call, argument, before[argument], array)
        if failure:
            raise CallbackFailed("the uniform source raised") from failure[0]
        if status != SV_OK:
            self._raise(status, call, {
                **values, "history": list(history), "prompt": list(prompt),
                "rng": returned_bad[0] if returned_bad else None, "m": m, "V": V,
            })  # fmt: skip
        emitted, accepted = int(n_emitted[0]), int(n_accepted[0])
        if not 0 <= accepted <= m or emitted != accepted + 1:
            raise self._implementation_error(
                call,
                f"returned n_emitted={emitted}, n_accepted={accepted} for m={m} drafts; the "
                "contract is n_emitted == n_accepted + 1 and 0 <= n_accepted <= m",
            )
        tokens = [int(t) for t in out[:emitted]]
        bad = [t for t in tokens if not 0 <= t < V]
        if bad:
            raise self._implementation_error(
                call, f"returned ids out of [0, {V}): {bad} (emitted {tokens})"
            )
        return tokens, accepted

    def verify_tree(
        self,
        target_logits: NDArray[np.float64],
        parents: Sequence[int],
        token_ids: Sequence[int],
        draft_probs: Sequence[Any] | None,
        params: SvSamplingParams,
        history: Sequence[int] = (),
        prompt: Sequence[int] = (),
        rule: str = "with_replacement",
        uniform: Callable[[], float] | None = None,
        pcg_seed: int = 0,
        epsilon: float = 0.09,
        delta: float = 0.3,
    ) -> tuple[list[int], list[int]]:
        """``sv_verify_tree`` (optional symbol): ``(emitted_ids, accepted_nodes)``.

        ``draft_probs`` is None or ``n + 1`` entries (root first), each a row or None.
        """
        if "sv_verify_tree" not in self.optional:
            raise self._implementation_error("verify_tree", "is not exported by this library")
        if rule not in TREE_RULE_CODES:
            raise InvalidParams("rule", rule, f"must be one of {', '.join(TREE_RULE_CODES)}")
        parent_ids = _ids("parents", parents)
        ids = _ids("token_ids", token_ids)
        n = len(parent_ids)
        rows = np.asarray(target_logits, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[0] != n + 1 or rows.shape[1] < 1:
            raise InvalidLogits(
                "target_logits", target_logits,
                f"has shape {rows.shape}; it must be (n + 1, V) = ({n + 1}, V) for n = {n} nodes",
            )
        rows = np.ascontiguousarray(rows)
        V = rows.shape[1]
        q: NDArray[np.float64] | None = None
        present: NDArray[np.uint8] | None = None
        if draft_probs is not None:
            if len(draft_probs) != n + 1:
                raise InvalidDraft("draft_probs", f"{len(draft_probs)} entries",
                                   f"must have n + 1 = {n + 1} entries (root first)")
            q = np.zeros((n + 1, V), dtype=np.float64)
            present = np.zeros(n + 1, dtype=np.uint8)
            for i, row in enumerate(draft_probs):
                if row is None:
                    continue
                entry = np.asarray(row, dtype=np.float64)
                if entry.shape != (V,):
                    raise InvalidDraft("draft_probs", f"entry {i} of shape {entry.shape}",
                                       f"entry {i} must have V = {V} entries")
                q[i] = entry
                present[i] = 1
        history_ids = _ids("history", history)
        prompt_ids = _ids("prompt", prompt)
        _check_u64("pcg_seed", pcg_seed)
        inputs = [("target_logits", rows, _before(rows)),
                  ("parents", parent_ids, parent_ids.copy()), ("token_ids", ids, ids.copy())]
        failure: list[BaseException] = []
        returned_bad: list[float] = []

        def trampoline(_ctx: Any) -> float:
            if failure:
                return -1.0
            try:
                value = float(uniform() if uniform is not None else -1.0)
            except BaseException as exc:  # carried to the caller below, never into C
                failure.append(exc)
                return -1.0
            if not 0.0 <= value < 1.0:
                returned_bad.append(value)
            return value

        callback = _UniformFn(trampoline) if uniform is not None else _UniformFn()
        capacity = n + 1
        out = _with_canary(capacity, np.int64, _CANARY_I64)
        nodes = _with_canary(capacity, np.int64, _CANARY_I64)
        n_emitted = _with_canary(1, np.int64, _CANARY_I64)
        status = self._lib.sv_verify_tree(
            _ptr(rows, _F64P), n, V, _ptr(parent_ids, _I64P), _ptr(ids, _I64P),
            _ptr(q, _F64P),
            None if present is None else present.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)),
            TREE_RULE_CODES[rule], float(epsilon), float(delta), ctypes.byref(params),
            _ptr(history_ids, _I64P), len(history_ids), _ptr(prompt_ids, _I64P),
            len(prompt_ids), callback, None, pcg_seed, _ptr(out, _I64P), _ptr(nodes, _I64P),
            capacity, _ptr(n_emitted, _I64P),
        )
        self._check_canary("verify_tree", "out_ids", out, capacity)
        self._check_canary("verify_tree", "out_nodes", nodes, capacity)
        self._check_canary("verify_tree", "out_n_emitted", n_emitted, 1)
        for argument, array, before in inputs:
            self._check_unchanged("verify_tree", argument, before, array)
        if failure:
            raise CallbackFailed("the uniform source raised") from failure[0]
        if status != SV_OK:
            values = {"target_logits": target_logits, "parents": list(parents),
                      "token_ids": list(token_ids), "draft_probs": draft_probs,
                      "history": list(history), "prompt": list(prompt),
                      "rng": returned_bad[0] if returned_bad else None, "V": V}
            self._raise(status, "verify_tree", values)
        emitted = int(n_emitted[0])
        if not 1 <= emitted <= n + 1:
            raise self._implementation_error(
                "verify_tree", f"returned n_emitted={emitted} for n={n} nodes")
        return [int(t) for t in out[:emitted]], [int(i) for i in nodes[: emitted - 1]]

    # ---- prompt lookup --------------------------------------------------------------------

    def prompt_lookup(
        self, ctx: Sequence[int], k: int, max_ngram: int = 3, min_ngram: int = 1
    ) -> list[int]:
        """``sv_prompt_lookup``: at most ``k`` ids copied from ``ctx``."""
        context = _ids("ctx", ctx)
        for name, value in (("k", k), ("max_ngram", max_ngram), ("min_ngram", min_ngram)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InvalidParams(name, value, "must be an integer")
            if not -(2**63) <= int(value) < 2**63:
                raise InvalidParams(name, value, "must fit in 64 bits")
        n_ctx = len(context)
        capacity = max(0, min(int(k), n_ctx))
        before = context.copy()
        out = _with_canary(capacity, np.int64, _CANARY_I64)
        out_n = _with_canary(1, np.int64, _CANARY_I64)
        status = self._lib.sv_prompt_lookup(
            _ptr(context, _I64P),
            n_ctx,
            int(k),
            int(max_ngram),
            int(min_ngram),
            _ptr(out, _I64P) if capacity else None,
            capacity,
            _ptr(out_n, _I64P),
        )
        self._check_canary("prompt_lookup", "out_ids", out, capacity)
        self._check_canary("prompt_lookup", "out_n", out_n, 1)
        self._check_unchanged("prompt_lookup", "ctx", before, context)
        if status != SV_OK:
            self._raise(
                status,
                "prompt_lookup",
                {"ctx": list(ctx), "k": k, "max_ngram": max_ngram, "min_ngram": min_ngram},
            )
        n = int(out_n[0])
        if not 0 <= n <= capacity:
            raise self._implementation_error(
                "prompt_lookup", f"returned out_n={n}; it must be in [0, min(k, n_ctx)]"
            )
        return [int(t) for t in out[:n]]


def _check_u64(argument: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidParams(argument, value, "must be an integer in [0, 2**64)")
    if not 0 <= int(value) < 2**64:
        raise InvalidParams(argument, value, "must be an integer in [0, 2**64)")


def _check_count(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= int(n) < 2**40:
        raise InvalidParams("n", n, "must be an integer >= 0")


def _row(argument: str, values: Any) -> NDArray[np.float64]:
    try:
        row = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise InvalidLogits(argument, values, f"is not an array of numbers ({exc})") from exc
    if row.ndim != 1 or row.shape[0] < 1:
        raise InvalidLogits(
            argument, values, f"must be a 1-D row of V >= 1 values, got {row.shape}"
        )
    return row
