//! `propose_and_verify` (CONTRACT.md section 14): the round an engine runs on its own stream,
//! the draft's sampling included. The `k` drafts are drawn here from the draft's logits after
//! the draft's processors (`q_i` with the penalties seeing `history + x_1..x_{i-1}`), then
//! verified by the token rule (`verify_draft`) with `q_1..q_k` as the draft rows.
//!
//! Draw order (the reference's, `reference/propose.py`; the contract checks only the law): the
//! `k` drafts first (one uniform each, none for a greedy draft), then the verification's
//! uniforms, every uniform used once.
//!
//! Planted bug `bug_draft_shares_verifier_noise` (vLLM PR #47386, fixed in #54282): the
//! verifier starts again at the first of the draft's uniforms, so the draft's `i`-th token and
//! the verifier's `i`-th draw share one random slot (`x_1` is drawn with the `u_accept` that
//! then judges it) and the output leans toward the draft.

use crate::error::{fail, ErrorCode, SvError, SvResult};
use crate::sampling::{argmax, check_logits_row, distribution_unchecked, sample_with};
use crate::sampling::{validate_ids, SamplingParams};
use crate::verify::{verify_draft, Verified};

/// A parameter error of the draft's processors, naming `draft_params.<field>`.
pub(crate) fn draft_params_error(error: SvError) -> SvError {
    let message = error.message.replacen("params.", "draft_params.", 1);
    SvError::new(error.code, message)
}

