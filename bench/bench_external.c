/* bench/bench_external.c — requests a second through the optimizer protocol (rules/external.c) against the same
 * optimizer in process: tiny-llama decode under cuda-lane:h100:int8 (and `reference`), one served process
 * (`fusecheck optimize --serve`) for every request, each round BENCH_EXT_REQUESTS requests (default 200), the median
 * of BENCH_EXT_ROUNDS rounds (default 7). The round trip counts the request's printing, both pipes, the server's
 * parse, optimize and print, and the client's parse of the answer's graph and report.
 *
 * usage: bench_external [FUSECHECK] — the fusecheck binary, by default the one beside this program. */
#include "bench/bench.h"
#include "models/models.h"
#include "rules/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One round of n requests, through x when not NULL, else in process under shim; requests a second, or -1. */
static double round_rate(struct rules_external *x, const struct ir_graph *g, const char *shim_name,
                         const struct shim *shim, int n)
{
    char err[IR_ERR_LEN];
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        struct rules_optimized o;
        int rc = x ? (int)rules_external_optimize(x, g, shim_name, NULL, 0, false, &o, err)
                   : rules_optimize(g, shim, NULL, 0, &o, err);
        if (rc) {
            fprintf(stderr, "bench_external: %s: %s\n", x ? rules_external_fault_name((enum rules_external_fault)rc)
                                                           : "optimize", err);
            return -1;
        }
        rules_optimized_free(&o);
    }
    return n / (now_s() - t0);
}

/* The median of `rounds` rounds' rates. */
static double median_rate(struct rules_external *x, const struct ir_graph *g, const char *shim_name,
                          const struct shim *shim, int rounds, int n)
{
    double *r = malloc(sizeof *r * (size_t)rounds);
    if (!r)
        abort();
    for (int i = 0; i < rounds; i++)
        if ((r[i] = round_rate(x, g, shim_name, shim, n)) < 0)
            exit(1);
    qsort(r, (size_t)rounds, sizeof *r, bench_cmp_double);
    double m = r[rounds / 2];
    free(r);
    return m;
}

int main(int argc, char **argv)
{
    char binary[4096], command[4200], err[IR_ERR_LEN];
    if (argc > 1) {
        snprintf(binary, sizeof binary, "%s", argv[1]);
    } else {
        const char *slash = strrchr(argv[0], '/');
        snprintf(binary, sizeof binary, "%.*sfusecheck", slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
    }
    if (strchr(binary, '\'')) {
        fprintf(stderr, "bench_external: a path with a quote\n");
        return 2;
    }
    int rounds = bench_env_count("BENCH_EXT_ROUNDS", 7), n = bench_env_count("BENCH_EXT_REQUESTS", 200);
    struct models_options mo = models_default_options();
    struct ir_graph *g = models_lift(models_find("tiny-llama"), &mo, err);
    if (!g) {
        fprintf(stderr, "bench_external: tiny-llama: %s\n", err);
        return 2;
    }
    snprintf(command, sizeof command, "exec '%s' optimize --serve", binary);
    enum rules_external_fault f;
    struct rules_external *x = rules_external_start(command, NULL, &f, err);
    if (!x) {
        fprintf(stderr, "bench_external: %s: %s: %s\n", command, rules_external_fault_name(f), err);
        return 2;
    }
    printf("tiny-llama decode (%d ops), %d rounds of %d requests, one process (%s %s)\n", (int)g->nops, rounds, n,
           rules_external_name(x), rules_external_version(x));
    static const char *const shims[] = {"cuda-lane:h100:int8", "reference"};
    for (size_t s = 0; s < sizeof shims / sizeof shims[0]; s++) {
        struct shim *shim = shim_lookup(shims[s], err);
        if (!shim)
            return 2;
        double external = median_rate(x, g, shims[s], NULL, rounds, n);
        double here = median_rate(NULL, g, shims[s], shim, rounds, n);
        printf("%-22s external %8.0f req/s   in process %8.0f req/s   in process / external %.2f\n", shims[s],
               external, here, here / external);
        shim_free(shim);
    }
    rules_external_stop(x);
    ir_graph_free(g);
    return 0;
}
