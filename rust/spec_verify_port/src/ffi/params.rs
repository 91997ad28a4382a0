//! `sv_sampling_params`: the ABI's parameter struct, kept apart from the core's.
//!
//! The C layout is a promise to every caller (seven 8-byte fields, 56 bytes), so it lives here
//! and nowhere else; the core's [`SamplingParams`] is free to use Rust types (`top_k: usize`)
//! and is only ever built from the C struct through `TryFrom`, which validates every field.

use crate::error::{ErrorCode, SvError, SvResult};
use crate::sampling::SamplingParams;

/// `sv_sampling_params` as the header lays it out.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SvSamplingParams {
    pub temperature: f64,
    pub top_k: i64,
    pub top_p: f64,
    pub min_p: f64,
    pub repetition_penalty: f64,
    pub presence_penalty: f64,
    pub frequency_penalty: f64,
}

impl TryFrom<&SvSamplingParams> for SamplingParams {
    type Error = SvError;

    /// The core's parameters, or `ErrorCode::BadParam` naming the first field out of range.
    fn try_from(raw: &SvSamplingParams) -> SvResult<Self> {
        let top_k = usize::try_from(raw.top_k).map_err(|_| {
            SvError::new(
                ErrorCode::BadParam,
                format!("params.top_k={}: must be >= 0 (0 turns it off)", raw.top_k),
            )
        })?;
        let params = SamplingParams {
            temperature: raw.temperature,
            top_k,
            top_p: raw.top_p,
            min_p: raw.min_p,
            repetition_penalty: raw.repetition_penalty,
            presence_penalty: raw.presence_penalty,
            frequency_penalty: raw.frequency_penalty,
        };
        params.validate()?;
        Ok(params)
    }
}

#[cfg(test)]
impl From<&SamplingParams> for SvSamplingParams {
    fn from(p: &SamplingParams) -> Self {
        SvSamplingParams {
            temperature: p.temperature,
            top_k: p.top_k as i64,
            top_p: p.top_p,
            min_p: p.min_p,
            repetition_penalty: p.repetition_penalty,
            presence_penalty: p.presence_penalty,
            frequency_penalty: p.frequency_penalty,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(f: impl FnOnce(&mut SvSamplingParams)) -> SvSamplingParams {
        let mut p = SvSamplingParams::from(&SamplingParams::default());
        f(&mut p);
        p
    }

    #[test]
    fn layout_is_the_headers() {
        assert_eq!(std::mem::size_of::<SvSamplingParams>(), 56);
        assert_eq!(std::mem::align_of::<SvSamplingParams>(), 8);
    }

    #[test]
    fn valid_fields_convert_unchanged() {
        let p = SamplingParams {
            temperature: 0.7,
            top_k: 5,
            top_p: 0.9,
            min_p: 0.05,
            repetition_penalty: 1.1,
            presence_penalty: 0.5,
            frequency_penalty: -0.25,
        };
        assert_eq!(SamplingParams::try_from(&SvSamplingParams::from(&p)), Ok(p));
    }

    #[test]
    fn every_bad_field_is_a_bad_param_naming_it() {
        let cases: [(SvSamplingParams, &str); 6] = [
            (raw(|p| p.top_k = -1), "top_k"),
            (raw(|p| p.temperature = -1.0), "temperature"),
            (raw(|p| p.top_p = 0.0), "top_p"),
            (raw(|p| p.min_p = f64::NAN), "min_p"),
            (raw(|p| p.repetition_penalty = 0.0), "repetition_penalty"),
            (
                raw(|p| p.frequency_penalty = f64::INFINITY),
                "frequency_penalty",
            ),
        ];
        for (bad, field) in cases {
            let error = SamplingParams::try_from(&bad).unwrap_err();
            assert_eq!(error.code, ErrorCode::BadParam, "{bad:?}");
            assert!(error.message.contains(field), "{}", error.message);
        }
    }
}
