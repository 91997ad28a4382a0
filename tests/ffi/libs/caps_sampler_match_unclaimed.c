/* Exports sv_verify_sampler_match and leaves SV_CAP_VERIFY_SAMPLER_MATCH (bit 9) clear in sv_capabilities:
 * refused at load. */
#include "stub.h"

SV_CHAIN_SIGNATURE(sv_verify_sampler_match) {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    out_ids[0] = 0;
    *out_n_emitted = 1;
    *out_n_accepted = 0;
    return SV_OK;
}

uint32_t sv_capabilities(void) { return SV_CAP_INJECTED_UNIFORMS | SV_CAP_GREEDY; }
