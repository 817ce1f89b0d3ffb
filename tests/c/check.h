/* A minimal test harness for graphcore's C tests: CHECK counts passes and
 * failures, EXPECT_STATUS compares statuses and prints gc_last_error() on a
 * mismatch, and check_summary() prints "N passed, M failed" and returns the
 * exit code. */
#ifndef GC_CHECK_H
#define GC_CHECK_H

#include <stdio.h>
#include <string.h>
#include "graphcore.h"

static int check_passed, check_failed;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

#define EXPECT_STATUS(call, want)                                                \
    do {                                                                         \
        gc_status got_ = (call);                                                 \
        if (got_ == (want)) {                                                    \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: %s)\n", \
                    __FILE__, __LINE__, #call, gc_status_name((int)got_),        \
                    gc_status_name((int)(want)), gc_last_error());               \
        }                                                                        \
    } while (0)

#define EXPECT_OK(call) EXPECT_STATUS(call, GC_SUCCESS)

/* The last error mentions `needle`. */
#define EXPECT_ERROR_MENTIONS(needle)                                            \
    do {                                                                         \
        if (strstr(gc_last_error(), (needle)) != NULL) {                         \
            check_passed++;                                                      \
        } else {                                                                 \
            check_failed++;                                                      \
            fprintf(stderr, "%s:%d: last error \"%s\" does not mention \"%s\"\n", \
                    __FILE__, __LINE__, gc_last_error(), (needle));              \
        }                                                                        \
    } while (0)

static int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}

#endif
