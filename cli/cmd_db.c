/* cli/cmd_db.c — `fusecheck db`: list the runs of a results file, compare two runs (`db diff`: which runs, totals,
 * a summary by rule and by graph, then the raw changes), merge shards. `--json` gives runs and diffs as JSON. */
#include "cli/cli.h"
#include "db/db.h"

#include <ctype.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How many raw changes `db diff` prints unless --limit says otherwise. */
#define DIFF_DEFAULT_LIMIT 100
/* How many graphs a summary line of `db diff` names before "...". */
#define GROUP_NAMES 4

/* ── Natural order: digit runs compared as numbers ───────────────────────────────────────────────────────── */

/* Compare a and b with each run of digits taken as a number ("[152, 153]" before "[1072, 1073]", "prefill:8"
 * before "prefill:16"); NULL first; equal texts by strcmp, so the order is total. */
static int natural_cmp(const char *a, const char *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    const char *p = a, *q = b;
    while (*p && *q) {
        if (isdigit((unsigned char)*p) && isdigit((unsigned char)*q)) {
            while (*p == '0')
                p++;
            while (*q == '0')
                q++;
            size_t m = strspn(p, "0123456789"), n = strspn(q, "0123456789");
            if (m != n)
                return m < n ? -1 : 1;
            int c = strncmp(p, q, m);
            if (c)
                return c;
            p += m;
            q += n;
        } else if (*p != *q) {
            return (unsigned char)*p < (unsigned char)*q ? -1 : 1;
        } else {
            p++, q++;
        }
    }
    if (*p || *q)
        return *p ? 1 : -1;
    return strcmp(a, b);
}

/* ── The changes of a diff, held in memory ───────────────────────────────────────────────────────────────── */

/* One decision change: its graph (name and mode), shim, rule, class, covers, and the decision before and after
 * (NULL: none). */
struct change {
    char *graph, *mode, *shim, *rule, *cls, *covers, *before, *after;
};

/* The changes of a diff (only rule `only`'s when it is set), and how many rows were seen in all. */
struct changes {
    struct change *v;
    size_t n, cap;
    const char *only;
};

/* A copy of s (NULL stays NULL). */
static char *dup_or_null(const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

/* Keep one change (db_change_fn). */
static void keep_change(const char *graph, const char *mode, const char *shim, const char *rule, const char *cls,
                        const char *covers, const char *before, const char *after, void *ctx)
{
    struct changes *c = ctx;
    if (c->only && strcmp(rule, c->only) != 0)
        return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        if (!c->v)
            abort();
    }
    c->v[c->n++] = (struct change){dup_or_null(graph), dup_or_null(mode), dup_or_null(shim), dup_or_null(rule),
                                   dup_or_null(cls),   dup_or_null(covers), dup_or_null(before), dup_or_null(after)};
}

/* Free the changes. */
static void changes_free(struct changes *c)
{
    for (size_t i = 0; i < c->n; i++) {
        struct change *x = &c->v[i];
        free(x->graph), free(x->mode), free(x->shim), free(x->rule), free(x->cls), free(x->covers), free(x->before),
            free(x->after);
    }
    free(c->v);
}

/* The raw rows' order: graph, mode, shim, rule, covers (numerically), class, then the decisions. */
static int change_order(const void *pa, const void *pb)
{
    const struct change *a = pa, *b = pb;
    int c = natural_cmp(a->graph, b->graph);
    c = c ? c : natural_cmp(a->mode, b->mode);
    c = c ? c : natural_cmp(a->shim, b->shim);
    c = c ? c : strcmp(a->rule, b->rule);
    c = c ? c : natural_cmp(a->covers, b->covers);
    c = c ? c : strcmp(a->cls, b->cls);
    c = c ? c : natural_cmp(a->before, b->before);
    return c ? c : natural_cmp(a->after, b->after);
}

/* A decision's outcome word ("fired", "refused", "held"), or "none" when there is no decision. */
static void outcome_word(const char *decision, char *out, size_t n)
{
    if (!decision) {
        snprintf(out, n, "none");
        return;
    }
    size_t k = strcspn(decision, ":");
    snprintf(out, n, "%.*s", (int)k, decision);
}

/* What a change did, in words: "stopped firing", "started firing", or "OUTCOME -> OUTCOME" (the same outcome on
 * both sides: its reason changed). */
static void change_verb(const struct change *x, char *out, size_t n)
{
    char b[24], a[24];
    outcome_word(x->before, b, sizeof b);
    outcome_word(x->after, a, sizeof a);
    bool fired_before = strcmp(b, "fired") == 0, fired_after = strcmp(a, "fired") == 0;
    if (fired_before && !fired_after)
        snprintf(out, n, "stopped firing");
    else if (fired_after && !fired_before)
        snprintf(out, n, "started firing");
    else if (strcmp(a, b) == 0)
        snprintf(out, n, "%s for another reason", a);
    else
        snprintf(out, n, "%s -> %s", b, a);
}

/* ── Distinct counts ─────────────────────────────────────────────────────────────────────────────────────── */

/* Strings compared for qsort. */
static int text_cmp(const void *a, const void *b)
{
    return natural_cmp(*(char *const *)a, *(char *const *)b);
}

/* How many distinct texts v[0..n) holds (sorted in place). */
static size_t distinct(char **v, size_t n)
{
    if (n)
        qsort(v, n, sizeof *v, text_cmp);
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += i == 0 || strcmp(v[i], v[i - 1]) != 0;
    return d;
}

