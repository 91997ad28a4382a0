/* Allocates and touches 64 MiB blocks until malloc fails (the worker's RLIMIT_AS stops it),
 * keeps them, and answers wrongly. */
#include "hostile.h"

#define CHUNK ((size_t)64 << 20)

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    for (;;) {
        char* block = malloc(CHUNK);
        if (block == NULL) break;
        memset(block, 1, CHUNK);
    }
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
