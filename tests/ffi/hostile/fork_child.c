/* Forks a child on the first call that sleeps forever (holding the worker's socket too); its
 * identity goes to $HOSTILE_PID_FILE. */
#include "hostile.h"

static int started = 0;

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    if (!started) {
        started = 1;
        if (hostile_fork_noted() == 0) {
            for (;;) sleep(1);
        }
    }
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
