//! Verification (CONTRACT.md section 3): the rejection step and `verify_draft`.
//!
//! Draw order (seed section 2.5): per verified position `u_accept` then `u_resample`, always
//! both; the bonus is one uniform; greedy draws nothing.

use crate::error::{fail, ErrorCode, SvResult};
use crate::sampling::{
    argmax, check_logits_row, check_scaled, distribution_unchecked, lane_sum, sample_with,
    sequential_sum, validate_ids, SamplingParams,
};

/// A draft row must sum to 1 within this.
pub const DRAFT_ROW_TOLERANCE: f64 = 1e-6;

/// `max(0, p - q) / Z` with `Z` its lane sum; `None` when `Z == 0` (only by rounding).
pub fn residual(p: &[f64], q: &[f64]) -> Option<Vec<f64>> {
    let d: Vec<f64> = p.iter().zip(q).map(|(&a, &b)| (a - b).max(0.0)).collect();
    let z = lane_sum(&d);
    if z > 0.0 {
        Some(d.iter().map(|&x| x / z).collect())
    } else {
        None
    }
}

/// One verified position: `(token, accepted)`. Accept iff `u_accept * q[x] < p[x]`;
/// otherwise the residual's inverse CDF at `u_resample` (or `p`'s if the residual is empty).
/// Inputs must be valid (`q[x] > 0`, `x < V`).
///
/// Planted bug `bug_residual_from_p`: a rejection resamples from `p` itself.
pub fn speculative_step(
    p: &[f64],
    q: &[f64],
    x: usize,
    u_accept: f64,
    u_resample: f64,
) -> (usize, bool) {
    if u_accept * q[x] < p[x] {
        return (x, true);
    }
    #[cfg(not(feature = "bug_residual_from_p"))]
    let token = match residual(p, q) {
        Some(r) => sample_with(&r, u_resample),
        None => sample_with(p, u_resample),
    };
    #[cfg(feature = "bug_residual_from_p")]
    let token = sample_with(p, u_resample);
    (token, false)
}

/// The outcome of one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The kept drafts followed by the target's own token: `n_accepted + 1` ids.
    pub emitted: Vec<i64>,
    /// How many drafts were kept.
    pub n_accepted: usize,
}

/// Checks the draft distributions: finite, non-negative, rows summing to 1, `q_i(x_i) > 0`.
fn check_draft_probs(q: &[f64], ids: &[i64], v: usize) -> SvResult<()> {
    if let Some(i) = q.iter().position(|x| !x.is_finite() || *x < 0.0) {
        return fail(
            ErrorCode::Distribution,
            format!(
                "draft_probs: entry (row {}, id {}) is {:?}; probabilities must be finite and >= 0",
                i / v,
                i % v,
                q[i]
            ),
        );
    }
    for (i, (row, &x)) in q.chunks_exact(v).zip(ids).enumerate() {
        let total = sequential_sum(row);
        if (total - 1.0).abs() > DRAFT_ROW_TOLERANCE {
            return fail(
                ErrorCode::Distribution,
                format!(
                    "draft_probs: row {i} sums to {total:?}; each row must sum to 1 within 1e-6"
                ),
            );
        }
        if row[x as usize] <= 0.0 {
            return fail(
                ErrorCode::ZeroDraftProb,
                format!(
                    "draft_probs: row {i} gives the drafted token {x} probability 0; a draft can only \
                     propose tokens it could draw"
                ),
            );
        }
    }
    Ok(())
}

