/* Writes into its const inputs (target_logits and draft_ids), as a library that sorts or
 * normalises in place would, and answers wrongly. */
#include "hostile.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    double* logits = (double*)target_logits;
    int64_t* ids = (int64_t*)draft_ids;
    for (int64_t i = 0; i < (m + 1) * V; i++) logits[i] = 0.0;
    for (int64_t i = 0; i < m; i++) ids[i] = 0;
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
