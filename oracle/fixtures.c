/* oracle/fixtures.c — the rules' fixture cases as a check of the optimizer: each text-format graph under
 * <dir>/<rule>/ says in its leading comments what the optimizer must decide on it (which report lines appear, which
 * atom alone keeps the rule from firing, that the rule stays quiet, how the seed's rules decide it), and has its
 * rewritten graph's canonical text beside it when the rule fires. Each case is optimized, held to what it says,
 * validated and evaluated bit for bit against its lifted graph. `fusecheck check --fixtures DIR` runs them beside
 * the zoo; the rule tests run them with their coverage checks. */
#include "oracle.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DIRECTIVES 32
#define MAX_CASES 4096

/* What a case's leading comments ask. */
struct directives {
    char hold[512];
    char fires[MAX_DIRECTIVES][512];
    int nfires;
    char reports[MAX_DIRECTIVES][512];
    int nreports;
    bool quiet, seed_quiet;
};

/* One case as it is run: the record handed to the hooks, and the hooks. */
struct run {
    struct oracle_fixture *f;
    const struct oracle_fixture_hooks *h;
};

/* Count one check of the case; when it failed, tell the hooks what failed. */
static bool expect(struct run *r, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool expect(struct run *r, bool ok, const char *fmt, ...)
{
    r->f->checks++;
    if (ok)
        return true;
    r->f->failed++;
    char what[IR_ERR_LEN + 600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->h && r->h->failed)
        r->h->failed(r->f, what, r->h->ctx);
    return false;
}

/* Copy the value after `key` on a directive line into dst, trimmed; whether the line is that directive. */
static bool directive(const char *line, const char *key, char *dst, size_t cap)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0)
        return false;
    const char *v = line + k;
    while (*v == ' ')
        v++;
    size_t n = strcspn(v, "\r\n");
    while (n && v[n - 1] == ' ')
        n--;
    snprintf(dst, cap, "%.*s", (int)n, v);
    return true;
}

/* Apply one directive line (the text after '#'); free text is a comment. */
static void read_directive(const char *line, struct oracle_fixture *f, struct directives *d)
{
    while (*line == ' ')
        line++;
    char tmp[512];
    if (directive(line, "rule:", f->rule, sizeof f->rule) || directive(line, "shim:", f->shim, sizeof f->shim) ||
        directive(line, "hold:", d->hold, sizeof d->hold) ||
        directive(line, "near-miss:", f->near_miss, sizeof f->near_miss))
        return;
    if (directive(line, "fires:", tmp, sizeof tmp) && d->nfires < MAX_DIRECTIVES)
        memcpy(d->fires[d->nfires++], tmp, sizeof tmp);
    else if (directive(line, "reports:", tmp, sizeof tmp) && d->nreports < MAX_DIRECTIVES)
        memcpy(d->reports[d->nreports++], tmp, sizeof tmp);
    else if (strncmp(line, "seed-quiet", 10) == 0)
        d->seed_quiet = true;
    else if (strncmp(line, "quiet", 5) == 0)
        d->quiet = true;
}

/* Read the directives from the comment and blank lines that open text. */
static void read_directives(const char *text, struct oracle_fixture *f, struct directives *d)
{
    memset(d, 0, sizeof *d);
    snprintf(f->shim, sizeof f->shim, "reference");
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && *p != '#' && *p != '\r')
            break;
        if (*p == '#') {
            char line[600];
            snprintf(line, sizeof line, "%.*s", (int)(n - 1), p + 1);
            read_directive(line, f, d);
        }
        p += n + (end ? 1 : 0);
    }
}

void oracle_fixture_settings(const char *text, char *shim, size_t shim_cap, char *hold, size_t hold_cap)
{
    struct oracle_fixture f;
    struct directives d;
    read_directives(text, &f, &d);
    snprintf(shim, shim_cap, "%s", f.shim);
    snprintf(hold, hold_cap, "%s", d.hold);
}

/* A line sought among a report's printed lines, and whether it was met. */
struct sought {
    const char *want;
    bool found;
};
static void seek_line(const char *text, void *ctx)
{
    struct sought *s = ctx;
    s->found = s->found || strcmp(text, s->want) == 0;
}

