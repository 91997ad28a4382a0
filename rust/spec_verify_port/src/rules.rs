//! Verification rules other than the token rule (reference/CONTRACT.md sections 8 and 9):
//! block verification and sampler-match, with `verify_draft`'s arguments and errors, behind
//! one dispatcher ([`verify_chain_rule`]) that every chain symbol of the C ABI calls. Greedy
//! verification is the contract's argmax chain under every rule: the dispatcher sends it to
//! `verify_draft`, so the rules below are written for sampled rounds only.
//!
//! Planted bugs: `bug_block_unadjusted_residual` (the token rule's residual `max(p - q, 0)`
//! where `max(w_i p - q, 0)` belongs, vllm-ascend #7807) and `bug_sampler_match_no_break`
//! (the round goes on after a mismatch).

use crate::error::SvResult;
use crate::sampling::{distribution_unchecked, sample_with, SamplingParams};
use crate::verify::{check_round, verify_draft, Verified};

/// numpy's `sum` of a contiguous float64 array (pairwise: 8 accumulators in blocks of up to
/// 128, halves above), which section 8 pins for the residual's mass `R_i`.
pub fn numpy_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = 0.0;
        for &x in a {
            res += x;
        }
        return res;
    }
    if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        return res;
    }
    let mut n2 = n / 2;
    n2 -= n2 % 8;
    numpy_sum(&a[..n2]) + numpy_sum(&a[n2..])
}

/// The target's sampling distribution of every row (row `i` after `history + x_1..x_i`).
fn target_rows(
    rows: &[&[f64]],
    p: &SamplingParams,
    history: &[i64],
    draft_ids: &[i64],
    prompt: &[i64],
) -> SvResult<Vec<Vec<f64>>> {
    let mut seen = history.to_vec();
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        out.push(distribution_unchecked(row, p, &seen, prompt)?);
        if let Some(&x) = draft_ids.get(i) {
            seen.push(x);
        }
    }
    Ok(out)
}

fn draft_row(q_rows: Option<&[f64]>, i: usize, x: i64, v: usize) -> Vec<f64> {
    match q_rows {
        Some(q) => q[i * v..(i + 1) * v].to_vec(),
        None => {
            let mut e = vec![0.0; v];
            e[x as usize] = 1.0;
            e
        }
    }
}

/// Which chain rule a round runs (CONTRACT.md sections 3, 8, 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainRule {
    /// The token rule (`verify_draft`, section 3).
    Token,
    /// Block verification (section 8).
    Block,
    /// Sampler-match (section 9).
    SamplerMatch,
}

/// One round of `rule` with `verify_draft`'s arguments and errors. Greedy rounds (and the
/// token rule) are `verify_draft`'s: every rule's greedy path is the argmax chain.
#[allow(clippy::too_many_arguments)] // verify_draft's eight arguments and the rule
pub fn verify_chain_rule<F>(
    rule: ChainRule,
    target_logits: &[f64],
    v: usize,
    draft_ids: &[i64],
    draft_probs: Option<&[f64]>,
    p: &SamplingParams,
    history: &[i64],
    prompt: &[i64],
    uniform: F,
) -> SvResult<Verified>
where
    F: FnMut() -> SvResult<f64>,
{
    let sampled = match rule {
        _ if p.is_greedy() => verify_draft,
        ChainRule::Token => verify_draft,
        ChainRule::Block => block_sampled,
        ChainRule::SamplerMatch => sampler_match_sampled,
    };
    sampled(
        target_logits,
        v,
        draft_ids,
        draft_probs,
        p,
        history,
        prompt,
        uniform,
    )
}

