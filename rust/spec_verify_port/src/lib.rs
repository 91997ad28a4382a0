//! `spec_verify_port`: a Rust port of the spec-verify contract (reference/CONTRACT.md) that
//! exports the C ABI of `spec_verify/spec_verify.h`, version 2.
//!
//! - [`pcg32`]: the request stream, bit for bit;
//! - [`sampling`]: the sampling distribution and inverse-CDF sampling;
//! - [`verify`]: the rejection step and `verify_draft` in the contract's draw order;
//! - [`tree`]: `verify_tree` (CONTRACT.md section 6; its C symbol `sv_verify_tree` is
//!   optional in the ABI and lives in `ffi/tree.rs`);
//! - [`rules`]: block verification and sampler-match behind one chain-rule dispatcher
//!   ([`verify_chain_rule`]; the C symbols `sv_verify_block`, `sv_verify_sampler_match`);
//! - [`propose`]: `propose_and_verify` (CONTRACT.md section 14: the drafts drawn from the
//!   draft's rows on the call's own stream, then verified; `sv_propose_and_verify`);
//! - [`lookup`]: prompt lookup;
//! - `ffi` (crate-private): the `extern "C"` functions and the ABI's own `#[repr(C)]`
//!   parameter struct (validation, error codes, no panic across the ABI);
//! - [`error`]: [`ErrorCode`] (`#[repr(i32)]`, the header's status numbers) and [`SvError`].
//!
//! Cargo features named `bug_*` plant one documented bug each (README.md); the gate's
//! negative controls build them. A clean build enables none.

pub mod error;
pub(crate) mod ffi;
pub mod lookup;
pub mod pcg32;
pub mod propose;
pub mod rules;
pub mod sampling;
pub mod tree;
pub mod verify;

pub use error::{ErrorCode, SvError, SvResult};
pub use lookup::prompt_lookup;
pub use pcg32::{request_rng, Pcg32};
pub use propose::propose_and_verify;
pub use rules::{verify_chain_rule, ChainRule};
pub use sampling::{sample_with, sampling_distribution, SamplingParams};
pub use tree::{verify_tree, TreeVerified};
pub use verify::{speculative_step, verify_draft, Verified};

/// The planted bugs compiled into this build (empty for a clean build).
pub const PLANTED_BUGS: &[&str] = &[
    #[cfg(feature = "bug_resample_before_accept")]
    "bug_resample_before_accept",
    #[cfg(feature = "bug_bonus_wrong_row")]
    "bug_bonus_wrong_row",
    #[cfg(feature = "bug_ties_highest")]
    "bug_ties_highest",
    #[cfg(feature = "bug_residual_from_p")]
    "bug_residual_from_p",
    #[cfg(feature = "bug_lookup_oldest")]
    "bug_lookup_oldest",
    #[cfg(feature = "bug_penalty_ignores_kept")]
    "bug_penalty_ignores_kept",
    #[cfg(feature = "bug_top_p_inclusive")]
    "bug_top_p_inclusive",
    #[cfg(feature = "bug_penalty_window")]
    "bug_penalty_window",
    #[cfg(feature = "bug_shared_scratch")]
    "bug_shared_scratch",
    #[cfg(feature = "bug_sample_inclusive")]
    "bug_sample_inclusive",
    #[cfg(feature = "bug_tree_stale_residual")]
    "bug_tree_stale_residual",
    #[cfg(feature = "bug_block_unadjusted_residual")]
    "bug_block_unadjusted_residual",
    #[cfg(feature = "bug_sampler_match_no_break")]
    "bug_sampler_match_no_break",
    #[cfg(feature = "bug_draft_shares_verifier_noise")]
    "bug_draft_shares_verifier_noise",
];
