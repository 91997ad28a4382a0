/* Sends itself SIGSTOP inside verify_draft: a stopped worker neither answers nor exits. */
#include <signal.h>
#include "hostile.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    raise(SIGSTOP);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
