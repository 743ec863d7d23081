/* cli/cmd_crosscheck.c — fusecheck crosscheck: a GGUF file and a token sequence through the evaluator and through
 * llama.cpp, compared position by position (largest difference, relative error, NMSE, top-1), held to the bound of
 * the file's matrices' format, logged to results.db. A zoo model or a config.json is exported to a GGUF file first
 * (its seeded weights, in each format asked), so both run the very same bytes; every model, format and mode asked is
 * one check of one run. */
#include "cli.h"
#include "cli/progress.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"

/* The NMSE a position is held to where both sides compute the same arithmetic in f32 and differ by the order of
 * their sums alone (docs/numerics.md, "Against llama.cpp"). */
#define CROSS_BOUND_EXACT 1e-10
/* The same where the graph has a GELU: ggml's CPU GELU reads a table of f16 values at the f16-rounded input. */
#define CROSS_BOUND_GELU 1e-6

/* How llama.cpp's CPU backend takes the activations of a product by a matrix of a block format: whether the
 * evaluator can quantize them as llama.cpp does (q8_0 activations of q8_0 and q4_0 matrices), and the NMSE the
 * rounding of those activations implies (f16, bf16, q8_0, q8_K; 0: none, f32 products): with the rounding emulated
 * the codes still flip where the two sides' activations differ by an ulp at a rounding boundary. */
struct cross_format {
    const char *weights;
    bool q8_activations;
    double rounded_bound;
};
static const struct cross_format cross_formats[] = {
    {"f32", false, 0},       {"f16", false, 1e-5},    {"bf16", false, 5e-4},
    {"q8_0", true, 2e-3},    {"q4_0", true, 2e-3},    {"q4_k", false, 2e-3},
    {"q6_k", false, 2e-3},
};

/* The row of the file's weight format (the last row, q6_k's, for a format not listed). */
static const struct cross_format *cross_format_of(const char *weights)
{
    size_t n = sizeof cross_formats / sizeof cross_formats[0];
    for (size_t i = 0; i < n; i++)
        if (strcmp(cross_formats[i].weights, weights) == 0)
            return &cross_formats[i];
    return &cross_formats[n - 1];
}

/* The most block formats one run exports each model in. */
#define CROSS_MAX_WEIGHTS 8

/* What crosscheck was asked. */
struct cross_args {
    struct cli_lift lift;  /* --layers and --ctx of an export */
    char **models;         /* the MODEL arguments (none: every tiny zoo model) */
    int nmodels;
    enum ir_format weights[CROSS_MAX_WEIGHTS]; /* --weights, each a check (none: the lift's default) */
    int nweights;
    bool decode, prefill;  /* --mode (none: decode) */
    bool progress;         /* progress lines on stderr (cli/progress.h); --no-progress clears it */
    uint64_t seed;
    int32_t *tokens;       /* --tokens (ntokens of them), or NULL: count drawn from the seed for each model */
    int32_t ntokens, count;
    const char *db;
    const char *keep;
    double bound;          /* 0: the format's */
    int activations;       /* -1: as llama.cpp computes the file's products; 0: f32; 1: q8_0 */
};

/* Where a run's rows go (the db, NULL: none; the run) and its tally of checks. */
struct cross_log {
    struct db *db;
    int64_t run;
    int checks, off;
    struct cli_progress progress; /* over its steps: each file's export, each check's two sides */
    long steps;                   /* the steps begun */
};

/* One position's comparison. */
struct cross_row {
    double max_abs, rel, nmse;
    int32_t top_f, top_l;
    bool near_tie; /* fusecheck's top two logits closer than twice the largest difference */
    bool pass;
};

/* The comparison of a whole run. */
struct cross_result {
    const char *model, *family, *weights;
    char sha[65];
    struct cross_row *rows;
    int32_t n, failed, first_off, agree; /* positions, those off, the first off, those whose top-1 agrees */
    double bound, worst;                  /* the bound, the worst NMSE */
    bool rounded; /* llama.cpp rounds the products' activations: a statistical bound */
};

