/* cli/cmd_fuzz.c — `fusecheck fuzz`: what the fuzz campaign (fuzz/campaign) needs from fusecheck itself. It writes
 * the seed corpora (the zoo's families in every mode, shrunk so one input evaluates in about a millisecond; the
 * rule tests; one generator input per motif), lists the guard atoms the mutant sweep drops, and logs a campaign to
 * results.db: a run of kind `fuzz` with each harness's statistics, each finding, each mutant's fate, and each
 * source-level mutant's (fuzz/campaign --code-mutants). */
#include "cli.h"
#include "db/db.h"
#include "fuzz/fuzz.h"
#include "oracle/oracle.h"
#include "rules/rules.h"

#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Its shim byte choosing the n-th plain shim (0 reference, 1 none) or the n-th parameterised one. */
#define PLAIN(n) ((char)((n) << 1))
#define LANE(n) ((char)(((n) << 1) | 1))

/* ── Writing files ───────────────────────────────────────────────────────────────────────────────────────── */

/* Create directory path (one level); 0 when it exists afterwards. */
static int make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "fusecheck: fuzz: %s: cannot create: %s\n", path, strerror(errno));
    return 1;
}

/* Write a seed file dir/name of n bytes; 0 on success. */
static int write_seed(const char *dir, const char *name, const void *data, size_t n)
{
    char path[2100];
    snprintf(path, sizeof path, "%.1000s/%.1000s", dir, name);
    return cli_write(path, data, n);
}

/* Write an optimizer case: its control bytes, then its body. */
static int write_case_ctl(const char *dir, const char *name, const uint8_t ctl[FUZZ_CTL], const char *body, size_t n)
{
    char *buf = malloc(n + FUZZ_CTL);
    if (!buf)
        return 1;
    memcpy(buf, ctl, FUZZ_CTL);
    memcpy(buf + FUZZ_CTL, body, n);
    int rc = write_seed(dir, name, buf, n + FUZZ_CTL);
    free(buf);
    return rc;
}

/* Write an optimizer case whose control bytes are a shim byte, no holds, the prefix byte and seed 7. */
static int write_case(const char *dir, const char *name, char shim, char prefix, const char *body, size_t n)
{
    const uint8_t ctl[FUZZ_CTL] = {(uint8_t)shim, 0, 0, 0, (uint8_t)prefix, 7, 0, 0};
    return write_case_ctl(dir, name, ctl, body, n);
}

/* ── Seeds ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* A zoo model shrunk to a few values a row: its family's structure at a size that evaluates in a millisecond. */
static struct models_config shrink(const struct models_config *c)
{
    struct models_config s = *c;
    s.layers = 1;
    s.hidden = 32;
    s.heads = 2;
    s.kv_heads = 1;
    s.head_dim = 16;
    /* The rotated part keeps its share of the head, an even width (a partial rotation stays partial). */
    s.rotary_dim = c->rotary_dim && c->head_dim ? (c->rotary_dim * s.head_dim / c->head_dim) & ~(int64_t)1 : 0;
    if (c->rotary_dim && s.rotary_dim < 2)
        s.rotary_dim = 2;
    s.ffn = c->ffn ? 64 : 0;
    s.vocab = 32;
    s.experts = c->experts ? 4 : 0;
    s.top_k = c->experts ? 2 : 0;
    s.expert_ffn = c->experts ? 16 : 0;
    if (c->routing.groups > 1) { /* group-limited routing stays so: two groups of two, one competing */
        s.routing.groups = 2;
        s.routing.topk_groups = 1;
    }
    s.ctx = 8;
    s.window = c->window ? 4 : 0;
    s.query_scale = 0; /* 1/sqrt(head_dim) of the shrunk head, as llama.cpp computes it (a file must say so) */
    return s;
}

/* Whether the i-th zoo model is tiny; shrunk into *s when it is. */
static bool tiny_shrunk(int i, struct models_config *s)
{
    const struct models_config *c = models_get(i);
    if (c->tiny)
        *s = shrink(c);
    return c->tiny;
}