/* A graph's key, "name mode" (malloc'd). */
static char *graph_key(const struct change *x)
{
    size_t n = strlen(x->graph) + (x->mode ? strlen(x->mode) : 1) + 2;
    char *k = malloc(n);
    if (!k)
        abort();
    snprintf(k, n, "%s %s", x->graph, x->mode ? x->mode : "-");
    return k;
}

/* ── The summary by rule ─────────────────────────────────────────────────────────────────────────────────── */

/* One rule's changes: how many, on how many graphs and shims, and each kind of change with its count. */
struct rule_sum {
    const char *rule;
    size_t changes, graphs, shims;
    struct verb_count {
        char verb[64];
        size_t n;
    } verbs[8];
    int nverbs;
};

/* Changes ordered by rule, then as the raw rows. */
static int by_rule(const void *pa, const void *pb)
{
    const struct change *a = *(const struct change *const *)pa, *b = *(const struct change *const *)pb;
    int c = strcmp(a->rule, b->rule);
    return c ? c : change_order(a, b);
}

/* Count one change's verb into s: seven kinds by name, the eighth and later together as "other". */
static void count_verb(struct rule_sum *s, const char *verb)
{
    for (int i = 0; i < s->nverbs; i++)
        if (strcmp(s->verbs[i].verb, verb) == 0) {
            s->verbs[i].n++;
            return;
        }
    if (s->nverbs < 7) {
        snprintf(s->verbs[s->nverbs].verb, sizeof s->verbs[0].verb, "%s", verb);
        s->verbs[s->nverbs++].n = 1;
        return;
    }
    if (s->nverbs == 7) {
        snprintf(s->verbs[7].verb, sizeof s->verbs[7].verb, "other");
        s->verbs[7].n = 0;
        s->nverbs = 8;
    }
    s->verbs[7].n++;
}

/* Summarise the changes x[0..n) of one rule into s. */
static void sum_rule(struct change **x, size_t n, struct rule_sum *s)
{
    memset(s, 0, sizeof *s);
    s->rule = x[0]->rule;
    s->changes = n;
    char **keys = malloc(n * sizeof *keys), **shims = malloc(n * sizeof *shims);
    if (!keys || !shims)
        abort();
    for (size_t i = 0; i < n; i++) {
        keys[i] = graph_key(x[i]);
        shims[i] = x[i]->shim;
        char verb[64];
        change_verb(x[i], verb, sizeof verb);
        count_verb(s, verb);
    }
    s->graphs = distinct(keys, n);
    s->shims = distinct(shims, n);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(shims);
}

/* The per-rule summaries of the changes (in rule order); *count receives how many. */
static struct rule_sum *sum_rules(const struct changes *c, size_t *count)
{
    struct change **p = malloc((c->n ? c->n : 1) * sizeof *p);
    struct rule_sum *s = malloc((c->n ? c->n : 1) * sizeof *s);
    if (!p || !s)
        abort();
    for (size_t i = 0; i < c->n; i++)
        p[i] = &c->v[i];
    qsort(p, c->n, sizeof *p, by_rule);
    size_t k = 0;
    for (size_t i = 0; i < c->n;) {
        size_t j = i;
        while (j < c->n && strcmp(p[j]->rule, p[i]->rule) == 0)
            j++;
        sum_rule(p + i, j - i, &s[k++]);
        i = j;
    }
    free(p);
    *count = k;
    return s;
}

/* ── The summary by graph: graphs whose rules changed alike, grouped ─────────────────────────────────────── */

/* A graph (name and mode) and what changed on it: "VERB\tRULE" lines, sorted, joined by '\n' (its signature). */
struct graph_sig {
    char *key, *sig;
    size_t changes;
    char **shims; /* the shims of its changes (borrowed), and how many */
    size_t nshims;
};

/* One line of the by-graph summary: the graphs of one signature. */
struct group {
    const char *sig;
    char **keys; /* borrowed from the graphs */
    size_t ngraphs, changes, shims;
    char *text;  /* "add_norm, shared_expert stopped firing" */
};

/* Append s to a growing text (*t of *len bytes). */
static void append(char **t, size_t *len, const char *s)
{
    size_t n = strlen(s);
    *t = realloc(*t, *len + n + 1);
    if (!*t)
        abort();
    memcpy(*t + *len, s, n + 1);
    *len += n;
}

/* Where a verb comes in a summary line: what stopped firing first, then what started, then the rest. */
static char verb_rank(const char *verb)
{
    return strcmp(verb, "stopped firing") == 0 ? '0' : strcmp(verb, "started firing") == 0 ? '1' : '2';
}

/* The signature of the changes x[0..n) of one graph: its distinct "RANK VERB\tRULE" lines, sorted (RANK one
 * character, verb_rank's). */
static char *signature(struct change **x, size_t n)
{
    char **lines = malloc(n * sizeof *lines);
    if (!lines)
        abort();
    for (size_t i = 0; i < n; i++) {
        char verb[64];
        change_verb(x[i], verb, sizeof verb);
        size_t m = strlen(verb) + strlen(x[i]->rule) + 3;
        lines[i] = malloc(m);
        if (!lines[i])
            abort();
        snprintf(lines[i], m, "%c%s\t%s", verb_rank(verb), verb, x[i]->rule);
    }
    qsort(lines, n, sizeof *lines, text_cmp);
    char *sig = NULL;
    size_t len = 0;
    append(&sig, &len, "");
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(lines[i], lines[i - 1]) != 0) {
            if (len)
                append(&sig, &len, "\n");
            append(&sig, &len, lines[i]);
        }
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    return sig;
}

