/* fuzz/replay.c — the replay driver a harness links when it is not built for libFuzzer: every file named (or every
 * file in every directory named, in name order) goes through the harness's LLVMFuzzerTestOneInput once. A failed
 * check aborts with its finding on stderr, so ctest replays the committed corpus and every past finding as a
 * regression test. A missing directory counts as empty (a harness may have no findings yet). */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Run one file through the harness, from a buffer of exactly its size (as libFuzzer passes it, so ASan sees a read
 * past the end); 0 when it could be read. */
static int run_file(const char *path)
{
    size_t n;
    char *text = ir_read_file(path, &n);
    if (!text) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return 1;
    }
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        free(text);
        return 1;
    }
    memcpy(buf, text, n);
    free(text);
    if (getenv("FUSECHECK_REPLAY_VERBOSE"))
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

/* Ascending order of names, for qsort. */
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Run every regular file of a directory, in name order; the count run, or -1 on an unreadable file. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **p = realloc(names, sizeof *names * cap);
            if (!p)
                break;
            names = p;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (names[i] && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0)
                count = -1;
            else if (count >= 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int total = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            int n = run_dir(argv[i]);
            if (n < 0)
                bad = 1;
            else
                total += n;
        } else if (stat(argv[i], &st) == 0) {
            if (run_file(argv[i]) != 0)
                bad = 1;
            else
                total++;
        }
    }
    fprintf(stderr, "replay: %d inputs run\n", total);
    return bad;
}
