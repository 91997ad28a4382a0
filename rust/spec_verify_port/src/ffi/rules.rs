//! `sv_verify_block` and `sv_verify_sampler_match`: optional chain-rule symbols of the C ABI
//! (spec_verify.h), with `sv_verify_draft`'s arguments; a library without them is still ABI
//! version 2 (`SV_CAP_VERIFY_BLOCK`, `SV_CAP_VERIFY_SAMPLER_MATCH` say whether they exist).

use std::ffi::c_void;

use super::{verify_chain, ChainRule, SvSamplingParams, SvUniformFn};

/// `sv_verify_block`: block verification (CONTRACT.md section 8); see the header.
///
/// # Safety
/// As `sv_verify_draft`.
#[no_mangle]
pub unsafe extern "C" fn sv_verify_block(
    target_logits: *const f64,
    m: i64,
    v: i64,
    draft_ids: *const i64,
    draft_probs: *const f64,
    params: *const SvSamplingParams,
    history: *const i64,
    n_history: i64,
    prompt: *const i64,
    n_prompt: i64,
    uniform: SvUniformFn,
    uniform_ctx: *mut c_void,
    pcg_seed: u64,
    out_ids: *mut i64,
    out_capacity: i64,
    out_n_emitted: *mut i64,
    out_n_accepted: *mut i64,
) -> i32 {
    verify_chain(
        ChainRule::Block,
        target_logits,
        m,
        v,
        draft_ids,
        draft_probs,
        params,
        history,
        n_history,
        prompt,
        n_prompt,
        uniform,
        uniform_ctx,
        pcg_seed,
        out_ids,
        out_capacity,
        out_n_emitted,
        out_n_accepted,
    )
}

/// `sv_verify_sampler_match`: sampler-match (CONTRACT.md section 9); see the header.
///
/// # Safety
/// As `sv_verify_draft`.
#[no_mangle]
pub unsafe extern "C" fn sv_verify_sampler_match(
    target_logits: *const f64,
    m: i64,
    v: i64,
    draft_ids: *const i64,
    draft_probs: *const f64,
    params: *const SvSamplingParams,
    history: *const i64,
    n_history: i64,
    prompt: *const i64,
    n_prompt: i64,
    uniform: SvUniformFn,
    uniform_ctx: *mut c_void,
    pcg_seed: u64,
    out_ids: *mut i64,
    out_capacity: i64,
    out_n_emitted: *mut i64,
    out_n_accepted: *mut i64,
) -> i32 {
    verify_chain(
        ChainRule::SamplerMatch,
        target_logits,
        m,
        v,
        draft_ids,
        draft_probs,
        params,
        history,
        n_history,
        prompt,
        n_prompt,
        uniform,
        uniform_ctx,
        pcg_seed,
        out_ids,
        out_capacity,
        out_n_emitted,
        out_n_accepted,
    )
}