/* A signature in words: for each verb, its rules then the verb ("add_norm, shared_expert stopped firing; gates
 * started firing"). */
static char *signature_words(const char *sig)
{
    char *out = NULL, *copy = strdup(sig), *save = NULL, prev[64] = "";
    size_t len = 0;
    if (!copy)
        abort();
    append(&out, &len, "");
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(line, '\t');
        *tab = '\0';
        line++; /* past the rank */
        if (prev[0] && strcmp(prev, line) != 0) {
            append(&out, &len, " ");
            append(&out, &len, prev);
            append(&out, &len, "; ");
        } else if (prev[0]) {
            append(&out, &len, ", ");
        }
        append(&out, &len, tab + 1);
        snprintf(prev, sizeof prev, "%s", line);
    }
    append(&out, &len, " ");
    append(&out, &len, prev);
    free(copy);
    return out;
}

/* Changes ordered by graph key (name, mode), then as the raw rows. */
static int by_graph(const void *pa, const void *pb)
{
    const struct change *a = *(const struct change *const *)pa, *b = *(const struct change *const *)pb;
    return change_order(a, b);
}

/* Graphs ordered by signature, then by key. */
static int by_sig(const void *pa, const void *pb)
{
    const struct graph_sig *a = pa, *b = pb;
    int c = strcmp(a->sig, b->sig);
    return c ? c : natural_cmp(a->key, b->key);
}

/* Groups ordered by graphs (most first), then changes, then their words. */
static int by_size(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    if (a->ngraphs != b->ngraphs)
        return a->ngraphs > b->ngraphs ? -1 : 1;
    if (a->changes != b->changes)
        return a->changes > b->changes ? -1 : 1;
    return strcmp(a->text, b->text);
}

/* The graphs of the changes with their signatures (sorted by signature); *count receives how many. */
static struct graph_sig *graph_sigs(const struct changes *c, size_t *count)
{
    struct change **p = malloc((c->n ? c->n : 1) * sizeof *p);
    struct graph_sig *g = malloc((c->n ? c->n : 1) * sizeof *g);
    if (!p || !g)
        abort();
    for (size_t i = 0; i < c->n; i++)
        p[i] = &c->v[i];
    qsort(p, c->n, sizeof *p, by_graph);
    size_t k = 0;
    for (size_t i = 0; i < c->n;) {
        size_t j = i;
        while (j < c->n && strcmp(p[j]->graph, p[i]->graph) == 0 && natural_cmp(p[j]->mode, p[i]->mode) == 0)
            j++;
        g[k] = (struct graph_sig){graph_key(p[i]), signature(p + i, j - i), j - i, malloc((j - i) * sizeof(char *)),
                                  j - i};
        if (!g[k].shims)
            abort();
        for (size_t m = i; m < j; m++)
            g[k].shims[m - i] = p[m]->shim;
        k++;
        i = j;
    }
    free(p);
    qsort(g, k, sizeof *g, by_sig);
    *count = k;
    return g;
}

/* The groups of graphs that changed alike, largest first; *count receives how many. */
static struct group *group_graphs(struct graph_sig *g, size_t n, size_t *count)
{
    struct group *out = malloc((n ? n : 1) * sizeof *out);
    if (!out)
        abort();
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, changes = 0, nshims = 0;
        while (j < n && strcmp(g[j].sig, g[i].sig) == 0)
            changes += g[j].changes, nshims += g[j].nshims, j++;
        char **shims = malloc((nshims ? nshims : 1) * sizeof *shims), **keys = malloc((j - i) * sizeof *keys);
        if (!shims || !keys)
            abort();
        size_t at = 0;
        for (size_t m = i; m < j; m++) {
            keys[m - i] = g[m].key;
            memcpy(shims + at, g[m].shims, g[m].nshims * sizeof *shims);
            at += g[m].nshims;
        }
        out[k++] = (struct group){g[i].sig, keys, j - i, changes, distinct(shims, nshims), signature_words(g[i].sig)};
        free(shims);
        i = j;
    }
    qsort(out, k, sizeof *out, by_size);
    *count = k;
    return out;
}

/* ── db runs ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Print one run. */
static void print_run(int64_t id, const char *kind, const char *started, const char *ended, const char *status,
                      const char *command, int64_t reports, void *ctx)
{
    (void)ctx;
    printf("%-5lld %-9s %-20s %-20s %-10s %7lld  %s\n", (long long)id, kind, started, ended ? ended : "-", status,
           (long long)reports, command);
}

/* Each run's columns for `db runs --json`, and which of them are integers. */
static const char runs_json_sql[] =
    "SELECT r.id, r.kind, r.started, r.ended, r.status, r.command, r.config, r.git_rev, r.host, r.version,"
    " r.optimizer_name, r.optimizer_version, r.optimizer_command, r.origin, r.fixture_cases, r.fixture_failures,"
    " (SELECT count(*) FROM reports rep WHERE rep.run_id = r.id) FROM runs r ORDER BY r.id";
static const char *const runs_json_keys[] = {"id", "kind", "started", "ended", "status", "command", "config",
                                             "git_rev", "host", "version", "optimizer_name", "optimizer_version",
                                             "optimizer_command", "origin", "fixture_cases", "fixture_failures",
                                             "reports"};