/* Whether the report, as `fusecheck optimize --report` prints it, has the exact line. */
static bool has_line(const struct rules_report *rep, const char *want)
{
    struct sought s = {want, false};
    rules_report_lines(rep, seek_line, &s);
    return s.found;
}

/* How many decisions of any outcome are about rule. */
static int32_t decisions_of(const struct rules_report *rep, const char *rule)
{
    int32_t n = 0;
    for (int32_t i = 0; i < rep->n; i++)
        n += strcmp(rep->d[i].rule, rule) == 0;
    return n;
}

/* Optimize g under the case's shim and holds; 0 on success, else err. With contract, also hold the report to the
 * report's contract: why it breaks it there, else "". */
static int optimize_case(const struct ir_graph *g, const struct oracle_fixture *f, const struct directives *d,
                         struct rules_optimized *o, char err[IR_ERR_LEN], char *contract)
{
    struct shim *shim = shim_lookup(f->shim, err);
    if (!shim)
        return 1;
    char hold[512];
    snprintf(hold, sizeof hold, "%s", d->hold);
    const char *held[32];
    int nheld = 0;
    for (char *tok = strtok(hold, ","); tok && nheld < 32; tok = strtok(NULL, ","))
        held[nheld++] = tok;
    int rc = rules_optimize(g, shim, held, nheld, o, err);
    if (!rc && contract && oracle_report_check(g, shim, held, nheld, &o->report, contract) < 0)
        contract[0] = '\0';
    shim_free(shim);
    return rc;
}

/* Whether the lifted and the rewritten graph, evaluated from one seed, agree bit for bit on every observed and
 * carried tensor; else the first difference (or evaluation error) in why. */
static bool diff_identical(const struct ir_graph *lifted, const struct ir_graph *rewritten, char *why, size_t cap)
{
    char err[IR_ERR_LEN] = "";
    struct ir_values *a = ir_values_new(lifted, 7, err);
    struct ir_values *b = a ? ir_values_new_like(rewritten, 7, lifted, err) : NULL;
    bool ok = a && b && ir_eval(lifted, a, err) == 0 && ir_eval(rewritten, b, err) == 0;
    struct ir_compare c = ok ? ir_values_compare(lifted, a, rewritten, b) : (struct ir_compare){0};
    if (!ok)
        snprintf(why, cap, "evaluation failed: %s", err);
    else if (!c.identical)
        snprintf(why, cap, "%s differs at %lld: lifted %.9g, rewritten %.9g", lifted->tensors[c.tensor].name,
                 (long long)c.index, (double)c.a, (double)c.b);
    ir_values_free(a);
    ir_values_free(b);
    return ok && c.identical;
}

/* Write text to path whole (a fresh file, renamed into place); whether it was written. */
static bool write_whole(const char *path, const char *text, size_t len)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = fopen(tmp, "wbx");
    if (!out)
        return false;
    bool ok = fwrite(text, 1, len, out) == len;
    ok = fclose(out) == 0 && ok;
    if (ok)
        ok = rename(tmp, path) == 0;
    if (!ok)
        remove(tmp);
    return ok;
}

/* Hold the rewritten graph to <case>.expected, its canonical text (written first when missing and asked to). */
static void check_expected(struct run *r, const struct ir_graph *rewritten)
{
    const char *path = r->f->path;
    char exp_path[1100];
    snprintf(exp_path, sizeof exp_path, "%.*s.expected", (int)(strlen(path) - 3), path);
    size_t len, elen;
    char *text = ir_print(rewritten, &len);
    char *want = ir_read_file(exp_path, &elen);
    if (!want && r->h && r->h->write_expected && write_whole(exp_path, text, len))
        want = ir_read_file(exp_path, &elen);
    if (expect(r, want != NULL, "%s: missing (the rewritten graph's canonical text)", exp_path))
        expect(r, elen == len && memcmp(want, text, len) == 0, "%s: the rewritten graph differs:\n%s", exp_path,
               text);
    free(want);
    free(text);
}

