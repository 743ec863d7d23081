/* ir/files.c — files written whole or not at all: every byte written however the kernel splits it, a replacement
 * written beside its target and renamed over it, and the temporary files of such writes removed by a signal that
 * ends the process while they are being written. */
#include "ir/ir.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ir_write_all(int fd, const void *bytes, uint64_t n)
{
    const char *s = bytes;
    while (n > 0) {
        ssize_t k = write(fd, s, n > (1u << 30) ? (1u << 30) : (size_t)n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        s += k;
        n -= (uint64_t)k;
    }
    return 0;
}

/* ── Temporary files a signal removes ────────────────────────────────────────────────────────────────────── */

/* The temporary file being written (empty: none), removed by an ending signal before it ends the process. */
static char guarded[4096];
static const int ending_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { ENDING_SIGNALS = sizeof ending_signals / sizeof ending_signals[0] };
static struct sigaction ending_before[ENDING_SIGNALS];
static bool ending_taken[ENDING_SIGNALS];

/* Remove the guarded file, then die of sig (unlink and sigaction are safe in a handler). */
static void remove_and_end(int sig)
{
    if (guarded[0])
        unlink(guarded);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered once the handler returns */
}

/* Block the ending signals (their old mask into old): what is done meanwhile no signal splits. */
static void block_ending(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < ENDING_SIGNALS; i++)
        sigaddset(&set, ending_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

/* Until unguard_file, SIGINT, SIGTERM and SIGHUP, where left to their default action, remove the file at path before
 * they end the process: a write stopped half-way leaves nothing of itself. A signal a command catches, or ignores,
 * stays its own (that command finishes its write whole, then stops). Called with the ending signals blocked. */
static void guard_file(const char *path)
{
    size_t len = strlen(path);
    if (len >= sizeof guarded)
        return; /* a path too long to keep is not guarded */
    memcpy(guarded, path, len + 1);
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = remove_and_end;
    sigemptyset(&act.sa_mask);
    for (int i = 0; i < ENDING_SIGNALS; i++)
        ending_taken[i] = sigaction(ending_signals[i], NULL, &ending_before[i]) == 0 &&
                          !(ending_before[i].sa_flags & SA_SIGINFO) && ending_before[i].sa_handler == SIG_DFL &&
                          sigaction(ending_signals[i], &act, NULL) == 0;
}

/* The ending signals' actions as they were before guard_file, and nothing guarded. Called with them blocked. */
static void unguard_file(void)
{
    for (int i = 0; i < ENDING_SIGNALS; i++)
        if (ending_taken[i])
            sigaction(ending_signals[i], &ending_before[i], NULL);
    memset(ending_taken, 0, sizeof ending_taken);
    guarded[0] = '\0';
}

/* ── Replacing a file ────────────────────────────────────────────────────────────────────────────────────── */

int ir_replace_file(const char *path, int mode, int (*body)(int fd, void *ctx), void *ctx)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        abort();
    snprintf(tmp, n, "%s.tmp.%ld.XXXXXX", path, (long)getpid());
    sigset_t mask_before;
    block_ending(&mask_before); /* the file made and guarded with no signal between */
    int fd = mkstemp(tmp);
    if (fd >= 0)
        guard_file(tmp);
    sigprocmask(SIG_SETMASK, &mask_before, NULL);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    int rc = fchmod(fd, mode >= 0 ? (mode_t)mode : 0666 & ~mask) || body(fd, ctx) || fsync(fd) ? -1 : 0;
    int e = errno;
    if (close(fd) != 0 && rc == 0)
        rc = -1, e = errno;
    block_ending(&mask_before); /* renamed or removed, then unguarded, with no signal between */
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1, e = errno;
    if (rc != 0)
        unlink(tmp);
    unguard_file();
    sigprocmask(SIG_SETMASK, &mask_before, NULL);
    free(tmp);
    errno = e;
    return rc;
}
