/* bench/bench_optimize.c — the optimizer's speed and how it grows.
 *
 * First qwen3-8b decode (36 layers) under `reference` (target < 20 ms, median) and under `none`, and the time for
 * 2x the layers over the time for 1x in decode, prefill:8 and batch:4 (target <= 2.3). Then, per model family (one real
 * model each), the optimize of a prefill chunk of 128, 256, ..., 4096 rows and a batch of 8, 16, 32, 64 sequences:
 * ops, CPU seconds, wall seconds and peak RSS, each the median of BENCH_OPT_ROUNDS runs (default 3), and the ratio of
 * the CPU time to the previous row's (target <= 2.3 per doubling of the ops: no step scans more than its
 * neighbourhood); then the same rows for validate-run (the optimize with every firing re-checked by the oracle) and for
 * the facts (the slots indexed and every op's reads asked producer, readers, untouched and crosses), rows over 2.3
 * flagged. Last, qwen3-30b-a3b prefill:4096 (target < 5 s). `--quick` runs one round up to prefill:512.
 *
 * Each run is a child process (lift and optimize), so its peak RSS is its own. CPU time is the figure the ratios
 * use: on a shared machine it is the one other work does not inflate. BENCH_OPT_FAMILIES (comma-separated models)
 * and BENCH_OPT_MAX (the largest prefill) narrow the table; BENCH_OPT_SHIM picks the shim (default reference). */
#define _GNU_SOURCE
#include "bench/bench.h"
#include "models/models.h"
#include "oracle/oracle.h"
#include "rules/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds on the given clock. */
static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The lifted graph of `model` in `mode`, cut to `layers` layers (0: all); exits on a bad configuration. */
static struct ir_graph *lift(const char *model, const char *mode, int32_t layers)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    o.layers = layers;
    const struct models_config *c = models_find(model);
    struct ir_graph *g = c && models_parse_mode(mode, &o.mode, err) == 0 ? models_lift(c, &o, err) : NULL;
    if (!g) {
        fprintf(stderr, "bench_optimize: %s %s: %s\n", model, mode, c ? err : "no such model");
        exit(2);
    }
    return g;
}

/* The fastest of `rounds` runs in ms, written by median_ms (the least disturbed figure on a shared machine). */
static double fastest;

/* The median milliseconds of optimizing `model` cut to `layers` layers in `mode` under shim, over `rounds` runs. */
static double median_ms(const char *model, const char *mode, int32_t layers, const struct shim *shim, int rounds,
                        int32_t *ops, int32_t *decisions)
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = lift(model, mode, layers);
    double *t = malloc(sizeof *t * (size_t)rounds);
    for (int k = 0; k < rounds; k++) {
        struct rules_optimized out;
        double t0 = clock_s(CLOCK_MONOTONIC);
        rules_optimize(g, shim, NULL, 0, &out, err);
        t[k] = (clock_s(CLOCK_MONOTONIC) - t0) * 1e3;
        *decisions = out.report.n;
        rules_optimized_free(&out);
    }
    *ops = g->nops;
    qsort(t, (size_t)rounds, sizeof *t, bench_cmp_double);
    double m = t[rounds / 2];
    fastest = t[0];
    free(t);
    ir_graph_free(g);
    return m;
}

/* What a child times: the optimize alone, or validate-run (the optimize with every firing re-checked). */
enum job { JOB_OPTIMIZE, JOB_VALIDATE, JOB_FACTS };
static const char *const job_names[] = {"optimize", "validate-run", "facts"};

/* The facts the rules ask, once per read of every op: the slots indexed, then for each tensor an op reads its
 * producer, its readers, whether nothing between its producer and the op writes it, and whether the op could move
 * up to the producer; the count of true answers (so nothing is optimized away). */
static long facts_job(const struct ir_graph *g)
{
    struct ir_op *ops = malloc(sizeof *ops * (size_t)(g->nops ? g->nops : 1));
    for (int32_t i = 0; i < g->nops; i++)
        ops[i] = ir_op_clone(&g->ops[i]);
    struct ir_slots *s = ir_slots_new(g, ops, g->nops);
    long yes = 0;
    for (int32_t i = 0; i < g->nops; i++) {
        ir_tid rd[64];
        int n = ir_op_reads(ir_slots_get(s, i), rd, 64);
        for (int k = 0; k < n && k < 64; k++) {
            int32_t p = ir_facts_producer(s, rd[k]);
            yes += ir_facts_readers(s, rd[k], NULL, 0) > 1;
            if (p >= 0 && p < i) {
                yes += ir_facts_untouched(s, rd[k], p, i, false, NULL, 0);
                yes += ir_facts_crosses(s, p, i, NULL, 0);
            }
        }
    }
    ir_slots_free(s);
    return yes;
}