/// Validates one round's arguments (every chain rule shares them, CONTRACT.md section 3)
/// before the first draw: the target rows and the draft rows a sampled round reads.
#[allow(clippy::type_complexity)]
pub(crate) fn check_round<'a>(
    target_logits: &'a [f64],
    v: usize,
    draft_ids: &[i64],
    draft_probs: Option<&'a [f64]>,
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
) -> SvResult<(Vec<&'a [f64]>, Option<&'a [f64]>)> {
    p.validate()?;
    let m = draft_ids.len();
    if v == 0 {
        return fail(ErrorCode::Shape, "V: must be >= 1");
    }
    match (m + 1).checked_mul(v) {
        Some(n) if n == target_logits.len() => {}
        _ => {
            return fail(
                ErrorCode::Shape,
                format!(
                    "target_logits: has {} values; it must be (m + 1) * V = ({} + 1) * {v}",
                    target_logits.len(),
                    m
                ),
            )
        }
    }
    if !p.is_greedy() {
        if let Some(q) = draft_probs {
            if q.len() != m * v {
                return fail(
                    ErrorCode::Shape,
                    format!(
                        "draft_probs: has {} values; it must be m * V = {m} * {v}",
                        q.len()
                    ),
                );
            }
        }
    }
    if let Some(i) = target_logits.iter().position(|x| x.is_nan()) {
        return fail(
            ErrorCode::Nan,
            format!("target_logits: has NaN at (row, id) ({}, {})", i / v, i % v),
        );
    }
    for (i, row) in target_logits.chunks_exact(v).enumerate() {
        check_logits_row(&format!("target_logits row {i}"), row)?;
    }
    validate_ids("draft_ids", draft_ids, v)?;
    validate_ids("history", history, v)?;
    validate_ids("prompt", prompt, v)?;
    let q_rows = if p.is_greedy() { None } else { draft_probs };
    if let Some(q) = q_rows {
        check_draft_probs(q, draft_ids, v)?;
    }
    let rows: Vec<&[f64]> = target_logits.chunks_exact(v).collect();
    // Row i is only ever computed with history + x_1..x_i: its overflow is known before the
    // first draw (CONTRACT.md section 3), so a failing call draws nothing.
    let mut seen: Vec<i64> = history.to_vec();
    for (i, row) in rows.iter().enumerate() {
        check_scaled(row, p, &seen, prompt)?;
        if let Some(&x) = draft_ids.get(i) {
            seen.push(x);
        }
    }
    Ok((rows, q_rows))
}