static const bool runs_json_int[] = {true,  false, false, false, false, false, false, false, false,
                                     false, false, false, false, false, true,  true,  true};

/* Write one row as a JSON object: keys[i] for column i, an integer where is_int[i] says so (NULL stays null). */
static void json_row(struct cli_json *j, const char *const *cols, int n, const char *const *keys, const bool *is_int)
{
    cli_json_object(j, NULL);
    for (int i = 0; i < n; i++)
        if (!cols[i])
            cli_json_null(j, keys[i]);
        else if (is_int[i])
            cli_json_int(j, keys[i], strtoll(cols[i], NULL, 10));
        else
            cli_json_string(j, keys[i], cols[i]);
    cli_json_end(j);
}

/* One run of `db runs --json` (db_row_fn). */
static void json_run(const char *const *cols, int n, void *ctx)
{
    json_row(ctx, cols, n, runs_json_keys, runs_json_int);
}

/* `db runs`: a table, or with json an array of objects. 0, or 1 with err. */
static int list_runs(struct db *db, bool json, char err[DB_ERR_LEN])
{
    if (!json) {
        printf("%-5s %-9s %-20s %-20s %-10s %7s  %s\n", "run", "kind", "started", "ended", "status", "reports",
               "command");
        return db_runs(db, print_run, NULL, err);
    }
    struct cli_json j;
    cli_json_start(&j, stdout);
    cli_json_array(&j, NULL);
    int rc = db_select(db, runs_json_sql, NULL, 0, json_run, &j, err);
    cli_json_end(&j);
    return rc;
}

/* ── db diff ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* What `db diff` was asked. */
struct diff_args {
    int64_t a, b;
    const char *rule; /* --rule: only this rule's changes */
    long limit;       /* --limit: raw rows printed at most (0: all) */
    bool allow_partial, json;
};

/* A run as the diff names it: kind, status, when it started, its configuration (malloc'd, whole). */
struct run_name {
    char kind[32], status[16], started[32];
    char *config;
};

/* Take a run's row (db_row_fn). */
static void take_run(const char *const *cols, int n, void *ctx)
{
    struct run_name *r = ctx;
    (void)n;
    snprintf(r->kind, sizeof r->kind, "%s", cols[0] ? cols[0] : "");
    snprintf(r->status, sizeof r->status, "%s", cols[1] ? cols[1] : "");
    snprintf(r->started, sizeof r->started, "%s", cols[2] ? cols[2] : "");
    free(r->config);
    r->config = dup_or_null(cols[3] ? cols[3] : "");
}

/* What the later run lacks of the earlier's (run_pair_gaps), every one kept. */
struct gaps {
    int graphs, shims;
    char **names; /* "graph MODE" or "shim NAME" */
    size_t n;
};

/* Keep one gap (db_gap_fn). */
static void keep_gap(const char *what, const char *graph, const char *mode, const char *shim, void *ctx)
{
    struct gaps *g = ctx;
    bool is_graph = strcmp(what, "graph") == 0;
    g->graphs += is_graph;
    g->shims += !is_graph;
    char name[512];
    snprintf(name, sizeof name, "%s%s%s%s", is_graph ? "" : "shim ", is_graph ? graph : shim, is_graph ? " " : "",
             is_graph ? (mode ? mode : "-") : "");
    g->names = realloc(g->names, (g->n + 1) * sizeof *g->names);
    if (!g->names)
        abort();
    g->names[g->n++] = dup_or_null(name);
}

/* A graph whose content changed between the runs. */
struct graph_change {
    char *graph, *mode, *sha_before, *sha_after;
    int64_t ops_before, ops_after;
};
struct graph_changes {
    struct graph_change *v;
    size_t n;
};

/* Keep one graph change (db_graph_change_fn). */
static void keep_graph_change(const char *graph, const char *mode, int64_t ops_before, int64_t ops_after,
                              const char *sha_before, const char *sha_after, void *ctx)
{
    struct graph_changes *g = ctx;
    g->v = realloc(g->v, (g->n + 1) * sizeof *g->v);
    if (!g->v)
        abort();
    g->v[g->n++] = (struct graph_change){dup_or_null(graph), dup_or_null(mode), dup_or_null(sha_before),
                                         dup_or_null(sha_after), ops_before, ops_after};
}

/* Everything a diff found, before it is printed. */
struct diff {
    struct run_name ra, rb;
    struct db_optimizer oa, ob;
    bool two_optimizers, partial;
    const char *why_a, *why_b; /* why each run's results are partial by its status (NULL: complete) */
    struct gaps gaps;
    struct graph_changes graphs;
    int64_t common;
    struct changes changes;
    struct rule_sum *rules;
    size_t nrules;
    struct graph_sig *sigs;
    size_t nsigs;
    struct group *groups;
    size_t ngroups;
};

/* Why a run's results are partial, by its status (NULL for a complete one). */
static const char *status_words(const char *status)
{
    return strcmp(status, "complete") == 0      ? NULL
           : strcmp(status, "interrupted") == 0 ? "stopped by a signal before its work was done"
           : strcmp(status, "incomplete") == 0  ? "still running, or killed"
           : strcmp(status, "failed") == 0      ? "some of its checks failed or could not be made"
                                                : "a status fusecheck does not know";
}

