/* What every C hostile library shares: the minimal ABI v2 library of ../libs/stub.h with
 * verify_draft left to the hostile file, a wrong answer (reject the first draft, emit token 0:
 * the greedy tier catches it at once), and who this process is for $HOSTILE_PID_FILE (a
 * worker may run in a PID namespace of its own, with a /proc of its own). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOSTILE_MAX_FD 4096 /* the worker keeps its socket's number from the harness */
#define SV_CUSTOM_VERIFY_DRAFT
#include "../libs/stub.h"

static inline int32_t hostile_wrong(int64_t* out_ids, int64_t* out_n_emitted, int64_t* out_n_accepted) {
    out_ids[0] = 0;
    *out_n_emitted = 1;
    *out_n_accepted = 0;
    return SV_OK;
}

/* Who this process is, as any PID namespace's /proc can tell it: "pid:[inode] pid start",
 * its PID namespace, its pid there and its start time in clock ticks since boot. A sealed
 * worker has a /proc of its own, so it cannot learn its host pid; the test finds the process
 * by these three in the host's /proc (tests/_noted_process.py). */
static inline int hostile_identity(char* out, size_t size) {
    char ns[128];
    char stat[1024];
    ssize_t length = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    if (length <= 0) return -1;
    ns[length] = 0;
    FILE* file = fopen("/proc/self/stat", "r");
    if (file == NULL) return -1;
    size_t got = fread(stat, 1, sizeof stat - 1, file);
    fclose(file);
    stat[got] = 0;
    char* field = strrchr(stat, ')');
    if (field == NULL) return -1;
    /* after the name: state is field 3, starttime field 22 */
    for (int index = 3; index <= 22 && field != NULL; index++) field = strchr(field + 1, ' ');
    if (field == NULL) return -1;
    snprintf(out, size, "%s %ld %ld", ns, (long)getpid(), strtol(field, NULL, 10));
    return 0;
}

/* Write this process's identity to $HOSTILE_PID_FILE, atomically (a temporary file renamed
 * over it), for the test to look for the process after the run. */
static inline void hostile_note_pid(void) {
    const char* path = getenv("HOSTILE_PID_FILE");
    char temporary[4096];
    char identity[256];
    if (path == NULL || hostile_identity(identity, sizeof identity) != 0) return;
    snprintf(temporary, sizeof temporary, "%s.%ld", path, (long)getpid());
    FILE* out = fopen(temporary, "w");
    if (out == NULL) return;
    fprintf(out, "%s", identity);
    fclose(out);
    rename(temporary, path);
}

/* fork(), but the child notes its pid before the parent goes on (so the file exists whatever
 * the harness does to the child later): returns as fork() does. */
static inline pid_t hostile_fork_noted(void) {
    int ready[2];
    char byte = 0;
    if (pipe(ready) != 0) return -1;
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        hostile_note_pid();
        if (write(ready[1], &byte, 1) < 0) _exit(1);
        close(ready[1]);
        return 0;
    }
    close(ready[1]);
    if (child > 0 && read(ready[0], &byte, 1) < 0) byte = 1;
    close(ready[0]);
    return child;
}

#include <sys/stat.h>

/* Call fn(fd) for every open socket among descriptors 3..HOSTILE_MAX_FD (the worker's own is
 * one: it keeps the number it had in the harness, which a long test run can push past 64). */
static inline void hostile_each_socket(void (*fn)(int fd)) {
    struct stat info;
    for (int fd = 3; fd <= HOSTILE_MAX_FD; fd++) {
        if (fstat(fd, &info) == 0 && S_ISSOCK(info.st_mode)) fn(fd);
    }
}

/* Write all of data to fd (a socket may take it in pieces); errors are ignored. */
static inline void hostile_write_all(int fd, const void* data, size_t n) {
    const char* at = data;
    while (n > 0) {
        ssize_t done = write(fd, at, n);
        if (done <= 0) return;
        at += done;
        n -= (size_t)done;
    }
}