/// `propose_and_verify(target_logits, draft_logits, p, history, rng, prompt, draft_params)`.
///
/// `draft_logits` is `k * v` row-major (row `i`: the draft's logits for the `i`-th draft),
/// `target_logits` `(k + 1) * v`. Everything that does not depend on the drafts is validated
/// before the first draw (parameters, shapes, NaN and +inf, rows without a finite entry, ids);
/// a row that overflows only with the drafts drawn in this call fails when it is reached.
#[allow(clippy::too_many_arguments)] // the contract's propose_and_verify takes these
pub fn propose_and_verify<F>(
    target_logits: &[f64],
    draft_logits: &[f64],
    v: usize,
    p: &SamplingParams,
    draft_p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
    mut uniform: F,
) -> SvResult<Verified>
where
    F: FnMut() -> SvResult<f64>,
{
    p.validate()?;
    draft_p.validate().map_err(draft_params_error)?;
    if v == 0 {
        return fail(ErrorCode::Shape, "V: must be >= 1");
    }
    if draft_logits.len() % v != 0 {
        return fail(
            ErrorCode::Shape,
            format!(
                "draft_logits: has {} values; it must be k * V for V = {v}",
                draft_logits.len()
            ),
        );
    }
    let k = draft_logits.len() / v;
    if Some(target_logits.len()) != (k + 1).checked_mul(v) {
        return fail(
            ErrorCode::Shape,
            format!(
                "target_logits: has {} values; it must be (k + 1) * V = ({k} + 1) * {v}",
                target_logits.len()
            ),
        );
    }
    for (name, rows) in [
        ("draft_logits", draft_logits),
        ("target_logits", target_logits),
    ] {
        for (i, row) in rows.chunks_exact(v).enumerate() {
            check_logits_row(&format!("{name} row {i}"), row)?;
        }
    }
    validate_ids("history", history, v)?;
    validate_ids("prompt", prompt, v)?;

    let mut seen = history.to_vec();
    let mut drafted: Vec<i64> = Vec::with_capacity(k);
    let mut q_rows: Vec<f64> = Vec::with_capacity(k * v);
    #[cfg(feature = "bug_draft_shares_verifier_noise")]
    let mut draft_uniforms: Vec<f64> = Vec::with_capacity(k);
    for row in draft_logits.chunks_exact(v) {
        let q_i = distribution_unchecked(row, draft_p, &seen, prompt)?;
        let x = if draft_p.is_greedy() {
            argmax(&q_i)
        } else {
            let u = uniform()?;
            #[cfg(feature = "bug_draft_shares_verifier_noise")]
            draft_uniforms.push(u);
            sample_with(&q_i, u)
        } as i64;
        drafted.push(x);
        seen.push(x);
        q_rows.extend_from_slice(&q_i);
    }
    // A greedy draft proposes its argmax: verified as deterministic (one-hot rows).
    let draft_probs = if draft_p.is_greedy() || k == 0 {
        None
    } else {
        Some(q_rows.as_slice())
    };
    #[cfg(feature = "bug_draft_shares_verifier_noise")]
    let uniform = {
        let mut replay = draft_uniforms.into_iter();
        move || replay.next().map_or_else(&mut uniform, Ok)
    };
    verify_draft(
        target_logits,
        v,
        &drafted,
        draft_probs,
        p,
        history,
        prompt,
        uniform,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcg32::request_rng;

    fn logits_of(weights: &[f64]) -> Vec<f64> {
        weights.iter().map(|w| w.ln()).collect()
    }

    #[test]
    fn drafts_come_first_then_the_verification_of_the_same_stream() {
        // draft q = (1/2, 1/2): u = 0.75 drafts token 1; the target p = (1/4, 3/4) accepts it
        // at u_accept = 0.25 (0.25 * 0.5 < 0.75); the bonus row (1, 0) gives token 0.
        let draft = logits_of(&[0.5, 0.5]);
        let mut target = logits_of(&[0.25, 0.75]);
        target.extend([0.0, f64::NEG_INFINITY]);
        let script = [0.75, 0.25, 0.99, 0.5];
        let mut drawn = 0;
        let p = SamplingParams::default();
        let out = propose_and_verify(&target, &draft, 2, &p, &p, &[], &[], || {
            drawn += 1;
            Ok(script[drawn - 1])
        })
        .unwrap();
        #[cfg(not(feature = "bug_draft_shares_verifier_noise"))]
        assert_eq!((out.emitted, out.n_accepted, drawn), (vec![1, 0], 1, 4));
        #[cfg(feature = "bug_draft_shares_verifier_noise")]
        {
            // the verifier reads 0.75 again as u_accept: 0.75 * 0.5 < 0.75, kept all the same
            assert_eq!((out.emitted, out.n_accepted, drawn), (vec![1, 0], 1, 3));
        }
    }

    #[test]
    fn a_greedy_draft_proposes_its_argmax_and_draws_nothing_for_it() {
        let draft = logits_of(&[0.2, 0.5, 0.3]);
        let target = vec![0.0; 6];
        let mut rng = request_rng(7);
        let mut drawn = 0;
        let out = propose_and_verify(
            &target,
            &draft,
            3,
            &SamplingParams::default(),
            &SamplingParams::greedy(),
            &[],
            &[],
            || {
                drawn += 1;
                Ok(rng.random())
            },
        )
        .unwrap();
        // a deterministic draft of token 1 under uniform p: kept iff u_accept < 1/3
        assert!(out.emitted[0] == 1 || out.n_accepted == 0, "{out:?}");
        assert!(drawn == 2 || drawn == 3, "{drawn}");
    }

    #[test]
    fn bad_input_fails_before_the_first_draw() {
        let p = SamplingParams::default();
        let mut drawn = 0;
        let mut count = || {
            drawn += 1;
            Ok(0.5)
        };
        let bad = SamplingParams { top_p: 0.0, ..p };
        let e = propose_and_verify(&[0.0; 4], &[0.0; 2], 2, &p, &bad, &[], &[], &mut count)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::BadParam);
        assert!(
            e.message.starts_with("draft_params.top_p="),
            "{}",
            e.message
        );
        let e =
            propose_and_verify(&[0.0; 2], &[0.0; 2], 2, &p, &p, &[], &[], &mut count).unwrap_err();
        assert_eq!(e.code, ErrorCode::Shape);
        assert!(e.message.starts_with("target_logits:"), "{}", e.message);
        let mut nan_target = vec![0.0; 6];
        nan_target[5] = f64::NAN; // the bonus row: only read after both drafts are drawn
        let e = propose_and_verify(&nan_target, &[0.0; 4], 2, &p, &p, &[], &[], &mut count)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Nan);
        assert!(e.message.contains("target_logits row 2"), "{}", e.message);
        let e =
            propose_and_verify(&[0.0; 4], &[0.0; 2], 2, &p, &p, &[2], &[], &mut count).unwrap_err();
        assert_eq!(e.code, ErrorCode::IdRange);
        assert_eq!(drawn, 0);
    }
}
