/* Declares SV_CAP_VERIFY_BLOCK (bit 8) without exporting sv_verify_block: refused at load. */
#include "stub.h"

uint32_t sv_capabilities(void) {
    return SV_CAP_INJECTED_UNIFORMS | SV_CAP_GREEDY | SV_CAP_VERIFY_BLOCK;
}
