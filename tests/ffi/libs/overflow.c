/* verify_draft writes one id past out_capacity: the canary after the buffer must catch it. */
#define SV_CUSTOM_VERIFY_DRAFT
#include "stub.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    for (int64_t i = 0; i <= out_capacity; i++) out_ids[i] = 0;
    *out_n_emitted = 1;
    *out_n_accepted = 0;
    return SV_OK;
}
