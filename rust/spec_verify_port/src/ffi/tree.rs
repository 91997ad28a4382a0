//! `sv_verify_tree`: the optional tree symbol of the C ABI (spec_verify.h). A library without
//! it is still ABI version 2; loaders look it up and offer trees only when it is there.

use std::ffi::c_void;

use super::{context, guard, input, length, out_ref, output, rows_of, with_uniforms};
use super::{vocab, SvSamplingParams, SvUniformFn};
use crate::error::{fail, ErrorCode};
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
        let v = vocab(v)?;
        let rows = rows_of("n", n, v)?;
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
        let (history, prompt) = context(history, n_history, prompt, n_prompt)?;
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
        let verified = with_uniforms(uniform, uniform_ctx, pcg_seed, |u| {
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
                u,
            )
        })?;
        out_ids[..verified.emitted.len()].copy_from_slice(&verified.emitted);
        out_nodes[..verified.nodes.len()].copy_from_slice(&verified.nodes);
        *out_n_emitted = verified.emitted.len() as i64;
        Ok(())
    })
}
