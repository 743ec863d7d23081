/* cli/cmd_tolerance.c — `fusecheck tolerance`: the CUDA lane's kernels on the host lane against the evaluator, launch
 * by launch and end to end, printed as a table and logged to results.db; and the same for `check --tolerance`. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "db/db.h"
#include "kernels/kernels.h"
#include "rules/rules.h"
#include "shim/shim.h"

/* The backend name results.db keeps a launch's rows under: where it ran ("host", "cuda:<device>:sm_<cc>"), with
 * ":unquantized" against the unquantized lifted graph. Written to out (160 bytes), returned. */
static const char *backend_of(const struct kernels_tol_result *res, const struct kernels_tol_row *r, char *out)
{
    snprintf(out, 160, "%.127s%s", res->backend[0] ? res->backend : "host", r->unquantized ? ":unquantized" : "");
    return out;
}

/* The text of one row or step as results.db keeps it: its op and tensor columns. */
static void row_names(const struct kernels_tol_row *r, char op[96], char tensor[IR_MAX_NAME + 32])
{
    snprintf(op, 96, "%d %s", (int)r->launch, r->kernel);
    if (r->step)
        snprintf(tensor, IR_MAX_NAME + 32, "%s @step %d", r->tensor, (int)r->step);
    else
        snprintf(tensor, IR_MAX_NAME + 32, "%s", r->tensor);
}

/* A figure as results.db stores it: a value past any bound (an infinity, a NaN) as 1e308. */
static double stored(double v) { return isfinite(v) ? v : 1e308; }

/* The sha256 naming a tolerance run's results: of one line per row and per step, every stored column in order,
 * numbers exactly (hexadecimal floating point). Equal results name the same set, so results.db keeps them once. */
static void tolerance_digest(const struct kernels_tol_result *res, char hex[65])
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();
    for (int32_t i = 0; i < res->nrows; i++) {
        const struct kernels_tol_row *r = &res->rows[i];
        char op[96], tensor[IR_MAX_NAME + 32], be[160];
        row_names(r, op, tensor);
        fprintf(f, "row %s|%s|%s|%lld|%a|%a|%a|%a|%d|%a|%lld|%a|%a|%a\n", backend_of(res, r, be), op, tensor,
                (long long)r->elements, r->max_abs, r->max_rel, r->nmse, stored(r->bound), (int)r->pass,
                stored(r->ratio), (long long)r->worst, r->lane, r->ref, stored(r->max_abs_bound));
    }
    for (int32_t i = 0; i < res->nsteps; i++) {
        const struct kernels_tol_step *s = &res->steps[i];
        fprintf(f, "step %s|%lld|%s|%lld|%a|%a|%lld|%a\n", res->backend[0] ? res->backend : "host", (long long)s->step, s->tensor, (long long)s->rows,
                s->nmse, s->kl, (long long)s->top1_agree, s->max_abs);
    }
    if (fclose(f) != 0 || !text)
        abort();
    cli_sha256_hex(text, len, hex);
    free(text);
}

/* Log a tolerance run in one transaction: which results it found, and every row and step of them when results.db
 * holds none like them. */
static int log_tolerance(struct db *db, int64_t run, int64_t graph, int64_t shim, const struct kernels_tol_result *res,
                         char err[DB_ERR_LEN])
{
    char digest[65];
    tolerance_digest(res, digest);
    int64_t set;
    bool fresh = false;
    if (db_begin(db, err))
        return 1;
    int rc = db_tolerance_set(db, run, graph, shim, digest, &set, &fresh, err);
    for (int32_t i = 0; !rc && fresh && i < res->nrows; i++) {
        const struct kernels_tol_row *r = &res->rows[i];
        char op[96], tensor[IR_MAX_NAME + 32], be[160];
        row_names(r, op, tensor);
        struct db_tolerance t = {set, i, backend_of(res, r, be), op, tensor, r->elements, r->max_abs, r->max_rel, r->nmse,
                                 stored(r->bound), r->pass, stored(r->ratio), r->worst, r->lane, r->ref,
                                 stored(r->max_abs_bound)};
        rc = db_tolerance(db, &t, err);
    }
    for (int32_t i = 0; !rc && fresh && i < res->nsteps; i++) {
        const struct kernels_tol_step *s = &res->steps[i];
        struct db_tolerance_step t = {set, i, res->backend[0] ? res->backend : "host", s->tensor, s->step, s->rows, s->top1_agree,
                                      s->nmse, s->kl, s->max_abs};
        rc = db_tolerance_step(db, &t, err);
    }
    if (rc) {
        db_rollback(db);
        return 1;
    }
    return db_commit(db, err);
}

