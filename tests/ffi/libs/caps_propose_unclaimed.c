/* Exports sv_propose_and_verify and leaves SV_CAP_PROPOSE_AND_VERIFY (bit 10) clear in
 * sv_capabilities: refused at load. */
#include "stub.h"

int32_t sv_propose_and_verify(const double* target_logits, const double* draft_logits,
                              int64_t k, int64_t V, const sv_sampling_params* params,
                              const sv_sampling_params* draft_params, const int64_t* history,
                              int64_t n_history, const int64_t* prompt, int64_t n_prompt,
                              sv_uniform_fn uniform, void* uniform_ctx, uint64_t pcg_seed,
                              int64_t* out_ids, int64_t out_capacity, int64_t* out_n_emitted,
                              int64_t* out_n_accepted) {
    (void)target_logits; (void)draft_logits; (void)k; (void)V; (void)params;
    (void)draft_params; (void)history; (void)n_history; (void)prompt; (void)n_prompt;
    (void)uniform; (void)uniform_ctx; (void)pcg_seed; (void)out_capacity;
    out_ids[0] = 0;
    *out_n_emitted = 1;
    *out_n_accepted = 0;
    return SV_OK;
}

uint32_t sv_capabilities(void) { return SV_CAP_INJECTED_UNIFORMS | SV_CAP_GREEDY; }
