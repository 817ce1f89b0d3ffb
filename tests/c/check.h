/* A minimal test harness for graphcore's C tests: CHECK counts passes and
 * failures, EXPECT_STATUS compares statuses and prints gc_last_error() on a
 * mismatch, and check_summary() prints "N passed, M failed" and returns the
 * exit code. check_case (set it around a group of checks) says which input
 * a failing check was given. */
#ifndef GC_CHECK_H
#define GC_CHECK_H

#include <stdio.h>
#include <string.h>
#include "graphcore.h"

static int check_passed, check_failed;
static const char *check_case = "";

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s [%s]\n", __FILE__, __LINE__, #cond, \
                    check_case);                                                 \
        }                                                                        \
    } while (0)

#define EXPECT_STATUS(call, want)                                                \
    do {                                                                         \
        gc_status got_ = (call);                                                 \
        if (got_ == (want)) {                                                    \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s [%s] (last error: %s)\n", \
                    __FILE__, __LINE__, #call, gc_status_name((int)got_),        \
                    gc_status_name((int)(want)), check_case, gc_last_error());   \
        }                                                                        \
    } while (0)

#define EXPECT_OK(call) EXPECT_STATUS(call, GC_SUCCESS)

/* The call fails cleanly: any error status but a caught panic. */
#define EXPECT_FAILS(call)                                                       \
    do {                                                                         \
        gc_status got_ = (call);                                                 \
        if (got_ != GC_SUCCESS && got_ != GC_ERROR_PANIC) {                      \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, expected an error [%s] (last error: %s)\n", \
                    __FILE__, __LINE__, #call, gc_status_name((int)got_),        \
                    check_case, gc_last_error());                                \
        }                                                                        \
    } while (0)

/* The last error mentions `needle`. */
#define EXPECT_ERROR_MENTIONS(needle)                                            \
    do {                                                                         \
        if (strstr(gc_last_error(), (needle)) != NULL) {                         \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: last error \"%s\" does not mention \"%s\" [%s]\n", \
                    __FILE__, __LINE__, gc_last_error(), (needle), check_case);  \
        }                                                                        \
    } while (0)

static int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}

#endif
