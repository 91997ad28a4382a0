//! The C ABI of `spec_verify/spec_verify.h`, version 2.
//!
//! Every exported function validates its pointers and lengths, runs the safe core inside
//! `catch_unwind` (a panic becomes `ErrorCode::Internal`, never an unwind or abort across the
//! boundary), records a message for `sv_last_error`, and writes its outputs only on success.

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{fail, ErrorCode, SvError, SvResult};
use crate::lookup::{prompt_lookup, validate_lookup};
use crate::pcg32::{request_rng, Pcg32};
use crate::propose::{draft_params_error, propose_and_verify};
use crate::rules::{verify_chain_rule, ChainRule};
use crate::sampling::{check_probs, sample_with, sampling_distribution, SamplingParams};
use crate::verify::{speculative_step, Verified};

mod params;
mod tree;

pub(crate) use params::SvSamplingParams;

/// The ABI version this library implements.
pub(crate) const ABI_VERSION: u32 = 2;

/// `SV_OK`: the one status that is no [`ErrorCode`].
pub(crate) const SV_OK: i32 = 0;

/// `sv_uniform_fn`: the next uniform in `[0, 1)` of the caller's stream.
pub type SvUniformFn = Option<unsafe extern "C" fn(ctx: *mut c_void) -> f64>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let clean = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|cell| *cell.borrow_mut() = clean);
}

/// Runs `body`, turning errors and panics into status codes and the thread's last error.
fn guard<F: FnOnce() -> SvResult<()>>(body: F) -> i32 {
    set_last_error("");
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SV_OK,
        Ok(Err(error)) => {
            set_last_error(&error.message);
            error.code.status()
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            set_last_error(&format!(
                "internal error in the port (a bug, not your input): {what}"
            ));
            ErrorCode::Internal.status()
        }
    }
}

fn length(name: &str, n: i64) -> SvResult<usize> {
    if n < 0 {
        return fail(ErrorCode::Shape, format!("{name}={n}: must be >= 0"));
    }
    usize::try_from(n).map_err(|_| SvError::new(ErrorCode::Shape, format!("{name}={n}: too large")))
}

fn check_array<T>(name: &str, ptr: *const T, n: usize) -> SvResult<()> {
    if n == 0 {
        return Ok(());
    }
    if ptr.is_null() {
        return fail(
            ErrorCode::Null,
            format!("{name}: is NULL but must hold {n} values"),
        );
    }
    if (ptr as usize) & (std::mem::align_of::<T>() - 1) != 0 {
        return fail(
            ErrorCode::Shape,
            format!("{name}: pointer is not aligned for its element type"),
        );
    }
    match n.checked_mul(std::mem::size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(()),
        _ => fail(
            ErrorCode::Shape,
            format!("{name}: {n} values do not fit in memory"),
        ),
    }
}

/// A read-only slice of `n` values (empty, and `ptr` unread, when `n == 0`).
///
/// Safety: when `n > 0`, `ptr` must point to `n` readable values for the call's duration.
unsafe fn input<'a, T>(name: &str, ptr: *const T, n: usize) -> SvResult<&'a [T]> {
    check_array(name, ptr, n)?;
    if n == 0 {
        return Ok(&[]);
    }
    Ok(std::slice::from_raw_parts(ptr, n))
}

/// A writable slice of `n` values.
///
/// Safety: when `n > 0`, `ptr` must point to `n` writable values for the call's duration.
unsafe fn output<'a, T>(name: &str, ptr: *mut T, n: usize) -> SvResult<&'a mut [T]> {
    check_array(name, ptr as *const T, n)?;
    if n == 0 {
        return Ok(&mut []);
    }
    Ok(std::slice::from_raw_parts_mut(ptr, n))
}

/// A required out-pointer to one value.
unsafe fn out_ref<'a, T>(name: &str, ptr: *mut T) -> SvResult<&'a mut T> {
    check_array(name, ptr as *const T, 1)?;
    Ok(&mut *ptr)
}

fn check_uniform(name: &str, u: f64) -> SvResult<()> {
    if !(0.0..1.0).contains(&u) {
        return fail(
            ErrorCode::BadParam,
            format!("{name}={u:?}: must be in [0, 1)"),
        );
    }
    Ok(())
}

/// `uint32_t sv_abi_version(void)`.
#[no_mangle]
pub extern "C" fn sv_abi_version() -> u32 {
    ABI_VERSION
}

