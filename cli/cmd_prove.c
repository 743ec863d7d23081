/* cli/cmd_prove.c — `fusecheck prove`: every rule's obligations proved with Z3 (and, with --mutants, each guard
 * atom's necessity), counterexamples printed and written as replayable graphs, every verdict logged to results.db;
 * and `fusecheck validate-run`: one concrete optimization re-checked firing by firing. */
#include "cli.h"
#include "cli/progress.h"
#include "db/db.h"
#include "oracle/oracle.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ── Options ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* What prove reads from its command line. */
struct prove_args {
    struct oracle_options opt;
    struct oracle_cross cross; /* --cross-check: the second solver's tally (opt.cross points here when asked) */
    bool mutants, explain;
    bool json;     /* --json: the table and its totals as one JSON document on stdout */
    bool progress; /* progress lines on stderr in a log (cli/progress.h); --no-progress clears it */
    const char *db, *replay, *fixtures;
    char **rules;
    int nrules;
};

/* A non-negative integer option's value, or -1. */
static long long count_arg(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    return end == s || *end || s[0] == '-' ? -1 : v;
}

/* Parse prove's options. 0 on success. */
static int parse_prove_args(int argc, char **argv, struct prove_args *a)
{
    static const struct option opts[] = {
        {"mutants", no_argument, NULL, 'm'},       {"db", required_argument, NULL, 'd'},
        {"timeout-ms", required_argument, NULL, 't'}, {"seed", required_argument, NULL, 's'},
        {"bound", required_argument, NULL, 'k'},   {"smt2", required_argument, NULL, 'q'},
        {"no-unbounded", no_argument, NULL, 'u'},  {"assume-fresh-results", no_argument, NULL, 'a'},
        {"replay", required_argument, NULL, 'r'},  {"fixtures", required_argument, NULL, 'f'},
        {"explain", no_argument, NULL, 'e'},       {"cross-check", required_argument, NULL, 'x'},
        {"no-progress", no_argument, NULL, 'P'},   {"json", no_argument, NULL, 'J'},
        CLI_SEED_RULES_OPTION,                     {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->opt = oracle_defaults();
    a->fixtures = "tests/rules";
    a->progress = true;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        long long v = optarg ? count_arg(optarg) : 0;
        switch (c) {
        case 'm': a->mutants = true; break;
        case 'd': a->db = optarg; break;
        case 't':
            if (v < 1 || v > 86400000)
                return cli_usage_error("prove", "--timeout-ms expects 1..86400000, got '%s'", optarg);
            a->opt.timeout_ms = (unsigned)v;
            break;
        case 's':
            if (v < 0 || v > 0xffffffffLL)
                return cli_usage_error("prove", "--seed expects a non-negative 32-bit integer, got '%s'", optarg);
            a->opt.seed = (unsigned)v;
            break;
        case 'k':
            if (v < 2 || v > 64)
                return cli_usage_error("prove", "--bound expects 2..64, got '%s'", optarg);
            a->opt.bound = (int)v;
            break;
        case 'q': a->opt.smt2_dir = optarg; break;
        case 'u': a->opt.unbounded = false; break;
        case 'a': a->opt.fresh_results = true; break;
        case 'r': a->replay = optarg; break;
        case 'f': a->fixtures = optarg; break;
        case 'e': a->explain = true; break;
        case 'P': a->progress = false; break;
        case 'J': a->json = true; break;
        case 'x':
            if (strcmp(optarg, "cvc5") != 0)
                return cli_usage_error("prove", "--cross-check: '%s' is no solver fusecheck runs (cvc5)", optarg);
            if (!oracle_cross_available(optarg))
                return cli_usage_error("prove", "--cross-check %s: not found on PATH (apt-get install %s)", optarg,
                                       optarg);
            a->cross.solver = optarg;
            a->opt.cross = &a->cross;
            break;
        case 'R': rules_seed_mode(true); break;
        default: return cli_option_error("prove", opts, "", argv);
        }
    }
    if (a->json && a->explain)
        return cli_usage_error("prove", "--explain prints each rule's premises as text: not with --json");
    a->rules = argv + optind;
    a->nrules = argc - optind;
    for (int i = 0; i < a->nrules; i++)
        if (!oracle_rule_find(a->rules[i]))
            return cli_usage_error("prove", "unknown rule '%s' (fusecheck rules lists them)", a->rules[i]);
    return 0;
}

/* ── Reporting ───────────────────────────────────────────────────────────────────────────────────────────── */

/* One row of the table, kept for --json: the obligation, its verdict and window, time, reason, counterexample and
 * what its replay showed. */
struct proof_row {
    char *rule, *obligation, *window, *reason, *cex;
    const char *dropped, *verdict, *replay;
    int bound, replay_fired;
    double ms;
};

/* What the outcome callback keeps across a run. */
struct prove_run {
    const struct prove_args *a;
    FILE *out;              /* where the table's text goes: stdout, or nowhere under --json */
    struct proof_row *rows; /* under --json: every row */
    size_t nrows, caprows;
    struct db *db;
    int64_t run;
    int proved, refuted, unknown;
    int atoms, needed, replayed, replay_tried;
    int unwritten; /* replay files that could not be written */
    int faithful_failed; /* obligations of the rules as shipped not proved */
    char redundant[4096];
    double ms;
    bool db_failed;
    int rule_w, name_w; /* the table's rule and obligation columns: as wide as the longest each will hold */
};

/* Widen *w to hold s. */
static void fit(int *w, const char *s)
{
    int n = (int)strlen(s);
    if (n > *w)
        *w = n;
}

/* Size the table's columns for the outcomes rule will print: its name; each obligation's, and with --mutants each
 * one less an atom. */
static void fit_columns(struct prove_run *pr, const struct rules_rule *rule)
{
    static const char *const fixed[] = {"assumptions satisfiable", "dataflow under A5", "kernel contract"};
    char name[256];
    fit(&pr->rule_w, rule->name);
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        fit(&pr->name_w, fixed[i]);
    const char *index[16];
    int n = oracle_index_obligations(rule, index, 16);
    for (int i = 0; i < n && i < 16; i++) {
        snprintf(name, sizeof name, "index: %s", index[i]);
        fit(&pr->name_w, name);
    }
    for (int i = 0; pr->a->mutants && i < rule->nguards; i++) {
        snprintf(name, sizeof name, "dataflow under A5 without %s", rule->guards[i].name);
        fit(&pr->name_w, name);
        snprintf(name, sizeof name, "kernel contract without %s", rule->guards[i].name);
        fit(&pr->name_w, name);
    }
}

/* The obligation's name as logged: with the atom a mutant drops. */
static void obligation_name(const struct oracle_outcome *o, char *buf, size_t n)
{
    if (o->dropped)
        snprintf(buf, n, "%s without %s", o->obligation, o->dropped);
    else
        snprintf(buf, n, "%s", o->obligation);
}

/* The window a verdict speaks of, in words. */
static void window_words(const struct oracle_outcome *o, char *buf, size_t n)
{
    if (o->verdict == ORACLE_PROVED)
        snprintf(buf, n, o->bound ? "windows up to %d ops" : "windows of any length", o->bound);
    else if (o->verdict == ORACLE_REFUTED && o->cex)
        snprintf(buf, n, "a window of %d ops", o->bound);
    else
        snprintf(buf, n, "-");
}

/* What a replay showed: "fails" (the counterexample is real), "passes", "unbuilt"; NULL when none was tried. */
struct replay_outcome {
    const char *what;
    int fired;
};

/* Write the counterexample's replay graph under the replay directory and replay it in-process; prints the result
 * and returns what it showed. */
static struct replay_outcome replay(struct prove_run *pr, const struct oracle_outcome *o)
{
    const struct rules_rule *rule = oracle_rule_find(o->rule);
    struct oracle_replay rp;
    struct replay_outcome out = {"unbuilt", 0};
    char err[IR_ERR_LEN], path[1024], spec[256];
    pr->replay_tried++;
    if (!rule || oracle_replay_graph(rule, o->dropped, o->cex, pr->a->fixtures, &rp, err)) {
        fprintf(pr->out, "    replay: not built: %s\n", rule ? err : "unknown rule");
        return out;
    }
    snprintf(path, sizeof path, "%s/%s%s%s.fc", pr->a->replay, o->rule, o->dropped ? "." : "",
             o->dropped ? o->dropped : "");
    if (cli_write(path, rp.text, strlen(rp.text)) == 0)
        fprintf(pr->out, "    replay: %s\n", path);
    else
        pr->unwritten++; /* said on stderr; the run exits 2 unless a check failed */
    struct ir_graph *g = ir_parse(rp.text, strlen(rp.text), path, err);
    bool differs = false;
    int fired = 0;
    if (o->dropped)
        snprintf(spec, sizeof spec, "%s:%s", o->rule, o->dropped);
    if (g && oracle_replay_diff(g, rp.shim, rp.hold, o->dropped ? spec : NULL, o->rule, &differs, &fired, err) == 0) {
        fprintf(pr->out, "    replay: %s fired %d time%s; diff %s\n", o->rule, fired, fired == 1 ? "" : "s",
               differs ? "fails (the counterexample is real)" : "passes (not shown concretely)");
        pr->replayed += differs;
        out.what = differs ? "fails" : "passes";
        out.fired = fired;
    } else {
        fprintf(pr->out, "    replay: %s\n", err);
    }
    ir_graph_free(g);
    oracle_replay_free(&rp);
    return out;
}

/* Log one outcome to results.db (its own transaction); with --cross-check, the second solver's verdict on the
 * obligation's deciding query beside it. */
static void log_outcome(struct prove_run *pr, const struct oracle_outcome *o, const char *name, const char *cex,
                        struct replay_outcome rp)
{
    char err[DB_ERR_LEN];
    struct db_proof p = {pr->run,
                         o->rule,
                         name,
                         o->verdict == ORACLE_PROVED ? o->bound : (o->cex ? o->bound : 0),
                         oracle_verdict_name(o->verdict),
                         o->reason[0] ? o->reason : NULL,
                         cex,
                         o->ms,
                         "z3",
                         rp.what,
                         rp.fired,
                         rules_seed_rules()};
    const struct oracle_cross *x = pr->a->opt.cross;
    struct db_proof q = p;
    if (x) {
        q.verdict = oracle_verdict_name(x->last);
        q.reason = q.counterexample = NULL;
        q.solver = x->solver;
        q.replay = NULL; /* the replay is of z3's counterexample */
        q.ms = o->cross_ms; /* its own time on the obligation's queries, apart from z3's */
    }
    if (db_begin(pr->db, err) || db_proof(pr->db, &p, err) || (x && db_proof(pr->db, &q, err)) ||
        db_commit(pr->db, err)) {
        if (!pr->db_failed)
            fprintf(stderr, "fusecheck: prove: %s\n", err);
        pr->db_failed = true;
    }
}

/* Add "rule:atom" to the list of redundant atoms. */
static void note_redundant(struct prove_run *pr, const struct oracle_outcome *o)
{
    size_t n = strlen(pr->redundant);
    snprintf(pr->redundant + n, sizeof pr->redundant - n, "%s%s:%s", n ? ", " : "", o->rule, o->dropped);
}

/* A copy of s (NULL stays NULL). */
static char *copy_or_null(const char *s)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        abort();
    return d;
}