/* The optimize of g under sh, or its validated run; 0 when it ran. *flags: 1 when a firing's check failed, 2 when
 * the rewritten graph does not validate (the time still counts: the run did all its work). */
static int run_job(enum job job, const struct ir_graph *g, const struct shim *sh, int *flags, char err[IR_ERR_LEN])
{
    *flags = 0;
    if (job == JOB_FACTS)
        return facts_job(g) < 0;
    if (job == JOB_VALIDATE) {
        struct oracle_options opt = oracle_defaults();
        struct oracle_validation v;
        int rc = oracle_validate_run(g, sh, &opt, NULL, NULL, &v, err);
        *flags = (v.failed ? 1 : 0) | (v.invalid ? 2 : 0);
        return rc;
    }
    struct rules_optimized out; /* the child exits: its result is not freed, as no time goes to that */
    return rules_optimize(g, sh, NULL, 0, &out, err);
}

/* One child's figures: the lifted ops, the job's CPU and wall seconds, and the child's peak RSS in MiB. */
struct figures {
    int32_t ops;
    double cpu, wall, rss;
    int flags; /* run_job's */
};

/* Lift model in mode and run the job under the shim named `shim` in a child process; its figures, or ops < 0 when
 * the child failed. */
static struct figures one_run(enum job job, const char *model, const char *mode, const char *shim)
{
    struct figures f = {-1, 0, 0, 0, 0};
    int fd[2];
    if (pipe(fd) != 0)
        return f;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char err[IR_ERR_LEN];
        struct shim *sh = shim_lookup(shim, err);
        struct ir_graph *g = sh ? lift(model, mode, 0) : NULL;
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
        int flags = 0;
        int rc = g ? run_job(job, g, sh, &flags, err) : 1;
        struct figures mine = {g ? g->nops : -1, clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0, clock_s(CLOCK_MONOTONIC) - w0,
                               0, flags};
        if (rc != 0)
            mine.ops = -1;
        ssize_t wrote = write(fd[1], &mine, sizeof mine);
        _exit(wrote == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        return f;
    }
    struct figures got;
    ssize_t n = read(fd[0], &got, sizeof got);
    close(fd[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) == pid && n == (ssize_t)sizeof got && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0) {
        f = got;
        f.rss = (double)ru.ru_maxrss / 1024.0;
    }
    return f;
}

/* The median of `rounds` child runs, figure by figure. */
static struct figures median_run(enum job job, const char *model, const char *mode, const char *shim, int rounds)
{
    double cpu[16], wall[16], rss[16];
    struct figures f = {-1, 0, 0, 0, 0};
    for (int k = 0; k < rounds; k++) {
        struct figures r = one_run(job, model, mode, shim);
        if (r.ops < 0)
            return r;
        f.ops = r.ops;
        f.flags |= r.flags;
        cpu[k] = r.cpu;
        wall[k] = r.wall;
        rss[k] = r.rss;
    }
    qsort(cpu, (size_t)rounds, sizeof cpu[0], bench_cmp_double);
    qsort(wall, (size_t)rounds, sizeof wall[0], bench_cmp_double);
    qsort(rss, (size_t)rounds, sizeof rss[0], bench_cmp_double);
    f.cpu = cpu[rounds / 2];
    f.wall = wall[rounds / 2];
    f.rss = rss[rounds / 2];
    return f;
}

/* The integer in environment variable `name`, or `fallback` when unset or not a number in [lo, hi]. */
static long env_long(const char *name, long fallback, long lo, long hi)
{
    const char *v = getenv(name);
    char *end;
    long x = v ? strtol(v, &end, 10) : fallback;
    return v && (*end || x < lo || x > hi) ? fallback : x;
}