/* Parse --mode for a crosscheck: decode (a step a token) or prefill (one chunk); repeatable. 0, or CLI_USAGE. */
static int cross_mode(struct cross_args *a, const char *s)
{
    if (strcmp(s, "decode") == 0 || strcmp(s, "prefill") == 0) {
        a->decode |= s[0] == 'd';
        a->prefill |= s[0] == 'p';
        return 0;
    }
    return cli_usage_error("crosscheck", "--mode expects decode or prefill, got '%s'", s);
}

/* Parse --weights: a block format, repeatable. 0, or CLI_USAGE. */
static int cross_weights(struct cross_args *a, const char *s)
{
    int f = ir_format_lookup(s, strlen(s));
    if (f < 0)
        return cli_usage_error("crosscheck", "--weights expects a block format (f32, f16, bf16, q8_0, q4_0, q4_k, "
                               "q6_k), got '%s'", s);
    if (a->nweights == CROSS_MAX_WEIGHTS)
        return cli_usage_error("crosscheck", "--weights given more than %d times", CROSS_MAX_WEIGHTS);
    a->weights[a->nweights++] = (enum ir_format)f;
    return 0;
}

/* Parse --bound: a positive finite NMSE. 0, or CLI_USAGE. */
static int cross_bound(struct cross_args *a, const char *s)
{
    char *end;
    errno = 0;
    a->bound = strtod(s, &end);
    if (errno || *end || end == s || !(a->bound > 0) || !isfinite(a->bound))
        return cli_usage_error("crosscheck", "--bound expects a positive NMSE, got '%s'", s);
    return 0;
}

/* Apply one option; 0, or CLI_USAGE with the message printed. */
static int cross_option(struct cross_args *a, int c, const char *arg, const char *given)
{
    switch (c) {
    case 's':
        return cli_parse_seed(arg, &a->seed)
                   ? cli_usage_error("crosscheck", "--seed expects an integer in 0..18446744073709551615, got '%s'", arg)
                   : 0;
    case 't':
        free(a->tokens);
        a->tokens = NULL;
        return cli_parse_tokens(arg, &a->tokens, &a->ntokens)
                   ? cli_usage_error("crosscheck", "--tokens expects token ids separated by commas, got '%s'", arg)
                   : 0;
    case 'n':
        return cli_parse_count(arg, &a->count) || a->count > MODELS_MAX_ROWS
                   ? cli_usage_error("crosscheck", "--count expects a count in 1..%d, got '%s'", MODELS_MAX_ROWS, arg)
                   : 0;
    case 'M': return cross_mode(a, arg);
    case 'w': return cross_weights(a, arg);
    case 'd': a->db = arg; return 0;
    case 'K': a->keep = arg; return 0;
    case 'P': a->progress = false; return 0;
    case 'b': return cross_bound(a, arg);
    case 'a':
        a->activations = strcmp(arg, "q8_0") == 0 ? 1 : strcmp(arg, "f32") == 0 ? 0 : -2;
        return a->activations == -2
                   ? cli_usage_error("crosscheck", "--activations expects q8_0 or f32, got '%s'", arg)
                   : 0;
    }
    int r = cli_lift_code(&a->lift, c, arg);
    if (r == -1)
        return cli_usage_error("crosscheck", "unknown option '%s'", given);
    return r ? CLI_USAGE : 0;
}