/* Keep one row of the table for --json. */
static void keep_row(struct prove_run *pr, const struct oracle_outcome *o, const char *name, const char *window,
                     const char *cex, struct replay_outcome rp)
{
    if (pr->nrows == pr->caprows) {
        pr->caprows = pr->caprows ? 2 * pr->caprows : 64;
        pr->rows = realloc(pr->rows, pr->caprows * sizeof *pr->rows);
        if (!pr->rows)
            abort();
    }
    pr->rows[pr->nrows++] = (struct proof_row){copy_or_null(o->rule), copy_or_null(name), copy_or_null(window),
                                               copy_or_null(o->reason[0] ? o->reason : NULL), copy_or_null(cex),
                                               o->dropped, oracle_verdict_name(o->verdict), rp.what, o->bound,
                                               rp.fired, o->ms};
}

/* Print, count and log one outcome. */
static void on_outcome(const struct oracle_outcome *o, void *ctx)
{
    struct prove_run *pr = ctx;
    if (cli_interrupted())
        return; /* decided while the signal came (a second solver's child may have had it too): not kept */
    char name[256], window[64];
    obligation_name(o, name, sizeof name);
    window_words(o, window, sizeof window);
    fprintf(pr->out, "%-*s %-*s %-8s %-22s %8.1f ms%s%s\n", pr->rule_w, o->rule, pr->name_w, name,
           oracle_verdict_name(o->verdict), window, o->ms, o->reason[0] ? "  " : "", o->reason);
    pr->ms += o->ms;
    pr->proved += o->verdict == ORACLE_PROVED;
    pr->refuted += o->verdict == ORACLE_REFUTED;
    pr->unknown += o->verdict == ORACLE_UNKNOWN;
    bool a5 = strstr(o->obligation, "A5") != NULL;
    if (!o->dropped && !a5 && o->verdict != ORACLE_PROVED)
        pr->faithful_failed++;
    if (o->dropped) {
        pr->atoms++;
        pr->needed += o->verdict == ORACLE_REFUTED;
        if (o->verdict == ORACLE_PROVED)
            note_redundant(pr, o);
    }
    char *cex = o->cex ? oracle_sched_text(o->cex) : NULL;
    if (cex) {
        for (char *line = strtok(cex, "\n"); line; line = strtok(NULL, "\n"))
            fprintf(pr->out, "    %s\n", line);
        free(cex);
        cex = oracle_sched_text(o->cex);
    }
    struct replay_outcome rp = {NULL, 0};
    if (o->cex && pr->a->replay)
        rp = replay(pr, o);
    if (pr->db)
        log_outcome(pr, o, name, cex, rp);
    if (pr->a->json)
        keep_row(pr, o, name, window, cex, rp);
    free(cex);
}