/// The `SV_CAP_*` bits of `spec_verify.h`.
pub(crate) const SV_CAP_INJECTED_UNIFORMS: u32 = 1 << 0;
pub(crate) const SV_CAP_GREEDY: u32 = 1 << 1;
pub(crate) const SV_CAP_SAMPLING_DISTRIBUTION: u32 = 1 << 2;
pub(crate) const SV_CAP_PROMPT_LOOKUP: u32 = 1 << 3;
pub(crate) const SV_CAP_PCG32: u32 = 1 << 4;
pub(crate) const SV_CAP_VERIFY_TREE: u32 = 1 << 5;
pub(crate) const SV_CAP_VERIFY_BLOCK: u32 = 1 << 8;
pub(crate) const SV_CAP_VERIFY_SAMPLER_MATCH: u32 = 1 << 9;
pub(crate) const SV_CAP_PROPOSE_AND_VERIFY: u32 = 1 << 10;

/// `uint32_t sv_capabilities(void)` (optional in the ABI): the port offers everything the
/// contract asks of a port, in its draw order, and exports every optional symbol
/// (`sv_verify_tree`, `sv_verify_block`, `sv_verify_sampler_match`, `sv_propose_and_verify`);
/// it computes in float64 (no `SV_CAP_FLOAT32`).
#[no_mangle]
pub extern "C" fn sv_capabilities() -> u32 {
    SV_CAP_INJECTED_UNIFORMS
        | SV_CAP_GREEDY
        | SV_CAP_SAMPLING_DISTRIBUTION
        | SV_CAP_PROMPT_LOOKUP
        | SV_CAP_PCG32
        | SV_CAP_VERIFY_TREE
        | SV_CAP_VERIFY_BLOCK
        | SV_CAP_VERIFY_SAMPLER_MATCH
        | SV_CAP_PROPOSE_AND_VERIFY
}

/// `const char* sv_last_error(void)`: the thread's last error message ("" if none).
#[no_mangle]
pub extern "C" fn sv_last_error() -> *const c_char {
    LAST_ERROR.with(|cell| cell.borrow().as_ptr())
}

/// `const char* sv_status_name(int32_t status)`.
#[no_mangle]
pub extern "C" fn sv_status_name(status: i32) -> *const c_char {
    let name = match ErrorCode::try_from(status) {
        Ok(code) => code.name(),
        Err(SV_OK) => c"SV_OK",
        Err(_) => c"SV_E_UNKNOWN",
    };
    name.as_ptr()
}

/// `int32_t sv_pcg32_u32(uint64_t initstate, uint64_t initseq, int64_t n, uint32_t* out)`.
///
/// # Safety
/// `out` must point to `n` writable `uint32_t` (or be anything when `n == 0`).
#[no_mangle]
pub unsafe extern "C" fn sv_pcg32_u32(initstate: u64, initseq: u64, n: i64, out: *mut u32) -> i32 {
    guard(|| {
        let n = length("n", n)?;
        let out = output("out", out, n)?;
        let mut rng = Pcg32::new(initstate, initseq);
        for slot in out.iter_mut() {
            *slot = rng.next_u32();
        }
        Ok(())
    })
}

/// `int32_t sv_pcg32_uniforms(uint64_t initstate, uint64_t initseq, int64_t n, double* out)`.
///
/// # Safety
/// `out` must point to `n` writable doubles (or be anything when `n == 0`).
#[no_mangle]
pub unsafe extern "C" fn sv_pcg32_uniforms(
    initstate: u64,
    initseq: u64,
    n: i64,
    out: *mut f64,
) -> i32 {
    guard(|| {
        let n = length("n", n)?;
        let out = output("out", out, n)?;
        let mut rng = Pcg32::new(initstate, initseq);
        for slot in out.iter_mut() {
            *slot = rng.random();
        }
        Ok(())
    })
}

/// `sv_sampling_distribution`: see the header.
///
/// # Safety
/// Every pointer must be NULL or point to as many values as its length says.
#[no_mangle]
pub unsafe extern "C" fn sv_sampling_distribution(
    logits: *const f64,
    v: i64,
    params: *const SvSamplingParams,
    history: *const i64,
    n_history: i64,
    prompt: *const i64,
    n_prompt: i64,
    out_probs: *mut f64,
) -> i32 {
    guard(|| {
        let v = vocab(v)?;
        let logits = input("logits", logits, v)?;
        let raw = *out_ref("params", params as *mut SvSamplingParams)?;
        let history = input("history", history, length("n_history", n_history)?)?;
        let prompt = input("prompt", prompt, length("n_prompt", n_prompt)?)?;
        let out = output("out_probs", out_probs, v)?;
        let params = SamplingParams::try_from(&raw)?;
        let probs = sampling_distribution(logits, &params, history, prompt)?;
        out.copy_from_slice(&probs);
        Ok(())
    })
}