/* Print one row of the table, the table's header first when *headed is not yet set (then set). */
static void print_row(const struct kernels_tol_result *res, const struct kernels_tol_row *r, bool *headed)
{
    char be[160];
    if (!*headed)
        printf("step launch kernel                     reference        tensor                             elements "
               "   max abs    max rel       NMSE err/bnd\n");
    *headed = true;
    printf("%4d %5d %-26.26s %-16s %-34.34s %8lld %10.3g %10.3g %10.3g %8.3g %s%s%s\n", (int)r->step, (int)r->launch,
           r->kernel, backend_of(res, r, be), r->tensor, (long long)r->elements, r->max_abs, r->max_rel, r->nmse, r->ratio,
           r->pass ? "pass" : "FAIL", r->why[0] ? ": " : "", r->why);
}

/* Say why a failing row failed: the launch, the element and both values. */
static void print_failure(const char *graph, const struct kernels_tol_row *r)
{
    fprintf(stderr, "%s: launch %d (%s), %s[%lld] against the %s reference: lane %.9g, evaluator %.9g, bound %.3g%s%s\n",
            graph, (int)r->launch, r->kernel, r->tensor, (long long)r->worst,
            r->unquantized ? "unquantized" : "quantized", (double)r->lane, (double)r->ref, r->bound,
            r->why[0] ? "; " : "", r->why);
}

/* Whether the rewritten graph validates (its launches are only defined then). When it does not: say why, count a
 * failure, and log it as a diff of kind valid. err set only when logging failed. */
static bool rewritten_valid(const struct ir_graph *lifted, const struct ir_graph *rewritten,
                            const struct cli_tol_options *o, struct cli_tol_totals *t, char err[IR_ERR_LEN])
{
    char why[IR_ERR_LEN];
    err[0] = '\0';
    if (ir_validate(rewritten, why) == 0)
        return true;
    fprintf(stderr, "%s: the rewritten graph is invalid: %s\n", lifted->name ? lifted->name : "graph", why);
    t->failed++;
    if (o->db) {
        struct db_diff d = {o->run, o->graph, o->shim, false, rewritten->nops, NULL, 0, 0, 0, "valid", why};
        char dberr[DB_ERR_LEN];
        if (db_diff(o->db, &d, dberr))
            snprintf(err, IR_ERR_LEN, "%s", dberr);
    }
    return false;
}

int cli_tolerance_graph(const struct ir_graph *lifted, const struct ir_graph *rewritten, const struct shim *shim,
                        const struct cli_tol_options *o, struct cli_tol_totals *t, char err[IR_ERR_LEN])
{
    struct kernels_point p;
    if (kernels_point_of(shim, &p, err))
        return -1;
    if (!rewritten_valid(lifted, rewritten, o, t, err))
        return err[0] ? -1 : 0;
    struct ir_graph *ref = rules_quantized_lifted(lifted, shim);
    if (!ref) {
        snprintf(err, IR_ERR_LEN, "the quantized reference could not be built");
        return -1;
    }
    /* a signal caught ends the run between steps (cli_stop_requested) */
    struct kernels_tol_input in = {rewritten, ref,      lifted,   &p,        o->seed,
                                   o->steps,  o->fault, false,    o->device, cli_stop_requested};
    struct kernels_tol_result res;
    int rc = kernels_tolerance(&in, &res, err);
    ir_graph_free(ref);
    if (rc) {
        kernels_tol_result_free(&res);
        return -1;
    }
    const char *name = lifted->name ? lifted->name : "graph";
    bool headed = false; /* the table's header goes above its first row: none when no row is printed */
    for (int32_t i = 0; i < res.nrows; i++) {
        if (o->print_rows && (o->all || !res.rows[i].pass))
            print_row(&res, &res.rows[i], &headed);
        if (!res.rows[i].pass)
            print_failure(name, &res.rows[i]);
        double ratio = res.rows[i].ratio;
        if (isfinite(ratio) && ratio > t->worst_ratio)
            t->worst_ratio = ratio;
    }
    if (o->print_rows)
        for (int32_t i = 0; i < res.nsteps; i++) {
            const struct kernels_tol_step *s = &res.steps[i];
            printf("step %d end to end: %s NMSE %.3g, top-1 %d of %d, KL %.3g, max |diff| %.3g\n", (int)s->step,
                   s->tensor, s->nmse, (int)s->top1_agree, (int)s->rows, s->kl, s->max_abs);
        }
    t->graphs++;
    t->launches += res.launches;
    t->rows += res.nrows;
    t->failed += res.failed;
    t->lane_s += res.seconds_lane;
    t->eval_s += res.seconds_eval;
    for (int32_t i = 0; i < res.nsteps; i++)
        t->top1_misses += res.steps[i].rows - res.steps[i].top1_agree;
    rc = o->db ? log_tolerance(o->db, o->run, o->graph, o->shim, &res, err) : 0;
    kernels_tol_result_free(&res);
    return rc ? -1 : 0;
}

