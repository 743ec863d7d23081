/* cli/cmd_golden.c — `fusecheck golden`: every decision the optimizer makes on every zoo graph (each model in
 * decode, prefill:8 and batch:4) under a fixed set of shims, pinned in one text file a graph (tests/golden/), and
 * compared with what the optimizer decides now — or, with --update, rewritten where it changed.
 *
 * A golden file is a comment line, then one section a shim: a header line "== SHIM  N decisions: F fired, R
 * refused, H held", the report's lines in the order the optimizer made them, and "digest HEX". A shim whose
 * decisions are the same as an earlier section's is written as its header ("== SHIM  N decisions, the same as
 * OTHER") and its digest only. */
#include "cli.h"
#include "rules/rules.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The modes every model is lifted in (check's default set) and the shims each graph is optimized under. */
static const char *const golden_modes[] = {"decode", "prefill:8", "batch:4"};
static const char *const golden_shims[] = {"reference", "none", "cuda-lane:h200:dequant", "cuda-lane:h200:int8",
                                           "cuda-lane:h200:int8x2"};
#define NMODES ((int)(sizeof golden_modes / sizeof golden_modes[0]))
#define NSHIMS ((int)(sizeof golden_shims / sizeof golden_shims[0]))
/* The largest golden file read back (a bigger one is not one fusecheck wrote). */
#define MAX_FILE_BYTES ((off_t)64 << 20)

/* ── Text ────────────────────────────────────────────────────────────────────────────────────────────────── */

/* ── The graphs and their files ──────────────────────────────────────────────────────────────────────────── */

/* The golden file of the rule table: every step a compile runs under each shim, the classes it builds, whether the
 * chip links them, and each rule's guard atoms — so a change to the table shows in review even where no zoo decision
 * changes. */
#define RULES_FILE "rules.txt"

/* One golden file: the zoo model and mode it pins (model NULL: the rule table), and its file name. */
struct golden_job {
    const struct models_config *model;
    const char *mode;
    char name[128];
};

/* The file name of model's graph in mode: "MODEL.MODE.txt", a mode's ':' written '-'. */
static void golden_name(const char *model, const char *mode, char *out, size_t cap)
{
    snprintf(out, cap, "%s.%s.txt", model, mode);
    for (char *p = out + strlen(model) + 1; *p; p++)
        if (*p == ':')
            *p = '-';
}

/* Order jobs by file name, for qsort. */
static int job_cmp(const void *a, const void *b)
{
    return strcmp(((const struct golden_job *)a)->name, ((const struct golden_job *)b)->name);
}

/* Order strings, for qsort. */
static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether name is the golden file of some zoo graph, or of the rule table. */
static bool golden_known(const char *name)
{
    char want[128];
    if (strcmp(name, RULES_FILE) == 0)
        return true;
    for (int m = 0; m < models_count(); m++)
        for (int k = 0; k < NMODES; k++) {
            golden_name(models_get(m)->name, golden_modes[k], want, sizeof want);
            if (strcmp(want, name) == 0)
                return true;
        }
    return false;
}

/* ── Computing a golden file ─────────────────────────────────────────────────────────────────────────────── */

/* One shim's decisions: the report's lines joined (each ending in a newline), the digest and the counts. */
struct computed {
    struct ir_text lines;
    char digest[65];
    int32_t n, fired, refused, held;
};

/* Optimize g under shim into c. 0, or -1 with err. */
static int compute_section(const struct ir_graph *g, const struct shim *shim, struct computed *c,
                           char err[IR_ERR_LEN])
{
    struct rules_optimized o;
    memset(c, 0, sizeof *c);
    if (rules_optimize(g, shim, NULL, 0, &o, err))
        return -1;
    for (int32_t i = 0; i < o.report.n; i++) {
        char *line = rules_decision_line(&o.report.d[i]);
        ir_text_add(&c->lines, "%s\n", line);
        free(line);
    }
    if (!c->lines.s)
        ir_text_add(&c->lines, "%s", "");
    rules_report_digest(&o.report, c->digest);
    c->n = o.report.n;
    c->fired = rules_report_count(&o.report, RULES_FIRED, NULL);
    c->refused = rules_report_count(&o.report, RULES_REFUSED, NULL);
    c->held = rules_report_count(&o.report, RULES_HELD, NULL);
    rules_optimized_free(&o);
    return 0;
}

