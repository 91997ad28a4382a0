/* Declares SV_CAP_VERIFY_TREE without exporting sv_verify_tree: the loader refuses it. */
#include "stub.h"

uint32_t sv_capabilities(void) {
    return SV_CAP_INJECTED_UNIFORMS | SV_CAP_GREEDY | SV_CAP_VERIFY_TREE;
}
