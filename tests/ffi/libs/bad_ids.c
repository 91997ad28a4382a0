/* verify_draft emits the id V, one past the vocabulary. */
#define SV_CUSTOM_VERIFY_DRAFT
#include "stub.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    out_ids[0] = V;
    *out_n_emitted = 1;
    *out_n_accepted = 0;
    return SV_OK;
}