/* The shim whose rule table is being written, and the lines so far. */
struct table_lines {
    const struct shim *shim;
    struct ir_text *b;
};

/* One step of the rule table as lines: its name, the classes it builds, whether the chip links them; its atoms. */
static void rule_lines(const char *name, void *ctx)
{
    struct table_lines *c = ctx;
    const struct rules_rule *rule = rules_find(name);
    ir_text_add(c->b, "step %s:", name);
    for (int i = 0; rule && i < rule->nbuilds; i++)
        ir_text_add(c->b, " %s", ir_class_name(rule->builds[i]));
    for (int i = 0; !rule && i < c->shim->nrules; i++)
        for (int k = 0; strcmp(c->shim->rules[i].name, name) == 0 && k < c->shim->rules[i].nbuilds; k++)
            ir_text_add(c->b, " %s (chip rule)", ir_class_name(c->shim->rules[i].builds[k]));
    ir_text_add(c->b, "; %s\n", rules_step_linked(c->shim, name) ? "linked" : "dry run");
    for (int i = 0; rule && i < rule->nguards; i++) {
        const struct rules_atom *a = &rule->guards[i];
        ir_text_add(c->b, "  atom %s.%s %s(%s, %s, %s, %s) over %s\n", name, a->name, rules_atom_name(a->kind),
                rules_role_name(a->t), rules_role_name(a->a), rules_role_name(a->b), rules_role_name(a->g),
                rules_role_name(a->forall));
    }
}

/* The golden file of the rule table, a section a shim, as text into out. */
static void compute_rules_file(struct shim *const *shims, struct ir_text *out)
{
    ir_text_add(out, "# fusecheck golden: the rule table under each shim (steps, classes, links, guard atoms); "
                 "`fusecheck golden --update` rewrites this file\n");
    for (int i = 0; i < NSHIMS; i++) {
        struct ir_text lines = {0};
        struct table_lines ctx = {shims[i], &lines};
        rules_steps(shims[i], rule_lines, &ctx);
        char hex[65];
        cli_sha256_hex(lines.s ? lines.s : "", lines.n, hex);
        ir_text_add(out, "== %s  the rule table\n%sdigest %s\n", golden_shims[i], lines.s ? lines.s : "", hex);
        free(lines.s);
    }
}

/* The golden file of one job, as text into out. 0, or -1 with err. */
static int compute_file(const struct golden_job *j, struct shim *const *shims, struct ir_text *out, char err[IR_ERR_LEN])
{
    if (!j->model) {
        compute_rules_file(shims, out);
        return 0;
    }
    struct models_options opts = models_default_options();
    if (models_parse_mode(j->mode, &opts.mode, err))
        return -1;
    struct ir_graph *g = models_lift(j->model, &opts, err);
    if (!g)
        return -1;
    ir_text_add(out, "# fusecheck golden: the optimizer's decisions on %s (%s) under each shim; "
                 "`fusecheck golden --update` rewrites this file\n", j->model->name, j->mode);
    struct computed c[NSHIMS];
    int done = 0, rc = 0;
    for (; done < NSHIMS; done++)
        if (compute_section(g, shims[done], &c[done], err)) {
            rc = -1;
            break;
        }
    for (int i = 0; rc == 0 && i < NSHIMS; i++) {
        int same = -1;
        for (int k = 0; k < i && same < 0; k++)
            if (c[k].lines.n == c[i].lines.n && memcmp(c[k].lines.s, c[i].lines.s, c[i].lines.n) == 0)
                same = k;
        if (same >= 0) {
            ir_text_add(out, "== %s  %d decisions, the same as %s\ndigest %s\n", golden_shims[i], c[i].n,
                    golden_shims[same], c[i].digest);
            continue;
        }
        ir_text_add(out, "== %s  %d decisions: %d fired, %d refused, %d held\n%sdigest %s\n", golden_shims[i], c[i].n,
                c[i].fired, c[i].refused, c[i].held, c[i].lines.s, c[i].digest);
    }
    for (int i = 0; i < done; i++)
        free(c[i].lines.s);
    ir_graph_free(g);
    return rc;
}

/* ── Reading a golden file back ──────────────────────────────────────────────────────────────────────────── */

