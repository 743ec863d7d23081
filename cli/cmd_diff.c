/* cli/cmd_diff.c — `fusecheck diff`: one graph optimized, by fusecheck's own optimizer or (--optimizer CMD) any
 * optimizer that speaks the protocol, and the rewritten graph held to what every optimizer's output must be
 * (cli/compare.c). Another optimizer's answer is also held to the report's contract and set beside fusecheck's own
 * decisions (the differential). */
#include "cli.h"
#include "oracle/oracle.h"
#include "rules/rules.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* What diff reads from its command line. */
struct diff_args {
    struct cli_lift lift;
    const char *shim, *arg;
    struct cli_holds holds;
    uint64_t seed;
    struct cli_optimizer opt;
    bool expect_same;
};

/* Take one of diff's own options (not a lift's). 0, or CLI_USAGE said. */
static int diff_option(struct diff_args *a, int c, const char *arg, const struct option *opts, char **argv)
{
    switch (c) {
    case 's': a->shim = arg; return 0;
    case 'h': return cli_holds_add(&a->holds, arg) ? CLI_USAGE : 0;
    case 'R': rules_seed_mode(true); return 0;
    case 'T': return cli_threads("diff", arg);
    case CLI_OPT_EXPECT_SAME: a->expect_same = true; return 0;
    case 'S':
        if (cli_parse_seed(arg, &a->seed))
            return cli_usage_error("diff", "--seed expects an integer in 0..18446744073709551615, got '%s'", arg);
        return 0;
    default: {
        int taken = cli_optimizer_code(&a->opt, "diff", c, arg);
        return taken < 0 ? cli_option_error("diff", opts, "", argv) : taken ? CLI_USAGE : 0;
    }
    }
}