/* One shrunk zoo graph per tiny family model and mode, into the format and optimizer corpora. */
static int seed_zoo(const char *fmt_dir, const char *opt_dir)
{
    static const char *const modes[] = {"decode", "prefill:3", "batch:2"};
    int written = 0;
    struct models_config s;
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = models_get(i);
        if (!tiny_shrunk(i, &s))
            continue;
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            struct models_options o = models_default_options();
            char err[IR_ERR_LEN], name[128];
            o.weights = IR_FMT_F16;
            if (models_parse_mode(modes[m], &o.mode, err))
                continue;
            struct ir_graph *g = models_lift(&s, &o, err);
            if (!g) {
                fprintf(stderr, "fusecheck: fuzz: %s %s: %s\n", c->name, modes[m], err);
                continue;
            }
            size_t n;
            char *text = ir_print(g, &n);
            ir_graph_free(g);
            if (!text)
                continue;
            char mode[32];
            snprintf(mode, sizeof mode, "%s", modes[m]);
            mode[strcspn(mode, ":")] = '\0';
            snprintf(name, sizeof name, "zoo-%s-%s.fc", c->family, mode);
            int rc = write_seed(fmt_dir, name, text, n);
            static const char shims[] = {PLAIN(0), PLAIN(1), LANE(0), LANE(5)};
            for (size_t k = 0; !rc && k < sizeof shims; k++) {
                snprintf(name, sizeof name, "zoo-%s-%s-%zu", c->family, mode, k);
                rc = write_case(opt_dir, name, shims[k], (char)(4 * (13 * k + m)), text, n);
            }
            free(text);
            if (rc)
                return -1;
            written++;
        }
    }
    return written;
}

/* One shrunk zoo model per tiny family, exported as a GGUF file (q4_0 weights, f16 where a width is narrower than
 * its block; seed 1): the reader's corpus. */
static int seed_gguf(const char *dir)
{
    int written = 0;
    struct models_config s;
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = &s;
        if (!tiny_shrunk(i, &s))
            continue;
        struct models_options o = models_default_options();
        o.weights = IR_FMT_Q4_0;
        char err[IR_ERR_LEN], path[1200];
        struct ir_graph *g = models_lift(&s, &o, err);
        if (!g) { /* a width the shrink leaves narrower than q4_0's block: f16 */
            o.weights = IR_FMT_F16;
            g = models_lift(&s, &o, err);
        }
        struct ir_values *v = g ? ir_values_new(g, 1, err) : NULL;
        snprintf(path, sizeof path, "%.1000s/zoo-%s.gguf", dir, c->family);
        int rc = v ? models_gguf_export(&s, g, v, path, err) : -1;
        ir_values_free(v);
        ir_graph_free(g);
        if (rc) {
            fprintf(stderr, "fusecheck: fuzz: %s: %s\n", c->name, err);
            return -1;
        }
        written++;
    }
    return written;
}

/* A step name's index among a shim's steps, as the harness numbers them (rules_steps' order). */
struct step_find {
    const char *name;
    int at, n;
};
static void find_step(const char *name, void *ctx)
{
    struct step_find *f = ctx;
    if (f->at < 0 && rules_same_name(name, f->name))
        f->at = f->n;
    f->n++;
}

/* The plan a rule case's directives choose: its `# shim:` (reference when none) and the first two of its `# hold:`
 * steps under that shim; 0 on success, 1 with err when the harness cannot run the case so (a shim the fuzz list does
 * not offer, a step the shim does not run). */