/// Block verification (CONTRACT.md section 8), sampled: `eta_1..eta_m` (all drawn), then one
/// uniform for the added token.
#[allow(clippy::too_many_arguments)] // verify_draft's eight arguments
fn block_sampled<F>(
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
    let targets = target_rows(&rows, p, history, draft_ids, prompt)?;
    let drafts: Vec<Vec<f64>> = (0..m)
        .map(|i| draft_row(q_rows, i, draft_ids[i], v))
        .collect();
    let mut w = vec![1.0f64];
    for (i, &x) in draft_ids.iter().enumerate() {
        let x = x as usize;
        w.push((w[i] * targets[i][x] / drafts[i][x]).min(1.0));
    }
    // The residual after i kept drafts, unnormalised, and its mass (p_m itself at i = m).
    let residual = |i: usize| -> (Vec<f64>, f64) {
        if i == m {
            return (targets[m].clone(), 1.0);
        }
        #[cfg(not(feature = "bug_block_unadjusted_residual"))]
        let weight = w[i];
        #[cfg(feature = "bug_block_unadjusted_residual")]
        let weight = 1.0;
        let d: Vec<f64> = targets[i]
            .iter()
            .zip(&drafts[i])
            .map(|(&a, &b)| (weight * a - b).max(0.0))
            .collect();
        let mass = numpy_sum(&d);
        (d, mass)
    };
    let stop = |i: usize| -> f64 {
        if i == m {
            return w[m];
        }
        let (_, mass) = residual(i);
        let denominator = mass + 1.0 - w[i];
        if denominator > 0.0 {
            mass / denominator
        } else {
            1.0
        }
    };
    let mut etas = Vec::with_capacity(m);
    for _ in 0..m {
        etas.push(uniform()?);
    }
    let mut tau = 0;
    for i in 1..=m {
        if etas[i - 1] < stop(i) {
            tau = i; // strict: eta = 0.0 never keeps a block of weight 0
        }
    }
    let (mut row, mut mass) = residual(tau);
    if mass <= 0.0 {
        row = targets[tau].clone();
        mass = 1.0;
    }
    let normalised: Vec<f64> = row.iter().map(|&x| x / mass).collect();
    let u = uniform()?;
    let mut emitted: Vec<i64> = draft_ids[..tau].to_vec();
    emitted.push(sample_with(&normalised, u) as i64);
    Ok(Verified {
        emitted,
        n_accepted: tau,
    })
}

/// Sampler-match (CONTRACT.md section 9), sampled: per reached position one uniform and the
/// target's own sample; a mismatch emits it and stops; all kept: one more uniform for the bonus.
#[allow(clippy::too_many_arguments)] // verify_draft's eight arguments
fn sampler_match_sampled<F>(
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
    let (rows, _) = check_round(target_logits, v, draft_ids, draft_probs, p, history, prompt)?;
    let m = draft_ids.len();
    let mut seen = history.to_vec();
    let mut emitted: Vec<i64> = Vec::with_capacity(m + 1);
    let mut kept = 0;
    #[cfg(feature = "bug_sampler_match_no_break")]
    let mut broken = false;
    for (i, &x) in draft_ids.iter().enumerate() {
        let p_i = distribution_unchecked(rows[i], p, &seen, prompt)?;
        let token = sample_with(&p_i, uniform()?) as i64;
        emitted.push(token);
        if token != x {
            #[cfg(not(feature = "bug_sampler_match_no_break"))]
            return Ok(Verified {
                emitted,
                n_accepted: kept,
            });
            #[cfg(feature = "bug_sampler_match_no_break")]
            {
                broken = true;
            }
        }
        #[cfg(feature = "bug_sampler_match_no_break")]
        if !broken {
            kept += 1;
        }
        #[cfg(not(feature = "bug_sampler_match_no_break"))]
        {
            kept += 1;
        }
        seen.push(x);
    }
    let p_m = distribution_unchecked(rows[m], p, &seen, prompt)?;
    emitted.push(sample_with(&p_m, uniform()?) as i64);
    #[cfg(feature = "bug_sampler_match_no_break")]
    if broken {
        // the round emitted every position's sample: report them all as kept but the last
        kept = emitted.len() - 1;
    }
    Ok(Verified {
        emitted,
        n_accepted: kept,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_sum_is_pairwise() {
        let a: Vec<f64> = (0..300).map(|i| 1.0 / (1.0 + i as f64)).collect();
        let mut seq = 0.0;
        for &x in &a {
            seq += x;
        }
        assert!((numpy_sum(&a) - seq).abs() < 1e-12);
        assert_eq!(numpy_sum(&[1.0, 2.0]), 3.0);
    }

    #[test]
    fn block_draws_m_plus_one_and_sampler_match_stops() {
        let p = SamplingParams::default();
        let logits = vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let mut n = 0;
        let out = verify_chain_rule(
            ChainRule::Block,
            &logits,
            2,
            &[0, 1],
            None,
            &p,
            &[],
            &[],
            || {
                n += 1;
                Ok(0.9)
            },
        )
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(out.emitted.len(), out.n_accepted + 1);
        let mut n = 0;
        let out = verify_chain_rule(
            ChainRule::SamplerMatch,
            &logits,
            2,
            &[1, 1],
            None,
            &p,
            &[],
            &[],
            || {
                n += 1;
                Ok(0.1) // the target's sample is token 0: a mismatch at once
            },
        )
        .unwrap();
        #[cfg(not(feature = "bug_sampler_match_no_break"))]
        {
            assert_eq!((n, out.emitted, out.n_accepted), (1, vec![0], 0));
        }
        #[cfg(feature = "bug_sampler_match_no_break")]
        let _ = (n, out);
    }
}