/* Print the premises the oracle assumes of a rule. */
static void explain(const struct rules_rule *rule)
{
    char lines[16][ORACLE_REASON_LEN];
    int n = oracle_premise_lines(rule, lines, 16);
    printf("%s: motion %s (%s)\n", rule->name, rules_motion_name(rule->motion), rules_motion_meaning(rule->motion));
    for (int i = 0; i < rule->nguards; i++)
        printf("  atom %-22s %s\n", rule->guards[i].name, rules_atom_meaning(rule->guards[i].kind));
    for (int i = 0; i < n && i < 16; i++)
        printf("  premise: %s\n", lines[i]);
}

/* Open the db and begin a run of kind prove. 0 on success. */
static int begin_db(struct prove_run *pr, int argc, char **argv)
{
    char err[DB_ERR_LEN], host[128] = "";
    if (db_open(pr->a->db, &pr->db, err)) {
        fprintf(stderr, "fusecheck: prove: %s\n", err);
        return CLI_USAGE;
    }
    gethostname(host, sizeof host - 1);
    char *command = cli_command_line(argc, argv), rev[64];
    cli_git_revision(rev, sizeof rev);
    struct db_run_info info = {.kind = "prove", .command = command, .git_rev = rev,
                               .host = host[0] ? host : NULL, .version = FUSECHECK_VERSION};
    int rc = db_run_begin(pr->db, &info, &pr->run, err);
    free(command);
    if (rc) {
        fprintf(stderr, "fusecheck: prove: %s\n", err);
        db_close(pr->db);
        pr->db = NULL;
        return CLI_USAGE; /* the results cannot be kept (a read-only file): nothing was checked */
    }
    return 0;
}