/* Read what the diff of a->a and a->b finds. 0, or 1 with err. */
static int diff_read(struct db *db, const struct diff_args *a, struct diff *d, char err[DB_ERR_LEN])
{
    static const char run_sql[] = "SELECT kind, status, started, config FROM runs WHERE id = ?1";
    d->changes.only = a->rule;
    if (db_select(db, run_sql, &a->a, 1, take_run, &d->ra, err) || db_select(db, run_sql, &a->b, 1, take_run, &d->rb, err) ||
        db_run_optimizer(db, a->a, &d->oa, err) || db_run_optimizer(db, a->b, &d->ob, err) ||
        db_run_gaps(db, a->a, a->b, keep_gap, &d->gaps, err) ||
        db_graph_changes(db, a->a, a->b, keep_graph_change, &d->graphs, err) ||
        db_runs_common(db, a->a, a->b, &d->common, err) ||
        db_decision_changes(db, a->a, a->b, keep_change, &d->changes, err))
        return 1;
    if (!d->ra.config) /* a run with no row: no configuration */
        d->ra.config = dup_or_null("");
    if (!d->rb.config)
        d->rb.config = dup_or_null("");
    d->two_optimizers = !db_same_optimizer(&d->oa, &d->ob);
    d->why_a = status_words(d->ra.status);
    d->why_b = status_words(d->rb.status);
    d->partial = d->why_a || d->why_b || d->gaps.n > 0;
    if (d->changes.n) /* none: no array to sort */
        qsort(d->changes.v, d->changes.n, sizeof *d->changes.v, change_order);
    d->rules = sum_rules(&d->changes, &d->nrules);
    d->sigs = graph_sigs(&d->changes, &d->nsigs);
    d->groups = group_graphs(d->sigs, d->nsigs, &d->ngroups);
    return 0;
}

/* Free what diff_read made. */
static void diff_free(struct diff *d)
{
    free(d->ra.config);
    free(d->rb.config);
    for (size_t i = 0; i < d->gaps.n; i++)
        free(d->gaps.names[i]);
    free(d->gaps.names);
    for (size_t i = 0; i < d->graphs.n; i++)
        free(d->graphs.v[i].graph), free(d->graphs.v[i].mode), free(d->graphs.v[i].sha_before),
            free(d->graphs.v[i].sha_after);
    free(d->graphs.v);
    for (size_t i = 0; i < d->ngroups; i++)
        free(d->groups[i].keys), free(d->groups[i].text);
    free(d->groups);
    for (size_t i = 0; i < d->nsigs; i++)
        free(d->sigs[i].key), free(d->sigs[i].sig), free(d->sigs[i].shims);
    free(d->sigs);
    free(d->rules);
    changes_free(&d->changes);
}

/* Whether the diff fails the gate: a change, a changed graph, nothing to compare, or partial results not accepted. */
static bool diff_fails(const struct diff *d, const struct diff_args *a)
{
    return d->changes.n > 0 || d->graphs.n > 0 || d->common == 0 || (d->partial && !a->allow_partial);
}

/* "s" for a count other than one. */
static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

/* Print how optimizer o is named: its name and version, and its command or "in process". */
static void print_optimizer(const struct db_optimizer *o)
{
    printf("%s %s (%s%s%s)", o->name, o->version[0] ? o->version : "?", o->in_process ? "in process" : "`",
           o->in_process ? "" : o->command, o->in_process ? "" : "`");
}

/* The most of a configuration the header shows (db runs --json gives it whole). */
#define CONFIG_SHOWN 200

/* A run's configuration under the header: from `from` (the two runs' common start skipped, but for a few words of
 * it) and cut at CONFIG_SHOWN characters. */
static void print_config(int64_t run, const char *config, size_t from)
{
    size_t n = strlen(config);
    if (n <= CONFIG_SHOWN)
        from = 0;
    if (from > n)
        from = n;
    printf("  run %lld: %s%.*s%s\n", (long long)run, from ? "... " : "", CONFIG_SHOWN, config + from,
           n - from > CONFIG_SHOWN ? " ... (db runs --json shows it whole)" : "");
}

/* Where two long configurations' shown parts start: 40 characters before their first difference (0: they are
 * short, the same, or differ early). */
static size_t config_start(const char *a, const char *b)
{
    size_t p = 0;
    while (a[p] && a[p] == b[p])
        p++;
    return a[p] == b[p] || p < 80 ? 0 : p - 40;
}

/* The diff's header: which runs it compares, their optimizers when two, what is partial, graphs that changed. */
static void print_header(const struct diff *d, const struct diff_args *a)
{
    printf("db diff: run %lld (%s, %s, started %s) against run %lld (%s, %s, started %s)\n", (long long)a->a,
           d->ra.kind, d->ra.status, d->ra.started, (long long)a->b, d->rb.kind, d->rb.status, d->rb.started);
    size_t from = config_start(d->ra.config, d->rb.config);
    print_config(a->a, d->ra.config, from);
    print_config(a->b, d->rb.config, from);
    if (strcmp(d->ra.kind, d->rb.kind) != 0 || strcmp(d->ra.config, d->rb.config) != 0)
        printf("note: the runs are of different %s\n", strcmp(d->ra.kind, d->rb.kind) ? "kinds" : "configurations");
    if (d->two_optimizers) {
        printf("two optimizers: run %lld by ", (long long)a->a);
        print_optimizer(&d->oa);
        printf(", run %lld by ", (long long)a->b);
        print_optimizer(&d->ob);
        printf("\n");
    }
    if (d->why_a)
        printf("partial: run %lld is %s, not complete: %s\n", (long long)a->a, d->ra.status, d->why_a);
    if (d->why_b)
        printf("partial: run %lld is %s, not complete: %s\n", (long long)a->b, d->rb.status, d->why_b);
    if (d->gaps.n) {
        printf("partial: run %lld lacks %d graph%s and %d shim%s run %lld reported on: ", (long long)a->b,
               d->gaps.graphs, plural((size_t)d->gaps.graphs), d->gaps.shims, plural((size_t)d->gaps.shims),
               (long long)a->a);
        for (size_t i = 0; i < d->gaps.n && i < 8; i++)
            printf("%s%s", i ? ", " : "", d->gaps.names[i]);
        printf("%s\n", d->gaps.n > 8 ? ", ..." : "");
    }
    for (size_t i = 0; i < d->graphs.n; i++) {
        const struct graph_change *g = &d->graphs.v[i];
        printf("%s %s: graph changed: %lld ops (sha256 %.12s) -> %lld ops (sha256 %.12s); its reports are not "
               "compared\n",
               g->graph, g->mode ? g->mode : "-", (long long)g->ops_before, g->sha_before, (long long)g->ops_after,
               g->sha_after);
    }
}

