/* Daemonises on the first call: fork, setsid(), fork; the grandchild (in a session of its own,
 * its parent gone) sleeps forever; who it is goes to $HOSTILE_PID_FILE. */
#include <sys/wait.h>
#include "hostile.h"

static int started = 0;

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    if (!started) {
        started = 1;
        pid_t child = fork();
        if (child == 0) {
            setsid();
            if (hostile_fork_noted() == 0) {
                for (;;) sleep(1);
            }
            _exit(0);
        }
        if (child > 0) waitpid(child, NULL, 0);
    }
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
