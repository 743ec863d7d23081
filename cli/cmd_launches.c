/* cli/cmd_launches.c — `fusecheck launches`: every distinct launch the CUDA lane makes on the zoo's graphs under its
 * operating points, as the optimizer emits them: the kernel, its stages and their numerics' variants. Its output is
 * kernels/launches.txt, the list the tests walk. Each model is lifted with its first LAUNCHES_LAYERS layers (every
 * family's layer kinds recur within four, and the last layer lifted is lifted as the last); `--layers all` walks
 * every layer, and `ci/nightly` checks that it finds the same list. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rules/rules.h"
#include "shim/shim.h"

/* The layers of each model walked by default. */
#define LAUNCHES_LAYERS 8

/* One kind of launch: its signature, the first graph and shim it came from, whether the host lane runs it. */
struct kind {
    char *sig, *where;
    bool hosted;
};

/* The distinct kinds seen. */
struct seen {
    struct kind *k;
    int n, cap;
};

/* Note one launch's signature (a new kind copied in). 0, or -1 when memory is short. */
static int seen_add(struct seen *s, const char *sig, bool hosted, const char *where)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->k[i].sig, sig) == 0)
            return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        struct kind *grown = realloc(s->k, sizeof *grown * (size_t)cap);
        if (!grown)
            return -1;
        s->k = grown;
        s->cap = cap;
    }
    struct kind *k = &s->k[s->n++];
    k->sig = strdup(sig);
    k->where = strdup(where);
    k->hosted = hosted;
    return k->sig && k->where ? 0 : -1;
}

/* Kinds in the order of their signatures' text. */
static int by_sig(const void *a, const void *b)
{
    return strcmp(((const struct kind *)a)->sig, ((const struct kind *)b)->sig);
}

/* The lane points `launches` walks by default: every chip × activation mode × cache × state × fold. */
static int default_shims(char names[][96], int cap)
{
    static const char *const chips[] = {"h100", "h200", "a100", "l40s", "rtx4090"};
    static const char *const acts[] = {"dequant", "int8", "int8x2"};
    int n = 0;
    for (int c = 0; c < 5; c++)
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < 8 && n < cap; k++)
                snprintf(names[n++], 96, "cuda-lane:%s:%s:cache=%s:state=%s:fuse_quant=%s", chips[c], acts[a],
                         k & 1 ? "f32" : "f16", k & 2 ? "bf16" : "f32", k & 4 ? "off" : "on");
    return n;
}