/// `int32_t sv_sample(const double* dist, int64_t V, double u, int64_t* out_id)`.
///
/// # Safety
/// `dist` must point to `V` doubles, `out_id` to one writable `int64_t`.
#[no_mangle]
pub unsafe extern "C" fn sv_sample(dist: *const f64, v: i64, u: f64, out_id: *mut i64) -> i32 {
    guard(|| {
        let v = vocab(v)?;
        let dist = input("dist", dist, v)?;
        let out_id = out_ref("out_id", out_id)?;
        check_uniform("u", u)?;
        check_probs("dist", dist)?;
        *out_id = sample_with(dist, u) as i64;
        Ok(())
    })
}

/// `sv_speculative_step`: see the header.
///
/// # Safety
/// `p` and `q` must point to `V` doubles each; the out-pointers to one writable value each.
#[no_mangle]
pub unsafe extern "C" fn sv_speculative_step(
    p: *const f64,
    q: *const f64,
    v: i64,
    x: i64,
    u_accept: f64,
    u_resample: f64,
    out_token: *mut i64,
    out_accepted: *mut i32,
) -> i32 {
    guard(|| {
        let v = vocab(v)?;
        let p = input("p", p, v)?;
        let q = input("q", q, v)?;
        let out_token = out_ref("out_token", out_token)?;
        let out_accepted = out_ref("out_accepted", out_accepted)?;
        check_uniform("u_accept", u_accept)?;
        check_uniform("u_resample", u_resample)?;
        if x < 0 || x as u64 >= v as u64 {
            return fail(ErrorCode::IdRange, format!("x={x}: must be in [0, {v})"));
        }
        check_probs("p", p)?;
        if let Some(i) = q.iter().position(|t| !t.is_finite() || *t < 0.0) {
            return fail(
                ErrorCode::Distribution,
                format!(
                    "q: entry {i} is {:?}; probabilities must be finite and >= 0",
                    q[i]
                ),
            );
        }
        if q[x as usize] <= 0.0 {
            return fail(
                ErrorCode::ZeroDraftProb,
                format!("q: gives the drafted token {x} probability 0"),
            );
        }
        let (token, accepted) = speculative_step(p, q, x as usize, u_accept, u_resample);
        *out_token = token as i64;
        *out_accepted = i32::from(accepted);
        Ok(())
    })
}

/// Defines one chain symbol of the header (`sv_verify_draft`'s arguments, outputs and
/// errors; the rule's decisions and draw order): `sv_verify_draft` (CONTRACT.md section 3)
/// and the optional `sv_verify_block` (section 8) and `sv_verify_sampler_match` (section 9).
macro_rules! chain_symbol {
    ($(#[$doc:meta])* $name:ident => $rule:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Every pointer must be NULL or point to as many values as the header says;
        /// `uniform`, if not NULL, must be callable with `uniform_ctx`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
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
            guard(|| {
                let m = length("m", m)?;
                let v = vocab(v)?;
                let target_logits = input("target_logits", target_logits, rows_of("m", m, v)?)?;
                let draft_ids = input("draft_ids", draft_ids, m)?;
                let raw = *out_ref("params", params as *mut SvSamplingParams)?;
                let draft_probs = if draft_probs.is_null() || raw.temperature == 0.0 {
                    None
                } else {
                    Some(input("draft_probs", draft_probs, m * v)?)
                };
                let (history, prompt) = context(history, n_history, prompt, n_prompt)?;
                let out = ChainOut::new(out_ids, out_capacity, out_n_emitted, out_n_accepted)?;
                let params = SamplingParams::try_from(&raw)?;
                out.holds(m)?;
                let verified = with_uniforms(uniform, uniform_ctx, pcg_seed, |u| {
                    verify_chain_rule($rule, target_logits, v, draft_ids, draft_probs, &params,
                                      history, prompt, u)
                })?;
                out.write(verified);
                Ok(())
            })
        }
    };
}

chain_symbol!(
    /// `sv_verify_draft`: see the header.
    sv_verify_draft => ChainRule::Token
);
chain_symbol!(
    /// `sv_verify_block` (optional in the ABI): block verification, CONTRACT.md section 8.
    sv_verify_block => ChainRule::Block
);
chain_symbol!(
    /// `sv_verify_sampler_match` (optional in the ABI): sampler-match, CONTRACT.md section 9.
    sv_verify_sampler_match => ChainRule::SamplerMatch
);

