/* Reports ABI version 1 (sequential sums, before issue 14): the loader must refuse it. */
#define SV_CUSTOM_ABI_VERSION
#include "stub.h"

uint32_t sv_abi_version(void) { return 1; }
