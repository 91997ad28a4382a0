//! The sampling distribution and inverse-CDF sampling (CONTRACT.md section 2).
//!
//! Mirrors `reference/sampling.py` operation for operation: penalties, then greedy one-hot or
//! temperature, top-k, softmax, top-p, min-p and renormalisation; every sum is sequential in
//! ascending id order, every tie goes to the lowest id.

use crate::error::{fail, ErrorCode, SvResult};
use std::cmp::Ordering;

/// CONTRACT.md's `SamplingParams` without the generation-only fields. The ABI's
/// `sv_sampling_params` is a separate `#[repr(C)]` struct converted with `TryFrom`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingParams {
    pub temperature: f64,
    /// 0 is off, and so is any `top_k >= V`.
    pub top_k: usize,
    pub top_p: f64,
    pub min_p: f64,
    pub repetition_penalty: f64,
    pub presence_penalty: f64,
    pub frequency_penalty: f64,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
        }
    }
}

impl SamplingParams {
    /// Greedy parameters (temperature 0), everything else off.
    pub fn greedy() -> Self {
        SamplingParams {
            temperature: 0.0,
            ..Self::default()
        }
    }

    /// `temperature == 0`: argmax, no uniform.
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// Checks every field against CONTRACT.md's ranges (all must be finite; `top_k` is a
    /// `usize`, so always in range).
    pub fn validate(&self) -> SvResult<()> {
        check_real(
            "temperature",
            self.temperature,
            self.temperature >= 0.0,
            ">= 0",
        )?;
        check_real(
            "top_p",
            self.top_p,
            self.top_p > 0.0 && self.top_p <= 1.0,
            "in (0, 1]",
        )?;
        check_real(
            "min_p",
            self.min_p,
            (0.0..=1.0).contains(&self.min_p),
            "in [0, 1]",
        )?;
        check_real(
            "repetition_penalty",
            self.repetition_penalty,
            self.repetition_penalty > 0.0,
            "> 0",
        )?;
        check_real("presence_penalty", self.presence_penalty, true, "any value")?;
        check_real(
            "frequency_penalty",
            self.frequency_penalty,
            true,
            "any value",
        )?;
        Ok(())
    }
}

fn check_real(name: &str, value: f64, ok: bool, rule: &str) -> SvResult<()> {
    if !value.is_finite() || !ok {
        return fail(
            ErrorCode::BadParam,
            format!("params.{name}={value:?}: must be finite and {rule}"),
        );
    }
    Ok(())
}

/// Every id in `[0, v)`; the error names `argument` and the first bad entry.
pub fn validate_ids(argument: &str, ids: &[i64], v: usize) -> SvResult<()> {
    for (i, &id) in ids.iter().enumerate() {
        if id < 0 || id as u64 >= v as u64 {
            return fail(
                ErrorCode::IdRange,
                format!("{argument}: entry {i} is {id}; ids must be in [0, {v})"),
            );
        }
    }
    Ok(())
}

/// One row of logits: no NaN, no +inf, at least one finite entry.
pub fn check_logits_row(argument: &str, row: &[f64]) -> SvResult<()> {
    if row.is_empty() {
        return fail(
            ErrorCode::Shape,
            format!("{argument}: must hold V >= 1 logits"),
        );
    }
    if let Some(i) = row.iter().position(|x| x.is_nan()) {
        return fail(ErrorCode::Nan, format!("{argument}: has NaN at id {i}"));
    }
    if let Some(i) = row.iter().position(|&x| x == f64::INFINITY) {
        return fail(
            ErrorCode::Nan,
            format!("{argument}: has +inf at id {i}; logits must be finite or -inf"),
        );
    }
    if !row.iter().any(|x| x.is_finite()) {
        return fail(
            ErrorCode::Nan,
            format!("{argument}: has no finite entry: every token would be banned"),
        );
    }
    Ok(())
}