/* The totals under the table: obligations by verdict, the mutation score, the replays, the second solver's tally. */
static void print_totals(const struct prove_run *pr, int nrules, double wall)
{
    const struct prove_args *a = pr->a;
    printf("prove: %d rules, %d obligations: %d proved, %d refuted, %d unknown; %.1f s\n", nrules,
           pr->proved + pr->refuted + pr->unknown, pr->proved, pr->refuted, pr->unknown, wall / 1e3);
    if (a->mutants)
        printf("mutation score: %d/%d atoms shown necessary%s%s\n", pr->needed, pr->atoms,
               pr->redundant[0] ? "; redundant under the stated assumptions: " : "", pr->redundant);
    if (a->replay)
        printf("replays: %d of %d counterexamples fail concretely\n", pr->replayed, pr->replay_tried);
    if (a->opt.cross)
        printf("cross-check %s: %d queries: %d agree with z3, %d disagree, %d undecided by one of them%s%s\n",
               a->cross.solver, a->cross.queries, a->cross.agreed, a->cross.disagreed, a->cross.undecided,
               a->cross.disagreed ? "; first: " : "", a->cross.first);
}

/* One row of the table as a JSON object. */
static void json_row(struct cli_json *j, const struct proof_row *r)
{
    cli_json_object(j, NULL);
    cli_json_string(j, "rule", r->rule);
    cli_json_string(j, "obligation", r->obligation);
    cli_json_string(j, "dropped", r->dropped);
    cli_json_string(j, "verdict", r->verdict);
    cli_json_int(j, "bound", r->bound);
    cli_json_string(j, "window", r->window);
    cli_json_number(j, "ms", r->ms);
    cli_json_string(j, "reason", r->reason);
    cli_json_string(j, "counterexample", r->cex);
    cli_json_string(j, "replay", r->replay);
    if (r->replay)
        cli_json_int(j, "replay_fired", r->replay_fired);
    else
        cli_json_null(j, "replay_fired");
    cli_json_end(j);
}