/* The totals line: changes over the reports both runs made, in how many rules, graphs and shims. */
static void print_totals(const struct diff *d, const struct diff_args *a)
{
    if (d->common == 0) {
        printf("nothing %sto compare: runs %lld and %lld share no graph (by content) and shim\n",
               d->graphs.n ? "else " : "", (long long)a->a, (long long)a->b);
        return;
    }
    size_t shims = 0;
    char **names = malloc((d->changes.n ? d->changes.n : 1) * sizeof *names);
    if (!names)
        abort();
    for (size_t i = 0; i < d->changes.n; i++)
        names[i] = d->changes.v[i].shim;
    shims = distinct(names, d->changes.n);
    free(names);
    printf("%zu decision change%s from run %lld to run %lld over %lld report%s both made", d->changes.n,
           plural(d->changes.n), (long long)a->a, (long long)a->b, (long long)d->common, plural((size_t)d->common));
    if (a->rule)
        printf(" (rule %s only)", a->rule);
    if (d->changes.n)
        printf(": %zu rule%s, %zu graph%s, %zu shim%s", d->nrules, plural(d->nrules), d->nsigs, plural(d->nsigs), shims,
               plural(shims));
    if (d->graphs.n)
        printf("; %zu graph%s changed", d->graphs.n, plural(d->graphs.n));
    printf("\n");
}

/* The summary by rule, then by graph. */
static void print_summary(const struct diff *d)
{
    if (!d->changes.n)
        return;
    printf("by rule:\n");
    for (size_t i = 0; i < d->nrules; i++) {
        const struct rule_sum *s = &d->rules[i];
        printf("  %s: %zu change%s on %zu graph%s under %zu shim%s:", s->rule, s->changes, plural(s->changes),
               s->graphs, plural(s->graphs), s->shims, plural(s->shims));
        for (int k = 0; k < s->nverbs; k++)
            printf("%s %s %zu", k ? "," : "", s->verbs[k].verb, s->verbs[k].n);
        printf("\n");
    }
    printf("by graph:\n");
    for (size_t i = 0; i < d->ngroups; i++) {
        const struct group *g = &d->groups[i];
        printf("  %s on %zu graph%s under %zu shim%s (%zu change%s):", g->text, g->ngraphs, plural(g->ngraphs),
               g->shims, plural(g->shims), g->changes, plural(g->changes));
        for (size_t k = 0; k < g->ngraphs && k < GROUP_NAMES; k++)
            printf("%s %s", k ? "," : "", g->keys[k]);
        printf("%s\n", g->ngraphs > GROUP_NAMES ? ", ..." : "");
    }
}

/* The raw changes, at most the limit's. */
static void print_changes(const struct diff *d, const struct diff_args *a)
{
    if (!d->changes.n)
        return;
    size_t shown = a->limit > 0 && (size_t)a->limit < d->changes.n ? (size_t)a->limit : d->changes.n;
    if (shown < d->changes.n)
        printf("changes (the first %zu of %zu; --limit 0 shows all):\n", shown, d->changes.n);
    else
        printf("changes:\n");
    for (size_t i = 0; i < shown; i++) {
        const struct change *x = &d->changes.v[i];
        printf("%s %s %s: %s %s %s: %s -> %s\n", x->graph, x->mode ? x->mode : "-", x->shim, x->rule, x->cls,
               x->covers, x->before ? x->before : "(none)", x->after ? x->after : "(none)");
    }
}

/* The diff as text: which runs, totals, summary, raw rows, and the gate's word on partial results. */
static void print_diff(const struct diff *d, const struct diff_args *a)
{
    print_header(d, a);
    print_totals(d, a);
    print_summary(d);
    print_changes(d, a);
    if (d->partial)
        printf("partial comparison: %s\n", a->allow_partial ? "accepted (--allow-partial)"
                                                            : "a failed check (--allow-partial accepts it)");
}

/* A covers text ("[1, 2]") as a JSON array of integers. */
static void json_covers(struct cli_json *j, const char *covers)
{
    cli_json_array(j, "covers");
    for (const char *p = covers; *p;) {
        if (isdigit((unsigned char)*p) || (*p == '-' && isdigit((unsigned char)p[1]))) {
            char *end;
            cli_json_int(j, NULL, strtoll(p, &end, 10));
            p = end;
        } else {
            p++;
        }
    }
    cli_json_end(j);
}