/* Parse the command line into a; 0, or CLI_USAGE. */
static int cross_parse(int argc, char **argv, struct cross_args *a)
{
    static const struct option opts[] = {
        {"layers", required_argument, NULL, 'l'}, {"weights", required_argument, NULL, 'w'},
        {"ctx", required_argument, NULL, 'C'},    {"seed", required_argument, NULL, 's'},
        {"tokens", required_argument, NULL, 't'}, {"count", required_argument, NULL, 'n'},
        {"mode", required_argument, NULL, 'M'},   {"db", required_argument, NULL, 'd'},
        {"keep", required_argument, NULL, 'K'},   {"bound", required_argument, NULL, 'b'},
        {"activations", required_argument, NULL, 'a'}, {"no-progress", no_argument, NULL, 'P'}, {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->lift = cli_lift_defaults();
    a->seed = 1;
    a->count = 24;
    a->activations = -1;
    a->progress = true;
    bool counted = false;
    optind = 1;
    opterr = 0;
    int rc = 0;
    for (int c; !rc && (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        rc = c == '?' ? cli_option_error("crosscheck", opts, "", argv) : cross_option(a, c, optarg, argv[optind - 1]);
        counted |= c == 'n';
    }
    if (!rc && counted && a->tokens)
        rc = cli_usage_error("crosscheck", "--tokens gives the sequence, --count the length of one drawn: not both");
    a->models = argv + optind;
    a->nmodels = argc - optind;
    a->decode |= !a->prefill;
    if (!rc && a->keep && (a->nmodels != 1 || a->nweights > 1))
        rc = cli_usage_error("crosscheck", "--keep keeps the one file of one MODEL in one format");
    return rc;
}

/* Export model c (lifted decode under a's --layers and --ctx, in format w, weights from a's seed) to a GGUF file at
 * path. 0, or -1 with err. */
static int export_model(const struct models_config *c, const struct cross_args *a, enum ir_format w, const char *path,
                        char err[IR_ERR_LEN])
{
    struct models_options o = a->lift.options;
    o.mode = (struct models_mode){MODELS_DECODE, 1};
    o.weights = w;
    struct ir_graph *g = models_lift(c, &o, err);
    ir_values_use_gguf(NULL); /* the seed's weights, not those of a file checked before */
    struct ir_values *v = g ? ir_values_new(g, a->seed, err) : NULL;
    int rc = v ? models_gguf_export(c, g, v, path, err) : -1;
    ir_values_free(v);
    ir_graph_free(g);
    return rc;
}

/* The name of the block format of the file's token embedding (what `export --weights` chose), or "mixed". */
static const char *file_weights(const struct ir_gguf *f)
{
    const struct ir_gguf_tensor *t = ir_gguf_find_tensor(f, "token_embd.weight");
    return t && t->format >= 0 ? ir_format_name((enum ir_format)t->format) : "mixed";
}

/* Compare one position's logits: fusecheck's f against llama.cpp's l, vocab values each; under a statistical bound
 * a top-1 that differs within a near tie passes. */
static struct cross_row compare_row(const float *f, const float *l, int64_t vocab, double bound, bool rounded)
{
    struct cross_row r = {0};
    double se = 0, ss = 0, lmax = 0;
    for (int64_t i = 0; i < vocab; i++) {
        double d = (double)f[i] - (double)l[i];
        r.max_abs = fmax(r.max_abs, fabs(d));
        lmax = fmax(lmax, fabs((double)l[i]));
        se += d * d;
        ss += (double)l[i] * (double)l[i];
    }
    r.rel = lmax > 0 ? r.max_abs / lmax : r.max_abs;
    r.nmse = ss > 0 ? se / ss : se;
    int32_t top2[2];
    cli_logits_top(f, vocab, 2, top2);
    r.top_f = top2[0];
    cli_logits_top(l, vocab, 1, &r.top_l);
    r.near_tie = top2[1] >= 0 && (double)f[top2[0]] - (double)f[top2[1]] <= 2 * r.max_abs;
    bool top_ok = r.top_f == r.top_l || (rounded && r.near_tie);
    r.pass = isfinite(r.nmse) && r.nmse <= bound && top_ok;
    return r;
}

/* Compare the two runs position by position into res. */
static int compare_runs(const struct cli_logits *f, const struct cli_llama_run *l, bool rounded,
                        struct cross_result *res)
{
    res->rows = calloc((size_t)f->n, sizeof *res->rows);
    if (!res->rows)
        return -1;
    res->n = f->n;
    res->first_off = -1;
    for (int32_t i = 0; i < f->n; i++) {
        size_t at = (size_t)i * (size_t)f->vocab;
        res->rows[i] = compare_row(f->v + at, l->logits + at, f->vocab, res->bound, rounded);
        const struct cross_row *x = &res->rows[i];
        res->worst = fmax(res->worst, x->nmse);
        res->agree += x->top_f == x->top_l;
        if (!x->pass && res->failed++ == 0)
            res->first_off = i;
    }
    return 0;
}

/* Print the comparison: a line a position, then the verdict naming the model and the first position off. */
static void print_result(const struct cross_result *r, const int32_t *tokens, bool prefill)
{
    const char *mode = prefill ? "prefill" : "decode";
    printf("crosscheck %s (%s) %s %s against %s: NMSE bound %.3g%s\n", r->model, r->family, r->weights, mode,
           cli_llama_version(), r->bound, r->rounded ? " (rounded activations)" : "");
    printf("%8s %8s %12s %12s %12s %8s %8s  %s\n", "position", "token", "max_abs", "rel", "nmse", "top1", "llama",
           "verdict");
    for (int32_t i = 0; i < r->n; i++) {
        const struct cross_row *x = &r->rows[i];
        printf("%8d %8d %12.4g %12.4g %12.4g %8d %8d  %s\n", i, tokens[i], x->max_abs, x->rel, x->nmse, x->top_f,
               x->top_l, x->pass ? (x->top_f == x->top_l ? "ok" : "ok (near tie)") : "FAIL");
    }
    if (r->failed)
        printf("crosscheck: FAIL %s (%s) %s %s: %d of %d positions off, the first at position %d (worst NMSE %.3g, "
               "top-1 %d of %d)\n", r->model, r->family, r->weights, mode, r->failed, r->n, r->first_off, r->worst,
               r->agree, r->n);
    else
        printf("crosscheck: pass %s (%s) %s %s: %d positions, worst NMSE %.3g, top-1 %d of %d\n", r->model, r->family,
               r->weights, mode, r->n, r->worst, r->agree, r->n);
}

/* Record one check's rows in the run, in one transaction. 0, or -1 with err. */
static int log_result(const struct cross_log *log, const struct cross_result *r, const int32_t *tokens, bool prefill,
                      char err[DB_ERR_LEN])
{
    if (!log->db)
        return 0;
    int rc = db_begin(log->db, err);
    for (int32_t i = 0; !rc && i < r->n; i++) {
        const struct cross_row *x = &r->rows[i];
        struct db_crosscheck row = {log->run, r->model,  r->family,   r->sha,     r->weights, prefill ? "prefill" : "decode",
                                    cli_llama_version(),  i,         tokens[i],   x->top_f,   x->top_l,
                                    x->max_abs,          x->rel,     x->nmse,     r->bound,   x->pass};
        rc = db_crosscheck(log->db, &row, err);
    }
    rc = rc || db_commit(log->db, err);
    if (rc)
        db_rollback(log->db);
    return rc ? -1 : 0;
}

/* Open the db at path and begin a run of kind crosscheck. 0, or -1 with err. */
static int log_open(const char *path, int argc, char **argv, struct cross_log *log, char err[DB_ERR_LEN])
{
    memset(log, 0, sizeof *log);
    if (!path)
        return 0;
    if (db_open(path, &log->db, err))
        return -1;
    char rev[64], host[128] = "", *command = cli_command_line(argc, argv);
    cli_git_revision(rev, sizeof rev);
    gethostname(host, sizeof host - 1);
    struct db_run_info info = {.kind = "crosscheck", .command = command, .git_rev = rev[0] ? rev : NULL,
                               .host = host, .version = FUSECHECK_VERSION};
    int rc = db_run_begin(log->db, &info, &log->run, err);
    free(command);
    return rc ? -1 : 0;
}

/* End the run (complete, or failed when a check could not be made) and close the db. 0, or -1 with err. */
static int log_close(struct cross_log *log, bool failed, char err[DB_ERR_LEN])
{
    if (!log->db)
        return 0;
    int rc = db_run_end(log->db, log->run, cli_interrupted() ? "interrupted" : failed ? "failed" : "complete", err);
    db_close(log->db);
    log->db = NULL;
    return rc ? -1 : 0;
}

/* Whether g holds a GELU. */
static bool has_gelu(const struct ir_graph *g)
{
    for (int32_t i = 0; i < g->nops; i++)
        if (g->ops[i].spec.kind == IR_KIND_GELU)
            return true;
    return false;
}

/* One check's sequence: the tokens given, or n drawn from the seed below the model's vocabulary. */
struct cross_tokens {
    int32_t *t;
    int32_t n;
};

/* Lift the file (decode, or a prefill chunk of every row's logits), run the tokens through it, its products'
 * activations q8_0 or not; *gelu whether the graph has a GELU. 0, or -1 with err. */
static int run_fusecheck(const struct models_config *c, const struct cross_args *a, const struct cross_tokens *tk,
                         bool prefill, bool q8, struct cli_logits *out, bool *gelu, char err[IR_ERR_LEN])
{
    struct models_options o = models_default_options();
    o.ctx = a->lift.options.ctx;
    o.mode = prefill ? (struct models_mode){MODELS_PREFILL, tk->n} : (struct models_mode){MODELS_DECODE, 1};
    o.every_row_logits = prefill;
    if (o.ctx == 0 && c->ctx < tk->n)
        o.ctx = tk->n; /* room for the whole sequence, as llama.cpp's context is made */
    struct ir_graph *g = cli_lift_config(c, &o, err);
    *gelu = g && has_gelu(g);
    int rc = g && cli_eval_tokens(g, a->seed, prefill, q8, tk->t, tk->n, out, err) == 0 ? 0 : -1;
    ir_graph_free(g);
    return rc;
}

/* The worse of two outcomes: usage over failed over ok. */
static int worse(int a, int b) { return a > b ? a : b; }

/* A zoo model or config.json exported from the seed: the config and block format its file was written from. */
struct cross_seeded {
    const struct models_config *c;
    enum ir_format weights;
};

/* Lift the model as it was exported (its config, a's lift options, the format written) with the seed's values, not
 * read back from its file, and run the tokens through it: where the evaluator's own weights (a tied head bound to
 * the embedding, every seeded tensor) meet llama.cpp, which reads only what the export wrote. 0, or -1 with err. */
static int run_seeded(const struct cross_seeded *s, const struct cross_args *a, const struct cross_tokens *tk,
                      bool prefill, bool q8, struct cli_logits *out, char err[IR_ERR_LEN])
{
    struct models_options o = a->lift.options;
    o.mode = prefill ? (struct models_mode){MODELS_PREFILL, tk->n} : (struct models_mode){MODELS_DECODE, 1};
    o.every_row_logits = prefill;
    o.weights = s->weights;
    if (o.ctx == 0 && s->c->ctx < tk->n)
        o.ctx = tk->n;
    ir_values_use_gguf(NULL);
    struct ir_graph *g = models_lift(s->c, &o, err);
    int rc = g && cli_eval_tokens(g, a->seed, prefill, q8, tk->t, tk->n, out, err) == 0 ? 0 : -1;
    ir_graph_free(g);
    return rc;
}

/* Hold the seeded model's logits to llama.cpp's under res's bound: CLI_OK, or CLI_FAILED with the first position off
 * (or why it could not run) printed. */
static int check_seeded(const struct cross_seeded *s, const struct cross_args *a, const struct cross_tokens *tk,
                        bool prefill, bool q8, const struct cli_llama_run *ll, const struct cross_result *res)
{
    struct cli_logits fs = {0};
    struct cross_result sr = {.bound = res->bound, .first_off = -1};
    char err[IR_ERR_LEN];
    const char *mode = prefill ? "prefill" : "decode";
    int rc = run_seeded(s, a, tk, prefill, q8, &fs, err) == 0 ? CLI_OK : CLI_FAILED;
    if (rc == CLI_OK && (fs.vocab != ll->vocab || fs.n != res->n))
        rc = (snprintf(err, sizeof err, "its run has another shape than the file's"), CLI_FAILED);
    if (rc == CLI_OK && compare_runs(&fs, ll, res->rounded, &sr) != 0)
        rc = (snprintf(err, sizeof err, "out of memory"), CLI_FAILED);
    if (rc != CLI_OK)
        printf("crosscheck: FAIL %s (%s) %s %s: the model's own values: %s\n", res->model, res->family, res->weights,
               mode, err);
    else if (sr.failed) {
        printf("crosscheck: FAIL %s (%s) %s %s: the model's own values (lifted from its config, not read back from "
               "the file) are off at %d of %d positions, the first at position %d (NMSE %.3g; worst %.3g)\n",
               res->model, res->family, res->weights, mode, sr.failed, sr.n, sr.first_off,
               sr.rows[sr.first_off].nmse, sr.worst);
        rc = CLI_FAILED;
    } else
        printf("crosscheck: the model's own values agree too: worst NMSE %.3g, top-1 %d of %d\n", sr.worst,
               sr.agree, sr.n);
    free(sr.rows);
    cli_logits_free(&fs);
    return rc;
}

/* The bound a check is held to and whether it is statistical, from the file's format and the graph. */
static void choose_bound(const struct cross_args *a, const struct cross_format *fmt, bool gelu,
                         struct cross_result *res)
{
    res->rounded = fmt->rounded_bound > 0;
    res->bound = a->bound > 0 ? a->bound
                 : res->rounded ? fmt->rounded_bound
                 : gelu ? CROSS_BOUND_GELU
                        : CROSS_BOUND_EXACT;
}

/* Begin the next step (the one after log->steps steps): its progress shown (the rows printed so far go out first,
 * so a log holds them before the line that counts them). */
static void step(struct cross_log *log, const char *model, const char *weights, const char *what)
{
    char next[256];
    snprintf(next, sizeof next, "%.100s %.16s %s", model, weights, what);
    if (log->progress.kind != CLI_PROGRESS_OFF)
        fflush(stdout);
    cli_progress_update(&log->progress, log->steps++, next);
}

/* One check: the file at path (model c) in one mode through both sides, compared, printed, logged. CLI_OK,
 * CLI_FAILED (a position off, or a side that could not run it), or CLI_USAGE. */
static int check_one(const struct cross_args *a, const char *path, const struct models_config *c,
                     const struct cross_seeded *seeded, const struct cross_tokens *tk, bool prefill,
                     struct cross_log *log)
{
    const struct ir_gguf *f = cli_model_gguf(c);
    struct cross_result res = {.model = c->name, .family = c->family, .weights = file_weights(f), .first_off = -1};
    const struct cross_format *fmt = cross_format_of(res.weights);
    struct cli_logits fl = {0};
    struct cli_llama_run ll = {0};
    char err[IR_ERR_LEN];
    bool gelu = false, q8 = a->activations == 1 || (a->activations == -1 && fmt->q8_activations);
    step(log, c->name, res.weights, prefill ? "prefill: fusecheck" : "decode: fusecheck");
    int rc = run_fusecheck(c, a, tk, prefill, q8, &fl, &gelu, err) == 0 ? CLI_OK : CLI_FAILED;
    choose_bound(a, fmt, gelu, &res);
    step(log, c->name, res.weights, prefill ? "prefill: llama.cpp" : "decode: llama.cpp");
    if (rc == CLI_OK && cli_llama_logits(path, tk->t, tk->n, !prefill, &ll, err) != 0)
        rc = CLI_FAILED;
    if (rc == CLI_OK && ll.vocab != fl.vocab) {
        snprintf(err, sizeof err, "llama.cpp gives %lld logits a position, fusecheck %lld", (long long)ll.vocab,
                 (long long)fl.vocab);
        rc = CLI_FAILED;
    }
    if (rc != CLI_OK && cli_interrupted()) { /* a side stopped on the signal: no check made, none off */
        cli_logits_free(&fl);
        cli_llama_run_free(&ll);
        return CLI_OK;
    }
    cli_sha256_hex(f->bytes, f->size, res.sha);
    if (rc == CLI_OK && compare_runs(&fl, &ll, res.rounded, &res) != 0) {
        snprintf(err, sizeof err, "out of memory");
        rc = CLI_FAILED;
    }
    if (rc != CLI_OK)
        printf("crosscheck: FAIL %s (%s) %s %s: %s\n", c->name, c->family, res.weights,
               prefill ? "prefill" : "decode", err);
    if (rc == CLI_OK) {
        print_result(&res, tk->t, prefill);
        rc = res.failed ? CLI_FAILED : CLI_OK;
        if (seeded)
            rc = worse(rc, check_seeded(seeded, a, tk, prefill, q8, &ll, &res));
        if (log_result(log, &res, tk->t, prefill, err)) {
            fprintf(stderr, "fusecheck: crosscheck: %s: %s\n", a->db, err);
            rc = CLI_USAGE;
        }
    }
    log->checks++;
    log->off += rc != CLI_OK;
    free(res.rows);
    cli_logits_free(&fl);
    cli_llama_run_free(&ll);
    return rc;
}

/* The sequence for model c: the tokens given (each below its vocabulary), or drawn from the seed. 0, or CLI_USAGE
 * with the message printed, or CLI_FAILED when memory is short. */
static int tokens_for(const struct cross_args *a, const struct models_config *c, struct cross_tokens *tk)
{
    tk->n = a->tokens ? a->ntokens : a->count;
    tk->t = malloc(sizeof *tk->t * (size_t)tk->n);
    if (!tk->t)
        return CLI_FAILED;
    if (!a->tokens)
        cli_default_tokens(c->vocab, tk->n, a->seed, tk->t);
    for (int32_t i = 0; a->tokens && i < tk->n; i++) {
        tk->t[i] = a->tokens[i];
        if (tk->t[i] >= c->vocab) {
            free(tk->t);
            tk->t = NULL;
            return cli_usage_error("crosscheck", "token %d (position %d) is outside %s's vocabulary of %lld",
                                   a->tokens[i], i, c->name, (long long)c->vocab);
        }
    }
    return CLI_OK;
}


/* Every check of the GGUF file at path (exported from `seeded`, or NULL: a file as given): each mode asked. */
static int check_file(const struct cross_args *a, const char *path, const struct cross_seeded *seeded,
                      struct cross_log *log)
{
    struct models_config *owned = NULL;
    const struct models_config *c = cli_model("crosscheck", path, &owned);
    if (!c)
        return CLI_USAGE;
    struct cross_tokens tk = {NULL, 0};
    int rc = tokens_for(a, c, &tk);
    if (rc == CLI_OK && a->decode)
        rc = worse(rc, check_one(a, path, c, seeded, &tk, false, log));
    if (rc != CLI_USAGE && a->prefill && !cli_interrupted())
        rc = worse(rc, check_one(a, path, c, seeded, &tk, true, log));
    free(tk.t);
    models_config_free(owned);
    return rc;
}

/* A fresh temporary folder (in TMPDIR) for exported files; 0, or -1 with err. */
static int temp_folder(char *dir, size_t cap, char err[IR_ERR_LEN])
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%.200s/fusecheck-crosscheck-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir))
        return 0;
    snprintf(err, IR_ERR_LEN, "%.200s: %s", dir, strerror(errno));
    return -1;
}

