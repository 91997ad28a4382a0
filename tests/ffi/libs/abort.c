/* verify_draft calls abort(), as a failed assert or an aborting panic would. */
#include <stdio.h>
#include <stdlib.h>
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
    (void)uniform_ctx; (void)pcg_seed; (void)out_ids; (void)out_capacity; (void)out_n_emitted;
    (void)out_n_accepted;
    fprintf(stderr, "planted: assertion failed in verify_draft\n");
    fflush(stderr);
    abort();
    return SV_OK;
}
