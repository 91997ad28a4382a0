//! Status codes of the C ABI (`spec_verify.h`) and the error type that carries them.

use std::fmt;

/// Success.
pub const SV_OK: i32 = 0;
/// A length is negative or inconsistent.
pub const SV_E_SHAPE: i32 = -1;
/// A token id outside `[0, V)`.
pub const SV_E_ID_RANGE: i32 = -2;
/// NaN or +inf logits, a row with no finite entry, or nothing survives the filters.
pub const SV_E_NAN: i32 = -3;
/// `q_i(x_i) <= 0`: the draft proposed a token it could not draw.
pub const SV_E_ZERO_DRAFT_PROB: i32 = -4;
/// A sampling or lookup parameter out of range.
pub const SV_E_BAD_PARAM: i32 = -5;
/// An output buffer too small.
pub const SV_E_BUFFER: i32 = -6;
/// The uniform callback returned a value outside `[0, 1)`.
pub const SV_E_CALLBACK: i32 = -7;
/// A probability vector that is negative, non-finite or does not sum to one.
pub const SV_E_DISTRIBUTION: i32 = -8;
/// A required pointer is NULL.
pub const SV_E_NULL: i32 = -9;
/// A caught panic: a bug in the port.
pub const SV_E_INTERNAL: i32 = -100;

/// Every status code with its name, in the header's order.
pub const STATUS_NAMES: [(i32, &str); 11] = [
    (SV_OK, "SV_OK"),
    (SV_E_SHAPE, "SV_E_SHAPE"),
    (SV_E_ID_RANGE, "SV_E_ID_RANGE"),
    (SV_E_NAN, "SV_E_NAN"),
    (SV_E_ZERO_DRAFT_PROB, "SV_E_ZERO_DRAFT_PROB"),
    (SV_E_BAD_PARAM, "SV_E_BAD_PARAM"),
    (SV_E_BUFFER, "SV_E_BUFFER"),
    (SV_E_CALLBACK, "SV_E_CALLBACK"),
    (SV_E_DISTRIBUTION, "SV_E_DISTRIBUTION"),
    (SV_E_NULL, "SV_E_NULL"),
    (SV_E_INTERNAL, "SV_E_INTERNAL"),
];

/// The name of a status code, `"SV_E_UNKNOWN"` for any other number.
pub fn status_name(code: i32) -> &'static str {
    STATUS_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("SV_E_UNKNOWN", |(_, name)| name)
}

/// An error: a status code and a message naming the argument, its value and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvError {
    pub code: i32,
    pub message: String,
}

impl SvError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        SvError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for SvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", status_name(self.code), self.message)
    }
}

impl std::error::Error for SvError {}

pub type SvResult<T> = Result<T, SvError>;

/// Shorthand: `Err(SvError::new(code, message))`.
pub fn fail<T>(code: i32, message: impl Into<String>) -> SvResult<T> {
    Err(SvError::new(code, message))
}