static int case_plan(const char *text, const char *path, struct fuzz_plan *p, char err[IR_ERR_LEN])
{
    char shim_name[ORACLE_NAME_LEN], holds[512];
    oracle_fixture_settings(text, shim_name, sizeof shim_name, holds, sizeof holds);
    *p = (struct fuzz_plan){fuzz_shim_index(shim_name), {-1, -1}, 0, 7};
    if (p->shim < 0) {
        snprintf(err, IR_ERR_LEN, "%.300s: the fuzz harness offers no shim '%.128s'", path, shim_name);
        return 1;
    }
    struct shim *shim = shim_lookup(shim_name, err);
    if (!shim)
        return 1;
    int nheld = 0;
    for (char *save = NULL, *h = strtok_r(holds, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
        struct step_find f = {h, -1, 0};
        rules_steps(shim, find_step, &f);
        if (f.at < 0 || nheld == 2) {
            snprintf(err, IR_ERR_LEN, "%.300s: %s", path,
                     f.at < 0 ? "a held step the shim does not run" : "more than the two held steps a case carries");
            shim_free(shim);
            return 1;
        }
        p->hold[nheld++] = f.at;
    }
    shim_free(shim);
    return 0;
}

/* Whether a directory entry is not hidden (scandir's filter). */
static int visible(const struct dirent *e) { return e->d_name[0] != '.'; }

/* A name's FNV-1a hash (the prefix byte of a rule case: the same case always gets the same). */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* One rule case file into the format and optimizer corpora; 0 on success. */
static int seed_rule_case(const char *rule, const char *dir, const char *file, const char *fmt_dir, const char *opt_dir)
{
    size_t l = strlen(file), n;
    if (l < 4 || strcmp(file + l - 3, ".fc") != 0)
        return 0;
    char path[1600], name[700];
    snprintf(path, sizeof path, "%.1300s/%.255s", dir, file);
    char *text = ir_read_file(path, &n);
    if (!text)
        return 0;
    snprintf(name, sizeof name, "rule-%s-%.*s.fc", rule, (int)(l - 3), file);
    int rc = write_seed(fmt_dir, name, text, n);
    snprintf(name, sizeof name, "rule-%s-%.*s", rule, (int)(l - 3), file);
    if (!rc && !memchr(text, '\0', n)) {
        struct fuzz_plan p;
        char err[IR_ERR_LEN] = "";
        uint8_t ctl[FUZZ_CTL];
        rc = case_plan(text, path, &p, err);
        p.prefix = (int)(4 * (name_hash(name) % 64));
        rc = rc || fuzz_plan_encode(&p, ctl);
        if (rc)
            fprintf(stderr, "fusecheck: fuzz: %s\n", err[0] ? err : "a rule case's plan has no control bytes");
        else
            rc = write_case_ctl(opt_dir, name, ctl, text, n);
    }
    free(text);
    return rc;
}

/* Every rule case (rules_dir/<rule>/<case>.fc, in name order) into the format and optimizer corpora. */
static int seed_rules(const char *rules_dir, const char *fmt_dir, const char *opt_dir)
{
    struct dirent **rules;
    int nrules = scandir(rules_dir, &rules, visible, alphasort);
    if (nrules < 0) {
        fprintf(stderr, "fusecheck: fuzz: %s: cannot read the rule cases\n", rules_dir);
        return -1;
    }
    int written = 0, rc = 0;
    for (int i = 0; i < nrules; i++) {
        char sub[1300];
        snprintf(sub, sizeof sub, "%.1000s/%.255s", rules_dir, rules[i]->d_name);
        struct dirent **cases;
        int ncases = rc ? -1 : scandir(sub, &cases, visible, alphasort);
        for (int k = 0; k < ncases; k++) {
            if (!rc && strstr(cases[k]->d_name, ".fc")) {
                rc = seed_rule_case(rules[i]->d_name, sub, cases[k]->d_name, fmt_dir, opt_dir);
                written++;
            }
            free(cases[k]);
        }
        if (ncases >= 0)
            free(cases);
        free(rules[i]);
    }
    free(rules);
    return rc ? -1 : written;
}

/* Generator inputs: one motif each (count byte 0, then the motif), plain; the same with hazard bytes after; and
 * eight more each with bytes from a fixed-seed generator (variants, sizes and hazards spread wide). */
static int seed_generator(const char *opt_dir, const char *facts_dir)
{
    uint64_t rng = 0x5eed5eedULL;
    int written = 0;
    for (int m = 0; m < FUZZ_MOTIF_COUNT; m++) {
        char body[128], name[64];
        memset(body, 0, sizeof body);
        body[1] = (char)m;
        for (int k = 2; k < 64; k += 3)
            body[k] = (char)(0xe0 + k);
        snprintf(name, sizeof name, "gen-motif%02d", m);
        if (write_case(opt_dir, name, PLAIN(0), (char)(4 * m), body, 2) || write_seed(facts_dir, name, body, 2))
            return -1;
        snprintf(name, sizeof name, "gen-motif%02d-hazards", m);
        if (write_case(opt_dir, name, LANE(m), (char)(4 * m + 1), body, 64) || write_seed(facts_dir, name, body, 64))
            return -1;
        written += 2;
        for (int r = 0; r < 8; r++) {
            for (size_t k = 2; k < sizeof body; k++) {
                rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                body[k] = (char)(rng >> 56);
            }
            snprintf(name, sizeof name, "gen-motif%02d-r%d", m, r);
            if (write_case(opt_dir, name, r % 2 ? LANE(r) : PLAIN(0), (char)(4 * r), body, sizeof body) ||
                write_seed(facts_dir, name, body, sizeof body))
                return -1;
            written++;
        }
    }
    return written;
}

/* Inputs of the db harness: fields separated by NULs, with quotes, newlines, SQL and bytes that are not UTF-8. */
static int seed_db(const char *db_dir)
{
    static const char a[] = "fusecheck fuzz\0tiny\0llama\0decode\0reference\0\0fuzz_optimize\0diff:add_norm\0"
                            "\x01"
                            "add_norm\0add_norm\0[1, 2]\0\0\x02"
                            "gemv_bias\0gemv_bias\0[3]\0held\0";
    static const char b[] = "it's \"quoted\"\nand; DROP TABLE runs; --\0\xff\xfe\x80 not utf-8\0\0prefill:8\0"
                            "cuda-lane:h200:int8\0cache=f32\0h\0sig\0\x01r\0c\0[]\0the chip's reason\0";
    if (write_seed(db_dir, "plain", a, sizeof a - 1) || write_seed(db_dir, "hostile", b, sizeof b - 1))
        return -1;
    return 2;
}

/* `fuzz seeds DIR [--rules DIR]`. */
static int cmd_seeds(int argc, char **argv)
{
    const char *out = NULL, *rules_dir = "tests/rules";
    static const char *const valued[] = {"--rules", NULL};
    if (cli_last_needs_value("fuzz", argc, argv, valued))
        return CLI_USAGE;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rules") == 0 && i + 1 < argc)
            rules_dir = argv[++i];
        else if (!out && argv[i][0] != '-')
            out = argv[i];
        else
            return cli_usage_error("fuzz", "seeds: unexpected '%s'", argv[i]);
    }
    if (!out)
        return cli_usage_error("fuzz", "seeds expects the corpus directory");
    char fmt[1100], opt[1100], facts[1100], dbd[1100], gguf[1100];
    snprintf(fmt, sizeof fmt, "%.1000s/fuzz_format", out);
    snprintf(opt, sizeof opt, "%.1000s/fuzz_optimize", out);
    snprintf(facts, sizeof facts, "%.1000s/fuzz_facts", out);
    snprintf(dbd, sizeof dbd, "%.1000s/fuzz_db", out);
    snprintf(gguf, sizeof gguf, "%.1000s/fuzz_gguf", out);
    if (make_dir(out) || make_dir(fmt) || make_dir(opt) || make_dir(facts) || make_dir(dbd) || make_dir(gguf))
        return CLI_USAGE;
    int zoo = seed_zoo(fmt, opt), rules = seed_rules(rules_dir, fmt, opt), gen = seed_generator(opt, facts);
    int db = seed_db(dbd), files = seed_gguf(gguf);
    if (zoo < 0 || rules < 0 || gen < 0 || db < 0 || files < 0)
        return CLI_USAGE;
    printf("seeds: %d zoo graphs, %d rule cases, %d generator inputs, %d db inputs, %d GGUF files -> %s\n", zoo, rules,
           gen, db, files, out);
    return CLI_OK;
}

