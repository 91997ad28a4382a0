/* Closes every descriptor from 3 to HOSTILE_MAX_FD (the worker's socket among them), then answers. */
#include "hostile.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    for (int fd = 3; fd <= HOSTILE_MAX_FD; fd++) close(fd);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