/* The table and its totals as one JSON document (prove --json), the rows freed. */
static void json_table(struct prove_run *pr, int nrules, double wall, const char *status)
{
    const struct prove_args *a = pr->a;
    struct cli_json j;
    cli_json_start(&j, stdout);
    cli_json_object(&j, NULL);
    if (pr->db)
        cli_json_int(&j, "run", (long long)pr->run);
    else
        cli_json_null(&j, "run");
    cli_json_string(&j, "status", status);
    cli_json_int(&j, "rules", nrules);
    cli_json_int(&j, "obligations", pr->proved + pr->refuted + pr->unknown);
    cli_json_int(&j, "proved", pr->proved);
    cli_json_int(&j, "refuted", pr->refuted);
    cli_json_int(&j, "unknown", pr->unknown);
    cli_json_number(&j, "seconds", wall / 1e3);
    if (a->mutants) {
        cli_json_object(&j, "mutants");
        cli_json_int(&j, "atoms", pr->atoms);
        cli_json_int(&j, "needed", pr->needed);
        cli_json_string(&j, "redundant", pr->redundant);
        cli_json_end(&j);
    } else {
        cli_json_null(&j, "mutants");
    }
    if (a->replay) {
        cli_json_object(&j, "replays");
        cli_json_int(&j, "tried", pr->replay_tried);
        cli_json_int(&j, "fail", pr->replayed);
        cli_json_end(&j);
    } else {
        cli_json_null(&j, "replays");
    }
    if (a->opt.cross) {
        cli_json_object(&j, "cross_check");
        cli_json_string(&j, "solver", a->cross.solver);
        cli_json_int(&j, "queries", a->cross.queries);
        cli_json_int(&j, "agree", a->cross.agreed);
        cli_json_int(&j, "disagree", a->cross.disagreed);
        cli_json_int(&j, "undecided", a->cross.undecided);
        cli_json_end(&j);
    } else {
        cli_json_null(&j, "cross_check");
    }
    cli_json_array(&j, "table");
    for (size_t i = 0; i < pr->nrows; i++) {
        struct proof_row *r = &pr->rows[i];
        json_row(&j, r);
        free(r->rule), free(r->obligation), free(r->window), free(r->reason), free(r->cex);
    }
    cli_json_end(&j);
    cli_json_bool(&j, "failed", strcmp(status, "complete") != 0);
    cli_json_end(&j);
    free(pr->rows);
}

/* Milliseconds on a monotonic clock. */
static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Whether path is a directory fusecheck can write into (made when absent); else a usage error naming it. */
static bool output_dir(const char *option, const char *path)
{
    struct stat st;
    mkdir(path, 0777);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(path, W_OK | X_OK) == 0)
        return true;
    cli_usage_error("prove", "%s %s: not a directory fusecheck can write into", option, path);
    return false;
}