/* ── Atoms ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* Print every atom of one rule as rule:atom. */
static void print_atoms(const struct rules_rule *r)
{
    for (int i = 0; r && i < r->nguards; i++)
        printf("%s:%s\n", r->name, r->guards[i].name);
}

/* `fuzz atoms [--shim NAME]`: every guard atom of the shared table, the late rules and argmax_advance, then the
 * chip rules of the named shim. */
static int cmd_atoms(int argc, char **argv)
{
    const char *shim_name = NULL;
    static const char *const valued[] = {"--shim", NULL};
    if (cli_last_needs_value("fuzz", argc, argv, valued))
        return CLI_USAGE;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--shim") == 0 && i + 1 < argc)
            shim_name = argv[++i];
        else
            return cli_usage_error("fuzz", "atoms: unexpected '%s'", argv[i]);
    }
    int n;
    const struct rules_rule *const *t = rules_table(&n);
    for (int i = 0; i < n; i++)
        print_atoms(t[i]);
    t = rules_late(&n);
    for (int i = 0; i < n; i++)
        print_atoms(t[i]);
    print_atoms(rules_advance());
    if (shim_name) {
        char err[IR_ERR_LEN];
        struct shim *s = shim_lookup(shim_name, err);
        if (!s)
            return cli_usage_error("fuzz", "%s", err);
        for (int i = 0; i < s->nrules; i++)
            print_atoms((const struct rules_rule *)s->rules[i].rule);
        shim_free(s);
    }
    return CLI_OK;
}

