/* Ends the process with _exit(0) from a thread of its own while verify_draft waits for it. */
#include <pthread.h>
#include "hostile.h"

static void* end_everything(void* arg) {
    (void)arg;
    _exit(0);
    return NULL;
}

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    pthread_t thread;
    if (pthread_create(&thread, NULL, end_everything, NULL) == 0) pthread_join(thread, NULL);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
