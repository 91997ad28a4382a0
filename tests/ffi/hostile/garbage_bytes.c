/* Writes 800 bytes of garbage onto every open socket, then answers (wrongly) as usual. */
#include "hostile.h"

static void send_garbage(int fd) {
    char garbage[800];
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = "GARBAGE!"[i % 8];
    hostile_write_all(fd, garbage, sizeof garbage);
}

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    hostile_each_socket(send_garbage);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