/* ── Logging a campaign ──────────────────────────────────────────────────────────────────────────────────── */

/* Parse a non-negative integer argument (one past the int64 range is refused, not saturated). */
static int parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || v < 0 || errno == ERANGE)
        return 1;
    *out = v;
    return 0;
}

/* Parse a non-negative, finite number of seconds. */
static int parse_secs(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || !isfinite(v))
        return 1;
    *out = v;
    return 0;
}

/* Whether s is a sha256 as fusecheck writes one: 64 lowercase hex digits. */
static bool sha256_text(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

/* Whether rule r has an atom named atom. */
static bool has_atom(const struct rules_rule *r, const char *rule, const char *atom)
{
    if (!r || strcmp(r->name, rule) != 0)
        return false;
    for (int i = 0; i < r->nguards; i++)
        if (strcmp(r->guards[i].name, atom) == 0)
            return true;
    return false;
}

/* Whether rule:atom names a guard atom fusecheck has: of the shared table, the late rules, argmax_advance, or the
 * CUDA lane's chip rules. */
static bool atom_known(const char *rule, const char *atom)
{
    int n;
    const struct rules_rule *const *t = rules_table(&n);
    for (int i = 0; i < n; i++)
        if (has_atom(t[i], rule, atom))
            return true;
    t = rules_late(&n);
    for (int i = 0; i < n; i++)
        if (has_atom(t[i], rule, atom))
            return true;
    if (has_atom(rules_advance(), rule, atom) || has_atom(&rules_rule_fused_quant, rule, atom))
        return true;
    char err[IR_ERR_LEN];
    struct shim *s = shim_lookup("cuda-lane:h200:int8", err);
    bool found = false;
    for (int i = 0; s && i < s->nrules && !found; i++)
        found = has_atom((const struct rules_rule *)s->rules[i].rule, rule, atom);
    shim_free(s);
    return found;
}


/* The arguments of a logging subcommand: --db FILE taken out, the rest in order. */
struct log_args {
    const char *db;
    const char *arg[8];
    int n;
};

/* Split a logging subcommand's arguments; 0 on success. */
static int log_args(int argc, char **argv, struct log_args *a)
{
    a->db = "results.db";
    a->n = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
            a->db = argv[++i];
        else if (a->n < 8)
            a->arg[a->n++] = argv[i];
        else
            return 1;
    }
    return 0;
}

/* Open the db of a logging subcommand; NULL with the error printed. */
static struct db *open_db(const char *path)
{
    struct db *db;
    char err[DB_ERR_LEN];
    if (db_open(path, &db, err)) {
        fprintf(stderr, "fusecheck: fuzz: %s\n", err);
        return NULL;
    }
    return db;
}

/* open_db, refusing a run the file does not hold or one that ended already (NULL with a message: nothing is logged
 * against it). */
static struct db *open_db_run(const char *path, int64_t run)
{
    struct db *db = open_db(path);
    char status[16] = "", err[DB_ERR_LEN];
    if (db && (db_run_status(db, run, status, err) || strcmp(status, "incomplete") != 0)) {
        if (!status[0])
            fprintf(stderr, "fusecheck: fuzz: %s: no run %lld\n", path, (long long)run);
        else
            fprintf(stderr, "fusecheck: fuzz: %s: run %lld ended already (%s): nothing more is logged to it\n", path,
                    (long long)run, status);
        db_close(db);
        return NULL;
    }
    return db;
}

/* The optimizer a fuzz run checks, when not fusecheck's own in process: its command started once to read the name
 * and version it greets with (into name and version). 0, or -1 with the error printed. */
static int greeted_optimizer(const char *command, char name[128], char version[128])
{
    enum rules_external_fault fault;
    char err[IR_ERR_LEN];
    struct rules_external *x = rules_external_start(command, NULL, &fault, err);
    if (!x) {
        fprintf(stderr, "fusecheck: fuzz: begin --optimizer '%s': %s: %s\n", command,
                rules_external_fault_meaning(fault), err);
        return -1;
    }
    snprintf(name, 128, "%s", rules_external_name(x));
    snprintf(version, 128, "%s", rules_external_version(x));
    rules_external_stop(x);
    return 0;
}

