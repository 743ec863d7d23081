/* tests/check.h — the assertions every suite uses, and the closing line ctest's log shows. */
#ifndef FUSECHECK_TESTS_CHECK_H
#define FUSECHECK_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

/* Count one assertion; print where it failed. */
#define CHECK(cond)                                                                                              \
    do {                                                                                                         \
        if (cond) {                                                                                              \
            check_passed++;                                                                                      \
        } else {                                                                                                 \
            check_failed++;                                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                             \
        }                                                                                                        \
    } while (0)

/* Like CHECK, with a printf-style note on failure. */
#define CHECKF(cond, ...)                                                                                        \
    do {                                                                                                         \
        if (cond) {                                                                                              \
            check_passed++;                                                                                      \
        } else {                                                                                                 \
            check_failed++;                                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                             \
            fprintf(stderr, __VA_ARGS__);                                                                        \
            fputc('\n', stderr);                                                                                 \
        }                                                                                                        \
    } while (0)

/* Whether two strings are equal, NULL equal to nothing. */
static inline int check_str_eq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }
/* A printable string, NULL shown as (null). */
static inline const char *check_str_show(const char *s) { return s ? s : "(null)"; }

/* Two strings equal (NULL-safe). */
#define CHECK_STR(a, b) CHECKF(check_str_eq((a), (b)), "\"%s\" != \"%s\"", check_str_show(a), check_str_show(b))

/* Print the closing line and return the suite's exit status. */
static inline int check_done(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