/* What tolerance reads from its command line. */
struct tol_args {
    struct cli_lift lift;
    const char *shim, *arg, *db, *device;
    uint64_t seed;
    int steps;
    bool all;
    struct cli_optimizer opt; /* --optimizer: whose rewriting the lane runs (fusecheck's own by default) */
};

/* Parse tolerance's options. 0 on success. */
static int parse_tol_args(int argc, char **argv, struct tol_args *a)
{
    static const struct option opts[] = {
        CLI_LIFT_OPTIONS, {"shim", required_argument, NULL, 's'},
        {"steps", required_argument, NULL, 'n'}, {"device", required_argument, NULL, 'D'},
        {"db", required_argument, NULL, 'd'}, {"seed", required_argument, NULL, 'S'},
        {"all", no_argument, NULL, 'a'}, CLI_EMPTY_OPTION, CLI_OPTIMIZER_OPTIONS, {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->lift = cli_lift_defaults();
    a->seed = 1;
    a->steps = 1;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        char *end;
        int lifted = cli_lift_code(&a->lift, c, optarg);
        if (lifted > 0)
            return CLI_USAGE;
        switch (lifted == 0 ? 0 : c) {
        case 0: break;
        case 's': a->shim = optarg; break;
        case 'd': a->db = optarg; break;
        case 'a': a->all = true; break;
        case 'D': a->device = optarg; break;
        case 'n': {
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 4096)
                return cli_usage_error("tolerance", "--steps expects an integer in [1, 4096], got '%s'", optarg);
            a->steps = (int)v;
            break;
        }
        case 'S':
            if (cli_parse_seed(optarg, &a->seed))
                return cli_usage_error("tolerance", "--seed expects an integer in 0..18446744073709551615, got '%s'",
                                       optarg);
            break;
        default: {
            int taken = cli_optimizer_code(&a->opt, "tolerance", c, optarg);
            if (taken)
                return taken < 0 ? cli_option_error("tolerance", opts, "", argv) : CLI_USAGE;
            break;
        }
        }
    }
    if (!a->shim)
        return cli_usage_error("tolerance", "--shim cuda-lane:<chip>:<activations>[:knobs] is required");
    if (optind != argc - 1)
        return cli_usage_error("tolerance", "expected one FILE or MODEL");
    a->arg = argv[optind];
    return 0;
}

/* Open the db and begin a tolerance run with the graph and shim recorded; 0 or a message. */
static int open_log(const struct tol_args *a, const struct ir_graph *g, const struct shim *shim, int argc,
                    char **argv, struct cli_tol_options *o, char err[DB_ERR_LEN])
{
    if (db_open(a->db, &o->db, err))
        return 1;
    char rev[64], host[128] = "", *command = cli_command_line(argc, argv);
    cli_git_revision(rev, sizeof rev);
    gethostname(host, sizeof host - 1);
    struct db_run_info info = {.kind = "tolerance", .command = command, .git_rev = rev[0] ? rev : NULL,
                               .host = host, .version = FUSECHECK_VERSION};
    if (cli_optimizer_external(&a->opt)) { /* the optimizer whose rewriting the lane ran, as it greeted */
        info.optimizer_name = a->opt.name;
        info.optimizer_version = a->opt.version;
        info.optimizer_command = a->opt.command;
    }
    size_t len;
    char *text = ir_print(g, &len), hex[65];
    if (!text) {
        free(command);
        snprintf(err, DB_ERR_LEN, "out of memory");
        return 1;
    }
    cli_sha256_hex(text, len, hex);
    free(text);
    int begun = db_run_begin(o->db, &info, &o->run, err);
    free(command);
    return begun || db_begin(o->db, err) ||
           db_graph(o->db, g->name ? g->name : a->arg, g->family, g->mode, g->nops, hex, &o->graph, err) ||
           cli_tolerance_shim(o->db, shim->name, a->shim, o->device, &o->shim, err) || db_commit(o->db, err);
}

int cli_tolerance_shim(struct db *db, const char *logged, const char *knobs, const struct kernels_device *dev,
                       int64_t *id, char err[IR_ERR_LEN])
{
    char name[512];
    snprintf(name, sizeof name, "%.300s%s%.200s", logged, dev ? "@" : "", dev ? kernels_device_backend(dev) : "");
    return db_shim(db, name, knobs, id, err);
}

int cli_device_open(const char *cmd, const char *spec, struct kernels_device **out)
{
    char err[IR_ERR_LEN];
    int index;
    *out = NULL;
    if (!spec || strcmp(spec, "host") == 0)
        return 0;
    if (kernels_device_parse(spec, &index, err))
        return cli_usage_error(cmd, "--device: %s", err);
    int n = index == KERNELS_DEVICE_SIM ? 1 : kernels_device_count(err); /* the simulated device is always there */
    if (n < 0)
        return cli_usage_error(cmd, "--device %s: %s", spec, err);
    if (index >= n)
        return cli_usage_error(cmd, "--device %s: no CUDA device %d (%d present)", spec, index, n);
    *out = kernels_device_open(index, err);
    if (!*out)
        return cli_usage_error(cmd, "--device %s: %s", spec, err);
    return 0;
}

