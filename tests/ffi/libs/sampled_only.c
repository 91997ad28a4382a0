/* Declares through sv_capabilities that it has no greedy path and draws from its own
 * generator (SV_CAP_GREEDY and SV_CAP_INJECTED_UNIFORMS clear; bit 31, unknown to the
 * harness, set): the loader must take the declaration and ignore the unknown bit. */
#include "stub.h"

uint32_t sv_capabilities(void) {
    return SV_CAP_SAMPLING_DISTRIBUTION | SV_CAP_PROMPT_LOOKUP | SV_CAP_PCG32 | (1u << 31);
}
