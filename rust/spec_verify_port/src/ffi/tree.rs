//! `sv_verify_tree`: the optional tree symbol of the C ABI (spec_verify.h). A library without
//! it is still ABI version 2; loaders look it up and offer trees only when it is there.

use std::ffi::c_void;

use super::{guard, input, length, out_ref, output, SvSamplingParams, SvUniformFn};
use crate::error::{fail, ErrorCode, SvError};
use crate::pcg32::request_rng;
use crate::sampling::SamplingParams;
use crate::tree::verify_tree;

/// `sv_verify_tree`: see the header.
///
/// # Safety
/// Every pointer must be NULL or point to as many values as the header says; `uniform`, if
/// not NULL, must be callable with `uniform_ctx`.
#[no_mangle]
pub unsafe extern "C" fn sv_verify_tree(
    target_logits: *const f64,
    n: i64,
    v: i64,
    parents: *const i64,
    token_ids: *const i64,
    draft_probs: *const f64,
    draft_present: *const u8,
    rule: i32,
    epsilon: f64,
    delta: f64,
    params: *const SvSamplingParams,
    history: *const i64,
    n_history: i64,
    prompt: *const i64,
    n_prompt: i64,
    uniform: SvUniformFn,
    uniform_ctx: *mut c_void,
    pcg_seed: u64,
    out_ids: *mut i64,
    out_nodes: *mut i64,
    out_capacity: i64,
    out_n_emitted: *mut i64,
) -> i32 {
    guard(|| {
        let n = length("n", n)?;
        let v = length("V", v)?;
        if v == 0 {
            return fail(ErrorCode::Shape, "V=0: must be >= 1");
        }
        let rows = n
            .checked_add(1)
            .and_then(|r| r.checked_mul(v))
            .ok_or_else(|| {
                SvError::new(ErrorCode::Shape, format!("(n + 1) * V overflows for n={n}"))
            })?;
        let target_logits = input("target_logits", target_logits, rows)?;
        let parents = input("parents", parents, n)?;
        let token_ids = input("token_ids", token_ids, n)?;
        let raw = *out_ref("params", params as *mut SvSamplingParams)?;
        let probs = if draft_probs.is_null() {
            None
        } else {
            let q = input("draft_probs", draft_probs, rows)?;
            let present: Vec<bool> = if draft_present.is_null() {
                vec![true; n + 1]
            } else {
                input("draft_present", draft_present, n + 1)?
                    .iter()
                    .map(|&f| f != 0)
                    .collect()
            };
            Some((q, present))
        };
        let history = input("history", history, length("n_history", n_history)?)?;
        let prompt = input("prompt", prompt, length("n_prompt", n_prompt)?)?;
        let capacity = length("out_capacity", out_capacity)?;
        let out_n_emitted = out_ref("out_n_emitted", out_n_emitted)?;
        let out_ids = output("out_ids", out_ids, capacity)?;
        let out_nodes = output("out_nodes", out_nodes, capacity)?;
        let params = SamplingParams::try_from(&raw)?;
        if capacity < n + 1 {
            return fail(
                ErrorCode::Buffer,
                format!("out_capacity={capacity}: must be >= n + 1 = {}", n + 1),
            );
        }
        let probs_ref = probs.as_ref().map(|(q, present)| (*q, present.as_slice()));
        let verified = match uniform {
            Some(callback) => verify_tree(
                target_logits,
                v,
                parents,
                token_ids,
                probs_ref,
                rule,
                epsilon,
                delta,
                &params,
                history,
                prompt,
                || {
                    let u = callback(uniform_ctx);
                    if (0.0..1.0).contains(&u) {
                        Ok(u)
                    } else {
                        fail(
                            ErrorCode::Callback,
                            format!("uniform: returned {u:?}; uniforms must be in [0, 1)"),
                        )
                    }
                },
            )?,
            None => {
                let mut rng = request_rng(pcg_seed);
                verify_tree(
                    target_logits,
                    v,
                    parents,
                    token_ids,
                    probs_ref,
                    rule,
                    epsilon,
                    delta,
                    &params,
                    history,
                    prompt,
                    || Ok(rng.random()),
                )?
            }
        };
        out_ids[..verified.emitted.len()].copy_from_slice(&verified.emitted);
        out_nodes[..verified.nodes.len()].copy_from_slice(&verified.nodes);
        *out_n_emitted = verified.emitted.len() as i64;
        Ok(())
    })
}
