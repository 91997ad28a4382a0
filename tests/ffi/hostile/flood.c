/* Writes 100 MB to stderr and 100 MB to stdout on every call, then answers wrongly. */
#include "hostile.h"

#define BLOCK (1 << 20)

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    static char block[BLOCK];
    for (size_t i = 0; i < BLOCK; i++) block[i] = "flood "[i % 6];
    for (int k = 0; k < 100; k++) {
        if (write(2, block, BLOCK) < 0 || write(1, block, BLOCK) < 0) break;
    }
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