/// A probability vector: finite, non-negative, with a positive entry.
pub fn check_probs(argument: &str, probs: &[f64]) -> SvResult<()> {
    if let Some(i) = probs.iter().position(|x| !x.is_finite() || *x < 0.0) {
        return fail(
            ErrorCode::Distribution,
            format!(
                "{argument}: entry {i} is {:?}; probabilities must be finite and >= 0",
                probs[i]
            ),
        );
    }
    if !probs.iter().any(|&x| x > 0.0) {
        return fail(
            ErrorCode::Distribution,
            format!("{argument}: has no positive entry"),
        );
    }
    Ok(())
}

/// Index of the maximum, ties to the lowest id (numpy's `argmax`: a NaN wins, first one).
///
/// Planted bug `bug_ties_highest`: ties go to the highest id.
pub fn argmax(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in values.iter().enumerate().skip(1) {
        let current = values[best];
        if current.is_nan() {
            break;
        }
        #[cfg(not(feature = "bug_ties_highest"))]
        let better = x > current || x.is_nan();
        #[cfg(feature = "bug_ties_highest")]
        let better = x >= current || x.is_nan();
        if better {
            best = i;
        }
    }
    best
}

/// Left-to-right sum (ascending id): the inverse CDF's running sum and top-p's walk.
pub fn sequential_sum(values: &[f64]) -> f64 {
    let mut total = 0.0;
    for &x in values {
        total += x;
    }
    total
}

/// Lanes of the contract's lane sum (CONTRACT.md 2.5).
pub const LANES: usize = 1024;

/// The contract's lane sum (softmax `S`, renormalisation, residual `Z`): lane `l` adds the
/// values at ids `l, l + 1024, l + 2048, ...` in ascending order, then the 1,024 lane totals
/// are added in lane order. For `V <= 1024` it is the sequential sum.
pub fn lane_sum(values: &[f64]) -> f64 {
    if values.len() <= LANES {
        return sequential_sum(values);
    }
    let mut lanes = [0.0f64; LANES];
    for chunk in values.chunks(LANES) {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane += x;
        }
    }
    sequential_sum(&lanes)
}