/* Whether model is among the comma-separated names in BENCH_OPT_FAMILIES (all when unset). */
static bool chosen(const char *model)
{
    const char *list = getenv("BENCH_OPT_FAMILIES");
    if (!list || !*list)
        return true;
    size_t n = strlen(model);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, model, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* One real model of each family. */
static const char *const family_models[] = {
    "llama3-8b",  "qwen3-8b",          "qwen3-30b-a3b", "gemma2-2b",  "qwen3-next-80b-a3b",
    "minitron-4b", "qwen2.5-7b", "granite-3.1-8b", "minicpm-2b", "deepseek-v3", "deepseek-v2-lite", "gpt-oss-20b",
};

/* Print one row of the scaling table; prev is the row before it in the same series (ops <= 0: none). Returns the
 * ratio of CPU times (0 when there is no previous row). */
static double print_row(enum job job, const char *model, const char *mode, struct figures f, struct figures prev)
{
    double ratio = prev.ops > 0 && prev.cpu > 0 ? f.cpu / prev.cpu : 0;
    if (f.ops < 0) {
        printf("  %-12s %-20s %-13s failed\n", job_names[job], model, mode);
        return 0;
    }
    printf("  %-12s %-20s %-13s %9d ops  cpu %8.3f s  wall %8.3f s  peak %7.1f MiB", job_names[job], model, mode,
           f.ops, f.cpu, f.wall, f.rss);
    if (ratio > 0)
        printf("  x%.2f cpu for x%.2f ops%s", ratio, (double)f.ops / prev.ops, ratio > 2.3 ? "  (over 2.3)" : "");
    if (f.flags & 1)
        printf("  [a firing's check failed]");
    if (f.flags & 2)
        printf("  [the rewritten graph does not validate]");
    printf("\n");
    return ratio;
}

/* The rows of one series, `kind`:N for N = from, 2·from, ... up to `to`; the worst ratio per doubling. */
static double series(enum job job, const char *model, const char *shim, const char *kind, long from, long to,
                     int rounds)
{
    double worst = 0;
    struct figures prev = {0, 0, 0, 0, 0};
    for (long n = from; n <= to; n *= 2) {
        char mode[32];
        snprintf(mode, sizeof mode, "%s:%ld", kind, n);
        struct figures f = median_run(job, model, mode, shim, rounds);
        double r = print_row(job, model, mode, f, prev);
        worst = r > worst ? r : worst;
        prev = f;
    }
    return worst;
}

/* The table for one model and job: prefill 128..max and batch 8..64; the worst ratio per doubling. */
static double family_table(enum job job, const char *model, const char *shim, long max, int rounds)
{
    double prefill = series(job, model, shim, "prefill", 128, max, rounds);
    double batch = series(job, model, shim, "batch", 8, 64, rounds);
    return prefill > batch ? prefill : batch;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: bench_optimize [--quick]\n");
        return 2;
    }
    struct shim *reference = shim_reference();
    int32_t ops, decisions;
    double full = median_ms("qwen3-8b", "decode", 0, reference, 21, &ops, &decisions);
    printf("optimize qwen3-8b decode (36 layers, %d ops) under reference: median %.2f ms (%d decisions); target < 20 ms\n",
           ops, full, decisions);
    struct shim *none = shim_none();
    double none_ms = median_ms("qwen3-8b", "decode", 0, none, 11, &ops, &decisions);
    printf("optimize qwen3-8b decode under none: median %.2f ms (%d decisions)\n", none_ms, decisions);
    shim_free(none);
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    for (int m = 0; m < 3; m++) {
        double one = median_ms("qwen3-8b", modes[m], 18, reference, 31, &ops, &decisions), one_min = fastest;
        int32_t ops2;
        double two = median_ms("qwen3-8b", modes[m], 36, reference, 31, &ops2, &decisions), two_min = fastest;
        printf("scaling %-9s: 18 layers (%d ops) %.2f ms, 36 layers (%d ops) %.2f ms: median ratio %.2f, fastest "
               "%.2f / %.2f ms ratio %.2f (target <= 2.3)\n",
               modes[m], ops, one, ops2, two, two / one, one_min, two_min, two_min / one_min);
    }
    shim_free(reference);

    int rounds = (int)env_long("BENCH_OPT_ROUNDS", quick ? 1 : 3, 1, 15);
    long max = env_long("BENCH_OPT_MAX", quick ? 512 : 4096, 128, 1 << 16);
    const char *shim = getenv("BENCH_OPT_SHIM") ? getenv("BENCH_OPT_SHIM") : "reference";
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 0)
        load[0] = -1;
    printf("scaling under %s, median of %d runs, load average %.2f at the start (target <= 2.3 per doubling):\n",
           shim, rounds, load[0]);
    for (size_t m = 0; m < sizeof family_models / sizeof family_models[0]; m++) {
        if (!chosen(family_models[m]))
            continue;
        for (int job = JOB_OPTIMIZE; job <= JOB_FACTS; job++) {
            double worst = family_table((enum job)job, family_models[m], shim, max, rounds);
            printf("  %-12s %-20s worst ratio per doubling x%.2f%s\n", job_names[job], family_models[m], worst,
                   worst > 2.3 ? "  (over 2.3)" : "");
        }
    }
    if (chosen("qwen3-30b-a3b") && max >= 4096) {
        struct figures f = median_run(JOB_OPTIMIZE, "qwen3-30b-a3b", "prefill:4096", shim, rounds);
        printf("qwen3-30b-a3b prefill:4096 (%d ops): cpu %.2f s, wall %.2f s, peak %.1f MiB; target < 5 s\n", f.ops,
               f.cpu, f.wall, f.rss);
    }
    return 0;
}