/* Every check of a MODEL or config.json: exported in each format asked (into dir, or to --keep), each file checked
 * in each mode, then removed (a kept one stays). */
static int check_model(const struct cross_args *a, const char *arg, const char *dir, struct cross_log *log)
{
    struct models_config *owned = NULL;
    const struct models_config *c = cli_model("crosscheck", arg, &owned);
    if (!c)
        return CLI_USAGE;
    enum ir_format dflt = cli_lift_defaults().options.weights;
    int n = a->nweights ? a->nweights : 1, rc = CLI_OK;
    for (int i = 0; i < n && rc != CLI_USAGE && !cli_interrupted(); i++) {
        enum ir_format w = a->nweights ? a->weights[i] : dflt;
        char path[4096], err[IR_ERR_LEN];
        snprintf(path, sizeof path, "%s/%.200s.%s.gguf", dir, c->name, ir_format_name(w));
        if (a->keep)
            snprintf(path, sizeof path, "%s", a->keep);
        step(log, c->name, ir_format_name(w), "export");
        if (export_model(c, a, w, path, err)) {
            if (!cli_interrupted()) /* stopped on the signal: said once, at the end */
                fprintf(stderr, "fusecheck: crosscheck: %s: %s\n", arg, err);
            rc = CLI_USAGE;
            break;
        }
        struct cross_seeded seeded = {c, w};
        rc = worse(rc, check_file(a, path, &seeded, log));
        if (!a->keep)
            unlink(path);
    }
    models_config_free(owned);
    return rc;
}

