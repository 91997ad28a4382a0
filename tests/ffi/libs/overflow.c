/* verify_draft writes one id past out_capacity: the canary after the buffer must catch it. */
#define SV_CUSTOM_VERIFY_DRAFT
#include "stub.h"

int32_t sv_verify_draft(const double* target_logits, int64_t m, int64_t V, const int64_t* draft_ids,
                        const double* draft_probs, const sv_sampling_params* params,
                        const int64_t* history, int64_t n_history, const int64_t* prompt,
                        int64_t n_prompt, sv_uniform_fn uniform, void* uniform_ctx,
                        uint64_t pcg_seed, int64_t* out_ids, int64_t out_capacity,
                        int64_t* out_n_emitted, int64_t* out_n_accepted) {
    (void)target_logits; (void)m; (void)V; (void)draft_ids; (void)draft_probs; (void)params;
    (void)history; (void)n_history; (void)prompt; (void)n_prompt; (void)uniform;
    (void)uniform_ctx; (void)pcg_seed;
    for (int64_t i = 0; i <= out_capacity; i++) out_ids[i] = 0;
    *out_n_emitted = 1;
    *out_n_accepted = 0;
    return SV_OK;
}
