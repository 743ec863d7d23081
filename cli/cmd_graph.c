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
    static const struct option opts[] = {CLI_LIFT_OPTIONS, {"output", required_argument, NULL, 'o'}, CLI_EMPTY_OPTION,
                                         {0, 0, 0, 0}};
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
            return cli_option_error(cmd, opts, "o:", argv);
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
    if (l.allow_empty)
        return cli_usage_error("lift", "--allow-empty reads a graph FILE; lift lifts a MODEL");
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

/* Parse validate's command line: --allow-empty and one FILE (into *file). 0, or CLI_USAGE said. */
static int parse_validate_args(int argc, char **argv, bool *allow_empty, const char **file)
{
    static const struct option opts[] = {CLI_EMPTY_OPTION, {0, 0, 0, 0}};
    *allow_empty = false;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c != 'E')
            return cli_option_error("validate", opts, "", argv);
        *allow_empty = true;
    }
    if (optind != argc - 1)
        return cli_usage_error("validate", "expected one FILE");
    *file = argv[optind];
    return 0;
}

int cli_cmd_validate(int argc, char **argv)
{
    bool allow_empty;
    const char *file = NULL;
    int rc = parse_validate_args(argc, argv, &allow_empty, &file);
    if (rc)
        return rc;
    size_t len;
    const char *label = strcmp(file, "-") == 0 ? "stdin" : file;
    char *text = ir_read_file(file, &len);
    if (!text) {
        fprintf(stderr, "%s:1:1: cannot open: %s\n", label, strerror(errno));
        return CLI_USAGE;
    }
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_unchecked(text, len, label, err);
    if (g && !allow_empty && ir_refuse_empty(g, label, err)) {
        fprintf(stderr, "%s (--allow-empty reads it)\n", err); /* file:1:1: empty graph: ... */
        ir_graph_free(g);
        free(text);
        return CLI_USAGE;
    }
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

/* What eval was asked beyond a lift: the seed, and a token run's sequence, logits file and top-k. */
struct eval_args {
    uint64_t seed;
    int32_t *tokens;
    int32_t ntokens;
    const char *logits;
    int32_t top;
    bool top_set;
    bool q8_activations;
    bool last; /* --last: a prefill's head over its last row alone, as llama.cpp computes a prompt */
};

/* Apply one of eval's own options; 0, or CLI_USAGE with the message printed. */
static int eval_option(struct eval_args *a, int c, const char *arg)
{
    if (c == 's' && cli_parse_seed(arg, &a->seed))
        return cli_usage_error("eval", "--seed expects an integer in 0..18446744073709551615, got '%s'", arg);
    if (c == 't') {
        free(a->tokens);
        if (cli_parse_tokens(arg, &a->tokens, &a->ntokens))
            return cli_usage_error("eval", "--tokens expects token ids separated by commas (at most %d), got '%s'",
                                   MODELS_MAX_ROWS, arg);
    }
    if (c == 'o')
        a->logits = arg;
    if (c == 'k' && (cli_parse_count(arg, &a->top) || a->top > 100))
        return cli_usage_error("eval", "--top expects a count in 1..100, got '%s'", arg);
    a->top_set |= c == 'k';
    if (c == 'a' && strcmp(arg, "q8_0") != 0 && strcmp(arg, "f32") != 0)
        return cli_usage_error("eval", "--activations expects f32 or q8_0, got '%s'", arg);
    if (c == 'a')
        a->q8_activations = strcmp(arg, "q8_0") == 0;
    return 0;
}

/* Print each observed and carried tensor's digest and first values. */
static void print_digests(const struct ir_graph *g, const struct ir_values *v)
{
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
}

/* The plain evaluation: the graph once from the seed, its digests printed. */
static int eval_once(const struct ir_graph *g, uint64_t seed)
{
    char err[IR_ERR_LEN];
    struct ir_values *v = ir_values_new(g, seed, err);
    if (!v || ir_eval(g, v, err) != 0) {
        fprintf(stderr, "fusecheck: eval: %s\n", err);
        ir_values_free(v);
        return CLI_FAILED;
    }
    print_digests(g, v);
    ir_values_free(v);
    return CLI_OK;
}

/* Print each position's token and the top k of its logits, then the digest of them all. */
static void print_run(const struct cli_logits *r, const int32_t *tokens, int32_t ntokens, int k)
{
    int32_t ids[100];
    for (int32_t i = 0; i < r->n; i++) {
        const float *row = r->v + (size_t)i * (size_t)r->vocab;
        int32_t at = ntokens - r->n + i; /* the rows are the last r->n positions' */
        cli_logits_top(row, r->vocab, k, ids);
        printf("position %d token %d top", at, tokens[at]);
        for (int j = 0; j < k && ids[j] >= 0; j++)
            printf(" %d:%.9g", ids[j], (double)row[ids[j]]);
        printf("\n");
    }
    char hex[65];
    cli_sha256_hex(r->v, sizeof(float) * (size_t)r->n * (size_t)r->vocab, hex);
    printf("logits %dx%lld %s\n", r->n, (long long)r->vocab, hex);
}

/* The token run: the sequence through the model, every position's top-k printed, the logits written when asked. */
static int eval_tokens(const struct ir_graph *g, const struct eval_args *a, bool prefill)
{
    char err[IR_ERR_LEN];
    struct cli_logits r;
    if (cli_eval_tokens(g, a->seed, prefill, a->q8_activations, a->tokens, a->ntokens, &r, err) != 0) {
        fprintf(stderr, "fusecheck: eval: %s\n", err);
        return strstr(err, "outside the vocabulary") ? CLI_USAGE : CLI_FAILED;
    }
    print_run(&r, a->tokens, a->ntokens, a->top);
    int rc = a->logits && cli_logits_write(a->logits, &r) ? CLI_USAGE : CLI_OK; /* unwritten: no check failed */
    cli_logits_free(&r);
    return rc;
}

/* Check a token run's options against the lift: a prefill chunk as long as the sequence. 0, or CLI_USAGE. */
static int eval_run_options(const struct eval_args *a, struct cli_lift *l)
{
    if (!a->tokens)
        return a->logits || a->q8_activations || a->last
                   ? cli_usage_error("eval", "--logits, --activations and --last need --tokens")
                   : 0;
    if (l->options.mode.kind == MODELS_BATCH)
        return cli_usage_error("eval", "--tokens runs a decode step a token or one prefill chunk, not a batch");
    if (l->options.mode.kind == MODELS_PREFILL && l->options.mode.n != a->ntokens)
        return cli_usage_error("eval", "--mode prefill:%d takes %d tokens, --tokens gives %d", l->options.mode.n,
                               l->options.mode.n, a->ntokens);
    l->options.every_row_logits = l->options.mode.kind == MODELS_PREFILL && !a->last;
    return 0;
}

int cli_cmd_eval(int argc, char **argv)
{
    static const struct option opts[] = {CLI_LIFT_OPTIONS,
                                         {"seed", required_argument, NULL, 's'},
                                         {"tokens", required_argument, NULL, 't'},
                                         {"logits", required_argument, NULL, 'o'},
                                         {"top", required_argument, NULL, 'k'},
                                         {"activations", required_argument, NULL, 'a'},
                                         CLI_THREADS_OPTION,
                                         {"last", no_argument, NULL, 'L'},
                                         CLI_EMPTY_OPTION,
                                         {0, 0, 0, 0}};
    struct cli_lift l = cli_lift_defaults();
    struct eval_args a = {.seed = 1, .top = 5};
    int rc = cli_threads("eval", NULL);
    optind = 1;
    opterr = 0;
    for (int c; rc == CLI_OK && (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'T') {
            rc = cli_threads("eval", optarg);
            continue;
        }
        if (c == 'L') {
            a.last = true;
            continue;
        }
        if (strchr("stoka", c)) {
            rc = eval_option(&a, c, optarg);
            continue;
        }
        int r = cli_lift_code(&l, c, optarg);
        if (r == 1)
            rc = CLI_USAGE;
        else if (r == -1)
            rc = cli_option_error("eval", opts, "", argv);
    }
    if (rc == CLI_OK && optind != argc - 1)
        rc = cli_usage_error("eval", "expected one FILE or MODEL");
    if (rc == CLI_OK && !a.tokens && a.top_set)
        rc = cli_usage_error("eval", "--top needs --tokens");
    if (rc == CLI_OK)
        rc = eval_run_options(&a, &l);
    struct ir_graph *g = rc == CLI_OK ? cli_load(argv[optind], &l) : NULL;
    if (rc == CLI_OK && !g)
        rc = CLI_USAGE;
    if (g)
        rc = cli_values_fit("eval", g) ? CLI_USAGE
             : a.tokens                ? eval_tokens(g, &a, l.options.mode.kind == MODELS_PREFILL)
                                       : eval_once(g, a.seed);
    ir_graph_free(g);
    free(a.tokens);
    return rc;
}
