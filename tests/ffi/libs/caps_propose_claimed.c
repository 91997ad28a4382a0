/* Declares SV_CAP_PROPOSE_AND_VERIFY (bit 10) without exporting sv_propose_and_verify:
 * refused at load. */
#include "stub.h"

uint32_t sv_capabilities(void) {
    return SV_CAP_INJECTED_UNIFORMS | SV_CAP_GREEDY | SV_CAP_PROPOSE_AND_VERIFY;
}
