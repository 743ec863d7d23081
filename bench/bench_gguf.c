/* bench/bench_gguf.c — figures for GGUF files: an 8B-shaped file (llama3-8b, q4_k weights) written sparse (its data
 * section holes), then read and lifted: the read's and the lift's times, and the peak resident memory of
 * `fusecheck lift FILE` on it beside the file's size (lifting must not read the weights). Usage:
 * bench_gguf [FUSECHECK_BINARY] (default build/default/fusecheck). */
#define _DEFAULT_SOURCE /* wait4 */
#include "models/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The peak resident memory (MiB) of `bin lift arg -o /dev/null` run as a child; -1 when it fails. */
static double child_peak_mib(const char *bin, const char *arg)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(bin, bin, "lift", arg, "-o", "/dev/null", (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
    const char *bin = argc > 1 ? argv[1] : "build/default/fusecheck";
    const struct models_config *c = models_find("llama3-8b");
    struct models_options o = models_default_options();
    o.weights = IR_FMT_Q4_K;
    char err[IR_ERR_LEN], path[] = "/tmp/bench_gguf.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    double t0 = now();
    struct ir_graph *g = models_lift(c, &o, err);
    if (!g || models_gguf_export(c, g, NULL, path, err) != 0) {
        fprintf(stderr, "bench_gguf: %s\n", err);
        unlink(path);
        return 1;
    }
    double t_write = now() - t0;
    ir_graph_free(g);
    struct stat st;
    stat(path, &st);
    printf("llama3-8b q4_k GGUF: %.2f GiB, %.1f MiB on disk (sparse), written in %.3f s\n",
           (double)st.st_size / (1 << 30), (double)st.st_blocks * 512 / (1 << 20), t_write);
    double best_read = 1e9, best_lift = 1e9;
    for (int r = 0; r < 5; r++) {
        t0 = now();
        struct ir_gguf *f = ir_gguf_open(path, err);
        double t1 = now();
        struct ir_graph *h = f ? models_gguf_lift(f, &o, err) : NULL;
        double t2 = now();
        if (!h) {
            fprintf(stderr, "bench_gguf: %s\n", err);
            ir_gguf_close(f);
            unlink(path);
            return 1;
        }
        best_read = t1 - t0 < best_read ? t1 - t0 : best_read;
        best_lift = t2 - t1 < best_lift ? t2 - t1 : best_lift;
        ir_graph_free(h);
        ir_gguf_close(f);
    }
    printf("read (header, keys, tensor infos; mapped): %.3f ms; lift from the file: %.3f ms (best of 5)\n",
           best_read * 1e3, best_lift * 1e3);
    printf("peak RSS, fusecheck lift: the GGUF file %.1f MiB, the zoo's llama3-8b %.1f MiB\n",
           child_peak_mib(bin, path), child_peak_mib(bin, "llama3-8b"));
    unlink(path);
    return 0;
}
