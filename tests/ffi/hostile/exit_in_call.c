/* Calls exit(0) inside verify_draft: a status of 0 from the worker is no verdict. */
#include "hostile.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    exit(0);
    return SV_OK;
}