/* Whether the case's rule fires the same lines under the seed's rules (a seed-quiet case: fires not at all);
 * the seed mode is put back as it was. */
static void check_seed(struct run *r, const struct ir_graph *g, const struct directives *d)
{
    struct oracle_fixture *f = r->f;
    struct rules_optimized s;
    char err[IR_ERR_LEN];
    bool was = rules_seed_rules();
    rules_seed_mode(true);
    int rc = optimize_case(g, f, d, &s, err, NULL);
    rules_seed_mode(was);
    if (!expect(r, rc == 0, "optimize under the seed's rules failed: %s", err))
        return;
    size_t n = strlen(f->rule);
    bool all = true;
    for (int i = 0; i < d->nfires; i++)
        if (strncmp(d->fires[i], f->rule, n) == 0 && d->fires[i][n] == ' ')
            all = all && has_line(&s.report, d->fires[i]);
    if (d->seed_quiet)
        expect(r, rules_report_count(&s.report, RULES_FIRED, f->rule) == 0, "the seed's %s fired", f->rule);
    else
        expect(r, all, "%s fires otherwise under the seed's rules", f->rule);
    f->seed_fires = all && !d->seed_quiet;
    rules_optimized_free(&s);
}

/* A near miss: the rule must not fire, and must fire once its named atom alone is dropped. */
static void check_near_miss(struct run *r, const struct ir_graph *g, const struct directives *d,
                            const struct rules_report *rep)
{
    struct oracle_fixture *f = r->f;
    const struct rules_rule *rule = oracle_rule_find(f->rule);
    bool declared = false;
    for (int a = 0; rule && a < rule->nguards; a++)
        declared = declared || strcmp(rule->guards[a].name, f->near_miss) == 0;
    if (!expect(r, declared, "near-miss: %s declares no atom '%s'", f->rule, f->near_miss))
        return;
    expect(r, rules_report_count(rep, RULES_FIRED, f->rule) == 0, "%s fired on a near miss", f->rule);
    char spec[300], err[IR_ERR_LEN];
    snprintf(spec, sizeof spec, "%s:%s", f->rule, f->near_miss);
    rules_drop_atom(spec);
    struct rules_optimized m;
    int rc = optimize_case(g, f, d, &m, err, NULL);
    rules_drop_atom(NULL);
    if (!expect(r, rc == 0, "optimize with %s dropped failed: %s", spec, err))
        return;
    expect(r, rules_report_count(&m.report, RULES_FIRED, f->rule) > 0, "%s does not fire with %s dropped", f->rule,
           f->near_miss);
    rules_optimized_free(&m);
}

/* Everything the case's directives ask of its optimization o (of lifted graph g). */
static void check_directives(struct run *r, const struct ir_graph *g, const struct directives *d,
                             const struct rules_optimized *o)
{
    struct oracle_fixture *f = r->f;
    for (int i = 0; i < d->nfires; i++)
        expect(r, has_line(&o->report, d->fires[i]), "no report line '%s'", d->fires[i]);
    for (int i = 0; i < d->nreports; i++)
        expect(r, has_line(&o->report, d->reports[i]), "no report line '%s'", d->reports[i]);
    if (d->nfires) {
        f->fires = true;
        check_expected(r, o->graph);
        check_seed(r, g, d);
    }
    if (d->quiet)
        expect(r, decisions_of(&o->report, f->rule) == 0, "%s made a decision", f->rule);
    if (f->near_miss[0])
        check_near_miss(r, g, d, &o->report);
}

/* The rewritten graph valid, and evaluating as its lifted graph does (under a shim whose products read quantized
 * activations, as the lifted graph with those quantizations does). */
static void check_rewritten(struct run *r, const struct ir_graph *g, const struct rules_optimized *o)
{
    char err[IR_ERR_LEN] = "", why[IR_ERR_LEN + 128] = "";
    expect(r, ir_validate(o->graph, err) == 0, "the rewritten graph is invalid: %s", err);
    struct shim *shim = shim_lookup(r->f->shim, err);
    struct ir_graph *ref = shim ? rules_quantized_lifted(g, shim) : NULL;
    if (expect(r, ref != NULL, "no reference graph under %s", r->f->shim))
        expect(r, diff_identical(ref, o->graph, why, sizeof why), "diff: %s", why);
    ir_graph_free(ref);
    shim_free(shim);
}