/* Parse diff's command line. 0, or CLI_USAGE said. */
static int parse_diff_args(int argc, char **argv, struct diff_args *a)
{
    static const struct option opts[] = {
        CLI_LIFT_OPTIONS, {"shim", required_argument, NULL, 's'}, {"hold", required_argument, NULL, 'h'},
        {"seed", required_argument, NULL, 'S'}, CLI_SEED_RULES_OPTION, CLI_EMPTY_OPTION, CLI_OPTIMIZER_OPTIONS,
        CLI_EXPECT_SAME_OPTION, CLI_THREADS_OPTION, {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->lift = cli_lift_defaults();
    a->seed = 1;
    if (cli_threads("diff", NULL))
        return CLI_USAGE;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        int lifted = cli_lift_code(&a->lift, c, optarg);
        if (lifted > 0)
            return CLI_USAGE;
        if (lifted < 0 && diff_option(a, c, optarg, opts, argv))
            return CLI_USAGE;
    }
    if (!a->shim)
        return cli_usage_error("diff", "--shim NAME is required");
    if (optind != argc - 1)
        return cli_usage_error("diff", "expected one FILE or MODEL");
    if (a->expect_same && !cli_optimizer_external(&a->opt))
        return cli_usage_error("diff", "--expect-same compares another optimizer's decisions with fusecheck's own: "
                                       "it needs --optimizer CMD");
    if (a->opt.timeout_ms && !cli_optimizer_external(&a->opt))
        return cli_usage_error("diff", "--optimizer-timeout-ms limits another optimizer's answers: it needs "
                                       "--optimizer CMD");
    a->arg = argv[optind];
    return 0;
}

/* The shim diff runs under, with its holds checked and applied; NULL with the message said. */
static struct shim *diff_shim(struct diff_args *a)
{
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(a->shim, err);
    if (!shim) {
        fprintf(stderr, "fusecheck: %s\n", err);
        return NULL;
    }
    for (int i = 0; i < a->holds.n; i++)
        if (!cli_holdable(shim, a->holds.names[i])) {
            fprintf(stderr, "fusecheck: --hold: '%s' is no step under %s, nor anything it holds (fusecheck rules "
                    "--shim %s lists them)\n", a->holds.names[i], shim->name, shim->name);
            shim_free(shim);
            return NULL;
        }
    cli_holds_apply(&a->holds, shim);
    return shim;
}

/* Print one comparison's outcome: a line when it passed, the place and reason when it did not. */
static void print_comparison(const struct cli_comparison *c)
{
    bool values = strcmp(c->kind, "values") == 0;
    if (c->pass && strcmp(c->kind, "valid") == 0)
        printf("valid: %lld ops\n", (long long)c->compared);
    else if (c->pass && values)
        printf("identical: %lld observed and carried tensors bit for bit\n", (long long)c->compared);
    else if (c->pass)
        printf("unquantized: %lld quantized values within the mode's bound\n", (long long)c->compared);
    else if (c->tensor[0])
        printf("%s: %s: %s[%lld]: %s %.9g, rewritten %.9g\n", values ? "differs" : c->kind, c->reason, c->tensor,
               (long long)c->index, values ? "reference" : "source", c->lifted, c->rewritten);
    else
        printf("%s: %s\n", strcmp(c->kind, "valid") == 0 ? "invalid" : c->kind, c->reason);
}

/* Hold the rewritten graph to every comparison (cli/compare.c), each printed. CLI_OK when all pass. */
static int compare_rewritten(const struct ir_graph *g, const struct rules_optimized *o, const struct shim *shim,
                             uint64_t seed)
{
    char err[IR_ERR_LEN];
    struct ir_values *a = ir_values_new(g, seed, err);
    if (a)
        ir_values_free_dead(a, true); /* only observed and carried values are compared */
    if (!a || ir_eval(g, a, err)) {
        fprintf(stderr, "fusecheck: diff: the lifted graph does not evaluate: %s\n", err);
        ir_values_free(a);
        return CLI_FAILED;
    }
    struct cli_comparisons cmp;
    int rc = cli_compare_rewritten(g, a, o->graph, shim, seed, &cmp, err);
    ir_values_free(a);
    if (rc) {
        fprintf(stderr, "fusecheck: diff: the reference could not be made: %s\n", err);
        return CLI_FAILED;
    }
    for (int i = 0; i < cmp.n; i++)
        print_comparison(&cmp.rows[i]);
    printf("%d decisions, %d fired\n", o->report.n, rules_report_count(&o->report, RULES_FIRED, NULL));
    return cli_comparisons_pass(&cmp) ? CLI_OK : CLI_FAILED;
}

/* What diff adds for another optimizer: its report held to the contract, and its decisions beside fusecheck's own
 * (printed). CLI_OK, or CLI_FAILED when the contract broke, fusecheck's own optimizer failed, or the decisions differ
 * under --expect-same. */
static int check_external(const struct diff_args *a, const struct ir_graph *g, const struct shim *shim,
                          const struct rules_optimized *o)
{
    char why[IR_ERR_LEN];
    const char *const *held = (const char *const *)a->holds.names;
    bool contract = oracle_report_check(g, shim, held, a->holds.n, &o->report, why) < 0;
    printf("report: %s%s\n", contract ? "keeps its contract" : "", contract ? "" : why);
    struct rules_optimized own;
    if (rules_optimize(g, shim, held, a->holds.n, &own, why)) {
        fprintf(stderr, "fusecheck: diff: fusecheck's own optimizer: %s\n", why);
        return CLI_FAILED;
    }
    struct cli_differential d = {0};
    char where[512];
    snprintf(where, sizeof where, "%.160s %.40s under %.300s", g->name ? g->name : a->arg, g->mode ? g->mode : "-",
             shim->name);
    int64_t differ = cli_differential_add(&d, where, &o->report, &own.report, stdout);
    cli_differential_print(&d, rules_seed_rules() ? "fusecheck's own --seed-rules" : "fusecheck's own", stdout);
    if (differ)
        printf("differential: the optimizers disagree: %s\n",
               a->expect_same ? "a failed check (--expect-same)" : "reported, not failed (--expect-same fails it)");
    cli_differential_free(&d);
    rules_optimized_free(&own);
    return !contract || (differ && a->expect_same) ? CLI_FAILED : CLI_OK;
}

/* Optimize g under shim with a's optimizer and hold what comes back to every check. The exit code. */
static int diff_graph(struct diff_args *a, const struct ir_graph *g, const struct shim *shim)
{
    char err[IR_ERR_LEN];
    if (cli_optimizer_start(&a->opt, "diff"))
        return CLI_FAILED;
    struct rules_optimized o;
    int got = cli_optimizer_run(&a->opt, g, shim, (const char *const *)a->holds.names, a->holds.n, &o, err);
    if (got < 0)
        fprintf(stderr, "fusecheck: %s\n", err);
    if (got > 0) {
        char what[IR_ERR_LEN + 64];
        snprintf(what, sizeof what, "fusecheck: diff: %s", err);
        cli_optimizer_say(&a->opt, what);
    }
    if (got)
        return CLI_FAILED;
    if (cli_optimizer_external(&a->opt))
        printf("optimizer: %s %s (%s)\n", a->opt.name, a->opt.version, a->opt.command);
    int rc = compare_rewritten(g, &o, shim, a->seed);
    if (cli_optimizer_external(&a->opt) && check_external(a, g, shim, &o) != CLI_OK)
        rc = CLI_FAILED;
    rules_optimized_free(&o);
    return rc;
}

int cli_cmd_diff(int argc, char **argv)
{
    struct diff_args a;
    int rc = parse_diff_args(argc, argv, &a);
    struct ir_graph *g = rc ? NULL : cli_load(a.arg, &a.lift);
    struct shim *shim = g ? diff_shim(&a) : NULL;
    if (!rc)
        rc = !g || !shim || cli_values_fit("diff", g) ? CLI_USAGE : diff_graph(&a, g, shim);
    cli_optimizer_stop(&a.opt);
    cli_holds_free(&a.holds);
    shim_free(shim);
    ir_graph_free(g);
    return rc;
}