/// Ids ordered by `(-value, id)`: largest first, ties to the lowest id.
fn order_desc(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| {
        values[b]
            .partial_cmp(&values[a])
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    order
}

/// The penalised logits (CONTRACT.md 2.1): repetition sees `prompt + history` (distinct ids),
/// presence and frequency see `history`; applied as `reference/sampling.py` applies them.
/// Ids must already be validated.
///
/// Planted bug `bug_penalty_window`: the penalties see only the last 1024 history tokens.
fn penalised(row: &[f64], p: &SamplingParams, history: &[i64], prompt: &[i64]) -> Vec<f64> {
    #[cfg(feature = "bug_penalty_window")]
    let history = &history[history.len().saturating_sub(1024)..];
    let v = row.len();
    let mut out = row.to_vec();
    if p.repetition_penalty != 1.0 {
        let mut seen = vec![false; v];
        for &t in prompt.iter().chain(history.iter()) {
            seen[t as usize] = true;
        }
        for (t, value) in out.iter_mut().enumerate() {
            if seen[t] {
                *value = if *value > 0.0 {
                    *value / p.repetition_penalty
                } else {
                    *value * p.repetition_penalty
                };
            }
        }
    }
    if p.presence_penalty != 0.0 || p.frequency_penalty != 0.0 {
        let mut counts = vec![0u64; v];
        for &t in history {
            counts[t as usize] += 1;
        }
        for (t, value) in out.iter_mut().enumerate() {
            if counts[t] > 0 {
                // One subtraction of (presence + frequency * count), as the reference does.
                *value -= p.presence_penalty + p.frequency_penalty * counts[t] as f64;
            }
        }
    }
    out
}

/// A finite logit that became +-inf in `step` (a float64 overflow) is `ErrorCode::Nan`
/// (CONTRACT.md section 2): +inf would make the softmax NaN, -inf would silently ban a token.
fn check_finite_after(before: &[f64], after: &[f64], step: &str) -> SvResult<()> {
    match before
        .iter()
        .zip(after)
        .position(|(b, a)| b.is_finite() && !a.is_finite())
    {
        Some(t) => fail(
            ErrorCode::Nan,
            format!(
                "logits: the logit {:?} at id {t} overflows float64 {step}",
                before[t]
            ),
        ),
        None => Ok(()),
    }
}

/// Steps 1 and 3 of CONTRACT.md section 2: the penalised logits, divided by the temperature
/// unless greedy; an overflow in either step is an error.
fn scaled(
    logits: &[f64],
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
) -> SvResult<Vec<f64>> {
    let penalised = penalised(logits, p, history, prompt);
    check_finite_after(
        logits,
        &penalised,
        &format!(
            "under the penalties (repetition_penalty={:?}, presence_penalty={:?}, \
             frequency_penalty={:?}); use penalties that keep the logits finite",
            p.repetition_penalty, p.presence_penalty, p.frequency_penalty
        ),
    )?;
    if p.is_greedy() {
        return Ok(penalised);
    }
    let row: Vec<f64> = penalised.iter().map(|x| x / p.temperature).collect();
    check_finite_after(
        &penalised,
        &row,
        &format!(
            "when divided by temperature={:?}; use temperature 0 for greedy, or a larger one",
            p.temperature
        ),
    )?;
    Ok(row)
}

/// Everything the distribution of an already validated row can still fail on (an overflow),
/// without computing it: `verify_draft` checks every row before its first draw.
pub(crate) fn check_scaled(
    logits: &[f64],
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
) -> SvResult<()> {
    scaled(logits, p, history, prompt).map(|_| ())
}

/// `sampling_distribution(logits, p, history, prompt)`: validates, then computes.
pub fn sampling_distribution(
    logits: &[f64],
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
) -> SvResult<Vec<f64>> {
    p.validate()?;
    check_logits_row("logits", logits)?;
    let v = logits.len();
    validate_ids("history", history, v)?;
    validate_ids("prompt", prompt, v)?;
    distribution_unchecked(logits, p, history, prompt)
}

/// The distribution for inputs already validated (params, row, ids). Can still fail with
/// `ErrorCode::Nan` when a logit overflows in the penalties or the temperature.
pub(crate) fn distribution_unchecked(
    logits: &[f64],
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
) -> SvResult<Vec<f64>> {
    let v = logits.len();
    let mut row = scaled(logits, p, history, prompt)?;
    if p.is_greedy() {
        let mut one_hot = vec![0.0; v];
        one_hot[argmax(&row)] = 1.0;
        return Ok(one_hot);
    }
    if p.top_k > 0 && p.top_k < v {
        let order = order_desc(&row);
        for &t in &order[p.top_k..] {
            row[t] = f64::NEG_INFINITY;
        }
    }
    // -inf entries (banned by the input or by top-k) get probability 0; the maximum is over
    // the finite ones. No +inf is left: `scaled` refused overflows.
    let mut max = f64::NEG_INFINITY;
    let mut any_finite = false;
    for &x in &row {
        if x.is_finite() {
            any_finite = true;
            if x > max {
                max = x;
            }
        }
    }
    if !any_finite {
        return fail(ErrorCode::Nan, "logits: no token survives the filters");
    }
    // `f64::exp` (libm): CONTRACT.md 2.5 allows any exp within one ulp of the exact value
    // (the reference uses numpy's np.exp), so these may differ from the reference's by an
    // ulp; parity compares within 4 ulps and decisions exactly except at a boundary tie.
    let e: Vec<f64> = row
        .iter()
        .map(|&x| if x.is_finite() { (x - max).exp() } else { 0.0 })
        .collect();
    let total = lane_sum(&e);
    #[allow(unused_mut)] // mutated by the planted bug only
    let mut probs: Vec<f64> = e.iter().map(|&x| x / total).collect();
    // Planted bug `bug_shared_scratch`: the probabilities go through one global buffer while
    // the filters run, so concurrent calls read each other's values (a data race).
    #[cfg(feature = "bug_shared_scratch")]
    let scratch = scratch::park(&probs);
    let mut keep: Vec<bool> = probs.iter().map(|&x| x > 0.0).collect();
    if p.top_p < 1.0 {
        let mut top_p_keep = vec![false; v];
        let mut running = 0.0;
        for t in order_desc(&probs) {
            // Planted bug `bug_top_p_inclusive`: keeps a token while `c <= top_p`.
            #[cfg(not(feature = "bug_top_p_inclusive"))]
            let reached = running >= p.top_p;
            #[cfg(feature = "bug_top_p_inclusive")]
            let reached = running > p.top_p;
            if reached {
                break;
            }
            top_p_keep[t] = true;
            running += probs[t];
        }
        for (k, tk) in keep.iter_mut().zip(top_p_keep) {
            *k &= tk;
        }
    }
    if p.min_p > 0.0 {
        let mut max_kept = f64::NEG_INFINITY;
        for (t, &x) in probs.iter().enumerate() {
            if keep[t] && x > max_kept {
                max_kept = x;
            }
        }
        let threshold = p.min_p * max_kept;
        for (t, &x) in probs.iter().enumerate() {
            keep[t] &= x >= threshold;
        }
    }
    #[cfg(feature = "bug_shared_scratch")]
    scratch::unpark(scratch, &mut probs);
    // Renormalise only when a token of positive probability was dropped.
    if probs.iter().zip(&keep).any(|(&x, &k)| x > 0.0 && !k) {
        for (x, &k) in probs.iter_mut().zip(&keep) {
            if !k {
                *x = 0.0;
            }
        }
        let total = lane_sum(&probs);
        for x in probs.iter_mut() {
            *x /= total;
        }
    }
    Ok(probs)
}

#[cfg(feature = "bug_shared_scratch")]
mod scratch {
    //! One process-wide buffer shared by every call: the planted thread-safety bug.
    use std::ptr::addr_of_mut;

    const SIZE: usize = 1 << 18;
    static mut SCRATCH: [f64; SIZE] = [0.0; SIZE];

    /// Copies `probs` into the shared buffer; `None` when it does not fit.
    pub(super) fn park(probs: &[f64]) -> Option<usize> {
        if probs.len() > SIZE {
            return None;
        }
        // SAFETY: none; racing on this buffer is the planted bug.
        unsafe {
            std::ptr::copy_nonoverlapping(
                probs.as_ptr(),
                addr_of_mut!(SCRATCH).cast::<f64>(),
                probs.len(),
            )
        };
        Some(probs.len())
    }

    /// Reads the shared buffer back into `probs` (whatever another call left there).
    pub(super) fn unpark(parked: Option<usize>, probs: &mut [f64]) {
        if let Some(n) = parked {
            // SAFETY: none; racing on this buffer is the planted bug.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    addr_of_mut!(SCRATCH).cast::<f64>(),
                    probs.as_mut_ptr(),
                    n,
                )
            };
        }
    }
}