/* Whether the command line asks for rule: it names it, or names none. */
static bool prove_wanted(const struct prove_args *a, const struct rules_rule *rule)
{
    bool wanted = a->nrules == 0;
    for (int k = 0; k < a->nrules && !wanted; k++)
        wanted = strcmp(a->rules[k], rule->name) == 0;
    return wanted;
}

/* Start prove's progress over the rules it will prove: lines in a log; on a terminal a line of its own only where
 * stdout, whose table shows each obligation as it is decided, goes elsewhere. */
static void begin_progress(const struct prove_args *a, const struct rules_rule *const *list, int n,
                           struct cli_progress *p)
{
    enum cli_progress_kind kind = cli_progress_kind_for(a->progress, STDERR_FILENO);
    if (kind == CLI_PROGRESS_TERMINAL && isatty(STDOUT_FILENO))
        kind = CLI_PROGRESS_OFF;
    long wanted = 0;
    for (int i = 0; i < n && i < 256; i++)
        wanted += prove_wanted(a, list[i]);
    cli_progress_begin(p, kind, stderr, "prove", wanted, NULL, NULL);
}

/* Show prove's progress: `done` rules proved, the next (NULL: none); the table printed so far goes out first, so a
 * log holds the rows before the line that counts them. */
static void show_progress(struct cli_progress *p, long done, const char *next)
{
    if (p->kind != CLI_PROGRESS_OFF)
        fflush(stdout);
    cli_progress_update(p, done, next);
}

int cli_cmd_prove(int argc, char **argv)
{
    cli_interrupt_catch();
    struct prove_args a;
    int rc = parse_prove_args(argc, argv, &a);
    if (rc)
        return rc;
    a.opt.stop = cli_stop_requested; /* no obligation starts once a signal came */
    struct stat fx;
    if (a.replay && (stat(a.fixtures, &fx) != 0 || !S_ISDIR(fx.st_mode)))
        return cli_usage_error("prove", "--fixtures %s: no such directory (the rules' test graphs the replays start "
                               "from; run from the source tree or name it)", a.fixtures);
    if ((a.opt.smt2_dir && !output_dir("--smt2", a.opt.smt2_dir)) || (a.replay && !output_dir("--replay", a.replay)))
        return CLI_USAGE;
    struct prove_run pr;
    memset(&pr, 0, sizeof pr);
    pr.a = &a;
    pr.out = a.json ? fopen("/dev/null", "w") : stdout; /* under --json the table's text goes nowhere */
    if (!pr.out)
        return cli_usage_error("prove", "--json: cannot open /dev/null to silence the table's text");
    if (a.db && (rc = begin_db(&pr, argc, argv)) != 0)
        return rc;
    const struct rules_rule *list[256];
    int n = oracle_rules(list, 256), nrules = 0;
    pr.rule_w = 20;
    for (int i = 0; i < n && i < 256; i++)
        if (prove_wanted(&a, list[i]))
            fit_columns(&pr, list[i]);
    double t0 = wall_ms();
    struct cli_progress prog;
    begin_progress(&a, list, n, &prog);
    for (int i = 0; i < n && i < 256 && !cli_interrupted(); i++) {
        if (!prove_wanted(&a, list[i]))
            continue;
        show_progress(&prog, nrules, list[i]->name);
        nrules++;
        if (a.explain)
            explain(list[i]);
        oracle_prove(list[i], NULL, &a.opt, on_outcome, &pr);
        if (a.mutants)
            oracle_mutants(list[i], &a.opt, on_outcome, &pr);
    }
    show_progress(&prog, nrules, NULL); /* the last line: all proved, or where a signal stopped it */
    cli_progress_end(&prog);
    double wall = wall_ms() - t0;
    /* every atom earns its place: one the oracle shows redundant guards nothing it can name, so it fails the run */
    bool redundant = a.mutants && pr.needed < pr.atoms;
    bool stopped = cli_interrupted() != 0; /* a partial run: its figures are not the rules' */
    bool failed = pr.faithful_failed || pr.db_failed || redundant || a.cross.disagreed;
    if (a.json)
        json_table(&pr, nrules, wall, stopped ? "interrupted" : failed ? "failed" : "complete");
    else
        print_totals(&pr, nrules, wall);
    if (pr.out != stdout)
        fclose(pr.out);
    if (pr.db) {
        char err[DB_ERR_LEN];
        const char *status = stopped ? "interrupted" : failed ? "failed" : "complete";
        if (db_run_end(pr.db, pr.run, status, err))
            fprintf(stderr, "fusecheck: prove: %s: %s\n", a.db, err);
        db_close(pr.db);
    }
    oracle_shutdown();
    if (stopped) {
        cli_interrupt_say("prove", a.db, a.db ? (long long)pr.run : 0);
        return cli_interrupt_exit();
    }
    /* a query two solvers decide differently is a failure: one of them, or the query's text, is wrong */
    return failed ? CLI_FAILED : pr.unwritten ? CLI_USAGE /* a replay not written */ : CLI_OK;
}