/// `sv_propose_and_verify` (optional in the ABI): see the header (CONTRACT.md section 14).
///
/// # Safety
/// Every pointer must be NULL or point to as many values as the header says; `uniform`, if
/// not NULL, must be callable with `uniform_ctx`.
#[no_mangle]
pub unsafe extern "C" fn sv_propose_and_verify(
    target_logits: *const f64,
    draft_logits: *const f64,
    k: i64,
    v: i64,
    params: *const SvSamplingParams,
    draft_params: *const SvSamplingParams,
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
    guard(|| {
        let k = length("k", k)?;
        let v = vocab(v)?;
        let target_logits = input("target_logits", target_logits, rows_of("k", k, v)?)?;
        let draft_logits = input("draft_logits", draft_logits, k * v)?;
        let raw = *out_ref("params", params as *mut SvSamplingParams)?;
        let raw_draft = if draft_params.is_null() {
            raw
        } else {
            *out_ref("draft_params", draft_params as *mut SvSamplingParams)?
        };
        let (history, prompt) = context(history, n_history, prompt, n_prompt)?;
        let out = ChainOut::new(out_ids, out_capacity, out_n_emitted, out_n_accepted)?;
        let params = SamplingParams::try_from(&raw)?;
        let draft_params = SamplingParams::try_from(&raw_draft).map_err(draft_params_error)?;
        out.holds(k)?;
        let verified = with_uniforms(uniform, uniform_ctx, pcg_seed, |u| {
            propose_and_verify(
                target_logits,
                draft_logits,
                v,
                &params,
                &draft_params,
                history,
                prompt,
                u,
            )
        })?;
        out.write(verified);
        Ok(())
    })
}

/// `V`, which must be >= 1.
fn vocab(v: i64) -> SvResult<usize> {
    let v = length("V", v)?;
    if v == 0 {
        return fail(ErrorCode::Shape, "V=0: must be >= 1");
    }
    Ok(v)
}

/// `(count + 1) * V`: the target rows of a round of `count` drafts (or nodes), `name` naming
/// the count.
pub(crate) fn rows_of(name: &str, count: usize, v: usize) -> SvResult<usize> {
    count
        .checked_add(1)
        .and_then(|r| r.checked_mul(v))
        .ok_or_else(|| {
            SvError::new(
                ErrorCode::Shape,
                format!("({name} + 1) * V overflows for {name}={count}, V={v}"),
            )
        })
}

/// The round's `history` and `prompt` ids.
///
/// Safety: as `input`, for both arrays.
pub(crate) unsafe fn context<'a>(
    history: *const i64,
    n_history: i64,
    prompt: *const i64,
    n_prompt: i64,
) -> SvResult<(&'a [i64], &'a [i64])> {
    let history = input("history", history, length("n_history", n_history)?)?;
    let prompt = input("prompt", prompt, length("n_prompt", n_prompt)?)?;
    Ok((history, prompt))
}

/// The outputs of a chain call: `out_ids` (`out_capacity` of them), `out_n_emitted`,
/// `out_n_accepted`, checked in that order (capacity, the counts, the ids).
struct ChainOut<'a> {
    ids: &'a mut [i64],
    n_emitted: &'a mut i64,
    n_accepted: &'a mut i64,
}

impl ChainOut<'_> {
    /// Safety: as `output` and `out_ref`, for each pointer.
    unsafe fn new(
        out_ids: *mut i64,
        out_capacity: i64,
        out_n_emitted: *mut i64,
        out_n_accepted: *mut i64,
    ) -> SvResult<Self> {
        let capacity = length("out_capacity", out_capacity)?;
        let n_emitted = out_ref("out_n_emitted", out_n_emitted)?;
        let n_accepted = out_ref("out_n_accepted", out_n_accepted)?;
        let ids = output("out_ids", out_ids, capacity)?;
        Ok(ChainOut {
            ids,
            n_emitted,
            n_accepted,
        })
    }

    /// `SV_E_BUFFER` unless the ids hold a round of `m` drafts (`m + 1` ids).
    fn holds(&self, m: usize) -> SvResult<()> {
        let capacity = self.ids.len();
        if capacity < m + 1 {
            return fail(
                ErrorCode::Buffer,
                format!("out_capacity={capacity}: must be >= m + 1 = {}", m + 1),
            );
        }
        Ok(())
    }

    fn write(self, verified: Verified) {
        self.ids[..verified.emitted.len()].copy_from_slice(&verified.emitted);
        *self.n_emitted = verified.emitted.len() as i64;
        *self.n_accepted = verified.n_accepted as i64;
    }
}

/// Runs `body` with the call's uniform source: `uniform(uniform_ctx)`, each value checked to
/// lie in `[0, 1)` (else `SV_E_CALLBACK`), or, when `uniform` is NULL, the contract's request
/// stream `request_rng(pcg_seed)` started afresh.
///
/// Safety: `uniform`, if not NULL, must be callable with `uniform_ctx`.
pub(crate) unsafe fn with_uniforms<R>(
    uniform: SvUniformFn,
    uniform_ctx: *mut c_void,
    pcg_seed: u64,
    body: impl FnOnce(&mut dyn FnMut() -> SvResult<f64>) -> SvResult<R>,
) -> SvResult<R> {
    match uniform {
        Some(callback) => body(&mut || {
            let u = callback(uniform_ctx);
            if (0.0..1.0).contains(&u) {
                Ok(u)
            } else {
                fail(
                    ErrorCode::Callback,
                    format!("uniform: returned {u:?}; uniforms must be in [0, 1)"),
                )
            }
        }),
        None => {
            let mut rng = request_rng(pcg_seed);
            body(&mut || Ok(rng.random()))
        }
    }
}

