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

/* Two strings equal (NULL-safe). */
#define CHECK_STR(a, b)                                                                                          \
    CHECKF((a) && (b) && strcmp((a), (b)) == 0, "\"%s\" != \"%s\"", (a) ? (a) : "(null)", (b) ? (b) : "(null)")

/* Print the closing line and return the suite's exit status. */
static inline int check_done(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
