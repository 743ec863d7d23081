/* cli/cmd_graph.c — commands over one graph: print, validate, lift, eval; and the zoo listing. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>


/* Parse a command line of lift options, -o OUT and one positional argument. 0 on success. */
static int parse_graph_args(const char *cmd, int argc, char **argv, struct cli_lift *l, const char **out,
                            const char **pos)
{
    static const struct option opts[] = {CLI_LIFT_OPTIONS, {"output", required_argument, NULL, 'o'}, {0, 0, 0, 0}};
    *l = cli_lift_defaults();
    *out = NULL;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "o:", opts, NULL)) != -1;) {
        if (c == 'o') {
            *out = optarg;
            continue;
        }
        int r = cli_lift_code(l, c, optarg);
        if (r == 1)
            return CLI_USAGE;
        if (r == -1)
            return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    }
    if (optind != argc - 1)
        return cli_usage_error(cmd, "expected one FILE or MODEL");
    *pos = argv[optind];
    return 0;
}

/* Write g's canonical text to out (stdout when NULL) and free g. CLI_OK, or CLI_USAGE when g is NULL or unwritten. */
static int print_graph(struct ir_graph *g, const char *out)
{
    if (!g)
        return CLI_USAGE;
    size_t len;
    char *text = ir_print(g, &len);
    int rc = text && cli_write(out, text, len) == 0 ? CLI_OK : CLI_USAGE;
    free(text);
    ir_graph_free(g);
    return rc;
}

int cli_cmd_print(int argc, char **argv)
{
    struct cli_lift l;
    const char *out, *arg;
    int rc = parse_graph_args("print", argc, argv, &l, &out, &arg);
    return rc ? rc : print_graph(cli_load(arg, &l), out);
}

int cli_cmd_lift(int argc, char **argv)
{
    struct cli_lift l;
    const char *out, *arg;
    int rc = parse_graph_args("lift", argc, argv, &l, &out, &arg);
    if (rc)
        return rc;
    struct models_config *owned;
    const struct models_config *c = cli_model("lift", arg, &owned);
    if (!c)
        return CLI_USAGE;
    char err[IR_ERR_LEN];
    struct ir_graph *g = cli_lift_config(c, &l.options, err);
    if (!g && cli_is_gguf(arg))
        fprintf(stderr, "%s\n", err); /* file: tensor NAME: what was expected */
    else if (!g)
        fprintf(stderr, "fusecheck: %s: %s\n", arg, err);
    models_config_free(owned);
    return print_graph(g, out);
}

int cli_cmd_validate(int argc, char **argv)
{
    if (argc != 2)
        return cli_usage_error("validate", "expected one FILE");
    size_t len;
    const char *label = strcmp(argv[1], "-") == 0 ? "stdin" : argv[1];
    char *text = ir_read_file(argv[1], &len);
    if (!text) {
        fprintf(stderr, "%s:1:1: cannot open: %s\n", label, strerror(errno));
        return CLI_USAGE;
    }
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_unchecked(text, len, label, err);
    if (!g) {
        fprintf(stderr, "%s\n", err);
        free(text);
        return CLI_USAGE;
    }
    ir_graph_free(g);
    g = ir_parse(text, len, label, err);
    free(text);
    if (!g) {
        fprintf(stderr, "%s\n", err);
        return CLI_FAILED;
    }
    printf("%s: ok (%d tensors, %d ops)\n", label, g->ntensors, g->nops);
    ir_graph_free(g);
    return CLI_OK;
}

int cli_cmd_models(int argc, char **argv)
{
    (void)argv;
    if (argc != 1)
        return cli_usage_error("models", "takes no arguments");
    printf("%-18s %-10s %6s %6s %9s %5s %6s %8s %14s %8s\n", "model", "family", "layers", "hidden", "heads/kv", "head",
           "ffn", "experts", "parameters", "ctx");
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = models_get(i);
        char heads[32], experts[32];
        snprintf(heads, sizeof heads, "%lld/%lld", (long long)c->heads, (long long)c->kv_heads);
        if (c->experts)
            snprintf(experts, sizeof experts, "%lld/%lld", (long long)c->top_k, (long long)c->experts);
        else
            snprintf(experts, sizeof experts, "-");
        long long ffn = c->experts ? c->expert_ffn : c->ffn;
        printf("%-18s %-10s %6d %6lld %9s %5lld %6lld %8s %14lld %8lld\n", c->name, c->family, c->layers,
               (long long)c->hidden, heads, (long long)c->head_dim, ffn, experts, (long long)models_param_count(c),
               (long long)c->ctx);
    }
    return CLI_OK;
}

int cli_cmd_eval(int argc, char **argv)
{
    static const struct option opts[] = {CLI_LIFT_OPTIONS, {"seed", required_argument, NULL, 's'}, {0, 0, 0, 0}};
    struct cli_lift l = cli_lift_defaults();
    uint64_t seed = 1;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 's') {
            if (cli_parse_seed(optarg, &seed))
                return cli_usage_error("eval", "--seed expects an integer in 0..18446744073709551615, got '%s'", optarg);
            continue;
        }
        int r = cli_lift_code(&l, c, optarg);
        if (r == 1)
            return CLI_USAGE;
        if (r == -1)
            return cli_usage_error("eval", "unknown option '%s'", argv[optind - 1]);
    }
    if (optind != argc - 1)
        return cli_usage_error("eval", "expected one FILE or MODEL");
    struct ir_graph *g = cli_load(argv[optind], &l);
    if (!g)
        return CLI_USAGE;
    char err[IR_ERR_LEN];
    struct ir_values *v = ir_values_new(g, seed, err);
    if (!v || ir_eval(g, v, err) != 0) {
        fprintf(stderr, "fusecheck: eval: %s\n", err);
        ir_values_free(v);
        ir_graph_free(g);
        return CLI_FAILED;
    }
    for (ir_tid t = 0; t < g->ntensors; t++) {
        const struct ir_tensor *x = &g->tensors[t];
        if (!x->observed && !x->carried)
            continue;
        const float *d = ir_values_cdata(v, t);
        int64_t n = x->rows * x->cols;
        char hex[65];
        cli_sha256_hex(d, sizeof(float) * (size_t)n, hex);
        printf("%s %lldx%lld %s", x->name, (long long)x->rows, (long long)x->cols, hex);
        for (int64_t i = 0; i < n && i < 4; i++)
            printf(" %.9g", (double)d[i]);
        printf("%s\n", n > 4 ? " ..." : "");
    }
    ir_values_free(v);
    ir_graph_free(g);
    return CLI_OK;
}