/// `sv_prompt_lookup`: see the header.
///
/// # Safety
/// `ctx` must point to `n_ctx` values, `out_ids` to `out_capacity` writable values, `out_n` to
/// one writable value.
#[no_mangle]
pub unsafe extern "C" fn sv_prompt_lookup(
    ctx: *const i64,
    n_ctx: i64,
    k: i64,
    max_ngram: i64,
    min_ngram: i64,
    out_ids: *mut i64,
    out_capacity: i64,
    out_n: *mut i64,
) -> i32 {
    guard(|| {
        let n_ctx = length("n_ctx", n_ctx)?;
        let ctx = input("ctx", ctx, n_ctx)?;
        let capacity = length("out_capacity", out_capacity)?;
        let out_n = out_ref("out_n", out_n)?;
        let out_ids = output("out_ids", out_ids, capacity)?;
        validate_lookup(k, max_ngram, min_ngram)?;
        let k = usize::try_from(k).unwrap_or(usize::MAX);
        let needed = k.min(n_ctx);
        if capacity < needed {
            return fail(
                ErrorCode::Buffer,
                format!("out_capacity={capacity}: must be >= min(k, n_ctx) = {needed}"),
            );
        }
        let max_ngram = usize::try_from(max_ngram).unwrap_or(usize::MAX);
        let min_ngram = usize::try_from(min_ngram).unwrap_or(usize::MAX);
        let draft = prompt_lookup(ctx, k, max_ngram, min_ngram);
        out_ids[..draft.len()].copy_from_slice(&draft);
        *out_n = draft.len() as i64;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last_error() -> String {
        unsafe { CStr::from_ptr(sv_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn version_and_names() {
        assert_eq!(sv_abi_version(), 2);
        let name = |c| {
            unsafe { CStr::from_ptr(sv_status_name(c)) }
                .to_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(name(SV_OK), "SV_OK");
        assert_eq!(name(ErrorCode::Buffer.status()), "SV_E_BUFFER");
        assert_eq!(name(12345), "SV_E_UNKNOWN");
        for code in ErrorCode::ALL {
            assert_eq!(name(code.status()), code.to_string());
        }
    }

    #[test]
    fn panics_become_internal_errors() {
        let status = guard(|| panic!("planted panic"));
        assert_eq!(status, ErrorCode::Internal.status());
        assert!(last_error().contains("planted panic"), "{}", last_error());
        assert_eq!(guard(|| Ok(())), SV_OK);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn pcg32_through_the_abi() {
        let mut u32s = [0u32; 6];
        assert_eq!(unsafe { sv_pcg32_u32(42, 54, 6, u32s.as_mut_ptr()) }, SV_OK);
        assert_eq!(
            u32s,
            [0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e]
        );
        let mut us = [0f64; 6];
        assert_eq!(
            unsafe { sv_pcg32_uniforms(42, 54, 6, us.as_mut_ptr()) },
            SV_OK
        );
        for (u, w) in us.iter().zip(u32s) {
            assert_eq!(*u, w as f64 / 4294967296.0);
        }
        assert_eq!(
            unsafe { sv_pcg32_uniforms(42, 54, 0, std::ptr::null_mut()) },
            SV_OK
        );
        assert_eq!(
            unsafe { sv_pcg32_uniforms(42, 54, -1, us.as_mut_ptr()) },
            ErrorCode::Shape.status()
        );
        assert_eq!(
            unsafe { sv_pcg32_uniforms(42, 54, 3, std::ptr::null_mut()) },
            ErrorCode::Null.status()
        );
        assert!(last_error().contains("out"), "{}", last_error());
    }

    struct Replay {
        values: Vec<f64>,
        drawn: usize,
    }

    unsafe extern "C" fn replay(ctx: *mut c_void) -> f64 {
        let replay = &mut *(ctx as *mut Replay);
        let u = replay.values.get(replay.drawn).copied().unwrap_or(-1.0);
        replay.drawn += 1;
        u
    }

    #[allow(clippy::too_many_arguments)]
    unsafe fn verify(
        logits: &[f64],
        v: i64,
        ids: &[i64],
        probs: Option<&[f64]>,
        params: &SvSamplingParams,
        uniform: SvUniformFn,
        ctx: *mut c_void,
        seed: u64,
        capacity: i64,
    ) -> (i32, Vec<i64>, i64) {
        let mut out = vec![-7i64; capacity.max(0) as usize];
        let (mut n_emitted, mut n_accepted) = (-1i64, -1i64);
        let status = sv_verify_draft(
            logits.as_ptr(),
            ids.len() as i64,
            v,
            ids.as_ptr(),
            probs.map_or(std::ptr::null(), |p| p.as_ptr()),
            params,
            std::ptr::null(),
            0,
            std::ptr::null(),
            0,
            uniform,
            ctx,
            seed,
            out.as_mut_ptr(),
            capacity,
            &mut n_emitted,
            &mut n_accepted,
        );
        if status == SV_OK {
            out.truncate(n_emitted as usize);
        }
        (status, out, n_accepted)
    }

    #[test]
    fn verify_hand_example_with_a_callback() {
        let logits: Vec<f64> = [2.0f64, 1.0, 1.0, 1.0, 1.0, 1.0]
            .iter()
            .map(|w| w.ln())
            .collect();
        let q = [0.25, 0.5, 0.25];
        let mut rng = Replay {
            values: vec![0.7, 0.4],
            drawn: 0,
        };
        let ctx = &mut rng as *mut Replay as *mut c_void;
        let (status, ids, accepted) = unsafe {
            verify(
                &logits,
                3,
                &[1],
                Some(&q),
                &SvSamplingParams::from(&SamplingParams::default()),
                Some(replay),
                ctx,
                0,
                2,
            )
        };
        assert_eq!((status, ids, accepted), (SV_OK, vec![0], 0));
        assert_eq!(rng.drawn, 2);
    }

    #[test]
    fn verify_greedy_hand_example() {
        let rows = [0.0, 1.0, 3.0, 2.0, 1.0, 0.0, 0.0, 5.0, 1.0];
        let g = SvSamplingParams::from(&SamplingParams::greedy());
        let (status, ids, accepted) = unsafe {
            verify(
                &rows,
                3,
                &[2, 0],
                None,
                &g,
                None,
                std::ptr::null_mut(),
                0,
                3,
            )
        };
        assert_eq!((status, ids, accepted), (SV_OK, vec![2, 0, 1], 2));
    }

    #[test]
    fn verify_with_pcg_stream_matches_explicit_uniforms() {
        // uniform == NULL draws request_rng(seed); replaying the same uniforms gives the same ids.
        let logits: Vec<f64> = (0..4 * 5).map(|i| ((i * 7919) % 13) as f64 / 3.0).collect();
        let ids = [1i64, 3, 0];
        let p = SvSamplingParams::from(&SamplingParams::default());
        for seed in 0..50u64 {
            let mut us = vec![0.0; 16];
            unsafe { sv_pcg32_uniforms(seed, 54, 16, us.as_mut_ptr()) };
            let mut rng = Replay {
                values: us,
                drawn: 0,
            };
            let ctx = &mut rng as *mut Replay as *mut c_void;
            let a = unsafe {
                verify(
                    &logits,
                    5,
                    &ids,
                    None,
                    &p,
                    None,
                    std::ptr::null_mut(),
                    seed,
                    4,
                )
            };
            let b = unsafe { verify(&logits, 5, &ids, None, &p, Some(replay), ctx, 0, 4) };
            assert_eq!(a, b, "seed {seed}");
            assert_eq!(a.0, SV_OK);
        }
    }

    #[test]
    fn verify_errors() {
        let t = [0.0; 6];
        let p = SvSamplingParams::from(&SamplingParams::default());
        let null = std::ptr::null_mut();
        let (status, _, _) = unsafe { verify(&t, 3, &[0], None, &p, None, null, 0, 1) };
        assert_eq!(status, ErrorCode::Buffer.status());
        assert!(last_error().contains("out_capacity"), "{}", last_error());
        // a callback out of [0, 1) fails the call
        let mut rng = Replay {
            values: vec![1.0],
            drawn: 0,
        };
        let ctx = &mut rng as *mut Replay as *mut c_void;
        let (status, _, _) = unsafe { verify(&t, 3, &[0], None, &p, Some(replay), ctx, 0, 2) };
        assert_eq!(status, ErrorCode::Callback.status());
        let mut rng = Replay {
            values: vec![f64::NAN],
            drawn: 0,
        };
        let ctx = &mut rng as *mut Replay as *mut c_void;
        let (status, _, _) = unsafe { verify(&t, 3, &[0], None, &p, Some(replay), ctx, 0, 2) };
        assert_eq!(status, ErrorCode::Callback.status());
        // bad params
        let bad = SvSamplingParams {
            temperature: -1.0,
            ..p
        };
        let (status, _, _) = unsafe { verify(&t, 3, &[0], None, &bad, None, null, 0, 2) };
        assert_eq!(status, ErrorCode::BadParam.status());
        // NULL params and outputs
        let mut out = [0i64; 2];
        let (mut a, mut b) = (0i64, 0i64);
        let status = unsafe {
            sv_verify_draft(
                t.as_ptr(),
                1,
                3,
                [0i64].as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                0,
                std::ptr::null(),
                0,
                None,
                null,
                0,
                out.as_mut_ptr(),
                2,
                &mut a,
                &mut b,
            )
        };
        assert_eq!(status, ErrorCode::Null.status());
        let status = unsafe {
            sv_verify_draft(
                t.as_ptr(),
                -1,
                3,
                std::ptr::null(),
                std::ptr::null(),
                &p,
                std::ptr::null(),
                0,
                std::ptr::null(),
                0,
                None,
                null,
                0,
                out.as_mut_ptr(),
                2,
                &mut a,
                &mut b,
            )
        };
        assert_eq!(status, ErrorCode::Shape.status());
        // success clears the message
        let (status, _, _) = unsafe { verify(&t, 3, &[0], None, &p, None, null, 0, 2) };
        assert_eq!(status, SV_OK);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn sampling_distribution_through_the_abi() {
        let logits = [0.0, 1.0, 1.0];
        let mut out = [9.0; 3];
        let g = SvSamplingParams::from(&SamplingParams::greedy());
        let history = [2i64];
        let status = unsafe {
            sv_sampling_distribution(
                logits.as_ptr(),
                3,
                &g,
                history.as_ptr(),
                1,
                std::ptr::null(),
                0,
                out.as_mut_ptr(),
            )
        };
        assert_eq!(status, SV_OK);
        assert_eq!(out, [0.0, 1.0, 0.0]);
        let bad_history = [3i64];
        let status = unsafe {
            sv_sampling_distribution(
                logits.as_ptr(),
                3,
                &g,
                bad_history.as_ptr(),
                1,
                std::ptr::null(),
                0,
                out.as_mut_ptr(),
            )
        };
        assert_eq!(status, ErrorCode::IdRange.status());
        assert!(last_error().contains("history"));
    }

    #[test]
    fn sample_and_step_through_the_abi() {
        let mut id = -1i64;
        assert_eq!(
            unsafe { sv_sample([0.5, 0.0, 0.5].as_ptr(), 3, 0.6, &mut id) },
            SV_OK
        );
        assert_eq!(id, 2);
        assert_eq!(
            unsafe { sv_sample([0.5, 0.5].as_ptr(), 2, 1.0, &mut id) },
            ErrorCode::BadParam.status()
        );
        assert_eq!(
            unsafe { sv_sample([0.0, 0.0].as_ptr(), 2, 0.5, &mut id) },
            ErrorCode::Distribution.status()
        );
        let (mut token, mut accepted) = (-1i64, -1i32);
        let p = [0.5, 0.25, 0.25];
        let q = [0.25, 0.5, 0.25];
        let status = unsafe {
            sv_speculative_step(
                p.as_ptr(),
                q.as_ptr(),
                3,
                1,
                0.7,
                0.4,
                &mut token,
                &mut accepted,
            )
        };
        assert_eq!((status, token, accepted), (SV_OK, 0, 0));
        let status = unsafe {
            sv_speculative_step(
                p.as_ptr(),
                q.as_ptr(),
                3,
                1,
                0.3,
                0.9,
                &mut token,
                &mut accepted,
            )
        };
        assert_eq!((status, token, accepted), (SV_OK, 1, 1));
        let q0 = [0.0, 0.5, 0.5];
        let status = unsafe {
            sv_speculative_step(
                p.as_ptr(),
                q0.as_ptr(),
                3,
                0,
                0.3,
                0.9,
                &mut token,
                &mut accepted,
            )
        };
        assert_eq!(status, ErrorCode::ZeroDraftProb.status());
    }

    #[test]
    fn prompt_lookup_through_the_abi() {
        let ctx = [1i64, 2, 3, 9, 1, 2];
        let mut out = [0i64; 3];
        let mut n = -1i64;
        let status =
            unsafe { sv_prompt_lookup(ctx.as_ptr(), 6, 3, 3, 1, out.as_mut_ptr(), 3, &mut n) };
        assert_eq!((status, n, out), (SV_OK, 3, [3, 9, 1]));
        let status =
            unsafe { sv_prompt_lookup(ctx.as_ptr(), 6, 3, 3, 1, out.as_mut_ptr(), 2, &mut n) };
        assert_eq!(status, ErrorCode::Buffer.status());
        let status =
            unsafe { sv_prompt_lookup(ctx.as_ptr(), 6, -1, 3, 1, out.as_mut_ptr(), 3, &mut n) };
        assert_eq!(status, ErrorCode::BadParam.status());
        let status = unsafe {
            sv_prompt_lookup(
                std::ptr::null(),
                0,
                3,
                3,
                1,
                std::ptr::null_mut(),
                0,
                &mut n,
            )
        };
        assert_eq!((status, n), (SV_OK, 0));
    }

    #[test]
    fn header_matches_the_crate() {
        // The header lives in the Python package; the crate must export exactly its functions
        // and use exactly its status codes.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../spec_verify/spec_verify.h"
        );
        let header = std::fs::read_to_string(path).expect("spec_verify/spec_verify.h is readable");
        let mut codes = Vec::new();
        let mut functions = Vec::new();
        let mut tree_rules = Vec::new();
        let mut capability_bits = Vec::new();
        for line in header.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            // `#define SV_CAP_NAME (1u << N)`
            if words.len() >= 5 && words[0] == "#define" && words[1].starts_with("SV_CAP_") {
                let shift: u32 = words[4].trim_end_matches(')').parse().unwrap();
                capability_bits.push((words[1].to_string(), 1u32 << shift));
            }
            if words.len() >= 3 && words[0] == "#define" && words[1].starts_with("SV_TREE_") {
                tree_rules.push((words[1].to_string(), words[2].parse::<i32>().unwrap()));
            }
            if words.len() >= 3
                && words[0] == "#define"
                && (words[1] == "SV_OK" || words[1].starts_with("SV_E_"))
            {
                codes.push((words[2].parse::<i32>().unwrap(), words[1].to_string()));
            }
            if words.first() == Some(&"#define") && words.get(1) == Some(&"SV_ABI_VERSION") {
                assert_eq!(words[2].parse::<u32>().unwrap(), ABI_VERSION);
            }
            // A declaration starts at column 0 with its return type: `int32_t sv_name(`.
            let declaration = ["uint32_t sv_", "int32_t sv_", "const char* sv_"]
                .iter()
                .find(|prefix| line.starts_with(**prefix));
            if let Some(prefix) = declaration {
                let rest = &line[prefix.len() - 3..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                functions.push(name);
            }
        }
        let mut expected = vec![(SV_OK, "SV_OK".to_string())];
        expected.extend(ErrorCode::ALL.map(|code| (code.status(), code.to_string())));
        assert_eq!(codes, expected);
        functions.sort();
        let mut exported = vec![
            "sv_abi_version",
            "sv_capabilities",
            "sv_last_error",
            "sv_status_name",
            "sv_pcg32_u32",
            "sv_pcg32_uniforms",
            "sv_sampling_distribution",
            "sv_sample",
            "sv_speculative_step",
            "sv_verify_draft",
            "sv_verify_tree",
            "sv_verify_block",
            "sv_verify_sampler_match",
            "sv_propose_and_verify",
            "sv_prompt_lookup",
        ];
        exported.sort();
        assert_eq!(functions, exported);
        // sv_capabilities' bits are the crate's, and the port declares what it offers
        let crate_bits = [
            ("SV_CAP_INJECTED_UNIFORMS", SV_CAP_INJECTED_UNIFORMS),
            ("SV_CAP_GREEDY", SV_CAP_GREEDY),
            ("SV_CAP_SAMPLING_DISTRIBUTION", SV_CAP_SAMPLING_DISTRIBUTION),
            ("SV_CAP_PROMPT_LOOKUP", SV_CAP_PROMPT_LOOKUP),
            ("SV_CAP_PCG32", SV_CAP_PCG32),
            ("SV_CAP_VERIFY_TREE", SV_CAP_VERIFY_TREE),
            ("SV_CAP_VERIFY_BLOCK", SV_CAP_VERIFY_BLOCK),
            ("SV_CAP_VERIFY_SAMPLER_MATCH", SV_CAP_VERIFY_SAMPLER_MATCH),
            ("SV_CAP_PROPOSE_AND_VERIFY", SV_CAP_PROPOSE_AND_VERIFY),
        ];
        for (name, bit) in crate_bits {
            assert!(capability_bits.contains(&(name.to_string(), bit)), "{name}");
            assert_ne!(sv_capabilities() & bit, 0, "{name}");
        }
        // sv_verify_tree's rule constants are the crate's
        let crate_rules = [
            (
                "SV_TREE_WITH_REPLACEMENT".to_string(),
                crate::tree::RULE_WITH_REPLACEMENT,
            ),
            (
                "SV_TREE_WITHOUT_REPLACEMENT".to_string(),
                crate::tree::RULE_WITHOUT_REPLACEMENT,
            ),
            ("SV_TREE_TYPICAL".to_string(), crate::tree::RULE_TYPICAL),
        ];
        assert_eq!(tree_rules, crate_rules);
    }
}