/* A run of the diff as a JSON object. */
static void json_run_name(struct cli_json *j, const char *key, int64_t id, const struct run_name *r,
                          const struct db_optimizer *o)
{
    cli_json_object(j, key);
    cli_json_int(j, "id", id);
    cli_json_string(j, "kind", r->kind);
    cli_json_string(j, "status", r->status);
    cli_json_string(j, "started", r->started);
    cli_json_string(j, "config", r->config);
    cli_json_object(j, "optimizer");
    cli_json_string(j, "name", o->name);
    cli_json_string(j, "version", o->version);
    cli_json_string(j, "command", o->in_process ? NULL : o->command);
    cli_json_end(j);
    cli_json_end(j);
}

/* The summaries as JSON: by rule, then the groups of graphs. */
static void json_summary(struct cli_json *j, const struct diff *d)
{
    cli_json_array(j, "rules");
    for (size_t i = 0; i < d->nrules; i++) {
        const struct rule_sum *s = &d->rules[i];
        cli_json_object(j, NULL);
        cli_json_string(j, "rule", s->rule);
        cli_json_int(j, "changes", (long long)s->changes);
        cli_json_int(j, "graphs", (long long)s->graphs);
        cli_json_int(j, "shims", (long long)s->shims);
        cli_json_object(j, "kinds");
        for (int k = 0; k < s->nverbs; k++)
            cli_json_int(j, s->verbs[k].verb, (long long)s->verbs[k].n);
        cli_json_end(j);
        cli_json_end(j);
    }
    cli_json_end(j);
    cli_json_array(j, "graph_groups");
    for (size_t i = 0; i < d->ngroups; i++) {
        const struct group *g = &d->groups[i];
        cli_json_object(j, NULL);
        cli_json_string(j, "summary", g->text);
        cli_json_int(j, "changes", (long long)g->changes);
        cli_json_int(j, "shims", (long long)g->shims);
        cli_json_array(j, "graphs");
        for (size_t k = 0; k < g->ngraphs; k++)
            cli_json_string(j, NULL, g->keys[k]);
        cli_json_end(j);
        cli_json_end(j);
    }
    cli_json_end(j);
}

/* What the diff found about partial results and changed graphs, as JSON members. */
static void json_partial(struct cli_json *j, const struct diff *d, const struct diff_args *a)
{
    cli_json_bool(j, "partial", d->partial);
    cli_json_bool(j, "partial_accepted", d->partial && a->allow_partial);
    cli_json_array(j, "lacks");
    for (size_t i = 0; i < d->gaps.n; i++)
        cli_json_string(j, NULL, d->gaps.names[i]);
    cli_json_end(j);
    cli_json_array(j, "graph_changes");
    for (size_t i = 0; i < d->graphs.n; i++) {
        const struct graph_change *g = &d->graphs.v[i];
        cli_json_object(j, NULL);
        cli_json_string(j, "graph", g->graph);
        cli_json_string(j, "mode", g->mode);
        cli_json_int(j, "ops_before", (long long)g->ops_before);
        cli_json_int(j, "ops_after", (long long)g->ops_after);
        cli_json_string(j, "sha256_before", g->sha_before);
        cli_json_string(j, "sha256_after", g->sha_after);
        cli_json_end(j);
    }
    cli_json_end(j);
}

/* The diff as one JSON object: the runs, totals, summaries, the raw changes (at most the limit's), the verdict. */
static void json_diff(const struct diff *d, const struct diff_args *a)
{
    struct cli_json j;
    cli_json_start(&j, stdout);
    cli_json_object(&j, NULL);
    json_run_name(&j, "run_before", a->a, &d->ra, &d->oa);
    json_run_name(&j, "run_after", a->b, &d->rb, &d->ob);
    cli_json_bool(&j, "two_optimizers", d->two_optimizers);
    json_partial(&j, d, a);
    cli_json_int(&j, "reports_compared", (long long)d->common);
    cli_json_string(&j, "rule", a->rule);
    cli_json_int(&j, "changes_total", (long long)d->changes.n);
    json_summary(&j, d);
    size_t shown = a->limit > 0 && (size_t)a->limit < d->changes.n ? (size_t)a->limit : d->changes.n;
    cli_json_int(&j, "changes_shown", (long long)shown);
    cli_json_array(&j, "changes");
    for (size_t i = 0; i < shown; i++) {
        const struct change *x = &d->changes.v[i];
        cli_json_object(&j, NULL);
        cli_json_string(&j, "graph", x->graph);
        cli_json_string(&j, "mode", x->mode);
        cli_json_string(&j, "shim", x->shim);
        cli_json_string(&j, "rule", x->rule);
        cli_json_string(&j, "class", x->cls);
        json_covers(&j, x->covers);
        cli_json_string(&j, "before", x->before);
        cli_json_string(&j, "after", x->after);
        cli_json_end(&j);
    }
    cli_json_end(&j);
    cli_json_bool(&j, "failed", diff_fails(d, a));
    cli_json_end(&j);
}