/// Inverse CDF with the uniform `u`: the first id with `u < c[id]` (`c` the sequential
/// cumulative sum); if rounding leaves none, the highest id with positive probability.
///
/// Planted bug `bug_sample_inclusive`: returns the first id with `u <= c[id]`.
pub fn sample_with(probs: &[f64], u: f64) -> usize {
    let mut c = 0.0;
    for (t, &x) in probs.iter().enumerate() {
        c += x;
        #[cfg(not(feature = "bug_sample_inclusive"))]
        let reached = u < c;
        #[cfg(feature = "bug_sample_inclusive")]
        let reached = u <= c;
        if reached {
            return t;
        }
    }
    probs
        .iter()
        .rposition(|&x| x > 0.0)
        .unwrap_or(probs.len().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(f: impl FnOnce(&mut SamplingParams)) -> SamplingParams {
        let mut p = SamplingParams::default();
        f(&mut p);
        p
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn greedy_is_one_hot_ties_to_lowest() {
        let d =
            sampling_distribution(&[0.0, 1.0, 1.0], &SamplingParams::greedy(), &[], &[]).unwrap();
        assert_eq!(d, vec![0.0, 1.0, 0.0]);
    }

    #[test]
    fn softmax_matches_closed_form() {
        let d = sampling_distribution(
            &[0.0, 2f64.ln(), f64::NEG_INFINITY],
            &SamplingParams::default(),
            &[],
            &[],
        )
        .unwrap();
        assert!(close(&d, &[1.0 / 3.0, 2.0 / 3.0, 0.0]));
        assert_eq!(d[2], 0.0);
    }

    #[test]
    fn temperature_divides_logits() {
        let d = sampling_distribution(
            &[0.0, 2f64.ln() * 2.0],
            &params(|p| p.temperature = 2.0),
            &[],
            &[],
        )
        .unwrap();
        assert!(close(&d, &[1.0 / 3.0, 2.0 / 3.0]));
    }

    #[test]
    fn top_k_keeps_largest_ties_lowest() {
        let d = sampling_distribution(&[1.0, 1.0, 1.0, 0.0], &params(|p| p.top_k = 2), &[], &[])
            .unwrap();
        assert!(close(&d, &[0.5, 0.5, 0.0, 0.0]));
        let d = sampling_distribution(&[1.0, 2.0], &params(|p| p.top_k = 5), &[], &[]).unwrap();
        assert!(d.iter().all(|&x| x > 0.0));
    }

    #[test]
    fn top_p_keeps_shortest_prefix_reaching_it() {
        // probs 0.5, 0.25, 0.25: top_p 0.5 keeps token 0 only; 0.6 keeps 0 and 1 (tie to lowest).
        let logits = [2f64.ln(), 0.0, 0.0];
        let d = sampling_distribution(&logits, &params(|p| p.top_p = 0.5), &[], &[]).unwrap();
        assert_eq!(d, vec![1.0, 0.0, 0.0]);
        let d = sampling_distribution(&logits, &params(|p| p.top_p = 0.6), &[], &[]).unwrap();
        assert!(close(&d, &[2.0 / 3.0, 1.0 / 3.0, 0.0]));
    }

    #[test]
    fn min_p_drops_below_fraction_of_max() {
        let logits = [2f64.ln(), 0.0, -(2f64.ln())]; // 4:2:1
        let d = sampling_distribution(&logits, &params(|p| p.min_p = 0.4), &[], &[]).unwrap();
        assert!(close(&d, &[2.0 / 3.0, 1.0 / 3.0, 0.0]));
    }

    #[test]
    fn penalties_see_their_histories() {
        let g = SamplingParams::greedy();
        // repetition sees the prompt: 2.0 / 4 = 0.5 < 1.0
        let d = sampling_distribution(
            &[2.0, 1.0],
            &SamplingParams {
                repetition_penalty: 4.0,
                ..g
            },
            &[],
            &[0],
        )
        .unwrap();
        assert_eq!(d, vec![0.0, 1.0]);
        // negative logits are multiplied
        let d = sampling_distribution(
            &[-1.0, -2.5],
            &SamplingParams {
                repetition_penalty: 3.0,
                ..g
            },
            &[0],
            &[],
        )
        .unwrap();
        assert_eq!(d, vec![0.0, 1.0]);
        // presence ignores the prompt
        let d = sampling_distribution(
            &[2.0, 1.0],
            &SamplingParams {
                presence_penalty: 5.0,
                ..g
            },
            &[],
            &[0],
        )
        .unwrap();
        assert_eq!(d, vec![1.0, 0.0]);
        // frequency counts occurrences: 3 - 2 * 0.75 = 1.5 < 2, 3 - 1 * 0.75 = 2.25 > 2
        let p = SamplingParams {
            frequency_penalty: 0.75,
            ..g
        };
        assert_eq!(
            sampling_distribution(&[3.0, 2.0], &p, &[0, 0], &[]).unwrap(),
            vec![0.0, 1.0]
        );
        assert_eq!(
            sampling_distribution(&[3.0, 2.0], &p, &[0], &[]).unwrap(),
            vec![1.0, 0.0]
        );
    }

    #[test]
    fn errors() {
        let p = SamplingParams::default();
        let code = |r: SvResult<Vec<f64>>| r.unwrap_err().code;
        assert_eq!(
            code(sampling_distribution(&[f64::NAN, 0.0], &p, &[], &[])),
            ErrorCode::Nan
        );
        assert_eq!(
            code(sampling_distribution(&[f64::INFINITY, 0.0], &p, &[], &[])),
            ErrorCode::Nan
        );
        assert_eq!(
            code(sampling_distribution(&[f64::NEG_INFINITY; 2], &p, &[], &[])),
            ErrorCode::Nan
        );
        assert_eq!(
            code(sampling_distribution(&[], &p, &[], &[])),
            ErrorCode::Shape
        );
        assert_eq!(
            code(sampling_distribution(&[0.0, 0.0], &p, &[2], &[])),
            ErrorCode::IdRange
        );
        assert_eq!(
            code(sampling_distribution(&[0.0, 0.0], &p, &[], &[-1])),
            ErrorCode::IdRange
        );
        for bad in [
            params(|p| p.temperature = -1.0),
            params(|p| p.temperature = f64::INFINITY),
            params(|p| p.top_p = 0.0),
            params(|p| p.top_p = 1.5),
            params(|p| p.min_p = -0.1),
            params(|p| p.min_p = f64::NAN),
            params(|p| p.repetition_penalty = 0.0),
            params(|p| p.presence_penalty = f64::INFINITY),
            params(|p| p.frequency_penalty = f64::NAN),
        ] {
            assert_eq!(
                code(sampling_distribution(&[0.0], &bad, &[], &[])),
                ErrorCode::BadParam,
                "{bad:?}"
            );
        }
    }

    // CONTRACT.md section 5: the pinned ambiguities, as tests/reference/test_contract_pins.py.

    #[test]
    fn penalties_are_one_subtraction() {
        // 2 - (2^-53 + 2^-53) = 2 - 2^-52 ties token 0 (argmax 0); two subtractions stay at 2.
        let tiny = 2f64.powi(-53);
        let p = SamplingParams {
            presence_penalty: tiny,
            frequency_penalty: tiny,
            ..SamplingParams::greedy()
        };
        let d = sampling_distribution(&[2.0 - 2f64.powi(-52), 2.0], &p, &[1], &[]).unwrap();
        assert_eq!(d, vec![1.0, 0.0]);
    }

    #[test]
    fn min_p_judges_the_softmax_not_the_top_p_renormalised_vector() {
        let row = [0.0, 3.0, 2.0, 1.5];
        let softmax = sampling_distribution(&row, &SamplingParams::default(), &[], &[]).unwrap();
        let min_p = softmax[2] / softmax[1]; // token 2 exactly on the boundary: kept
        let d = sampling_distribution(
            &row,
            &params(|p| {
                p.top_p = 0.8;
                p.min_p = min_p
            }),
            &[],
            &[],
        )
        .unwrap();
        assert!(
            d[1] > 0.0 && d[2] > 0.0 && d[0] == 0.0 && d[3] == 0.0,
            "{d:?}"
        );
    }

    #[test]
    fn no_renormalisation_when_nothing_positive_was_dropped() {
        let row = [0.0, 1.0, 2.0];
        let softmax = sampling_distribution(&row, &SamplingParams::default(), &[], &[]).unwrap();
        let total = sequential_sum(&softmax);
        assert!(softmax.iter().any(|x| x / total != *x)); // renormalising would change it
        for p in [params(|p| p.top_p = 0.999), params(|p| p.min_p = 1e-3)] {
            assert_eq!(sampling_distribution(&row, &p, &[], &[]).unwrap(), softmax);
        }
    }

    #[test]
    fn overflowing_logits_are_an_error() {
        let cases = [
            (
                [1.0, 2.0],
                params(|p| p.temperature = 1e-310),
                "temperature",
            ),
            (
                [-1.0, 0.0],
                params(|p| p.temperature = 1e-310),
                "temperature",
            ),
            (
                [1e308, 0.0],
                params(|p| p.presence_penalty = -1e308),
                "penalties",
            ),
            (
                [-1e308, 0.0],
                SamplingParams {
                    repetition_penalty: 10.0,
                    ..SamplingParams::greedy()
                },
                "penalties",
            ),
        ];
        for (row, p, words) in cases {
            let error = sampling_distribution(&row, &p, &[0], &[]).unwrap_err();
            assert_eq!(error.code, ErrorCode::Nan);
            assert!(
                error.message.contains("overflows float64"),
                "{}",
                error.message
            );
            assert!(error.message.contains(words) && error.message.contains("id 0"));
        }
    }

    #[test]
    fn penalties_see_the_whole_history() {
        // Token 0 occurs only at the start of a 1,500-token history: still penalised.
        let mut history = vec![0i64];
        history.extend(std::iter::repeat_n(2, 1499));
        let p = SamplingParams {
            presence_penalty: 5.0,
            ..SamplingParams::greedy()
        };
        let d = sampling_distribution(&[2.0, 1.0, -10.0], &p, &history, &[]).unwrap();
        assert_eq!(d, vec![0.0, 1.0, 0.0]);
    }

    #[test]
    fn concurrent_calls_give_the_serial_answers() {
        // Distinct rows on four threads at once: every answer equals the one computed alone.
        let rows: Vec<Vec<f64>> = (0..4)
            .map(|k| {
                (0..4096)
                    .map(|i| ((i * 7919 + k * 104729) % 997) as f64 / 97.0)
                    .collect()
            })
            .collect();
        let p = params(|p| p.top_p = 0.9);
        let serial: Vec<Vec<f64>> = rows
            .iter()
            .map(|row| sampling_distribution(row, &p, &[], &[]).unwrap())
            .collect();
        std::thread::scope(|scope| {
            for (row, want) in rows.iter().zip(&serial) {
                scope.spawn(move || {
                    for _ in 0..20 {
                        assert_eq!(&sampling_distribution(row, &p, &[], &[]).unwrap(), want);
                    }
                });
            }
        });
    }

    #[test]
    fn sample_with_inverse_cdf() {
        let d = [0.5, 0.0, 0.5];
        assert_eq!(sample_with(&d, 0.0), 0);
        assert_eq!(sample_with(&d, 0.4999), 0);
        assert_eq!(sample_with(&d, 0.5), 2);
        assert_eq!(sample_with(&d, 0.6), 2);
        // rounding fallback: the highest id with positive probability
        assert_eq!(sample_with(&[0.3, 0.3, 0.0], 0.9), 1);
    }

    #[test]
    fn lane_sum_is_sequential_up_to_1024_then_by_lanes() {
        let small: Vec<f64> = (0..1024).map(|i| 1.0 / (i as f64 + 3.0)).collect();
        assert_eq!(lane_sum(&small), sequential_sum(&small));
        // 1e16 + 1 + 1 rounds away both ones added one at a time; by lanes the two ones meet
        // first (ids 1 and 1025 share lane 1) and survive
        let mut big = vec![0.0; 1026];
        big[0] = 1e16;
        big[1] = 1.0;
        big[1025] = 1.0;
        assert_eq!(sequential_sum(&big), 1e16);
        assert_eq!(lane_sum(&big), 1e16 + 2.0);
    }

    #[test]
    fn argmax_ties() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, 0.0]), 1);
        assert_eq!(argmax(&[5.0]), 0);
    }
}
