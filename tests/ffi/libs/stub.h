/* A minimal spec_verify.h (ABI v2) library for the adapter's tests: every function does the
 * least that is valid, and each test library overrides one of them with a misbehaviour
 * (define SV_CUSTOM_<NAME> before including this file, then define the function). */
#include <stdint.h>
#include <stddef.h>
#include "spec_verify.h"

#ifndef SV_CUSTOM_ABI_VERSION
uint32_t sv_abi_version(void) { return 2; }
#endif

const char* sv_last_error(void) { return ""; }

const char* sv_status_name(int32_t status) { return status == 0 ? "SV_OK" : "SV_E_UNKNOWN"; }

static uint32_t stub_pcg32_next(uint64_t* state, uint64_t inc) {
    uint64_t old = *state;
    *state = old * 6364136223846793005ULL + inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

static void stub_pcg32_seed(uint64_t* state, uint64_t* inc, uint64_t initstate, uint64_t initseq) {
    *state = 0u;
    *inc = (initseq << 1u) | 1u;
    stub_pcg32_next(state, *inc);
    *state += initstate;
    stub_pcg32_next(state, *inc);
}

int32_t sv_pcg32_u32(uint64_t initstate, uint64_t initseq, int64_t n, uint32_t* out) {
    uint64_t state, inc;
    stub_pcg32_seed(&state, &inc, initstate, initseq);
    for (int64_t i = 0; i < n; i++) out[i] = stub_pcg32_next(&state, inc);
    return SV_OK;
}

int32_t sv_pcg32_uniforms(uint64_t initstate, uint64_t initseq, int64_t n, double* out) {
    uint64_t state, inc;
    stub_pcg32_seed(&state, &inc, initstate, initseq);
    for (int64_t i = 0; i < n; i++) out[i] = stub_pcg32_next(&state, inc) * (1.0 / 4294967296.0);
    return SV_OK;
}

int32_t sv_sampling_distribution(const double* logits, int64_t V, const sv_sampling_params* params,
                                 const int64_t* history, int64_t n_history, const int64_t* prompt,
                                 int64_t n_prompt, double* out_probs) {
    (void)logits; (void)params; (void)history; (void)n_history; (void)prompt; (void)n_prompt;
    for (int64_t i = 0; i < V; i++) out_probs[i] = 1.0 / (double)V;
    return SV_OK;
}

int32_t sv_sample(const double* dist, int64_t V, double u, int64_t* out_id) {
    (void)dist; (void)V; (void)u;
    *out_id = 0;
    return SV_OK;
}

int32_t sv_speculative_step(const double* p, const double* q, int64_t V, int64_t x, double u_accept,
                            double u_resample, int64_t* out_token, int32_t* out_accepted) {
    (void)p; (void)q; (void)V; (void)u_accept; (void)u_resample;
    *out_token = x;
    *out_accepted = 1;
    return SV_OK;
}

/* The ABI's chain signature (sv_verify_draft's, and the optional sv_verify_block's and
 * sv_verify_sampler_match's), for the libraries that define their own. */
#define SV_CHAIN_SIGNATURE(name)                                                               \
    int32_t name(const double* target_logits, int64_t m, int64_t V,                            \
                 const int64_t* draft_ids, const double* draft_probs,                          \
                 const sv_sampling_params* params, const int64_t* history,                     \
                 int64_t n_history, const int64_t* prompt, int64_t n_prompt,                   \
                 sv_uniform_fn uniform, void* uniform_ctx, uint64_t pcg_seed,                  \
                 int64_t* out_ids, int64_t out_capacity, int64_t* out_n_emitted,               \
                 int64_t* out_n_accepted)
#define SV_VERIFY_DRAFT_SIGNATURE SV_CHAIN_SIGNATURE(sv_verify_draft)
#define SV_IGNORE_VERIFY_DRAFT_ARGS                                                            \
    (void)target_logits; (void)m; (void)V; (void)draft_ids; (void)draft_probs; (void)params;   \
    (void)history; (void)n_history; (void)prompt; (void)n_prompt; (void)uniform;               \
    (void)uniform_ctx; (void)pcg_seed; (void)out_ids; (void)out_capacity; (void)out_n_emitted; \
    (void)out_n_accepted

#ifndef SV_CUSTOM_VERIFY_DRAFT
SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    out_ids[0] = 0;
    *out_n_emitted = 1;
    *out_n_accepted = 0;
    return SV_OK;
}
#endif

#ifndef SV_CUSTOM_PROMPT_LOOKUP
int32_t sv_prompt_lookup(const int64_t* ctx, int64_t n_ctx, int64_t k, int64_t max_ngram,
                         int64_t min_ngram, int64_t* out_ids, int64_t out_capacity,
                         int64_t* out_n) {
    (void)ctx; (void)n_ctx; (void)k; (void)max_ngram; (void)min_ngram; (void)out_ids;
    (void)out_capacity;
    *out_n = 0;
    return SV_OK;
}
#endif