/* ── validate-run ────────────────────────────────────────────────────────────────────────────────────────── */

/* Print one re-checked firing (every one with verbose, else the failures). */
static void on_check(const struct oracle_check *c, void *ctx)
{
    bool verbose = *(const bool *)ctx;
    bool ok = c->atoms && c->premises && c->legal && c->admitted && c->positions;
    bool unknown = c->atoms && c->premises && c->legal && c->admitted && !c->positions && c->unknown;
    if (!ok || verbose)
        printf("%-28s %-28s at slot %-5d %s%s%s\n", c->rule, c->cls < IR_CLASS_COUNT ? ir_class_name(c->cls) : "-",
               (int)c->at, ok ? "ok" : unknown ? "UNKNOWN" : "FAILED", c->why[0] ? ": " : "", c->why);
}

/* A firing's covers as text, the first few of them: "[3, 4, 9]" or "[3, 4, ... 9] (12 ops)". */
static void covers_brief(const struct rules_decision *d, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; i < d->ncovers && n + 24 < cap; i++) {
        if (i == 6 && d->ncovers > 8) {
            n += (size_t)snprintf(buf + n, cap - n, ", ... %d] (%d ops)", d->covers[d->ncovers - 1], d->ncovers);
            return;
        }
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %d" : "%d", d->covers[i]);
    }
    snprintf(buf + n, cap - n, "]");
}

/* Print one re-checked firing of another optimizer: failures, and those fusecheck's rules do not make, always;
 * every one with verbose. */
static void on_external(const struct oracle_external_check *c, void *ctx)
{
    bool verbose = *(const bool *)ctx;
    if (!verbose && !c->failed && c->matched && !c->own_unknown)
        return;
    const char *verdict = c->failed ? "FAILED" : c->own_unknown ? "UNKNOWN" : c->matched ? "ok" : "not fusecheck's";
    const char *why = c->failed ? c->why
                      : c->matched ? ""
                                   : "fusecheck's rules make no such firing here: its legality rests on the cycle "
                                     "check alone";
    char covers[160];
    covers_brief(c->d, covers, sizeof covers);
    printf("%-28s %-28s covers %s %s%s%s\n", c->d->rule, ir_class_name(c->d->cls), covers, verdict, why[0] ? ": " : "",
           why);
}

/* validate-run of another optimizer: its answer for g under shim held to the validator and the report's contract,
 * and every firing it reports re-checked on the lifted graph (oracle_validate_external). The exit code. */
