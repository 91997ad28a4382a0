/* Ignores SIGTERM, SIGINT, SIGALRM and SIGHUP with sigaction, cancels any interval timer, and
 * spins forever in verify_draft: only a kill from outside ends it. */
#include <signal.h>
#include <sys/time.h>
#include "hostile.h"

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    int signals[] = {SIGTERM, SIGINT, SIGALRM, SIGHUP};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &ignore, NULL);
    struct itimerval off;
    memset(&off, 0, sizeof off);
    setitimer(ITIMER_REAL, &off, NULL);
    volatile uint64_t spin = 0;
    for (;;) spin++;
    return SV_OK;
}
