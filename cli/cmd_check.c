/* cli/cmd_check.c — the main job (`fusecheck check`: every zoo graph under every shim, optimized, reported and
 * diffed into results.db) and the results commands (`fusecheck db runs|diff|merge`). */
#include "cli.h"
#include "cli/progress.h"
#include "db/db.h"
#include "oracle/oracle.h"
#include "rules/rules.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST 128

/* What check reads from its command line. */
struct check_args {
    const char *models[MAX_LIST];
    const struct models_config *configs[MAX_LIST]; /* each named model's: a zoo row, or a config.json's in owned */
    struct models_config *owned[MAX_LIST];
    int nmodels;
    const char *modes[MAX_LIST];
    int nmodes;
    const char *shims[MAX_LIST];
    int nshims;
    const char *db;
    const char *fixtures;          /* --fixtures: the rules' fixture cases to run too (NULL: none) */
    struct cli_lift lift;
    bool eval_real, progress, tolerance;
    bool log_progress;             /* progress lines in a log: stderr is no terminal (cli/progress.h) */
    const char *device;            /* --device: where the tolerance runs' launches run (NULL: the host lane) */
    struct kernels_device *dev;    /* that device, opened */
    uint64_t seed;
    struct cli_holds holds; /* --hold: held in every compile (under a shim that has the step or holds it) */
    struct cli_optimizer opt; /* --optimizer: whose optimizer is checked (fusecheck's own in process by default) */
    bool expect_same;         /* --expect-same: a decision the external optimizer makes otherwise fails the run */
    bool json;                /* --json: the summary as one JSON document on stdout */
};

/* Running totals for the summary. */
struct check_totals {
    struct cli_tol_totals tol; /* the host lane's tolerance runs (check --tolerance) */
    int graphs, reports, failures, mismatches, diffs;
    int fixtures, fixtures_failed; /* the fixture cases run, and those with a failed check */
    int faults;                    /* requests the external optimizer gave no answer to (each a failure too) */
    struct cli_differential diff;  /* with --optimizer: its decisions beside fusecheck's own */
    long decisions, fired;
    double optimize_s, eval_s, db_s, fixtures_s;
};

