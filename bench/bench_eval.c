/* bench/bench_eval.c — the evaluator against llama.cpp on the same exported GGUF file and the same tokens: whole
 * processes (loading included, the file in the page cache), `fusecheck eval FILE --mode M --ctx C --tokens ... --last`
 * and llama.cpp's run of the same tokens as one batch (cli_llama_last_logits: the CPU backend, one thread, the last
 * position's logits, as a prompt is run; the evaluator's --last computes the same row), each the median of BENCH_EVAL_ROUNDS rounds (default 3), the wall clock and the CPU
 * time (user + system) the process took; then the evaluator's thread scaling (--threads 1, 2) on the first work
 * (wall and user seconds), and `diff qwen3-30b-a3b --mode prefill:512 --layers 2` on 1 and 2 threads (wall, user
 * seconds, peak resident set: the 30 s and 2 GB).
 * The machine may be shared: the CPU-time ratio is the one that does not depend on its load.
 *
 * usage: bench_eval [FUSECHECK [DIR]] — the fusecheck binary (by default the one beside this program) and the folder
 * the GGUF files are exported into once (by default $BENCH_EVAL_DIR, else /tmp/fusecheck-bench-eval). */
#define _DEFAULT_SOURCE /* wait4: each child's own rusage */
#include "bench/bench.h"
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One work: a model exported to a file, a mode and its token count, the context both sides get. */
struct work {
    const char *model, *file, *layers, *mode;
    int32_t ntokens;
    int64_t ctx;
};

static const struct work works[] = {
    {"qwen3-0.6b", "qwen3-0.6b-q8_0.gguf", "all", "prefill:64", 64, 256},
    {"qwen3-0.6b", "qwen3-0.6b-q8_0.gguf", "all", "decode", 1, 256},
    {"qwen3-30b-a3b", "qwen3-30b-a3b-1layer-q8_0.gguf", "1", "prefill:512", 512, 512},
};

/* A process's cost: wall seconds, CPU seconds (user + system), user seconds alone, peak resident set (GB: its
 * kilobytes over 10^6, the figure /usr/bin/time -v gives in kilobytes). */
struct cost {
    double wall, cpu, user, rss_gb;
};

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Seconds in a timeval. */
static double tv_s(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec * 1e-6; }

/* Wait for child pid; its cost since t0 (its own rusage), or wall < 0 when it failed. */
static struct cost reap(pid_t pid, double t0)
{
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return (struct cost){-1, -1, -1, -1};
    double user = tv_s(ru.ru_utime);
    return (struct cost){now_s() - t0, user + tv_s(ru.ru_stime), user, (double)ru.ru_maxrss / 1e6}; /* kB, as time -v */
}

/* Run argv (stdout to /dev/null); its cost. */
static struct cost run_command(char *const argv[])
{
    fflush(stdout); /* a child must not write this process's buffered lines again */
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    return reap(pid, t0);
}

/* Run the tokens through llama.cpp in a child process; its cost. */
static struct cost run_llama(const char *path, const int32_t *tokens, int32_t n)
{
    fflush(stdout); /* a child must not write this process's buffered lines again */
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        struct cli_llama_run r;
        char err[IR_ERR_LEN];
        int rc = cli_llama_last_logits(path, tokens, n, &r, err);
        if (rc)
            fprintf(stderr, "bench_eval: %s\n", err);
        else
            cli_llama_run_free(&r);
        _exit(rc ? 1 : 0);
    }
    return reap(pid, t0);
}

static struct cost medians(double *walls, double *cpus, double *users, double *rss, int rounds);

/* The medians of `rounds` costs of fusecheck eval (llama: llama.cpp) on work w; wall < 0 when a round failed. */
static struct cost median_cost(const char *binary, const char *path, const struct work *w, const int32_t *tokens,
                               const char *token_list, int threads, bool llama, int rounds)
{
    double walls[16], cpus[16], users[16], rss[16];
    char ctx[32], nthreads[16];
    snprintf(ctx, sizeof ctx, "%lld", (long long)w->ctx);
    snprintf(nthreads, sizeof nthreads, "%d", threads);
    char *argv[] = {(char *)binary, "eval", (char *)path, "--mode", (char *)w->mode, "--ctx", ctx,
                    "--tokens", (char *)token_list, "--last", "--threads", nthreads, NULL};
    for (int i = 0; i < rounds; i++) {
        struct cost c = llama ? run_llama(path, tokens, w->ntokens) : run_command(argv);
        if (c.wall < 0)
            return c;
        walls[i] = c.wall;
        cpus[i] = c.cpu;
        users[i] = c.user;
        rss[i] = c.rss_gb;
    }
    return medians(walls, cpus, users, rss, rounds);
}

/* The median of each of `rounds` walls, CPUs, users and peaks (each sorted in place). */
static struct cost medians(double *walls, double *cpus, double *users, double *rss, int rounds)
{
    qsort(walls, (size_t)rounds, sizeof walls[0], bench_cmp_double);
    qsort(cpus, (size_t)rounds, sizeof cpus[0], bench_cmp_double);
    qsort(users, (size_t)rounds, sizeof users[0], bench_cmp_double);
    qsort(rss, (size_t)rounds, sizeof rss[0], bench_cmp_double);
    return (struct cost){walls[rounds / 2], cpus[rounds / 2], users[rounds / 2], rss[rounds / 2]};
}

