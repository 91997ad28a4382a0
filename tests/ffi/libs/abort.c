/* verify_draft calls abort(), as a failed assert or an aborting panic would. */
#include <stdio.h>
#include <stdlib.h>
#define SV_CUSTOM_VERIFY_DRAFT
#include "stub.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    fprintf(stderr, "planted: assertion failed in verify_draft\n");
    fflush(stderr);
    abort();
    return SV_OK;
}