/* One section as read: the shim's name, the section it is the same as (-1: none), its decision lines, its digest. */
struct section {
    const char *name;
    int same;
    const char **lines;
    int32_t n, cap;
    const char *digest;
};

/* A golden file's sections, pointing into the text they were read from (split in place). */
struct parsed {
    struct section *s;
    int n, cap;
};

/* A new empty section named name. */
static struct section *parsed_add(struct parsed *p, const char *name)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->s = realloc(p->s, sizeof *p->s * (size_t)p->cap);
        if (!p->s)
            abort();
    }
    struct section *s = &p->s[p->n++];
    memset(s, 0, sizeof *s);
    s->name = name;
    s->same = -1;
    return s;
}

/* Append a decision line to s. */
static void section_add(struct section *s, const char *line)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->lines = realloc(s->lines, sizeof *s->lines * (size_t)s->cap);
        if (!s->lines)
            abort();
    }
    s->lines[s->n++] = line;
}

/* The index of the section named name among the first n of p, or -1. */
static int parsed_find(const struct parsed *p, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(p->s[i].name, name) == 0)
            return i;
    return -1;
}

/* Read text (changed in place: lines and header fields end in NUL) into sections. Lines outside any section that
 * are not comments are counted in *stray. */
static void parse_golden(char *text, struct parsed *p, int *stray)
{
    static const char same_as[] = ", the same as ";
    struct section *cur = NULL;
    *stray = 0;
    memset(p, 0, sizeof *p);
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "== ", 3) == 0) {
            char *name = line + 3, *rest = name + strcspn(name, " ");
            char *same = strstr(rest, same_as);
            *rest = '\0';
            cur = parsed_add(p, name);
            if (same)
                cur->same = parsed_find(p, p->n - 1, same + strlen(same_as));
        } else if (strncmp(line, "digest ", 7) == 0 && cur) {
            cur->digest = line + 7;
        } else if (line[0] != '#') {
            if (cur)
                section_add(cur, line);
            else
                (*stray)++;
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* The section whose decision lines s stands for (itself, or the one it is the same as). */
static const struct section *section_lines(const struct parsed *p, const struct section *s)
{
    while (s->same >= 0 && s->n == 0)
        s = &p->s[s->same];
    return s;
}

/* Free what parse_golden allocated. */
static void parsed_free(struct parsed *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->s[i].lines);
    free(p->s);
}

/* ── Comparing ───────────────────────────────────────────────────────────────────────────────────────────── */

/* A line and where it stands, for matching two sections' lines as multisets. */
struct keyed {
    const char *text;
    int32_t at;
};

/* Order keyed lines by text, then position, for qsort. */
static int keyed_cmp(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->text, y->text);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* Sort n lines into keyed order; the caller frees the array. */
static struct keyed *keyed_sorted(const char *const *lines, int32_t n)
{
    struct keyed *k = malloc(sizeof *k * (size_t)(n ? n : 1));
    if (!k)
        abort();
    for (int32_t i = 0; i < n; i++)
        k[i] = (struct keyed){lines[i], i};
    qsort(k, (size_t)n, sizeof *k, keyed_cmp);
    return k;
}

/* Mark in gone_a the lines of a with no equal line left in b, and in gone_b those of b with none left in a (the
 * multiset difference both ways). Returns how many were marked. */
static int32_t match_lines(const struct section *a, const struct section *b, bool *gone_a, bool *gone_b)
{
    struct keyed *ka = keyed_sorted(a->lines, a->n), *kb = keyed_sorted(b->lines, b->n);
    int32_t i = 0, k = 0, marked = 0;
    while (i < a->n || k < b->n) {
        int c = i == a->n ? 1 : k == b->n ? -1 : strcmp(ka[i].text, kb[k].text);
        if (c == 0) {
            i++;
            k++;
        } else if (c < 0) {
            gone_a[ka[i++].at] = true;
            marked++;
        } else {
            gone_b[kb[k++].at] = true;
            marked++;
        }
    }
    free(ka);
    free(kb);
    return marked;
}

/* Print how one shim's decisions changed from the golden section old to the computed one now: removed lines `-`,
 * added `+`; the same decisions in another order said so. Returns whether anything was printed. */