/* `fuzz begin [--command TEXT] [--optimizer CMD]`: a new run of kind fuzz, of fusecheck's own optimizer or of the
 * one CMD starts (its name and version from its greeting); prints its id. */
static int cmd_begin(const struct log_args *a)
{
    const char *command = "fuzz/campaign", *optimizer = NULL;
    for (int i = 0; i < a->n; i += 2) {
        if (i + 1 < a->n && strcmp(a->arg[i], "--command") == 0)
            command = a->arg[i + 1];
        else if (i + 1 < a->n && strcmp(a->arg[i], "--optimizer") == 0)
            optimizer = a->arg[i + 1];
        else
            return cli_usage_error("fuzz", "begin takes only --command TEXT, --optimizer CMD and --db FILE");
    }
    char name[128], version[128];
    if (optimizer && greeted_optimizer(optimizer, name, version))
        return CLI_USAGE;
    struct db *db = open_db(a->db);
    if (!db)
        return CLI_USAGE;
    char rev[64], host[128] = "", err[DB_ERR_LEN];
    cli_git_revision(rev, sizeof rev);
    gethostname(host, sizeof host - 1);
    struct db_run_info info = {.kind = "fuzz", .command = command, .git_rev = rev[0] ? rev : NULL,
                               .host = host, .version = FUSECHECK_VERSION,
                               .optimizer_name = optimizer ? name : NULL,
                               .optimizer_version = optimizer ? version : NULL,
                               .optimizer_command = optimizer};
    int64_t run;
    int rc = db_run_begin(db, &info, &run, err);
    if (rc)
        fprintf(stderr, "fusecheck: fuzz: %s\n", err);
    else
        printf("%lld\n", (long long)run);
    db_close(db);
    return rc ? CLI_USAGE : CLI_OK;
}

