/* Writes a well-formed reply frame onto every open socket claiming the right greedy answer
 * (argmax chain: accept while the draft is the row's argmax, then that argmax or the bonus),
 * then returns the wrong one: the worker's own reply follows the forged one, and the harness
 * must judge the data it gets, never trust that a frame came from the worker loop. */
#include <stdint.h>
#include "hostile.h"

static char frame[1 << 16];
static size_t frame_len;

static void send_forged(int fd) { hostile_write_all(fd, frame, frame_len); }

static int64_t argmax(const double* row, int64_t V) {
    int64_t best = 0;
    for (int64_t i = 1; i < V; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

SV_VERIFY_DRAFT_SIGNATURE {
    SV_IGNORE_VERIFY_DRAFT_ARGS;
    char ids[1 << 14];
    size_t at = 0;
    int64_t accepted = 0;
    for (int64_t i = 0; i <= m && at + 64 < sizeof ids; i++) {
        int64_t best = argmax(target_logits + i * V, V);
        at += (size_t)snprintf(ids + at, sizeof ids - at, "%s%lld", i ? "," : "", (long long)best);
        if (i == m || draft_ids[i] != best) break;
        accepted++;
    }
    ids[at] = '\0';
    char header[1 << 15];
    int hlen = snprintf(header, sizeof header,
                        "{\"header\":{\"kind\":\"done\",\"outcome\":\"ok\",\"value\":"
                        "{\"$t\":[[%s],%lld]},\"drawn\":0},\"arrays\":[]}",
                        ids, (long long)accepted);
    uint32_t h = (uint32_t)hlen;
    uint64_t body = 0;
    memcpy(frame, "SVW1", 4);
    memcpy(frame + 4, &h, 4); /* little-endian on every machine this test runs on */
    memcpy(frame + 8, &body, 8);
    memcpy(frame + 16, header, (size_t)hlen);
    frame_len = 16 + (size_t)hlen;
    hostile_each_socket(send_forged);
    return hostile_wrong(out_ids, out_n_emitted, out_n_accepted);
}