static bool print_section_diff(const char *shim, const struct section *old, const struct section *now)
{
    bool *gone_old = calloc((size_t)old->n + 1, sizeof *gone_old);
    bool *gone_now = calloc((size_t)now->n + 1, sizeof *gone_now);
    if (!gone_old || !gone_now)
        abort();
    bool printed = true;
    if (match_lines(old, now, gone_old, gone_now) > 0) {
        printf("  under %s:\n", shim);
        for (int32_t i = 0; i < old->n; i++)
            if (gone_old[i])
                printf("    - %s\n", old->lines[i]);
        for (int32_t i = 0; i < now->n; i++)
            if (gone_now[i])
                printf("    + %s\n", now->lines[i]);
    } else {
        bool same_order = true;
        for (int32_t i = 0; i < old->n && same_order; i++)
            same_order = strcmp(old->lines[i], now->lines[i]) == 0;
        if (!same_order)
            printf("  under %s: the same decisions, made in another order\n", shim);
        printed = !same_order;
    }
    free(gone_old);
    free(gone_now);
    return printed;
}

/* Print, shim by shim, how the golden text old differs from the computed text now (both as files). */
static void print_file_diff(const char *old_text, size_t old_len, const char *now_text, size_t now_len)
{
    char *o = malloc(old_len + 1), *n = malloc(now_len + 1);
    if (!o || !n)
        abort();
    memcpy(o, old_text, old_len);
    o[old_len] = '\0';
    memcpy(n, now_text, now_len);
    n[now_len] = '\0';
    struct parsed po, pn;
    int stray_o, stray_n;
    parse_golden(o, &po, &stray_o);
    parse_golden(n, &pn, &stray_n);
    bool printed = false;
    for (int i = 0; i < pn.n; i++) {
        const struct section *now = section_lines(&pn, &pn.s[i]);
        int k = parsed_find(&po, po.n, pn.s[i].name);
        if (k < 0) {
            printf("  under %s: no section in the golden file; the optimizer now decides:\n", pn.s[i].name);
            for (int32_t l = 0; l < now->n; l++)
                printf("    + %s\n", now->lines[l]);
            printed = true;
            continue;
        }
        const struct section *old = section_lines(&po, &po.s[k]);
        if (print_section_diff(pn.s[i].name, old, now))
            printed = true;
        else if (!po.s[k].digest || strcmp(po.s[k].digest, pn.s[i].digest) != 0) {
            printf("  under %s: the digest differs (golden %s, now %s)\n", pn.s[i].name,
                   po.s[k].digest ? po.s[k].digest : "none", pn.s[i].digest);
            printed = true;
        }
    }
    for (int k = 0; k < po.n; k++)
        if (parsed_find(&pn, pn.n, po.s[k].name) < 0) {
            printf("  under %s: a section fusecheck golden does not write (unknown shim)\n", po.s[k].name);
            printed = true;
        }
    if (stray_o) {
        printf("  %d line%s outside any shim's section\n", stray_o, stray_o == 1 ? "" : "s");
        printed = true;
    }
    if (!printed)
        printf("  the decisions are the same; a header or comment line differs\n");
    parsed_free(&po);
    parsed_free(&pn);
    free(o);
    free(n);
}

/* ── Files ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* What reading a golden file found. */
enum read_outcome { READ_OK, READ_MISSING, READ_REFUSED };

/* Read dir/name whole into *data (NUL-terminated), never through a symbolic link and only from a regular file.
 * READ_REFUSED with a message on stderr otherwise. */
static enum read_outcome read_golden(const char *path, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return READ_MISSING;
    if (fd < 0) {
        fprintf(stderr, "fusecheck: golden: %s: %s (refused: a golden file is a regular file)\n", path,
                errno == ELOOP ? "a symbolic link" : strerror(errno));
        return READ_REFUSED;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
        fprintf(stderr, "fusecheck: golden: %s: not a regular file of at most 64 MiB (refused)\n", path);
        close(fd);
        return READ_REFUSED;
    }
    size_t cap = (size_t)st.st_size + 1;
    char *s = malloc(cap);
    if (!s)
        abort();
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t got = read(fd, s + n, cap - 1 - n);
        if (got == 0)
            break;
        if (got > 0)
            n += (size_t)got;
        else if (errno != EINTR) {
            fprintf(stderr, "fusecheck: golden: reading %s: %s\n", path, strerror(errno));
            free(s);
            close(fd);
            return READ_REFUSED;
        }
    }
    close(fd);
    s[n] = '\0';
    *data = s;
    *len = n;
    return READ_OK;
}