/* Run one write in its own transaction; 0 on success, the error printed. */
static int logged(struct db *db, int rc, char err[DB_ERR_LEN])
{
    if (rc) {
        db_rollback(db);
        fprintf(stderr, "fusecheck: fuzz: %s\n", err);
        return CLI_USAGE;
    }
    if (db_commit(db, err)) {
        fprintf(stderr, "fusecheck: fuzz: %s\n", err);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* `fuzz stat RUN HARNESS EXECUTIONS SECONDS CORPUS COVERAGE`. */
static int cmd_stat(const struct log_args *a)
{
    struct db_fuzz_stat s;
    if (a->n != 6 || parse_int(a->arg[0], &s.run) || parse_int(a->arg[2], &s.executions) ||
        parse_secs(a->arg[3], &s.seconds) || parse_int(a->arg[4], &s.corpus) || parse_int(a->arg[5], &s.coverage))
        return cli_usage_error("fuzz", "stat expects RUN HARNESS EXECUTIONS SECONDS CORPUS COVERAGE");
    s.harness = a->arg[1];
    struct db *db = open_db_run(a->db, s.run);
    if (!db)
        return CLI_USAGE;
    char err[DB_ERR_LEN];
    int rc = db_begin(db, err);
    rc = rc ? (fprintf(stderr, "fusecheck: fuzz: %s\n", err), CLI_USAGE) : logged(db, db_fuzz_stat(db, &s, err), err);
    db_close(db);
    return rc;
}

/* `fuzz finding RUN HARNESS SIGNATURE SHA256`. */
static int cmd_finding(const struct log_args *a)
{
    int64_t run;
    if (a->n != 4 || parse_int(a->arg[0], &run) || !sha256_text(a->arg[3]))
        return cli_usage_error("fuzz", "finding expects RUN HARNESS SIGNATURE SHA256 (64 lowercase hex digits)");
    struct db *db = open_db_run(a->db, run);
    if (!db)
        return CLI_USAGE;
    char err[DB_ERR_LEN];
    int rc = db_begin(db, err);
    rc = rc ? (fprintf(stderr, "fusecheck: fuzz: %s\n", err), CLI_USAGE)
            : logged(db, db_fuzz_finding(db, run, a->arg[1], a->arg[2], a->arg[3], err), err);
    db_close(db);
    return rc;
}

/* `fuzz mutant RUN RULE:ATOM killed|survived SECONDS BUDGET [SIGNATURE [SHA256]]`: a proofs row of obligation
 * fuzz-kill:<atom>, verdict proved (the fuzzer showed the atom needed: a graph the mutant gets wrong) or unknown
 * (not within the budget). */
static int cmd_mutant(const struct log_args *a)
{
    int64_t run, budget;
    double secs;
    bool killed = a->n >= 3 && strcmp(a->arg[2], "killed") == 0;
    const char *colon = a->n >= 2 ? strchr(a->arg[1], ':') : NULL;
    if (a->n < 5 || a->n > 7 || parse_int(a->arg[0], &run) || !colon ||
        (!killed && strcmp(a->arg[2], "survived") != 0) || parse_secs(a->arg[3], &secs) ||
        parse_int(a->arg[4], &budget))
        return cli_usage_error("fuzz",
                               "mutant expects RUN RULE:ATOM killed|survived SECONDS BUDGET [SIGNATURE [SHA256]]");
    char rule[256], obligation[300];
    snprintf(rule, sizeof rule, "%.*s", (int)(colon - a->arg[1]), a->arg[1]);
    if (!atom_known(rule, colon + 1))
        return cli_usage_error("fuzz", "mutant: '%s' is no guard atom (fusecheck fuzz atoms lists them)", a->arg[1]);
    if (a->n > 6 && a->arg[6][0] && !sha256_text(a->arg[6]))
        return cli_usage_error("fuzz", "mutant: '%s' is no sha256 (64 lowercase hex digits)", a->arg[6]);
    snprintf(obligation, sizeof obligation, "fuzz-kill:%s", colon + 1);
    struct db_proof p = {run,
                         rule,
                         obligation,
                         budget,
                         killed ? "proved" : "unknown",
                         killed ? (a->n > 5 ? a->arg[5] : "killed") : "not killed within the budget",
                         killed && a->n > 6 && a->arg[6][0] ? a->arg[6] : NULL,
                         secs * 1e3,
                         "z3",
                         NULL,
                         0,
                         false};
    struct db *db = open_db_run(a->db, run);
    if (!db)
        return CLI_USAGE;
    char err[DB_ERR_LEN];
    int rc = db_begin(db, err);
    rc = rc ? (fprintf(stderr, "fusecheck: fuzz: %s\n", err), CLI_USAGE) : logged(db, db_proof(db, &p, err), err);
    db_close(db);
    return rc;
}

/* The options of `fuzz code-mutant`. */
struct code_mutant_args {
    const char *db, *id, *outcome, *killed_by, *original, *mutated, *run, *seconds;
};

/* Parse `fuzz code-mutant`'s options into a; 0 on success. */
static int code_mutant_args(int argc, char **argv, struct code_mutant_args *a)
{
    static const char *const names[] = {"--db", "--run", "--id", "--outcome", "--killed-by", "--original",
                                        "--mutated", "--seconds"};
    const char **slots[] = {&a->db, &a->run, &a->id, &a->outcome, &a->killed_by, &a->original, &a->mutated,
                            &a->seconds};
    memset(a, 0, sizeof *a);
    a->db = "results.db";
    a->seconds = "0";
    a->original = a->mutated = "";
    for (int i = 1; i < argc; i++) {
        size_t k = 0;
        while (k < sizeof names / sizeof names[0] && strcmp(argv[i], names[k]) != 0)
            k++;
        if (k == sizeof names / sizeof names[0] || i + 1 >= argc)
            return 1;
        *slots[k] = argv[++i];
    }
    return !a->run || !a->id || !a->outcome;
}

/* Split a mutant id file:line:col:operator into its file (into file), line and operator (pointing into id); 0 on
 * success. */
static int split_mutant_id(const char *id, char *file, size_t cap, int64_t *line, const char **op)
{
    const char *c1 = strchr(id, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
    if (!c3 || c1 == id || !c3[1] || (size_t)(c1 - id) >= cap)
        return 1;
    char num[32];
    snprintf(num, sizeof num, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
    snprintf(file, cap, "%.*s", (int)(c1 - id), id);
    *op = c3 + 1;
    return parse_int(num, line) || *line < 1;
}

/* Whether s is one of a code mutant's outcomes. */
static bool code_mutant_outcome(const char *s)
{
    return !strcmp(s, "killed") || !strcmp(s, "survived") || !strcmp(s, "stillborn") || !strcmp(s, "timeout");
}

/* `fuzz code-mutant --run N --id FILE:LINE:COL:OP --outcome killed|survived|stillborn|timeout [--killed-by CHECK]
 * [--seconds S] [--original TEXT] [--mutated TEXT] [--db FILE]`: a code_mutants row. */
static int cmd_code_mutant(int argc, char **argv)
{
    static const char usage[] = "code-mutant expects --run N --id FILE:LINE:COL:OPERATOR --outcome "
                                "killed|survived|stillborn|timeout [--killed-by CHECK] [--seconds S] "
                                "[--original TEXT] [--mutated TEXT] [--db FILE]";
    struct code_mutant_args a;
    struct db_code_mutant m = {0};
    char file[1024];
    static const char *const valued[] = {"--db", "--run", "--id", "--outcome", "--killed-by", "--original",
                                         "--mutated", "--seconds", NULL};
    if (cli_last_needs_value("fuzz", argc, argv, valued))
        return CLI_USAGE;
    if (code_mutant_args(argc, argv, &a) || parse_int(a.run, &m.run) || parse_secs(a.seconds, &m.seconds) ||
        split_mutant_id(a.id, file, sizeof file, &m.line, &m.op) || !code_mutant_outcome(a.outcome))
        return cli_usage_error("fuzz", "%s", usage);
    bool kills = !strcmp(a.outcome, "killed") || !strcmp(a.outcome, "timeout");
    if (kills != (a.killed_by != NULL))
        return cli_usage_error("fuzz", "code-mutant: --killed-by goes with killed and timeout, and only with them");
    m.mutant = a.id;
    m.file = file;
    m.original = a.original;
    m.mutated = a.mutated;
    m.outcome = a.outcome;
    m.killed_by = a.killed_by;
    struct db *db = open_db_run(a.db, m.run);
    if (!db)
        return CLI_USAGE;
    char err[DB_ERR_LEN];
    int rc = db_begin(db, err);
    rc = rc ? (fprintf(stderr, "fusecheck: fuzz: %s\n", err), CLI_USAGE) : logged(db, db_code_mutant(db, &m, err), err);
    db_close(db);
    return rc;
}

/* `fuzz end RUN complete|failed|interrupted` (interrupted: the campaign stopped on a signal before its time). */
static int cmd_end(const struct log_args *a)
{
    int64_t run;
    if (a->n != 2 || parse_int(a->arg[0], &run) ||
        (strcmp(a->arg[1], "complete") && strcmp(a->arg[1], "failed") && strcmp(a->arg[1], "interrupted")))
        return cli_usage_error("fuzz", "end expects RUN complete|failed|interrupted");
    struct db *db = open_db_run(a->db, run);
    if (!db)
        return CLI_USAGE;
    char err[DB_ERR_LEN];
    int rc = db_run_end(db, run, a->arg[1], err);
    if (rc)
        fprintf(stderr, "fusecheck: fuzz: %s\n", err);
    db_close(db);
    return rc ? CLI_USAGE : CLI_OK;
}

/* A logging subcommand: its name and entry point. */
struct log_cmd {
    const char *name;
    int (*run)(const struct log_args *a);
};

static const struct log_cmd log_cmds[] = {
    {"begin", cmd_begin}, {"stat", cmd_stat}, {"finding", cmd_finding}, {"mutant", cmd_mutant}, {"end", cmd_end},
};

int cli_cmd_fuzz(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("fuzz", "expected seeds, atoms, begin, stat, finding, mutant, code-mutant or end");
    if (strcmp(argv[1], "code-mutant") == 0)
        return cmd_code_mutant(argc - 1, argv + 1);
    if (strcmp(argv[1], "seeds") == 0)
        return cmd_seeds(argc - 1, argv + 1);
    if (strcmp(argv[1], "atoms") == 0)
        return cmd_atoms(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof log_cmds / sizeof log_cmds[0]; i++) {
        if (strcmp(argv[1], log_cmds[i].name) != 0)
            continue;
        struct log_args a;
        static const char *const valued[] = {"--db", "--command", NULL};
        if (cli_last_needs_value("fuzz", argc - 1, argv + 1, valued))
            return CLI_USAGE;
        if (log_args(argc - 1, argv + 1, &a))
            return cli_usage_error("fuzz", "%s: too many arguments", argv[1]);
        return log_cmds[i].run(&a);
    }
    return cli_usage_error("fuzz", "unknown subcommand '%s'", argv[1]);
}