/* Run the case whose text (len bytes) was read from f->path. */
static void run_text(struct run *r, const char *text, size_t len)
{
    struct oracle_fixture *f = r->f;
    struct directives d;
    read_directives(text, f, &d);
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse(text, len, f->path, err);
    if (!expect(r, g != NULL, "%s", err) ||
        !expect(r, f->rule[0] && oracle_rule_find(f->rule), "'# rule: %s' names no rule of the optimizer", f->rule)) {
        ir_graph_free(g);
        return;
    }
    struct rules_optimized o;
    char contract[IR_ERR_LEN] = "";
    if (expect(r, optimize_case(g, f, &d, &o, err, contract) == 0, "optimize failed: %s", err)) {
        expect(r, !contract[0], "report: %s", contract);
        check_rewritten(r, g, &o);
        check_directives(r, g, &d, &o);
        rules_optimized_free(&o);
    }
    ir_graph_free(g);
}

int oracle_fixture_run(const char *path, const struct oracle_fixture_hooks *hooks, struct oracle_fixture *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    struct run r = {out, hooks};
    size_t len;
    char *text = ir_read_file(path, &len);
    if (expect(&r, text != NULL, "unreadable"))
        run_text(&r, text, len);
    free(text);
    if (hooks && hooks->done)
        hooks->done(out, hooks->ctx);
    return out->failed;
}

/* Ascending order of strings, for qsort. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names in folder `dir` that pass keep (directories, or .fc files), sorted, malloc'd into names (room for
 * cap); their count, or -1 when the folder cannot be read. */
static int sorted_entries(const char *dir, bool want_dirs, char **names, int cap)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dp)) && n < cap;) {
        if (e->d_name[0] == '.')
            continue;
        char path[2400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name);
        bool is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        bool is_case = !is_dir && l > 3 && strcmp(e->d_name + l - 3, ".fc") == 0;
        if (want_dirs ? is_dir : is_case) {
            names[n] = strdup(e->d_name);
            if (!names[n])
                abort();
            n++;
        }
    }
    closedir(dp);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    return n;
}

/* Free n names. */
static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
}

/* Every case of one rule's folder, in name order; how many ran and how many failed (into *failed). */
static int run_folder(const char *folder, const struct oracle_fixture_hooks *hooks, int *failed)
{
    char **cases = malloc(sizeof *cases * MAX_CASES);
    if (!cases)
        abort();
    int n = sorted_entries(folder, false, cases, MAX_CASES);
    for (int i = 0; i < n; i++) {
        char path[2400];
        snprintf(path, sizeof path, "%s/%s", folder, cases[i]);
        struct oracle_fixture f;
        *failed += oracle_fixture_run(path, hooks, &f) > 0;
    }
    free_names(cases, n);
    free(cases);
    return n > 0 ? n : 0;
}

int oracle_fixtures_run(const char *dir, const struct oracle_fixture_hooks *hooks, int *failed, char err[IR_ERR_LEN])
{
    *failed = 0;
    char **rules = malloc(sizeof *rules * MAX_CASES);
    if (!rules)
        abort();
    int n = sorted_entries(dir, true, rules, MAX_CASES), cases = 0;
    for (int i = 0; i < n; i++) {
        char folder[2048];
        snprintf(folder, sizeof folder, "%s/%s", dir, rules[i]);
        cases += run_folder(folder, hooks, failed);
    }
    free_names(rules, n > 0 ? n : 0);
    free(rules);
    if (n < 0)
        snprintf(err, IR_ERR_LEN, "%s: not a readable folder (the rules' fixture cases: <dir>/<rule>/<case>.fc)", dir);
    else if (cases == 0)
        snprintf(err, IR_ERR_LEN, "%s: no fixture cases (<dir>/<rule>/<case>.fc)", dir);
    return n < 0 || cases == 0 ? -1 : cases;
}
