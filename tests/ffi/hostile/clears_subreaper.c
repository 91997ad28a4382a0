/* Clears the worker's child-subreaper flag (prctl), then daemonises on the first call: fork,
 * setsid(), fork; the grandchild sleeps (for at most 10 s, so an escape does not outlive the
 * test by much) and who it is goes to $HOSTILE_PID_FILE. In a PID namespace the orphan goes
 * to the namespace's first process and dies with it; without one it goes to init, out of the
 * worker's tree: a limit docs/threat-model.md states. */
#include <sys/prctl.h>
#include <sys/wait.h>
#include "hostile.h"

static int started = 0;

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    if (!started) {
        started = 1;
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        pid_t child = fork();
        if (child == 0) {
            setsid();
            if (hostile_fork_noted() == 0) {
                sleep(10);
                _exit(0);
            }
            _exit(0);
        }
        if (child > 0) waitpid(child, NULL, 0);
    }
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
