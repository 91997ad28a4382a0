/* Declares SV_CAP_VERIFY_SAMPLER_MATCH (bit 9) without exporting sv_verify_sampler_match:
 * refused at load. */
#include "stub.h"

uint32_t sv_capabilities(void) {
    return SV_CAP_INJECTED_UNIFORMS | SV_CAP_GREEDY | SV_CAP_VERIFY_SAMPLER_MATCH;
}