/* Every check asked: each MODEL argument (every tiny zoo model when none), a GGUF file as it is. */
static int check_all(const struct cross_args *a, const char *dir, struct cross_log *log)
{
    int rc = CLI_OK;
    for (int i = 0; i < (a->nmodels ? a->nmodels : models_count()) && rc != CLI_USAGE && !cli_interrupted(); i++) {
        const char *arg = a->nmodels ? a->models[i] : models_get(i)->name;
        if (!a->nmodels && !models_get(i)->tiny)
            continue;
        if (cli_is_gguf(arg) && (a->lift.given || a->nweights)) {
            rc = cli_usage_error("crosscheck", "%s applies to a MODEL exported first, not to the file '%s'",
                                 a->nweights ? "--weights" : a->lift.given, arg);
            break;
        }
        rc = worse(rc, cli_is_gguf(arg) ? check_file(a, arg, NULL, log) : check_model(a, arg, dir, log));
    }
    return rc;
}

/* The steps a's checks take: for each MODEL (every tiny zoo model when none), an export a format and two a mode (the
 * file through fusecheck, then through llama.cpp); for a GGUF file, two a mode. */
static long count_steps(const struct cross_args *a)
{
    long modes = a->decode + a->prefill, n = 0;
    for (int i = 0; i < (a->nmodels ? a->nmodels : models_count()); i++) {
        if (!a->nmodels && !models_get(i)->tiny)
            continue;
        if (a->nmodels && cli_is_gguf(a->models[i]))
            n += 2 * modes;
        else
            n += (a->nweights ? a->nweights : 1) * (1 + 2 * modes);
    }
    return n;
}

