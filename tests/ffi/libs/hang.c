/* verify_draft never returns: the adapter's time limit must kill the worker. */
#define SV_CUSTOM_VERIFY_DRAFT
#include "stub.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    volatile uint64_t spin = 0;
    for (;;) spin++;
    return SV_OK;
}
