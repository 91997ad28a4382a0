/* Writes a frame prefix announcing a 2**60-byte body onto every open socket, then answers: the
 * reader must refuse the size from the prefix, never allocate or wait for it. */
#include <stdint.h>
#include "hostile.h"

static void send_prefix(int fd) {
    char prefix[16];
    uint32_t header = 16;
    uint64_t body = (uint64_t)1 << 60;
    memcpy(prefix, "SVW1", 4);
    memcpy(prefix + 4, &header, 4);
    memcpy(prefix + 8, &body, 8);
    hostile_write_all(fd, prefix, sizeof prefix);
}

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    hostile_each_socket(send_prefix);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
