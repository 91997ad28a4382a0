/* verify_draft writes through a NULL pointer: the worker dies with SIGSEGV. */
#define SV_CUSTOM_VERIFY_DRAFT
#include "stub.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    volatile int64_t* nowhere = (volatile int64_t*)0;
    *nowhere = 1;
    return SV_OK;
}
