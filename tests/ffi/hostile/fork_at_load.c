/* Forks a child as the library is loaded (an ELF constructor, before any call) that sleeps
 * forever; who it is goes to $HOSTILE_PID_FILE. verify_draft answers wrongly. */
#include "hostile.h"

__attribute__((constructor)) static void fork_at_load(void) {
    if (hostile_fork_noted() == 0) {
        for (;;) sleep(1);
    }
}

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