/* Whether path is absent or a regular file (not a link or anything else); else a message on stderr. */
static bool replaceable(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT;
    if (S_ISREG(st.st_mode))
        return true;
    fprintf(stderr, "fusecheck: golden: %s: %s (refused: a golden file is a regular file)\n", path,
            S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
    return false;
}

/* Write len bytes to dir/name whole (cli_write: a new file renamed over the old one), the old one absent or a
 * regular file. 0, or -1 with a message on stderr. */
static int write_golden(const char *dir, const char *name, const char *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return replaceable(path) && cli_write(path, data, len) == 0 ? 0 : -1;
}

/* The entries of dir (but . and ..), sorted, into *names; their count, or -1 with a message on stderr. */
static int list_dir(const char *dir, char ***names)
{
    *names = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fusecheck: golden: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            *names = realloc(*names, sizeof **names * (size_t)cap);
            if (!*names)
                abort();
        }
        (*names)[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n)
        qsort(*names, (size_t)n, sizeof **names, str_cmp);
    return n;
}

/* Free a list from list_dir. */
static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ── The command ─────────────────────────────────────────────────────────────────────────────────────────── */

/* What golden reads from its command line: the directory, --update, and which models (all when none named). */
struct golden_args {
    const char *dir;
    bool update;
    bool *only; /* per zoo model: named; NULL when none was */
};

/* Parse golden's options. 0 on success, else CLI_USAGE with a message. */
static int parse_golden_args(int argc, char **argv, struct golden_args *a)
{
    static const struct option opts[] = {{"update", no_argument, NULL, 'u'}, {"dir", required_argument, NULL, 'd'},
                                         {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->dir = "tests/golden";
    optind = 1;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'u')
            a->update = true;
        else if (c == 'd' && optarg[0])
            a->dir = optarg;
        else if (c == 'd')
            return cli_usage_error("golden", "--dir expects a directory");
        else
            return cli_option_error("golden", opts, "", argv);
    }
    for (int i = optind; i < argc; i++) {
        int m = -1;
        for (int k = 0; k < models_count() && m < 0; k++)
            if (strcmp(models_get(k)->name, argv[i]) == 0)
                m = k;
        if (m < 0) {
            free(a->only);
            a->only = NULL;
            return cli_usage_error("golden", "unknown model '%s' (fusecheck models lists them)", argv[i]);
        }
        if (!a->only && !(a->only = calloc((size_t)models_count(), sizeof *a->only)))
            abort();
        a->only[m] = true;
    }
    return 0;
}

/* The golden files to check: every selected model in every mode, sorted by name; their count into *n. */
static struct golden_job *golden_jobs(const struct golden_args *a, int *n)
{
    struct golden_job *jobs = calloc((size_t)(models_count() * NMODES) + 2, sizeof *jobs);
    if (!jobs)
        abort();
    *n = 0;
    if (!a->only) /* the rule table, unless only some models are asked for */
        snprintf(jobs[(*n)++].name, sizeof jobs->name, "%s", RULES_FILE);
    for (int m = 0; m < models_count(); m++)
        for (int k = 0; (!a->only || a->only[m]) && k < NMODES; k++) {
            struct golden_job *j = &jobs[(*n)++];
            j->model = models_get(m);
            j->mode = golden_modes[k];
            golden_name(j->model->name, j->mode, j->name, sizeof j->name);
        }
    qsort(jobs, (size_t)*n, sizeof *jobs, job_cmp);
    return jobs;
}

/* Tallies over a run. */
struct golden_totals {
    int files, same, differ, missing, unknown, rewritten;
    size_t bytes;
};

/* Recompute one golden file and compare it with (or, updating, write it over) the one in dir. CLI_OK, CLI_FAILED
 * when it differs (and is not rewritten) or could not be computed, CLI_USAGE when refused or unwritable. */
