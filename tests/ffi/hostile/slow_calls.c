/* Takes 50 ms a call and is wrong: a run of it must end at its budget, not hours later. */
#include "hostile.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    usleep(50000);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