static int validate_external(struct cli_optimizer *x, const struct ir_graph *g, const struct shim *shim,
                             const struct oracle_options *opt, bool verbose)
{
    char err[IR_ERR_LEN];
    if (cli_optimizer_start(x, "validate-run"))
        return CLI_FAILED;
    struct rules_optimized o;
    int got = cli_optimizer_run(x, g, shim, NULL, 0, &o, err);
    if (got) {
        char what[IR_ERR_LEN + 64];
        snprintf(what, sizeof what, "fusecheck: validate-run: %s", err);
        cli_optimizer_say(x, what);
        return CLI_FAILED;
    }
    char broken[IR_ERR_LEN], invalid[IR_ERR_LEN];
    bool contract = oracle_report_check(g, shim, NULL, 0, &o.report, broken) < 0;
    bool valid = ir_validate(o.graph, invalid) == 0;
    struct oracle_external_totals t;
    int rc = oracle_validate_external(g, shim, opt, &o.report, on_external, &verbose, &t, err);
    if (rc)
        fprintf(stderr, "fusecheck: validate-run: %s\n", err);
    else
        printf("validate-run: %s %s: %d firings, %d made alike by fusecheck's rules, %d not, %d failed, %d unknown; "
               "the report %s; the rewritten graph %s\n",
               x->name, x->version, t.firings, t.matched, t.unmatched, t.failed, t.unknown,
               contract ? "keeps its contract" : "breaks its contract", valid ? "is valid" : "is invalid");
    if (!rc && !contract)
        printf("report: %s\n", broken);
    if (!rc && !valid)
        printf("invalid: %s\n", invalid);
    rules_optimized_free(&o);
    return rc || t.failed || t.unknown || !contract || !valid ? CLI_FAILED : CLI_OK;
}

int cli_cmd_validate_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"shim", required_argument, NULL, 's'}, CLI_LIFT_OPTIONS,
        {"timeout-ms", required_argument, NULL, 't'}, {"verbose", no_argument, NULL, 'v'},
        CLI_SEED_RULES_OPTION, CLI_EMPTY_OPTION, CLI_OPTIMIZER_OPTIONS, {0, 0, 0, 0}};
    struct cli_lift lift = cli_lift_defaults();
    struct oracle_options opt = oracle_defaults();
    struct cli_optimizer x = {0};
    const char *shim_name = NULL;
    bool verbose = false;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        int lifted = cli_lift_code(&lift, c, optarg);
        if (lifted > 0)
            return CLI_USAGE;
        switch (lifted == 0 ? 0 : c) {
        case 0: break;
        case 's': shim_name = optarg; break;
        case 't': {
            long long v = count_arg(optarg);
            if (v < 1 || v > 86400000)
                return cli_usage_error("validate-run", "--timeout-ms expects 1..86400000, got '%s'", optarg);
            opt.timeout_ms = (unsigned)v;
            break;
        }
        case 'v': verbose = true; break;
        case 'R': rules_seed_mode(true); break;
        default: {
            int taken = cli_optimizer_code(&x, "validate-run", c, optarg);
            if (taken)
                return taken < 0 ? cli_option_error("validate-run", opts, "", argv) : CLI_USAGE;
            break;
        }
        }
    }
    if (x.timeout_ms && !cli_optimizer_external(&x))
        return cli_usage_error("validate-run", "--optimizer-timeout-ms limits another optimizer's answers: it needs "
                                               "--optimizer CMD");
    if (!shim_name)
        return cli_usage_error("validate-run", "--shim NAME is required");
    if (optind != argc - 1)
        return cli_usage_error("validate-run", "expected one FILE or MODEL");
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim) {
        fprintf(stderr, "fusecheck: validate-run: %s\n", err);
        return CLI_USAGE;
    }
    struct ir_graph *g = cli_load(argv[optind], &lift);
    if (!g) {
        shim_free(shim);
        return CLI_USAGE;
    }
    if (cli_optimizer_external(&x)) {
        int xrc = validate_external(&x, g, shim, &opt, verbose);
        cli_optimizer_stop(&x);
        ir_graph_free(g);
        shim_free(shim);
        oracle_shutdown();
        return xrc;
    }
    struct oracle_validation v;
    int rc = oracle_validate_run(g, shim, &opt, on_check, &verbose, &v, err);
    if (rc)
        fprintf(stderr, "fusecheck: validate-run: %s\n", err);
    else
        printf("validate-run: %d rewrites, %d checked, %d failed, %d unknown, %d without a guard binding; the rewritten "
               "graph %s\n",
               v.rewrites, v.checked, v.failed, v.unknown, v.unbound, v.invalid ? "is invalid" : "is valid");
    if (!rc && v.invalid)
        printf("invalid: %s\n", v.invalid_why);
    ir_graph_free(g);
    shim_free(shim);
    oracle_shutdown();
    /* as with prove, an obligation Z3 left unknown is not shown to hold: the run does not pass */
    return rc || v.failed || v.unknown || v.invalid ? CLI_FAILED : CLI_OK;
}
