/* Starts a thread on the first call that spins forever after verify_draft returns: the worker
 * keeps answering (wrongly) while a core is busy, and must still be ended at the close. */
#include <pthread.h>
#include "hostile.h"

static int started = 0;

static void* spin(void* arg) {
    (void)arg;
    volatile uint64_t count = 0;
    for (;;) count++;
    return NULL;
}

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    if (!started) {
        pthread_t thread;
        started = pthread_create(&thread, NULL, spin, NULL) == 0;
    }
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