/* Add the launches of g's rewriting under each shim (points[i] its operating point). 0, or -1 with err. */
static int walk_graph(const struct ir_graph *g, const char *label, struct shim *const *shims,
                      const struct kernels_point *points, int nshims, struct seen *s, int64_t *launches,
                      char err[IR_ERR_LEN])
{
    for (int i = 0; i < nshims; i++) {
        struct rules_optimized o;
        if (rules_optimize(g, shims[i], NULL, 0, &o, err))
            return -1;
        char where[400], sig[2048];
        snprintf(where, sizeof where, "%s under %s", label, shims[i]->name);
        int rc = 0;
        for (int32_t k = 0; !rc && k < o.graph->nops; k++) {
            bool hosted = kernels_launch_signature(&points[i], o.graph, k, sig, sizeof sig);
            rc = seen_add(s, sig, hosted, where);
            ++*launches;
        }
        rules_optimized_free(&o);
        if (rc) {
            snprintf(err, IR_ERR_LEN, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* Walk every zoo model, its first `layers` layers (0: all), in every mode (a mode past a model's context is no graph
 * of the zoo) under every shim. */
static int walk_zoo(struct shim *const *shims, const struct kernels_point *points, int nshims,
                    const char *const *modes, int nmodes, int32_t layers, struct seen *s, int64_t *launches,
                    char err[IR_ERR_LEN])
{
    for (int pass = 0; pass < 2; pass++) /* the tiny models first: a kind's example is tiny when one can be */
        for (int m = 0; m < models_count(); m++)
            for (int k = 0; k < nmodes && models_get(m)->tiny == (pass == 0); k++) {
            struct cli_lift l = cli_lift_defaults();
            cli_lift_option(&l, "mode", modes[k]);
            if (layers > 0 && layers < models_get(m)->layers)
                l.options.layers = layers;
            struct ir_graph *g = models_lift(models_get(m), &l.options, err);
            if (!g)
                continue;
            char label[128];
            snprintf(label, sizeof label, "%s/%s", models_get(m)->name, modes[k]);
            int rc = walk_graph(g, label, shims, points, nshims, s, launches, err);
            ir_graph_free(g);
            if (rc)
                return -1;
        }
    return 0;
}

int cli_cmd_launches(int argc, char **argv)
{
    static const struct option opts[] = {
        {"shim", required_argument, NULL, 's'}, {"mode", required_argument, NULL, 'm'},
        {"layers", required_argument, NULL, 'l'}, {0, 0, 0, 0}};
    static char names[256][96];
    const char *modes[16];
    int nshims = 0, nmodes = 0;
    int32_t layers = LAUNCHES_LAYERS;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 's' && nshims < 256)
            snprintf(names[nshims++], 96, "%s", optarg);
        else if (c == 'm' && nmodes < 16) {
            struct cli_lift l = cli_lift_defaults();
            if (cli_lift_option(&l, "mode", optarg))
                return CLI_USAGE;
            modes[nmodes++] = optarg;
        } else if (c == 'l') {
            if (cli_parse_layers(optarg, &layers)) /* 0: all */
                return CLI_USAGE;
        } else
            return cli_option_error("launches", opts, "", argv);
    }
    if (optind != argc)
        return cli_usage_error("launches", "takes only --shim, --mode and --layers");
    if (!nshims)
        nshims = default_shims(names, 256);
    if (!nmodes) {
        static const char *const defaults[] = {"decode", "prefill:8", "prefill:16", "batch:4"};
        for (int i = 0; i < 4; i++)
            modes[nmodes++] = defaults[i];
    }
    struct seen s = {0};
    int64_t launches = 0;
    char err[IR_ERR_LEN] = "";
    int rc = CLI_OK;
    static struct shim *shims[256];
    static struct kernels_point points[256];
    int looked = 0;
    for (; rc == CLI_OK && looked < nshims; looked++) {
        shims[looked] = shim_lookup(names[looked], err);
        if (!shims[looked] || kernels_point_of(shims[looked], &points[looked], err)) {
            fprintf(stderr, "fusecheck: launches: %s\n", err);
            rc = CLI_USAGE;
        }
    }
    if (rc == CLI_OK && walk_zoo(shims, points, nshims, modes, nmodes, layers, &s, &launches, err)) {
        fprintf(stderr, "fusecheck: launches: %s\n", err);
        rc = CLI_FAILED;
    }
    for (int i = 0; i < looked; i++)
        shim_free(shims[i]);
    if (rc == CLI_OK) {
        qsort(s.k, (size_t)s.n, sizeof *s.k, by_sig);
        int unhosted = 0;
        printf("# every kind of launch the CUDA lane makes on the zoo (fusecheck launches: %d shims, %d modes): %d kinds; "
               "each with the first graph it came from\n", nshims, nmodes, s.n);
        fprintf(stderr, "launches: %lld launches of %d kinds\n", (long long)launches, s.n);
        for (int i = 0; i < s.n; i++) {
            printf("%s   # %s%s\n", s.k[i].sig, s.k[i].where, s.k[i].hosted ? "" : "; NO HOST KERNEL");
            unhosted += !s.k[i].hosted;
        }
        if (unhosted)
            fprintf(stderr, "fusecheck: launches: %d kinds of launch have a stage the host lane cannot run\n",
                    unhosted);
        rc = unhosted ? CLI_FAILED : CLI_OK;
    }
    for (int i = 0; i < s.n; i++) {
        free(s.k[i].sig);
        free(s.k[i].where);
    }
    free(s.k);
    return rc;
}