int cli_cmd_tolerance(int argc, char **argv)
{
    cli_interrupt_catch();
    struct tol_args a;
    int rc = parse_tol_args(argc, argv, &a);
    if (rc)
        return rc;
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(a.shim, err);
    struct kernels_point p;
    if (!shim || kernels_point_of(shim, &p, err)) {
        shim_free(shim);
        return cli_usage_error("tolerance", "%s", err);
    }
    struct kernels_device *dev;
    if (cli_device_open("tolerance", a.device, &dev)) {
        shim_free(shim);
        return CLI_USAGE;
    }
    struct ir_graph *g = cli_load(a.arg, &a.lift);
    if (!g || cli_values_fit("tolerance", g)) { /* a graph too large to evaluate: a resource refusal */
        ir_graph_free(g);
        kernels_device_close(dev);
        shim_free(shim);
        return CLI_USAGE;
    }
    struct rules_optimized o;
    err[0] = '\0'; /* a start that failed says why itself */
    int got = cli_optimizer_start(&a.opt, "tolerance") ? 1 : cli_optimizer_run(&a.opt, g, shim, NULL, 0, &o, err);
    if (got) {
        char what[IR_ERR_LEN + 64];
        snprintf(what, sizeof what, "fusecheck: tolerance: %s", err);
        if (got < 0) /* fusecheck's own optimizer failed */
            fprintf(stderr, "%s\n", what);
        else if (a.opt.x) /* the external one's fault (a start that failed said so already) */
            cli_optimizer_say(&a.opt, what);
        cli_optimizer_stop(&a.opt);
        ir_graph_free(g);
        kernels_device_close(dev);
        shim_free(shim);
        return CLI_FAILED;
    }
    if (cli_optimizer_external(&a.opt))
        printf("optimizer: %s %s (%s)\n", a.opt.name, a.opt.version, a.opt.command);
    struct cli_tol_options to = {a.seed, a.steps, KERNELS_FAULT_NONE, true, a.all, NULL, 0, 0, 0, dev};
    struct cli_tol_totals t = {0};
    rc = CLI_OK;
    if (a.db && open_log(&a, g, shim, argc, argv, &to, err)) {
        fprintf(stderr, "fusecheck: tolerance: %s: %s\n", a.db, err);
        rc = CLI_USAGE;
    }
    if (rc == CLI_OK) {
        if (cli_tolerance_graph(g, o.graph, shim, &to, &t, err)) {
            if (!cli_interrupted()) /* stopped by a signal: said below, no failure of the lane's */
                fprintf(stderr, "fusecheck: tolerance: %s\n", err);
            rc = CLI_FAILED;
        } else {
            printf("tolerance: %lld launches, %lld comparisons, %lld outside their bound; worst error/bound %.3g; "
                   "%s %.3f s, evaluator %.3f s (%.2fx)\n",
                   (long long)t.launches, (long long)t.rows, (long long)t.failed, t.worst_ratio,
                   dev ? kernels_device_backend(dev) : "host lane", t.lane_s, t.eval_s,
                   t.eval_s > 0 ? t.lane_s / t.eval_s : 0.0);
            if (dev) { /* how the device ran the steps: graphs, and what crossed to and from the host */
                struct kernels_device_stats ds;
                kernels_device_stats_get(dev, &ds);
                printf("device: %lld steps on its own buffers, %lld captured, %lld graph replays; %.3f MB up, "
                       "%.3f MB back in all; kernels %.3f ms\n",
                       (long long)ds.steps, (long long)ds.captures, (long long)ds.replays, (double)ds.uploaded / 1e6,
                       (double)ds.read / 1e6, 1e3 * kernels_device_seconds(dev));
            }
            rc = t.failed ? CLI_FAILED : CLI_OK;
        }
    }
    bool stopped = cli_interrupted() != 0;
    if (to.db && to.run) {
        char dberr[DB_ERR_LEN];
        if (db_run_end(to.db, to.run, stopped ? "interrupted" : rc == CLI_OK ? "complete" : "failed", dberr))
            fprintf(stderr, "fusecheck: tolerance: %s: %s\n", a.db, dberr);
    }
    db_close(to.db);
    cli_optimizer_stop(&a.opt);
    rules_optimized_free(&o);
    ir_graph_free(g);
    kernels_device_close(dev);
    shim_free(shim);
    if (stopped) {
        cli_interrupt_say("tolerance", a.db, to.run);
        return cli_interrupt_exit();
    }
    return rc;
}