/* `db diff A B`: read, then print or write JSON. CLI_OK, CLI_FAILED (the gate), or CLI_USAGE with a message. */
static int diff_runs(struct db *db, const char *path, const struct diff_args *a)
{
    char err[DB_ERR_LEN];
    bool ea, eb;
    if (db_run_exists(db, a->a, &ea, err) || db_run_exists(db, a->b, &eb, err)) {
        fprintf(stderr, "fusecheck: db: %s\n", err);
        return CLI_USAGE;
    }
    if (!ea || !eb) {
        fprintf(stderr, "fusecheck: db diff: no run %lld in %s\n", (long long)(ea ? a->b : a->a), path);
        return CLI_USAGE;
    }
    struct diff d;
    memset(&d, 0, sizeof d);
    int rc = diff_read(db, a, &d, err);
    if (rc)
        fprintf(stderr, "fusecheck: db: %s\n", err);
    else if (a->json)
        json_diff(&d, a);
    else
        print_diff(&d, a);
    bool failed = !rc && diff_fails(&d, a);
    diff_free(&d);
    /* a gate for CI: changes, or nothing to compare, is a failed check */
    return rc ? CLI_USAGE : failed ? CLI_FAILED : CLI_OK;
}

/* Parse a run id. */
static int parse_run(const char *s, int64_t *run)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 1)
        return 1;
    *run = v;
    return 0;
}

/* Parse --limit's value: a count of 0 (all) or more. */
static int parse_limit(const char *s, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0)
        return cli_usage_error("db", "--limit %s: expected a count of 0 (every change) or more", s);
    *out = v;
    return 0;
}

/* `db runs [--json]` and `db diff A B [--allow-partial] [--limit N] [--rule R] [--json]` over --db FILE. */
static int db_query(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                         {"allow-partial", no_argument, NULL, 'p'},
                                         {"limit", required_argument, NULL, 'n'},
                                         {"rule", required_argument, NULL, 'r'},
                                         {"json", no_argument, NULL, 'j'},
                                         {0, 0, 0, 0}};
    const char *path = "results.db";
    struct diff_args a = {0, 0, NULL, DIFF_DEFAULT_LIMIT, false, false};
    bool limit_given = false;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'p')
            a.allow_partial = true;
        else if (c == 'j')
            a.json = true;
        else if (c == 'r')
            a.rule = optarg;
        else if (c == 'n' && parse_limit(optarg, &a.limit))
            return CLI_USAGE;
        else if (c == 'd')
            path = optarg;
        else if (c != 'n')
            return cli_option_error("db", opts, "", argv);
        limit_given = limit_given || c == 'n';
    }
    bool runs = strcmp(argv[0], "runs") == 0;
    if (runs && (a.allow_partial || a.rule || limit_given))
        return cli_usage_error("db", "--allow-partial, --limit and --rule go with diff");
    if (runs ? optind != argc
             : (optind != argc - 2 || parse_run(argv[optind], &a.a) || parse_run(argv[optind + 1], &a.b)))
        return cli_usage_error("db", runs ? "runs takes no arguments" : "diff expects two run ids");
    char err[DB_ERR_LEN];
    struct db *db;
    if (db_open_readonly(path, &db, err)) {
        fprintf(stderr, "fusecheck: db: %s\n", err);
        return CLI_USAGE;
    }
    int rc = CLI_OK;
    if (runs && list_runs(db, a.json, err)) {
        fprintf(stderr, "fusecheck: db: %s\n", err);
        rc = CLI_USAGE;
    } else if (!runs) {
        rc = diff_runs(db, path, &a);
    }
    db_close(db);
    return rc;
}

/* ── db merge ────────────────────────────────────────────────────────────────────────────────────────────── */

/* `db merge IN... -o OUT`. */
static int db_merge_cmd(int argc, char **argv)
{
    static const struct option opts[] = {{"append", no_argument, NULL, 'a'}, {"force", no_argument, NULL, 'f'},
                                         {0, 0, 0, 0}};
    const char *out = NULL;
    enum db_merge_mode mode = DB_MERGE_NEW;
    int modes = 0;
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "o:", opts, NULL)) != -1;) {
        if (c == 'o')
            out = optarg;
        else if (c == 'a' || c == 'f')
            mode = c == 'a' ? DB_MERGE_APPEND : DB_MERGE_FORCE, modes++;
        else
            return cli_option_error("db", opts, "o:", argv);
    }
    if (!out || optind >= argc)
        return cli_usage_error("db", "merge expects IN... -o OUT [--append | --force]");
    if (modes > 1)
        return cli_usage_error("db", "merge takes one of --append and --force");
    char err[DB_ERR_LEN];
    struct db_merge_result res;
    cli_interrupt_catch(); /* a signal stops the merge: its temporary files removed, the output as it was */
    db_merge_set_stop(cli_stop_requested);
    if (db_merge((const char *const *)argv + optind, argc - optind, out, mode, &res, err)) {
        if (cli_interrupted()) {
            cli_interrupt_say("db merge", NULL, 0);
            return cli_interrupt_exit();
        }
        fprintf(stderr, "fusecheck: db merge: %s\n", err);
        return CLI_USAGE;
    }
    printf("merged %d file%s into %s: %d run%s added", argc - optind, argc - optind == 1 ? "" : "s", out, res.runs,
           res.runs == 1 ? "" : "s");
    if (res.skipped)
        printf(", %d skipped (the output holds them already)", res.skipped);
    printf("\n");
    return CLI_OK;
}

int cli_cmd_db(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("db", "expected runs, diff or merge");
    if (strcmp(argv[1], "runs") == 0 || strcmp(argv[1], "diff") == 0)
        return db_query(argc - 1, argv + 1);
    if (strcmp(argv[1], "merge") == 0)
        return db_merge_cmd(argc - 1, argv + 1);
    return cli_usage_error("db", "unknown subcommand '%s'", argv[1]);
}
