/* Crashes in a load-time constructor, before any function is called: the loader must say so
 * (the library is only ever loaded in the worker process). */
#include <signal.h>
#include "stub.h"

__attribute__((constructor)) void sv_test_crash_at_load(void) { raise(SIGSEGV); }
