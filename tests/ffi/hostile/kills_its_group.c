/* Sends SIGKILL to its own process group (kill(0, ...)): with a PID namespace that group holds
 * the process that started the namespace and its first process too; none of it is the
 * harness's (a worker starts in a session of its own). */
#include <signal.h>
#include "hostile.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    kill(0, SIGKILL);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