static int golden_one(const struct golden_args *a, const struct golden_job *j, struct shim *const *shims,
                      struct golden_totals *t)
{
    char err[IR_ERR_LEN], path[4096];
    snprintf(path, sizeof path, "%s/%s", a->dir, j->name);
    struct ir_text now = {0};
    if (compute_file(j, shims, &now, err)) {
        fprintf(stderr, "fusecheck: golden: %s: %s\n", j->name, err);
        free(now.s);
        return CLI_FAILED;
    }
    t->files++;
    t->bytes += now.n;
    char *old;
    size_t old_len;
    enum read_outcome r = read_golden(path, &old, &old_len);
    int rc = CLI_OK;
    if (r == READ_REFUSED) {
        rc = CLI_USAGE;
    } else if (r == READ_OK && old_len == now.n && memcmp(old, now.s, now.n) == 0) {
        t->same++;
    } else if (a->update) {
        if (write_golden(a->dir, j->name, now.s, now.n) != 0) {
            rc = CLI_USAGE;
        } else {
            printf("rewrote %s%s\n", path, r == READ_MISSING ? " (new)" : "");
            t->rewritten++;
        }
    } else if (r == READ_MISSING) {
        printf("%s: missing (fusecheck golden --update writes it)\n", path);
        t->missing++;
        rc = CLI_FAILED;
    } else {
        printf("%s: %s changed (- golden, + now):\n", path, j->model ? "the optimizer's decisions" : "the rule table");
        print_file_diff(old, old_len, now.s, now.n);
        t->differ++;
        rc = CLI_FAILED;
    }
    free(old);
    free(now.s);
    return rc;
}

/* Before anything is computed or written: refuse a golden file of dir that is a link or not a regular file, and
 * name every entry that is no zoo graph's golden file. CLI_OK, CLI_FAILED when an unknown entry is there, or
 * CLI_USAGE (the directory unreadable, or an entry refused). */
static int scan_dir(const struct golden_args *a, struct golden_totals *t)
{
    char **names;
    int n = list_dir(a->dir, &names);
    if (n < 0)
        return CLI_USAGE;
    int rc = CLI_OK;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", a->dir, names[i]);
        if (!golden_known(names[i])) {
            printf("%s: an unknown file (no zoo graph's golden file; remove it)\n", path);
            t->unknown++;
            if (rc == CLI_OK)
                rc = CLI_FAILED;
        } else if (!replaceable(path)) {
            rc = CLI_USAGE;
        }
    }
    free_names(names, n);
    return rc;
}

/* Make dir when it is not there (updating only). 0, or -1 with a message on stderr. */
static int ensure_dir(const char *dir, bool create)
{
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (errno == ENOENT && create && mkdir(dir, 0777) == 0)
        return 0;
    fprintf(stderr, "fusecheck: golden: %s: %s\n", dir, errno ? strerror(errno) : "not a directory");
    return -1;
}

int cli_cmd_golden(int argc, char **argv)
{
    struct golden_args a;
    int rc = parse_golden_args(argc, argv, &a);
    if (rc)
        return rc;
    errno = 0;
    if (ensure_dir(a.dir, a.update)) {
        free(a.only);
        return CLI_USAGE;
    }
    struct golden_totals t = {0};
    rc = scan_dir(&a, &t);
    struct shim *shims[NSHIMS] = {0};
    char err[IR_ERR_LEN];
    for (int i = 0; rc != CLI_USAGE && i < NSHIMS; i++)
        if (!(shims[i] = shim_lookup(golden_shims[i], err))) {
            fprintf(stderr, "fusecheck: golden: %s\n", err);
            rc = CLI_USAGE;
        }
    int njobs = 0;
    struct golden_job *jobs = rc == CLI_USAGE ? NULL : golden_jobs(&a, &njobs);
    for (int i = 0; i < njobs && rc != CLI_USAGE; i++) {
        int one = golden_one(&a, &jobs[i], shims, &t);
        if (one > rc)
            rc = one;
    }
    if (rc != CLI_USAGE)
        printf("golden: %d files (%zu bytes) in %s: %d the same, %d rewritten, %d differ, %d missing, %d unknown\n",
               t.files, t.bytes, a.dir, t.same, t.rewritten, t.differ, t.missing, t.unknown);
    free(jobs);
    for (int i = 0; i < NSHIMS; i++)
        shim_free(shims[i]);
    free(a.only);
    return rc;
}
