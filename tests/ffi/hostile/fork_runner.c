/* Starts a "runner" on the first call: a process that forks, calls setsid() and exits, over
 * and over, so its pid and session change faster than anyone can list them (the classic way
 * out of a kill loop). Bounded: every generation gives up 5 s after the first started, so an
 * escape is seen by the test, not left on the machine. Each generation writes who it is
 * to $HOSTILE_PID_FILE: a file that keeps changing after the run means the runner got out.
 * A PID namespace contains it (the kernel kills the namespace at once); without one, a walk
 * that lists /proc first and signals after was outrun (1 run in 5), and kill_tree now kills
 * each process the moment it reads it, its root stopped but alive to take in orphans. */
#include <time.h>
#include "hostile.h"

static int started = 0;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    if (!started) {
        started = 1;
        double end = now() + 5.0;
        if (hostile_fork_noted() == 0) {
            while (now() < end) {
                pid_t next = fork();
                if (next != 0) _exit(0); /* the parent (or a failed fork) gives way */
                setsid();
                hostile_note_pid();
            }
            _exit(0);
        }
        usleep(200000); /* the runner is in full swing when the harness ends this worker */
    }
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