/* Start the run's progress: lines in a log; on a terminal a line of its own only where stdout, whose tables show
 * each check as it ends, goes elsewhere. */
static void begin_progress(const struct cross_args *a, struct cross_log *log)
{
    enum cli_progress_kind kind = cli_progress_kind_for(a->progress, STDERR_FILENO);
    if (kind == CLI_PROGRESS_TERMINAL && isatty(STDOUT_FILENO))
        kind = CLI_PROGRESS_OFF;
    cli_progress_begin(&log->progress, kind, stderr, "crosscheck", count_steps(a), NULL, NULL);
}

int cli_cmd_crosscheck(int argc, char **argv)
{
    cli_interrupt_catch(); /* a signal stops it between checks (check_all, check_model, check_file) */
    struct cross_args a;
    int rc = cross_parse(argc, argv, &a);
    if (rc == CLI_OK && !cli_llama_available()) {
        fprintf(stderr, "fusecheck: crosscheck: %s\n", cli_llama_version());
        rc = CLI_USAGE;
    }
    char dir[512] = "", err[IR_ERR_LEN];
    struct cross_log log = {.db = NULL};
    if (rc == CLI_OK && (temp_folder(dir, sizeof dir, err) || log_open(a.db, argc, argv, &log, err))) {
        fprintf(stderr, "fusecheck: crosscheck: %s\n", err);
        rc = CLI_USAGE;
    }
    if (rc == CLI_OK) {
        begin_progress(&a, &log);
        rc = check_all(&a, dir, &log);
        fflush(stdout);
        cli_progress_update(&log.progress, log.steps, NULL); /* the last line: every step begun */
        cli_progress_end(&log.progress);
    }
    if (log.checks > 1)
        printf("crosscheck: %d checks, %d off\n", log.checks, log.off);
    if (log_close(&log, rc == CLI_USAGE, err)) {
        fprintf(stderr, "fusecheck: crosscheck: %s: %s\n", a.db, err);
        rc = CLI_USAGE;
    }
    if (dir[0])
        rmdir(dir);
    free(a.tokens);
    if (cli_interrupted()) {
        cli_interrupt_say("crosscheck", a.db, a.db ? (long long)log.run : 0);
        return cli_interrupt_exit();
    }
    return rc;
}