/* The medians of `rounds` runs of `fusecheck diff qwen3-30b-a3b --mode prefill:512 --layers 2` on `threads`
 * threads (the evaluator at real scale: two evaluations of a two-layer mixture-of-experts graph, seeded weights). */
static struct cost diff_cost(const char *binary, int threads, int rounds)
{
    double walls[16], cpus[16], users[16], rss[16];
    char nthreads[16];
    snprintf(nthreads, sizeof nthreads, "%d", threads);
    char *argv[] = {(char *)binary, "diff", "qwen3-30b-a3b", "--mode", "prefill:512", "--layers", "2",
                    "--shim", "reference", "--threads", nthreads, NULL};
    for (int i = 0; i < rounds; i++) {
        struct cost c = run_command(argv);
        if (c.wall < 0)
            return c;
        walls[i] = c.wall;
        cpus[i] = c.cpu;
        users[i] = c.user;
        rss[i] = c.rss_gb;
    }
    return medians(walls, cpus, users, rss, rounds);
}

/* Export work w's model into path unless it is there; whether it is. */
static bool exported(const char *binary, const struct work *w, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return true;
    char *argv[] = {(char *)binary, "export", (char *)w->model, "--weights", "q8_0", "--layers", (char *)w->layers,
                    "-o", (char *)path, NULL};
    printf("exporting %s (%s layers) to %s\n", w->model, w->layers, path);
    return run_command(argv).wall >= 0;
}

/* The work's tokens (a fixed spread over the vocabulary) as ids and as a comma-separated list. */
static void make_tokens(int32_t n, int32_t *ids, char *list)
{
    list[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        ids[i] = (int32_t)((i * 7919 + 13) % 150000);
        sprintf(list + strlen(list), "%s%d", i ? "," : "", (int)ids[i]);
    }
}

int main(int argc, char **argv)
{
    char binary[4096], dir[4096], path[8300];
    if (argc > 1) {
        snprintf(binary, sizeof binary, "%s", argv[1]);
    } else {
        const char *slash = strrchr(argv[0], '/');
        snprintf(binary, sizeof binary, "%.*sfusecheck", slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
    }
    const char *d = argc > 2 ? argv[2] : getenv("BENCH_EVAL_DIR");
    snprintf(dir, sizeof dir, "%s", d ? d : "/tmp/fusecheck-bench-eval");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_eval: cannot make %s\n", dir);
        return 2;
    }
    int rounds = bench_env_count("BENCH_EVAL_ROUNDS", 3);
    rounds = rounds > 15 ? 15 : rounds;
    bool llama = cli_llama_available();
    printf("evaluator vs %s, %d rounds, medians; CPU = user + system seconds\n", cli_llama_version(), rounds);
    printf("%-34s %9s %9s %9s %9s %8s %8s\n", "work", "eval wall", "eval CPU", "llama wall", "llama CPU", "wall x",
           "CPU x");
    static int32_t ids[512];
    static char list[512 * 8];
    for (size_t i = 0; i < sizeof works / sizeof works[0]; i++) {
        const struct work *w = &works[i];
        snprintf(path, sizeof path, "%s/%s", dir, w->file);
        if (!exported(binary, w, path)) {
            fprintf(stderr, "bench_eval: could not export %s\n", w->model);
            return 1;
        }
        make_tokens(w->ntokens, ids, list);
        struct cost e = median_cost(binary, path, w, ids, list, 1, false, rounds);
        struct cost l = llama ? median_cost(binary, path, w, ids, list, 1, true, rounds) : (struct cost){-1, -1, -1, -1};
        char what[64];
        snprintf(what, sizeof what, "%s %s%s", w->model, w->mode, strcmp(w->layers, "all") ? " (1 layer)" : "");
        if (e.wall < 0) {
            fprintf(stderr, "bench_eval: fusecheck eval failed on %s\n", what);
            return 1;
        }
        if (l.wall < 0)
            printf("%-34s %8.2fs %8.2fs %10s %9s %8s %8s\n", what, e.wall, e.cpu, "-", "-", "-", "-");
        else
            printf("%-34s %8.2fs %8.2fs %9.2fs %8.2fs %7.2fx %7.2fx\n", what, e.wall, e.cpu, l.wall, l.cpu,
                   e.wall / l.wall, e.cpu / l.cpu);
    }
    const struct work *w = &works[0];
    snprintf(path, sizeof path, "%s/%s", dir, w->file);
    make_tokens(w->ntokens, ids, list);
    struct cost one = median_cost(binary, path, w, ids, list, 1, false, rounds);
    struct cost two = median_cost(binary, path, w, ids, list, 2, false, rounds);
    if (one.wall < 0 || two.wall < 0)
        return 1;
    printf("threads (%s %s): 1: %.2fs wall %.2fs user; 2: %.2fs wall %.2fs user; wall speedup %.2fx\n", w->model,
           w->mode, one.wall, one.user, two.wall, two.user, one.wall / two.wall);
    for (int threads = 1; threads <= 2; threads++) {
        struct cost c = diff_cost(binary, threads, rounds);
        if (c.wall < 0)
            return 1;
        printf("diff qwen3-30b-a3b --mode prefill:512 --layers 2, %d thread%s: %.2fs wall %.2fs user %.2f GB peak "
               "(targets: 30 s, 2 GB)\n", threads, threads > 1 ? "s" : "", c.wall, c.user, c.rss_gb);
    }
    return 0;
}
