//! The error codes of the C ABI (`spec_verify.h`) and the error type that carries them.

use std::ffi::CStr;
use std::fmt;

/// Why a call failed: the header's negative status codes, one variant each.
///
/// `#[repr(i32)]` with the header's numbers, so `code as i32` is the status the ABI returns;
/// [`ErrorCode::name`] is the one table of names (a test checks both against the header).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A length is negative or inconsistent.
    Shape = -1,
    /// A token id outside `[0, V)`.
    IdRange = -2,
    /// NaN or +inf logits, a row with no finite entry, a logit that overflows (a penalty or
    /// the temperature), or nothing survives the filters.
    Nan = -3,
    /// `q_i(x_i) <= 0`: the draft proposed a token it could not draw.
    ZeroDraftProb = -4,
    /// A sampling or lookup parameter out of range.
    BadParam = -5,
    /// An output buffer too small.
    Buffer = -6,
    /// The uniform callback returned a value outside `[0, 1)`.
    Callback = -7,
    /// A probability vector that is negative, non-finite or does not sum to one.
    Distribution = -8,
    /// A required pointer is NULL.
    Null = -9,
    /// A caught panic: a bug in the port.
    Internal = -100,
}

impl ErrorCode {
    /// Every code, in the header's order.
    pub const ALL: [ErrorCode; 10] = [
        ErrorCode::Shape,
        ErrorCode::IdRange,
        ErrorCode::Nan,
        ErrorCode::ZeroDraftProb,
        ErrorCode::BadParam,
        ErrorCode::Buffer,
        ErrorCode::Callback,
        ErrorCode::Distribution,
        ErrorCode::Null,
        ErrorCode::Internal,
    ];

    /// The status the ABI returns for this error.
    pub const fn status(self) -> i32 {
        self as i32
    }

    /// The header's name (`"SV_E_SHAPE"`, ...), NUL-terminated for `sv_status_name`.
    pub const fn name(self) -> &'static CStr {
        match self {
            ErrorCode::Shape => c"SV_E_SHAPE",
            ErrorCode::IdRange => c"SV_E_ID_RANGE",
            ErrorCode::Nan => c"SV_E_NAN",
            ErrorCode::ZeroDraftProb => c"SV_E_ZERO_DRAFT_PROB",
            ErrorCode::BadParam => c"SV_E_BAD_PARAM",
            ErrorCode::Buffer => c"SV_E_BUFFER",
            ErrorCode::Callback => c"SV_E_CALLBACK",
            ErrorCode::Distribution => c"SV_E_DISTRIBUTION",
            ErrorCode::Null => c"SV_E_NULL",
            ErrorCode::Internal => c"SV_E_INTERNAL",
        }
    }
}

impl TryFrom<i32> for ErrorCode {
    /// The number itself: it is no error code of the header.
    type Error = i32;

    fn try_from(status: i32) -> Result<Self, i32> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| code.status() == status)
            .ok_or(status)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().to_str().unwrap_or("SV_E_UNKNOWN"))
    }
}

/// An error: its code and a message naming the argument, its value and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvError {
    pub code: ErrorCode,
    pub message: String,
}

impl SvError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        SvError {
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for SvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for SvError {}

pub type SvResult<T> = Result<T, SvError>;

/// Shorthand: `Err(SvError::new(code, message))`.
pub fn fail<T>(code: ErrorCode, message: impl Into<String>) -> SvResult<T> {
    Err(SvError::new(code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_numbers() {
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::try_from(code.status()), Ok(code));
            assert!(code.status() < 0);
            assert!(code.to_string().starts_with("SV_E_"));
        }
        assert_eq!(ErrorCode::try_from(0), Err(0));
        assert_eq!(ErrorCode::try_from(-10), Err(-10));
    }
}