/* Seconds on the monotonic clock. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parse check's options. 0 on success. */
/* Whether s is among the n names of list already (a name given twice runs once). */
static bool listed(const char *const *list, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* Whether a mode given asks more rows (or sequences) than some checked model's context holds: refused before the run
 * starts (a usage error naming both), not found half-way through it. */
static bool modes_past_context(const struct check_args *a)
{
    int n = a->nmodels ? a->nmodels : models_count();
    for (int k = 0; k < a->nmodes; k++) {
        struct models_mode m;
        char err[IR_ERR_LEN];
        if (models_parse_mode(a->modes[k], &m, err) || m.kind == MODELS_DECODE)
            continue;
        for (int i = 0; i < n; i++) {
            const struct models_config *c = a->nmodels ? a->configs[i] : models_get(i);
            if (c && m.n > cli_lift_ctx(&a->lift, c)) {
                cli_usage_error("check", "--mode %s: %d %s exceed the context of %s, %lld rows", a->modes[k],
                                (int)m.n, m.kind == MODELS_BATCH ? "sequences" : "rows", c->name,
                                (long long)cli_lift_ctx(&a->lift, c));
                return true;
            }
        }
    }
    return false;
}

static int parse_check_args(int argc, char **argv, struct check_args *a)
{
    static const struct option opts[] = {
        {"mode", required_argument, NULL, 'm'},   {"shim", required_argument, NULL, 's'},
        {"db", required_argument, NULL, 'd'},     {"layers", required_argument, NULL, 'l'},
        {"weights", required_argument, NULL, 'w'}, {"eval-real", no_argument, NULL, 'e'},
        {"ctx", required_argument, NULL, 'C'},
        {"seed", required_argument, NULL, 'S'},   {"no-progress", no_argument, NULL, 'q'},
        {"tolerance", no_argument, NULL, 't'},    {"hold", required_argument, NULL, 'H'},
        {"device", required_argument, NULL, 'D'}, {"fixtures", required_argument, NULL, 'F'},
        {"json", no_argument, NULL, 'J'},         CLI_SEED_RULES_OPTION,                    CLI_OPTIMIZER_OPTIONS,
        CLI_EXPECT_SAME_OPTION,                   {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->lift = cli_lift_defaults();
    a->db = "results.db";
    a->seed = 1;
    a->progress = isatty(STDERR_FILENO); /* a terminal's line: a message starts a line of its own */
    a->log_progress = !a->progress;
    optind = 1;
    opterr = 0;
    char err[IR_ERR_LEN];
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'm': {
            struct models_mode m;
            if (models_parse_mode(optarg, &m, err))
                return cli_usage_error("check", "--mode: %s", err);
            if (a->nmodes < MAX_LIST && !listed(a->modes, a->nmodes, optarg))
                a->modes[a->nmodes++] = optarg;
            break;
        }
        case 's':
            if (a->nshims < MAX_LIST && !listed(a->shims, a->nshims, optarg))
                a->shims[a->nshims++] = optarg;
            break;
        case 'd': a->db = optarg; break;
        case 'l': if (cli_lift_option(&a->lift, "layers", optarg)) return CLI_USAGE; break;
        case 'w': if (cli_lift_option(&a->lift, "weights", optarg)) return CLI_USAGE; break;
        case 'C': if (cli_lift_option(&a->lift, "ctx", optarg)) return CLI_USAGE; break;
        case 'e': a->eval_real = true; break;
        case 't': a->tolerance = true; break;
        case 'D': a->device = optarg; break;
        case 'F': a->fixtures = optarg; break;
        case 'q': a->progress = a->log_progress = false; break;
        case 'J': a->json = true; break;
        case 'R': rules_seed_mode(true); break;
        case 'H': if (cli_holds_add(&a->holds, optarg)) return CLI_USAGE; break;
        case 'S': {
            if (cli_parse_seed(optarg, &a->seed))
                return cli_usage_error("check", "--seed expects an integer in 0..18446744073709551615, got '%s'", optarg);
            break;
        }
        case CLI_OPT_EXPECT_SAME: a->expect_same = true; break;
        default: {
            int taken = cli_optimizer_code(&a->opt, "check", c, optarg);
            if (taken < 0)
                return cli_option_error("check", opts, "", argv);
            if (taken > 0)
                return CLI_USAGE;
            break;
        }
        }
    }
    for (int i = optind; i < argc; i++) {
        if (a->nmodels == MAX_LIST || listed(a->models, a->nmodels, argv[i]))
            continue;
        a->configs[a->nmodels] = cli_model("check", argv[i], &a->owned[a->nmodels]);
        if (!a->configs[a->nmodels])
            return CLI_USAGE;
        a->models[a->nmodels++] = argv[i];
    }
    if (modes_past_context(a))
        return CLI_USAGE;
    struct stat st;
    if (a->fixtures && (stat(a->fixtures, &st) != 0 || !S_ISDIR(st.st_mode)))
        return cli_usage_error("check", "--fixtures %s: no such folder (the rules' fixture cases, tests/rules in the "
                                        "source tree)", a->fixtures);
    if (a->fixtures && cli_optimizer_external(&a->opt))
        return cli_usage_error("check", "--fixtures holds fusecheck's own rules to their cases, not another "
                                        "optimizer's (--optimizer): run them apart");
    if (a->opt.timeout_ms && !cli_optimizer_external(&a->opt))
        return cli_usage_error("check", "--optimizer-timeout-ms limits another optimizer's answers: it needs "
                                        "--optimizer CMD");
    if (a->expect_same && !cli_optimizer_external(&a->opt))
        return cli_usage_error("check", "--expect-same compares another optimizer's decisions with fusecheck's own: "
                                        "it needs --optimizer CMD");
    if (a->fixtures && rules_seed_rules())
        return cli_usage_error("check", "--fixtures holds fusecheck's own rules to their cases; the seed's rules "
                                        "(--seed-rules) depart from them where docs/findings.md says: run them apart");
    if (!a->nmodes) {
        static const char *const defaults[] = {"decode", "prefill:8", "batch:4"};
        for (int i = 0; i < 3; i++)
            a->modes[a->nmodes++] = defaults[i];
    }
    if (!a->nshims) {
        a->shims[a->nshims++] = "reference";
        a->shims[a->nshims++] = "none";
    }
    bool holdable[CLI_MAX_HOLDS] = {false};
    for (int i = 0; i < a->nshims; i++) {
        struct shim *s = shim_lookup(a->shims[i], err);
        if (!s)
            return cli_usage_error("check", "%s", err);
        for (int h = 0; h < a->holds.n; h++)
            holdable[h] = holdable[h] || cli_holdable(s, a->holds.names[h]);
        shim_free(s);
    }
    for (int h = 0; h < a->holds.n; h++)
        if (!holdable[h])
            return cli_usage_error("check", "--hold: '%s' is no step under any shim checked, nor anything one holds "
                                            "(fusecheck rules --shim NAME lists them)", a->holds.names[h]);
    return 0;
}

/* Record a step's position for the run (the rules-never-fired view reads them). */
struct step_ctx {
    struct db *db;
    int64_t run;
    int seq;
    int failed;
};
static void record_step(const char *name, void *vctx)
{
    struct step_ctx *c = vctx;
    char err[DB_ERR_LEN];
    if (db_step(c->db, c->run, c->seq++, name, err))
        c->failed = 1;
}

/* Record each shim's steps in one transaction. */
static int record_steps(struct db *db, int64_t run, struct shim *const *shims, int n, char err[DB_ERR_LEN])
{
    if (db_begin(db, err))
        return 1;
    struct step_ctx c = {db, run, 0, 0};
    for (int i = 0; i < n; i++) {
        c.seq = 0;
        rules_steps(shims[i], record_step, &c);
        record_step(rules_advance()->name, &c);
    }
    if (c.failed) {
        db_rollback(db);
        snprintf(err, DB_ERR_LEN, "recording the steps failed");
        return 1;
    }
    return db_commit(db, err);
}

/* The covers of a decision as text: "[1, 2, 3]". */
static void covers_text(const struct rules_decision *d, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < d->ncovers && n + 14 < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %d" : "%d", d->covers[i]);
    snprintf(buf + n, cap - n, "]");
}

static const char *const outcome_names[] = {"fired", "refused", "held"};

/* Log one report, its decisions when results.db holds no report like it, and its n diff rows, in one
 * transaction. */
static int log_report(struct db *db, int64_t run, int64_t graph, int64_t shim, const struct rules_optimized *o,
                      double ms, const struct db_diff *diffs, int ndiffs, char err[DB_ERR_LEN])
{
    char digest[65], rewritten[65];
    rules_report_digest(&o->report, digest);
    size_t len;
    char *text = ir_print(o->graph, &len);
    if (!text)
        abort();
    cli_sha256_hex(text, len, rewritten);
    free(text);
    struct db_report r = {run,
                          graph,
                          shim,
                          digest,
                          rules_report_count(&o->report, RULES_FIRED, NULL),
                          rules_report_count(&o->report, RULES_REFUSED, NULL),
                          rules_report_count(&o->report, RULES_HELD, NULL),
                          ms,
                          rewritten};
    int64_t set;
    bool fresh = false;
    if (db_begin(db, err))
        return 1;
    int rc = db_report(db, &r, &set, &fresh, err);
    /* A new decision set: every decision's row, its covers as text, then all of them at once. */
    int32_t n = rc || !fresh ? 0 : o->report.n;
    struct db_decision *rows = malloc(sizeof *rows * (size_t)(n ? n : 1));
    char **covers = calloc((size_t)(n ? n : 1), sizeof *covers);
    const char **codes = calloc((size_t)(n ? n : 1), sizeof *codes); /* each refusal's stable code */
    if (!rows || !covers || !codes)
        abort();
    for (int32_t i = 0; i < n; i++) {
        const struct rules_decision *d = &o->report.d[i];
        size_t cap = 16 + 12 * (size_t)d->ncovers;
        covers[i] = malloc(cap);
        if (!covers[i])
            abort();
        covers_text(d, covers[i], cap);
        rows[i] = (struct db_decision){set, i, d->rule, ir_class_name(d->cls), covers[i], outcome_names[d->outcome],
                                       d->outcome == RULES_REFUSED ? d->why : NULL};
        codes[i] = d->outcome == RULES_REFUSED ? d->code : NULL;
    }
    if (!rc)
        rc = db_decisions_coded(db, rows, codes, n, err);
    free(codes);
    for (int32_t i = 0; i < n; i++)
        free(covers[i]);
    free(covers);
    free(rows);
    for (int i = 0; !rc && i < ndiffs; i++)
        rc = db_diff(db, &diffs[i], err);
    if (rc) {
        db_rollback(db);
        return 1;
    }
    return db_commit(db, err);
}

/* One lifted graph: its db row, and its evaluation when it is evaluated. */
struct lifted {
    struct ir_graph *g;
    int64_t id;
    struct ir_values *values; /* NULL when not evaluated */
};

/* Lift model c in mode `mode`, record it, and evaluate it when asked. 0 on success. */
static int lift_one(struct db *db, const struct models_config *c, const char *mode, const struct check_args *a,
                    bool evaluate, struct lifted *out, struct check_totals *t, char err[DB_ERR_LEN])
{
    memset(out, 0, sizeof *out);
    struct models_options o = a->lift.options;
    models_parse_mode(mode, &o.mode, err);
    out->g = cli_lift_config(c, &o, err);
    if (!out->g)
        return 1;
    size_t len;
    char *text = ir_print(out->g, &len);
    char hex[65];
    cli_sha256_hex(text, len, hex);
    free(text);
    double t0 = now();
    int rc = db_begin(db, err) || db_graph(db, c->name, c->family, mode, out->g->nops, hex, &out->id, err) ||
             db_commit(db, err);
    t->db_s += now() - t0;
    if (rc)
        return 1;
    if (evaluate) {
        t0 = now();
        out->values = ir_values_new(out->g, a->seed, err);
        if (!out->values || ir_eval(out->g, out->values, err))
            return 1;
        t->eval_s += now() - t0;
    }
    return 0;
}

/* Keep why a part of the run could not be checked in results.db (failures), beside what stderr said. */
static void log_failure(struct db *db, int64_t run, const char *graph, const char *mode, const char *shim,
                        const char *stage, const char *why)
{
    struct db_failure f = {run, graph, mode, shim, stage, why};
    char err[DB_ERR_LEN];
    if (db_failure(db, &f, err))
        fprintf(stderr, "fusecheck: check: %s\n", err);
}

/* A comparison as a diffs row of report `graph`/`shim` in run `run`. */
static struct db_diff diff_row(int64_t run, int64_t graph, int64_t shim, const struct cli_comparison *c)
{
    return (struct db_diff){run,      graph,     shim,         c->pass, c->compared, c->tensor[0] ? c->tensor : NULL,
                            c->index, c->lifted, c->rewritten, c->kind, c->reason};
}

/* Say on stderr why a comparison of graph l under shim failed. */
static void print_failed(const struct lifted *l, const struct shim *shim, const struct cli_comparison *c,
                         bool progress)
{
    fprintf(stderr, "%s%s %s under %s: %s: %s", progress ? "\n" : "", l->g->name, l->g->mode, shim->name, c->kind,
            c->reason);
    if (c->tensor[0])
        fprintf(stderr, " (%s[%lld]: lifted %.9g, rewritten %.9g)", c->tensor, (long long)c->index, c->lifted,
                c->rewritten);
    fputc('\n', stderr);
}

/* Log one report and the comparisons its rewritten graph was held to, in one transaction. */
static int log_checked(struct db *db, int64_t run, int64_t graph, int64_t shim, const struct rules_optimized *o,
                       double ms, const struct cli_comparisons *cmp, char err[DB_ERR_LEN])
{
    struct db_diff rows[3];
    for (int i = 0; i < cmp->n; i++)
        rows[i] = diff_row(run, graph, shim, &cmp->rows[i]);
    return log_report(db, run, graph, shim, o, ms, rows, cmp->n, err);
}

/* The external optimizer gave no answer for graph l under shim: said with its stderr's tail, kept in results.db
 * (failures, stage "optimizer"), counted a failure of the run. */
static void optimizer_fault(struct db *db, int64_t run, const struct lifted *l, const struct shim *shim,
                            const struct check_args *a, struct check_totals *t, const char *why)
{
    char what[IR_ERR_LEN + 256];
    snprintf(what, sizeof what, "%s%s %s under %s: %s", a->progress ? "\n" : "", l->g->name, l->g->mode, shim->name,
             why);
    cli_optimizer_say(&a->opt, what);
    log_failure(db, run, l->g->name, l->g->mode, shim->name, "optimizer", why);
    t->failures++;
    t->faults++;
}

/* The differential: fusecheck's own decisions on graph l under shim beside the external optimizer's report `theirs`.
 * 0, or 1 with err when fusecheck's own optimizer failed. */
static int compare_decisions(const struct lifted *l, const struct shim *shim, const struct check_args *a,
                             const struct rules_report *theirs, struct check_totals *t, char err[DB_ERR_LEN])
{
    struct rules_optimized own;
    if (rules_optimize(l->g, shim, (const char *const *)a->holds.names, a->holds.n, &own, err))
        return 1;
    char where[512];
    snprintf(where, sizeof where, "%.160s %.40s under %.300s", l->g->name, l->g->mode, shim->name);
    if (cli_differential_add(&t->diff, where, theirs, &own.report, a->json ? stderr : stdout) && a->progress)
        fflush(stdout);
    rules_optimized_free(&own);
    return 0;
}

/* Optimize a lifted graph under one shim, hold the rewritten graph to its comparisons (validity always; values when
 * the graph is evaluated), and log it all. 0 on success; *mismatch set when a comparison failed. */
static int check_one(struct db *db, int64_t run, const struct lifted *l, struct shim *shim, int64_t shim_id,
                     struct check_args *a, struct check_totals *t, bool *mismatch, char err[DB_ERR_LEN])
{
    struct rules_optimized o;
    double t0 = now();
    *mismatch = false;
    int got = cli_optimizer_run(&a->opt, l->g, shim, (const char *const *)a->holds.names, a->holds.n, &o, err);
    if (got > 0) { /* the external optimizer's fault: a finding, and the run goes on */
        optimizer_fault(db, run, l, shim, a, t, err);
        return 0;
    }
    if (got < 0)
        return 1;
    double ms = (now() - t0) * 1e3;
    t->optimize_s += ms / 1e3;
    if (cli_optimizer_external(&a->opt) && compare_decisions(l, shim, a, &o.report, t, err)) {
        rules_optimized_free(&o);
        return 1;
    }
    struct cli_comparisons cmp;
    t0 = now();
    if (cli_compare_rewritten(l->g, l->values, o.graph, shim, a->seed, &cmp, err)) {
        rules_optimized_free(&o);
        return 1;
    }
    if (l->values) {
        t->eval_s += now() - t0;
        t->diffs++;
    }
    *mismatch = !cli_comparisons_pass(&cmp);
    t0 = now();
    int rc = log_checked(db, run, l->id, shim_id, &o, ms, &cmp, err);
    t->db_s += now() - t0;
    t->reports++;
    t->decisions += o.report.n;
    t->fired += rules_report_count(&o.report, RULES_FIRED, NULL);
    for (int i = 0; i < cmp.n; i++)
        if (!cmp.rows[i].pass)
            print_failed(l, shim, &cmp.rows[i], a->progress);
    char broken[IR_ERR_LEN];
    const char *const *held = (const char *const *)a->holds.names;
    if (!rc && oracle_report_check(l->g, shim, held, a->holds.n, &o.report, broken) >= 0) {
        /* the report misstates the compile: kept as logged, and failed beside it */
        fprintf(stderr, "%s%s %s under %s: report: %s\n", a->progress ? "\n" : "", l->g->name, l->g->mode,
                shim->name, broken);
        log_failure(db, run, l->g->name, l->g->mode, shim->name, "report", broken);
        t->failures++;
    }
    if (!rc && a->tolerance && l->values && strncmp(shim->name, "cuda-lane:", 10) == 0 && cmp.rows[0].pass) {
        /* the lane's kernels on the host lane, every launch against the evaluator, logged in the same run */
        struct cli_tol_options to = {a->seed, 1, KERNELS_FAULT_NONE, false, false, db, run, l->id, shim_id, a->dev};
        char why[IR_ERR_LEN], logged[sizeof shim->name + 16];
        snprintf(logged, sizeof logged, "%s%s", shim->name, rules_seed_rules() ? "+seed-rules" : "");
        t0 = now();
        if (((a->dev && cli_tolerance_shim(db, logged, shim->name, a->dev, &to.shim, why)) ||
             cli_tolerance_graph(l->g, o.graph, shim, &to, &t->tol, why)) &&
            !cli_interrupted()) { /* a run a signal stopped half-way is no failure of the lane's */
            fprintf(stderr, "%s%s %s under %s: tolerance: %s\n", a->progress ? "\n" : "", l->g->name, l->g->mode,
                    shim->name, why);
            log_failure(db, run, l->g->name, l->g->mode, shim->name, "tolerance", why);
            t->failures++;
        }
        t->eval_s += now() - t0;
    }
    rules_optimized_free(&o);
    return rc;
}

/* Where a fixture run logs its failures: the run in its db, and whether a progress line is up. */
struct fixture_log {
    struct db *db;
    int64_t run;
    bool progress;
};

/* A fixture case's failed check: said on stderr and kept in results.db (failures, stage "fixture"). */
static void fixture_failed(const struct oracle_fixture *f, const char *what, void *ctx)
{
    struct fixture_log *l = ctx;
    fprintf(stderr, "%s%s: %s\n", l->progress ? "\n" : "", f->path, what);
    log_failure(l->db, l->run, f->path, NULL, f->shim, "fixture", what);
}

/* Run the rules' fixture cases under a->fixtures (none when not asked), counting them in t: a case with a failed
 * check is a failure of the run, and so is a folder that holds no case. */
static void check_fixtures(struct db *db, int64_t run, const struct check_args *a, struct check_totals *t)
{
    if (!a->fixtures)
        return;
    struct fixture_log log = {db, run, a->progress};
    struct oracle_fixture_hooks hooks = {fixture_failed, NULL, &log, false};
    char why[IR_ERR_LEN];
    double t0 = now();
    int n = oracle_fixtures_run(a->fixtures, &hooks, &t->fixtures_failed, why);
    t->fixtures_s = now() - t0;
    if (n < 0) {
        fprintf(stderr, "fusecheck: check: --fixtures %s\n", why);
        log_failure(db, run, a->fixtures, NULL, NULL, "fixture", why);
        t->fixtures_failed = 1;
    }
    t->fixtures = n > 0 ? n : 0;
    t->failures += t->fixtures_failed;
}

/* The models to check: those named, or the whole zoo. */
static int model_list(const struct check_args *a, const struct models_config **out)
{
    int n = 0;
    if (a->nmodels) {
        for (int i = 0; i < a->nmodels; i++)
            out[n++] = a->configs[i];
    } else {
        for (int i = 0; i < models_count() && n < MAX_LIST; i++)
            out[n++] = models_get(i);
    }
    return n;
}

/* Show check's progress: `done` of the graphs × shims checked, and the next: a model and mode under a shim, or (shim
 * NULL) the lift of that graph. */
static void show_progress(struct cli_progress *p, long done, const char *model, const char *mode, const char *shim)
{
    char next[256];
    snprintf(next, sizeof next, "%s %s%s%.150s", model, mode, shim ? " under " : "", shim ? shim : "");
    cli_progress_update(p, done, next);
}

/* Check every graph; counts failures and mismatches in t. 0 unless the db itself failed. */
static int check_all(struct db *db, int64_t run, struct check_args *a, struct shim *const *shims,
                     const int64_t *shim_ids, struct check_totals *t, char err[DB_ERR_LEN])
{
    const struct models_config *models[MAX_LIST];
    int nmodels = model_list(a, models);
    int total = nmodels * a->nmodes, done = 0;
    struct cli_progress p; /* over graphs × shims */
    cli_progress_begin(&p, a->progress ? CLI_PROGRESS_TERMINAL : a->log_progress ? CLI_PROGRESS_LOG : CLI_PROGRESS_OFF,
                       stderr, "check", (long)total * a->nshims, NULL, NULL);
    for (int m = 0; m < nmodels && !cli_interrupted(); m++) { /* a signal caught stops between units of work */
        for (int k = 0; k < a->nmodes && !cli_interrupted(); k++, done++) {
            show_progress(&p, (long)done * a->nshims, models[m]->name, a->modes[k], NULL);
            struct lifted l;
            bool evaluate = models[m]->tiny || a->eval_real;
            char why[IR_ERR_LEN];
            if (lift_one(db, models[m], a->modes[k], a, evaluate, &l, t, why)) {
                if (cli_interrupted()) { /* the evaluation stopped on the signal: no failure of the graph's */
                    ir_values_free(l.values);
                    ir_graph_free(l.g);
                    break;
                }
                fprintf(stderr, "%s%s %s: %s\n", a->progress ? "\n" : "", models[m]->name, a->modes[k], why);
                log_failure(db, run, models[m]->name, a->modes[k], NULL, "lift", why);
                t->failures++;
                ir_values_free(l.values);
                ir_graph_free(l.g);
                continue;
            }
            t->graphs++;
            for (int s = 0; s < a->nshims && !cli_interrupted(); s++) {
                bool mismatch = false;
                show_progress(&p, (long)done * a->nshims + s, models[m]->name, a->modes[k], shims[s]->name);
                if (check_one(db, run, &l, shims[s], shim_ids[s], a, t, &mismatch, why) && !cli_interrupted()) {
                    fprintf(stderr, "%s%s %s under %s: %s\n", a->progress ? "\n" : "", models[m]->name,
                            a->modes[k], shims[s]->name, why);
                    log_failure(db, run, models[m]->name, a->modes[k], shims[s]->name, "optimize", why);
                    t->failures++;
                    if (strstr(why, "recording") || strstr(why, "committing") || strstr(why, "transaction")) {
                        snprintf(err, DB_ERR_LEN, "%s", why);
                        ir_values_free(l.values);
                        ir_graph_free(l.g);
                        return 1;
                    }
                }
                t->mismatches += mismatch;
            }
            ir_values_free(l.values);
            ir_graph_free(l.g);
        }
    }
    cli_progress_update(&p, (long)done * a->nshims, NULL); /* the last line: all done, or where a signal stopped it */
    cli_progress_end(&p);
    return 0;
}

/* Free what check's arguments hold: its device, its holds and the configurations it read. */
static void free_check_args(struct check_args *a)
{
    cli_optimizer_stop(&a->opt);
    kernels_device_close(a->dev);
    cli_holds_free(&a->holds);
    for (int i = 0; i < MAX_LIST; i++)
        models_config_free(a->owned[i]);
}

/* Whether a lane shim (cuda-lane:...) is among the shims check runs: what --tolerance compares. */
static bool lane_shim_given(const struct check_args *a)
{
    for (int i = 0; i < a->nshims; i++)
        if (strncmp(a->shims[i], "cuda-lane:", 10) == 0)
            return true;
    return false;
}

/* How a check run ended: its id, seconds, status, and whether the optimizers disagreed. */
struct check_end {
    int64_t run;
    double secs;
    const char *status;
    bool differ;
};

/* The summary as text: the run's totals, then the fixture cases, the tolerance runs and the optimizer's. */
static void print_summary(const struct check_args *a, const struct check_totals *t, const struct check_end *e)
{
    printf("check: run %lld: %d graphs, %d reports, %ld decisions (%ld fired), %d diffs, %d mismatches, %d failures "
           "in %.2f s (optimize %.2f s, evaluate %.2f s, db %.2f s) -> %s\n",
           (long long)e->run, t->graphs, t->reports, t->decisions, t->fired, t->diffs, t->mismatches, t->failures,
           e->secs, t->optimize_s, t->eval_s, t->db_s, a->db);
    if (a->fixtures && t->fixtures)
        printf("fixtures: %d cases under %s, %d failed in %.2f s\n", t->fixtures, a->fixtures, t->fixtures_failed,
               t->fixtures_s);
    else if (a->fixtures)
        printf("fixtures: no case under %s: failed\n", a->fixtures);
    if (a->tolerance)
        printf("tolerance: %lld graphs, %lld launches, %lld comparisons, %lld outside their bound, worst error/bound "
               "%.3g, %lld end-to-end top-1 misses; %s %.2f s, evaluator %.2f s\n",
               (long long)t->tol.graphs, (long long)t->tol.launches, (long long)t->tol.rows, (long long)t->tol.failed,
               t->tol.worst_ratio, (long long)t->tol.top1_misses, a->dev ? kernels_device_backend(a->dev) : "host lane",
               t->tol.lane_s, t->tol.eval_s);
    if (cli_optimizer_external(&a->opt)) {
        if (t->faults)
            printf("optimizer: %d request%s unanswered (a fault each: see above)\n", t->faults,
                   t->faults == 1 ? "" : "s");
        cli_differential_print(&t->diff, rules_seed_rules() ? "fusecheck's own --seed-rules" : "fusecheck's own",
                               stdout);
        if (e->differ)
            printf("differential: the optimizers disagree: %s\n",
                   a->expect_same ? "a failed check (--expect-same)" : "reported, not failed (--expect-same fails it)");
    }
}

/* The JSON summary's fixture and tolerance members (null where the run made none). */
static void json_parts(struct cli_json *j, const struct check_args *a, const struct check_totals *t)
{
    if (a->fixtures) {
        cli_json_object(j, "fixtures");
        cli_json_string(j, "dir", a->fixtures);
        cli_json_int(j, "cases", t->fixtures);
        cli_json_int(j, "failed", t->fixtures_failed);
        cli_json_number(j, "seconds", t->fixtures_s);
        cli_json_end(j);
    } else {
        cli_json_null(j, "fixtures");
    }
    if (!a->tolerance) {
        cli_json_null(j, "tolerance");
        return;
    }
    cli_json_object(j, "tolerance");
    cli_json_string(j, "backend", a->dev ? kernels_device_backend(a->dev) : "host lane");
    cli_json_int(j, "graphs", (long long)t->tol.graphs);
    cli_json_int(j, "launches", (long long)t->tol.launches);
    cli_json_int(j, "comparisons", (long long)t->tol.rows);
    cli_json_int(j, "outside_bound", (long long)t->tol.failed);
    cli_json_number(j, "worst_ratio", t->tol.worst_ratio);
    cli_json_int(j, "top1_misses", (long long)t->tol.top1_misses);
    cli_json_number(j, "lane_seconds", t->tol.lane_s);
    cli_json_number(j, "evaluator_seconds", t->tol.eval_s);
    cli_json_end(j);
}

/* The JSON summary's optimizer and, for another optimizer, its differential against fusecheck's own. */
static void json_optimizer(struct cli_json *j, const struct check_args *a, const struct check_totals *t)
{
    bool external = cli_optimizer_external(&a->opt);
    cli_json_object(j, "optimizer");
    cli_json_string(j, "name", external ? a->opt.name : "fusecheck");
    cli_json_string(j, "version", external ? a->opt.version : FUSECHECK_VERSION);
    cli_json_string(j, "command", external ? a->opt.command : NULL);
    cli_json_int(j, "unanswered", t->faults);
    cli_json_end(j);
    if (!external) {
        cli_json_null(j, "differential");
        return;
    }
    cli_json_object(j, "differential");
    cli_json_int(j, "reports", (long long)t->diff.reports);
    cli_json_int(j, "agree", (long long)t->diff.agree);
    cli_json_int(j, "differ", (long long)t->diff.disagree);
    cli_json_int(j, "reports_differing", (long long)t->diff.differing);
    cli_json_array(j, "rules");
    for (int i = 0; i < t->diff.nrules; i++) {
        cli_json_object(j, NULL);
        cli_json_string(j, "rule", t->diff.rules[i].rule);
        cli_json_int(j, "agree", (long long)t->diff.rules[i].agree);
        cli_json_int(j, "differ", (long long)t->diff.rules[i].disagree);
        cli_json_end(j);
    }
    cli_json_end(j);
    cli_json_end(j);
}

/* The summary as one JSON document (check --json): the same figures as the text, by name. */
static void json_summary(const struct check_args *a, const struct check_totals *t, const struct check_end *e)
{
    struct cli_json j;
    cli_json_start(&j, stdout);
    cli_json_object(&j, NULL);
    cli_json_int(&j, "run", (long long)e->run);
    cli_json_string(&j, "db", a->db);
    cli_json_string(&j, "status", e->status);
    cli_json_int(&j, "graphs", t->graphs);
    cli_json_int(&j, "reports", t->reports);
    cli_json_int(&j, "decisions", t->decisions);
    cli_json_int(&j, "fired", t->fired);
    cli_json_int(&j, "diffs", t->diffs);
    cli_json_int(&j, "mismatches", t->mismatches);
    cli_json_int(&j, "failures", t->failures);
    cli_json_number(&j, "seconds", e->secs);
    cli_json_number(&j, "optimize_seconds", t->optimize_s);
    cli_json_number(&j, "evaluate_seconds", t->eval_s);
    cli_json_number(&j, "db_seconds", t->db_s);
    json_parts(&j, a, t);
    json_optimizer(&j, a, t);
    cli_json_bool(&j, "optimizers_disagree", e->differ);
    cli_json_bool(&j, "failed", strcmp(e->status, "complete") != 0);
    cli_json_end(&j);
}

int cli_cmd_check(int argc, char **argv)
{
    cli_interrupt_catch();
    struct check_args a;
    int rc = parse_check_args(argc, argv, &a);
    if (!rc && a.device && !a.tolerance)
        rc = cli_usage_error("check", "--device runs the tolerance runs' launches: it needs --tolerance");
    if (!rc && a.tolerance && !lane_shim_given(&a))
        rc = cli_usage_error("check", "--tolerance runs the CUDA lane's launches: it needs a lane shim, --shim "
                             "cuda-lane:CHIP:ACTS[:knobs] (ci/nightly --quick runs cuda-lane:h100:int8, "
                             "cuda-lane:a100:dequant and cuda-lane:rtx4090:int8x2:cache=f32; fusecheck shims)");
    if (!rc)
        rc = cli_device_open("check", a.device, &a.dev);
    char err[DB_ERR_LEN], rev[64], host[128] = "";
    struct db *db = NULL;
    if (!rc && db_open(a.db, &db, err)) {
        fprintf(stderr, "fusecheck: check: %s\n", err);
        rc = CLI_USAGE;
    }
    if (!rc && cli_optimizer_start(&a.opt, "check"))
        rc = CLI_FAILED; /* an optimizer that cannot start or greet is a finding, said */
    if (rc) {
        db_close(db);
        free_check_args(&a);
        return rc;
    }
    double t0 = now();
    cli_git_revision(rev, sizeof rev);
    gethostname(host, sizeof host - 1);
    char *command = cli_command_line(argc, argv);
    struct db_run_info info = {.kind = "check", .command = command, .git_rev = rev[0] ? rev : NULL,
                               .host = host, .version = FUSECHECK_VERSION};
    if (cli_optimizer_external(&a.opt)) { /* the optimizer whose reports the run holds, as it greeted */
        info.optimizer_name = a.opt.name;
        info.optimizer_version = a.opt.version;
        info.optimizer_command = a.opt.command;
        if (!a.json)
            printf("optimizer: %s %s (%s)\n", a.opt.name, a.opt.version, a.opt.command);
        fflush(stdout); /* before any finding on stderr */
    }
    int64_t run;
    struct shim *shims[MAX_LIST];
    int64_t shim_ids[MAX_LIST];
    int nshims = 0;
    rc = db_run_begin(db, &info, &run, err);
    bool begun = !rc;
    for (int i = 0; !rc && i < a.nshims; i++) {
        char why[IR_ERR_LEN];
        shims[nshims] = shim_lookup(a.shims[i], why);
        cli_holds_apply(&a.holds, shims[nshims]); /* a knob hold is in the shim's name, as `:hold=` puts it */
        /* Under the seed's rules the shim is logged as its own: no view compares its reports with the default's. */
        char logged[sizeof shims[nshims]->name + 16];
        snprintf(logged, sizeof logged, "%s%s", shims[nshims]->name, rules_seed_rules() ? "+seed-rules" : "");
        rc = db_begin(db, err) || db_shim(db, logged, a.shims[i], &shim_ids[nshims], err) || db_commit(db, err);
        nshims++;
    }
    if (!rc)
        rc = record_steps(db, run, shims, nshims, err);
    struct check_totals t = {0};
    if (!rc)
        check_fixtures(db, run, &a, &t);
    if (!rc && a.fixtures) /* how many cases ran and failed, for the page's comparisons and failures */
        rc = db_run_fixtures(db, run, t.fixtures, t.fixtures_failed, err);
    if (!rc)
        rc = check_all(db, run, &a, shims, shim_ids, &t, err);
    bool differ = t.diff.disagree > 0;
    bool failed = rc || t.failures || t.mismatches || t.tol.failed || (a.expect_same && differ);
    bool stopped = cli_interrupted() != 0; /* a signal stopped it between units: what it logged is whole */
    if (!rc)
        rc = db_run_end(db, run, stopped ? "interrupted" : failed ? "failed" : "complete", err);
    if (rc)
        fprintf(stderr, "fusecheck: check: %s: %s\n", a.db, err);
    struct check_end end = {run, now() - t0, stopped ? "interrupted" : failed ? "failed" : "complete", differ};
    if (begun && a.json)
        json_summary(&a, &t, &end);
    else if (begun)
        print_summary(&a, &t, &end);
    cli_differential_free(&t.diff);
    for (int i = 0; i < nshims; i++)
        shim_free(shims[i]);
    free_check_args(&a);
    free(command);
    db_close(db);
    if (stopped) {
        cli_interrupt_say("check", a.db, begun && !rc ? (long long)run : 0);
        return cli_interrupt_exit();
    }
    if (rc)
        return CLI_USAGE;
    return failed ? CLI_FAILED : CLI_OK;
}