/// `verify_draft(target_logits, draft_ids, draft_probs, p, history, rng, prompt)`.
///
/// `target_logits` is `(m + 1) * v` row-major with `m = draft_ids.len()`; `draft_probs` is
/// `m * v` or `None` (a deterministic draft: one-hot `q_i`). `uniform` is called for every
/// draw, in the contract's order, and may fail (its error is returned as is). Everything is
/// validated before the first draw.
#[allow(clippy::too_many_arguments)] // the contract's verify_draft takes these eight
pub fn verify_draft<F>(
    target_logits: &[f64],
    v: usize,
    draft_ids: &[i64],
    draft_probs: Option<&[f64]>,
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
    mut uniform: F,
) -> SvResult<Verified>
where
    F: FnMut() -> SvResult<f64>,
{
    let (rows, q_rows) = check_round(target_logits, v, draft_ids, draft_probs, p, history, prompt)?;
    let m = draft_ids.len();
    let mut seen: Vec<i64> = history.to_vec();

    let mut kept: Vec<i64> = Vec::with_capacity(m + 1);
    // What the penalties see for row i: history plus the drafts kept so far this round.
    // Planted bug `bug_penalty_ignores_kept`: they see `history` alone.
    let penalty_history = |seen: &Vec<i64>| -> Vec<i64> {
        #[cfg(not(feature = "bug_penalty_ignores_kept"))]
        {
            seen.clone()
        }
        #[cfg(feature = "bug_penalty_ignores_kept")]
        {
            seen[..history.len()].to_vec()
        }
    };
    // Planted bug `bug_bonus_wrong_row`: the bonus comes from row m - 1.
    #[cfg(not(feature = "bug_bonus_wrong_row"))]
    let bonus_row = m;
    #[cfg(feature = "bug_bonus_wrong_row")]
    let bonus_row = m.saturating_sub(1);

    if p.is_greedy() {
        for (i, &x) in draft_ids.iter().enumerate() {
            let p_i = distribution_unchecked(rows[i], p, &penalty_history(&seen), prompt)?;
            let best = argmax(&p_i) as i64;
            if x != best {
                kept.push(best);
                let n_accepted = kept.len() - 1;
                return Ok(Verified {
                    emitted: kept,
                    n_accepted,
                });
            }
            kept.push(x);
            seen.push(x);
        }
        let p_m = distribution_unchecked(rows[bonus_row], p, &penalty_history(&seen), prompt)?;
        kept.push(argmax(&p_m) as i64);
        return Ok(Verified {
            emitted: kept,
            n_accepted: m,
        });
    }

    for (i, &x) in draft_ids.iter().enumerate() {
        let p_i = distribution_unchecked(rows[i], p, &penalty_history(&seen), prompt)?;
        let one_hot;
        let q_i: &[f64] = match q_rows {
            Some(q) => &q[i * v..(i + 1) * v],
            None => {
                let mut e = vec![0.0; v];
                e[x as usize] = 1.0;
                one_hot = e;
                &one_hot
            }
        };
        // Planted bug `bug_resample_before_accept`: the two draws swap places.
        #[cfg(not(feature = "bug_resample_before_accept"))]
        let (u_accept, u_resample) = {
            let a = uniform()?;
            let r = uniform()?;
            (a, r)
        };
        #[cfg(feature = "bug_resample_before_accept")]
        let (u_accept, u_resample) = {
            let r = uniform()?;
            let a = uniform()?;
            (a, r)
        };
        let (token, accepted) = speculative_step(&p_i, q_i, x as usize, u_accept, u_resample);
        kept.push(token as i64);
        if !accepted {
            let n_accepted = kept.len() - 1;
            return Ok(Verified {
                emitted: kept,
                n_accepted,
            });
        }
        seen.push(x);
    }
    let p_m = distribution_unchecked(rows[bonus_row], p, &penalty_history(&seen), prompt)?;
    let u = uniform()?;
    kept.push(sample_with(&p_m, u) as i64);
    Ok(Verified {
        emitted: kept,
        n_accepted: m,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A uniform source that replays `values` and counts draws.
    struct Replay {
        values: Vec<f64>,
        drawn: usize,
    }

    impl Replay {
        fn new(values: &[f64]) -> Self {
            Replay {
                values: values.to_vec(),
                drawn: 0,
            }
        }
        fn next(&mut self) -> SvResult<f64> {
            let u = self.values[self.drawn];
            self.drawn += 1;
            Ok(u)
        }
    }

    /// Logits whose softmax at temperature 1 is exactly proportional to `weights`.
    fn logits_of(weights: &[f64]) -> Vec<f64> {
        weights.iter().map(|w| w.ln()).collect()
    }

    fn greedy_rows() -> Vec<f64> {
        vec![0.0, 1.0, 3.0, 2.0, 1.0, 0.0, 0.0, 5.0, 1.0]
    }

    #[test]
    fn every_row_is_checked_before_the_first_draw() {
        // Row 2 overflows only with the kept drafts [1, 1] in the history (-1e308 * 10): with
        // u = 0 both drafts would be kept (four draws) before reaching it.
        let mut target = vec![0.0; 9];
        target[7] = -1e308;
        let p = SamplingParams {
            repetition_penalty: 10.0,
            ..SamplingParams::default()
        };
        let mut rng = Replay::new(&[0.0; 5]);
        let error =
            verify_draft(&target, 3, &[1, 1], None, &p, &[], &[], || rng.next()).unwrap_err();
        assert_eq!(error.code, ErrorCode::Nan);
        assert!(error.message.contains("penalties"), "{}", error.message);
        assert_eq!(rng.drawn, 0);
    }

    #[test]
    fn speculative_step_hand_example() {
        let p = [0.5, 0.25, 0.25];
        let q = [0.25, 0.5, 0.25];
        assert_eq!(speculative_step(&p, &q, 1, 0.7, 0.4), (0, false));
        assert_eq!(speculative_step(&p, &q, 1, 0.3, 0.9), (1, true));
    }

    #[test]
    fn hand_example_sampled_rejected() {
        // p = [1/2, 1/4, 1/4], q = [1/4, 1/2, 1/4], x = 1; uniforms 0.7, 0.4 -> [0], 0 accepted.
        let mut target = logits_of(&[2.0, 1.0, 1.0]);
        target.extend(logits_of(&[1.0, 1.0, 1.0]));
        let q = [0.25, 0.5, 0.25];
        let mut rng = Replay::new(&[0.7, 0.4, 0.99]);
        let out = verify_draft(
            &target,
            3,
            &[1],
            Some(&q),
            &SamplingParams::default(),
            &[],
            &[],
            || rng.next(),
        )
        .unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![0],
                n_accepted: 0
            }
        );
        assert_eq!(
            rng.drawn, 2,
            "a rejection draws exactly u_accept and u_resample"
        );
    }

    #[test]
    fn hand_example_sampled_kept_then_bonus() {
        // u_accept = 0.3 keeps x = 1 (0.3 * 1/2 < 1/4); u_resample = 0.9 is drawn and ignored;
        // the bonus is a third uniform (0.1) on row 1, here all mass on id 2: [1, 2].
        let mut target = logits_of(&[2.0, 1.0, 1.0]);
        target.extend([f64::NEG_INFINITY, f64::NEG_INFINITY, 0.0]);
        let q = [0.25, 0.5, 0.25];
        let mut rng = Replay::new(&[0.3, 0.9, 0.1]);
        let out = verify_draft(
            &target,
            3,
            &[1],
            Some(&q),
            &SamplingParams::default(),
            &[],
            &[],
            || rng.next(),
        )
        .unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![1, 2],
                n_accepted: 1
            }
        );
        assert_eq!(
            rng.drawn, 3,
            "two uniforms for the position, one for the bonus"
        );
    }

    #[test]
    fn draw_order_is_accept_then_resample() {
        // x = 0 with q one-hot and p(0) = 1/2: accepted iff u_accept < 1/2. The first uniform
        // (0.2) must be u_accept; swapping them (0.9 first) would reject.
        let mut target = logits_of(&[1.0, 1.0]);
        target.extend(logits_of(&[1.0, 1.0]));
        let mut rng = Replay::new(&[0.2, 0.9, 0.7]);
        let out = verify_draft(
            &target,
            2,
            &[0],
            None,
            &SamplingParams::default(),
            &[],
            &[],
            || rng.next(),
        )
        .unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![0, 1],
                n_accepted: 1
            }
        );
    }

    #[test]
    fn residual_not_p_after_rejection() {
        // Deterministic draft x = 0, p = [1/2, 1/2]: a rejection can only give token 1.
        let target = [0.0, 0.0, 0.0, 0.0];
        let mut rng = Replay::new(&[0.9, 0.1]);
        let out = verify_draft(
            &target,
            2,
            &[0],
            None,
            &SamplingParams::default(),
            &[],
            &[],
            || rng.next(),
        )
        .unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![1],
                n_accepted: 0
            }
        );
    }

    #[test]
    fn hand_example_greedy() {
        let rows = greedy_rows();
        let g = SamplingParams::greedy();
        let never = || -> SvResult<f64> { panic!("greedy must not draw") };
        let out = verify_draft(&rows, 3, &[2, 1], None, &g, &[], &[], never).unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![2, 0],
                n_accepted: 1
            }
        );
        let out = verify_draft(&rows, 3, &[2, 0], None, &g, &[], &[], never).unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![2, 0, 1],
                n_accepted: 2
            }
        );
        let out = verify_draft(&rows, 3, &[0, 0], None, &g, &[], &[], never).unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![2],
                n_accepted: 0
            }
        );
        // draft_probs is ignored when greedy, even if it is garbage
        let garbage = [f64::NAN; 6];
        let out = verify_draft(&rows, 3, &[2, 0], Some(&garbage), &g, &[], &[], never).unwrap();
        assert_eq!(out.emitted, vec![2, 0, 1]);
    }

    #[test]
    fn greedy_ties_to_lowest() {
        let rows = [1.0, 1.0, 0.0, 0.0, 3.0, 3.0];
        let g = SamplingParams::greedy();
        let out = verify_draft(&rows, 3, &[0], None, &g, &[], &[], || Ok(0.0)).unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![0, 1],
                n_accepted: 1
            }
        );
    }

    #[test]
    fn penalties_see_the_accepted_drafts() {
        // Greedy, repetition penalty 4: row 1 prefers token 0 (2.0 vs 1.0) unless 0 was kept
        // this round, which makes it 0.5.
        let rows = [2.0, 1.0, 2.0, 1.0];
        let p = SamplingParams {
            repetition_penalty: 4.0,
            ..SamplingParams::greedy()
        };
        let out = verify_draft(&rows, 2, &[0], None, &p, &[], &[], || Ok(0.0)).unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![0, 1],
                n_accepted: 1
            }
        );
    }

    #[test]
    fn m_zero_is_only_the_bonus() {
        let mut rng = Replay::new(&[0.6]);
        let out = verify_draft(
            &[0.0, 0.0],
            2,
            &[],
            None,
            &SamplingParams::default(),
            &[],
            &[],
            || rng.next(),
        )
        .unwrap();
        assert_eq!(
            out,
            Verified {
                emitted: vec![1],
                n_accepted: 0
            }
        );
        assert_eq!(rng.drawn, 1);
    }

    #[test]
    fn errors_before_any_draw() {
        let p = SamplingParams::default();
        let never = || -> SvResult<f64> { panic!("must not draw on invalid input") };
        let code = |r: SvResult<Verified>| r.unwrap_err().code;
        let t = [0.0; 6];
        assert_eq!(
            code(verify_draft(&t[..3], 3, &[0], None, &p, &[], &[], never)),
            ErrorCode::Shape
        );
        assert_eq!(
            code(verify_draft(
                &t,
                3,
                &[0],
                Some(&[1.0, 0.0]),
                &p,
                &[],
                &[],
                never
            )),
            ErrorCode::Shape
        );
        assert_eq!(
            code(verify_draft(&t, 3, &[3], None, &p, &[], &[], never)),
            ErrorCode::IdRange
        );
        assert_eq!(
            code(verify_draft(&t, 3, &[0], None, &p, &[5], &[], never)),
            ErrorCode::IdRange
        );
        assert_eq!(
            code(verify_draft(&t, 3, &[0], None, &p, &[], &[-1], never)),
            ErrorCode::IdRange
        );
        let mut nan = t;
        nan[4] = f64::NAN;
        assert_eq!(
            code(verify_draft(&nan, 3, &[0], None, &p, &[], &[], never)),
            ErrorCode::Nan
        );
        // two rules broken: the header's order reports NaN before the id range
        assert_eq!(
            code(verify_draft(&nan, 3, &[9], None, &p, &[], &[], never)),
            ErrorCode::Nan
        );
        let mut inf = t;
        inf[5] = f64::INFINITY;
        assert_eq!(
            code(verify_draft(&inf, 3, &[0], None, &p, &[], &[], never)),
            ErrorCode::Nan
        );
        let banned = [
            0.0,
            0.0,
            0.0,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ];
        assert_eq!(
            code(verify_draft(&banned, 3, &[0], None, &p, &[], &[], never)),
            ErrorCode::Nan
        );
        assert_eq!(
            code(verify_draft(
                &t,
                3,
                &[0],
                Some(&[0.0, 0.5, 0.5]),
                &p,
                &[],
                &[],
                never
            )),
            ErrorCode::ZeroDraftProb
        );
        assert_eq!(
            code(verify_draft(
                &t,
                3,
                &[0],
                Some(&[0.5, 0.2, 0.2]),
                &p,
                &[],
                &[],
                never
            )),
            ErrorCode::Distribution
        );
        assert_eq!(
            code(verify_draft(
                &t,
                3,
                &[0],
                Some(&[1.5, -0.5, 0.0]),
                &p,
                &[],
                &[],
                never
            )),
            ErrorCode::Distribution
        );
        let bad = SamplingParams { top_p: 0.0, ..p };
        assert_eq!(
            code(verify_draft(&t, 3, &[0], None, &bad, &[], &[], never)),
            ErrorCode::BadParam
        );
    }

    #[test]
    fn uniform_errors_propagate() {
        let err = verify_draft(
            &[0.0, 0.0],
            2,
            &[],
            None,
            &SamplingParams::default(),
            &[],
            &[],
            || fail(ErrorCode::Callback, "boom"),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::Callback);
    }
}
