/* cli/report_runs.c — the runs a page covers, and the run each is compared with: the newest ended run before it of
 * the same kind and configuration (runs.config, schema 9: models, modes, shims, holds, seed rules and every other
 * option that changes what is checked, read as a set; and the optimizer), with the last runs of that configuration
 * for the trends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Options that change where results go or how progress shows, not what is checked: left out of a configuration,
 * each with whether it takes a value. */
static const struct {
    const char *name;
    bool value;
} ignored_options[] = {
    {"--db", true}, {"-o", true}, {"--replay", true}, {"--smt2", true}, {"--no-progress", false},
};

/* Options that take no value (every other option takes the token after it, or its `=VALUE`). */
static const char *const flag_options[] = {
    "--tolerance", "--eval-real", "--seed-rules", "--expect-same", "--mutants", "--all", "--no-build",
};

/* The index of name in the ignored options, or -1. */
static int ignored_option(const char *name)
{
    for (size_t i = 0; i < sizeof ignored_options / sizeof ignored_options[0]; i++)
        if (strcmp(ignored_options[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Whether an option takes no value. */
static bool flag_option(const char *name)
{
    for (size_t i = 0; i < sizeof flag_options / sizeof flag_options[0]; i++)
        if (strcmp(flag_options[i], name) == 0)
            return true;
    return false;
}

/* A configuration's settings as they grow: one "option value" string each. */
struct settings {
    char **v;
    int n, cap;
};

/* Add one setting (a copy of name, a space, value). */
static void add_setting(struct settings *s, const char *name, const char *value, size_t vlen)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        if (!(s->v = realloc(s->v, sizeof *s->v * (size_t)s->cap)))
            abort();
    }
    size_t n = strlen(name) + 1 + vlen + 1;
    char *e = malloc(n);
    if (!e)
        abort();
    snprintf(e, n, "%s %.*s", name, (int)vlen, value);
    s->v[s->n++] = e;
}

/* Add an option's value; a --hold list is one setting a held rule, so `--hold a,b` is `--hold a --hold b`. */
static void add_option(struct settings *s, const char *name, const char *value)
{
    if (strcmp(name, "--hold") != 0) {
        add_setting(s, name, value, strlen(value));
        return;
    }
    for (const char *p = value; *p;) {
        size_t len = strcspn(p, ",");
        if (len)
            add_setting(s, name, p, len);
        p += len + (p[len] == ',');
    }
}

/* qsort's order on settings. */
static int by_text(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The settings of a run's configuration (runs.config: its command line without the program, words split at spaces)
 * and its optimizer, sorted and each once: the words after the command (check, prove, ...), each option with its
 * value, each other word an argument ("arg tiny-llama"). */
static struct settings settings_of(const char *command, const char *optimizer)
{
    struct settings s = {NULL, 0, 0};
    char *copy = strdup(command ? command : "");
    if (!copy)
        abort();
    char *save = NULL, *word = strtok_r(copy, " ", &save);
    for (int k = 0; word; word = strtok_r(NULL, " ", &save), k++) {
        if (k == 0 && word[0] != '-')
            continue; /* the command (check, prove; a fuzz campaign's configuration has none) */
        if (word[0] != '-' || word[1] == '\0') {
            add_setting(&s, "arg", word, strlen(word));
            continue;
        }
        char *eq = strchr(word, '=');
        if (eq)
            *eq = '\0';
        int ig = ignored_option(word);
        const char *value = eq ? eq + 1 : NULL;
        if (!value && (ig >= 0 ? ignored_options[ig].value : !flag_option(word))) {
            value = strtok_r(NULL, " ", &save);
            if (!value)
                value = "";
        }
        if (ig < 0)
            add_option(&s, word, value ? value : "");
    }
    free(copy);
    add_setting(&s, "optimizer", optimizer ? optimizer : "", optimizer ? strlen(optimizer) : 0);
    qsort(s.v, (size_t)s.n, sizeof *s.v, by_text);
    int kept = 0;
    for (int i = 0; i < s.n; i++)
        if (kept > 0 && strcmp(s.v[kept - 1], s.v[i]) == 0)
            free(s.v[i]);
        else
            s.v[kept++] = s.v[i];
    s.n = kept;
    return s;
}

/* Free a configuration's settings. */
static void settings_free(struct settings *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

/* Whether two configurations are the same. */
static bool same_settings(const struct settings *a, const struct settings *b)
{
    if (a->n != b->n)
        return false;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return false;
    return true;
}

/* Append what one configuration has and the other lacks ("--hold add_norm") to out, "; "-separated. */
static void settings_missing(const struct settings *a, const struct settings *b, char *out, size_t cap)
{
    for (int i = 0, j = 0; i < a->n; i++) {
        while (j < b->n && strcmp(b->v[j], a->v[i]) < 0)
            j++;
        if (j < b->n && strcmp(b->v[j], a->v[i]) == 0)
            continue;
        size_t k = strlen(out);
        snprintf(out + k, cap - k, "%s%s", k ? ", " : "", a->v[i]);
    }
}

/* A run being looked up: the run, its settings, whether the file has it, and the earlier runs' ids scanned. */
struct run_lookup {
    struct cli_report_run *run;
    struct settings mine;
    bool found;
};

/* The optimizer of a runs row as one setting's value: its name and its command (none: in process). */
static void optimizer_text(const char *name, const char *command, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s", name ? name : "fusecheck", command ? " " : "", command ? command : "");
}

/* Keep a run's kind and settings. */
static void keep_run(const char *const *cols, int n, void *ctx)
{
    struct run_lookup *l = ctx;
    (void)n;
    char opt[1024];
    optimizer_text(cols[2], cols[3], opt, sizeof opt);
    l->found = true;
    snprintf(l->run->kind, sizeof l->run->kind, "%s", cols[0] ? cols[0] : "");
    l->mine = settings_of(cols[1], opt);
}

/* Take an earlier ended run of the kind (newest first): the newest at all, and those of the same configuration (the
 * newest the compared run; up to CLI_REPORT_TREND of them for the trends). */
static void keep_earlier(const char *const *cols, int n, void *ctx)
{
    struct run_lookup *l = ctx;
    struct cli_report_run *run = l->run;
    (void)n;
    if (run->nhistory == CLI_REPORT_TREND)
        return;
    char opt[1024];
    optimizer_text(cols[2], cols[3], opt, sizeof opt);
    struct settings theirs = settings_of(cols[1], opt);
    int64_t id = cli_report_int(cols[0]);
    if (!run->latest) {
        run->latest = id;
        run->differs[0] = '\0';
        settings_missing(&l->mine, &theirs, run->differs, sizeof run->differs);
        run->lacks[0] = '\0';
        settings_missing(&theirs, &l->mine, run->lacks, sizeof run->lacks);
    }
    if (same_settings(&l->mine, &theirs)) {
        if (!run->prev)
            run->prev = id;
        run->history[run->nhistory++] = id;
    }
    settings_free(&theirs);
}

/* Fill a run's kind, the run it is compared with and its history; 1 (a message on stderr) when the file has no such
 * run. */
static int lookup_run(struct cli_report *r, struct cli_report_run *run, const char *path)
{
    struct run_lookup l = {run, {NULL, 0, 0}, false};
    cli_report_query(r, "SELECT kind, config, optimizer_name, optimizer_command FROM runs WHERE id = ?1", &run->id, 1,
                     keep_run, &l);
    if (!r->failed && !l.found) {
        fprintf(stderr, "fusecheck: report: no run %lld in %s (fusecheck db runs lists them)\n", (long long)run->id,
                path);
        return 1;
    }
    run->history[run->nhistory++] = run->id;
    cli_report_query(r,
                     "SELECT p.id, p.config, p.optimizer_name, p.optimizer_command FROM runs p, runs r WHERE r.id = ?1"
                     " AND p.kind = r.kind AND p.id < r.id AND p.ended IS NOT NULL ORDER BY p.id DESC",
                     &run->id, 1, keep_earlier, &l);
    settings_free(&l.mine);
    /* the history oldest first */
    for (int i = 0, j = run->nhistory - 1; i < j; i++, j--) {
        int64_t t = run->history[i];
        run->history[i] = run->history[j];
        run->history[j] = t;
    }
    return r->failed;
}

int cli_report_pick_runs(struct cli_report *r, const int64_t *asked, int nasked, const char *path)
{
    int64_t newest = 0;
    if (nasked == 0) {
        cli_report_query(r, "SELECT max(id) FROM runs WHERE ended IS NOT NULL", NULL, 0, cli_report_take_number,
                         &newest);
        if (!r->failed && newest == 0) {
            fprintf(stderr, "fusecheck: report: %s holds no ended run (fusecheck db runs lists them)\n", path);
            return 1;
        }
        asked = &newest;
        nasked = 1;
    }
    for (int i = 0; i < nasked; i++) {
        int at = r->nruns;
        while (at > 0 && r->runs[at - 1].id > asked[i])
            at--;
        if (at > 0 && r->runs[at - 1].id == asked[i])
            continue;
        memmove(&r->runs[at + 1], &r->runs[at], sizeof r->runs[0] * (size_t)(r->nruns - at));
        memset(&r->runs[at], 0, sizeof r->runs[at]);
        r->runs[at].id = asked[i];
        r->nruns++;
    }
    for (int i = 0; i < r->nruns; i++)
        if (lookup_run(r, &r->runs[i], path))
            return 1;
    return 0;
}
