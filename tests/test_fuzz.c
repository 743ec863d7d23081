/* tests/test_fuzz.c — the fuzzing pieces themselves: the generator's promise (every byte string gives a valid graph,
 * the same bytes the same graph, every motif and hazard reachable, the rules' patterns among what it makes), the
 * checks (they pass on the faithful optimizer but for the known findings, and they catch a dropped guard atom, a
 * result the host reads no longer written, a failing decision validator), the structure-aware mutator and crossover
 * (valid, deterministic, every mutation reachable), the facts and db checks, the shim list and the dictionary.
 * Inputs come from a fixed-seed generator, so the suite is deterministic; it runs in seconds under ASan. */
#include "check.h"
#include "fuzz/fuzz.h"
#include "models/models.h"

#include <dirent.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A fixed-seed byte source. */
static uint64_t rng = 0x5eed;
static uint8_t next_byte(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint8_t)(rng >> 33);
}

/* Fill buf with n pseudo-random bytes. */
static void fill(uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = next_byte();
}

/* ── Known findings (fuzz/known-findings): reported bugs the checks may meet until they are fixed ────────────── */

static char known[64][160];
static int nknown;

/* Read the optimizer harness's known signatures. */
static void read_known(void)
{
    size_t len;
    char *text = ir_read_file("fuzz/known-findings", &len);
    for (char *line = text ? strtok(text, "\n") : NULL; line && nknown < 64; line = strtok(NULL, "\n")) {
        char h[64], sig[160];
        if (line[0] != '#' && sscanf(line, "%63s %159s", h, sig) == 2 && strcmp(h, "fuzz_optimize") == 0)
            snprintf(known[nknown++], sizeof known[0], "%s", sig);
    }
    free(text);
}

/* Whether a finding matches a known signature (a shell pattern). */
static bool is_known(const struct fuzz_finding *f)
{
    char sig[200];
    snprintf(sig, sizeof sig, "%s:%s", f->check, f->detail);
    for (int i = 0; i < nknown; i++)
        if (fnmatch(known[i], sig, 0) == 0)
            return true;
    return false;
}

/* ── The generator ───────────────────────────────────────────────────────────────────────────────────────── */

/* Every byte string decodes to a valid, small graph; the same bytes to the same text; every motif and hazard
 * shows up. */
static void test_generator(void)
{
    int invalid = 0, different = 0, large = 0;
    int motifs[FUZZ_MOTIF_COUNT] = {0}, hazards[FUZZ_HAZARD_COUNT] = {0};
    /* shapes alike but for one operand, which a grouping rule must compare: a row's own router or experts, a key's
     * own rotary tables or position, a second table's own row */
    static const char *const apart[] = {".rt2 ", ".ed2 ", ".kcos ", ".kpos ", ".pos2 "};
    int seen_apart[sizeof apart / sizeof apart[0]] = {0};
    /* every rotary scaling, truncated and not, with an attention factor */
    static const char *const scalings[] = {"scaling=linear ", "scaling=llama3 ", "scaling=yarn ", " truncate",
                                           "magnitude="};
    int seen_scaling[sizeof scalings / sizeof scalings[0]] = {0};
    for (int i = 0; i < 2000; i++) {
        uint8_t buf[320];
        size_t n = (size_t)(i % 300);
        fill(buf, n);
        struct fuzz_bytes b1 = {buf, n, 0}, b2 = {buf, n, 0};
        struct fuzz_gen_stats st;
        size_t l1, l2;
        char *t1 = fuzz_generate(&b1, &l1, &st), *t2 = fuzz_generate(&b2, &l2, NULL);
        char err[IR_ERR_LEN];
        struct ir_graph *g = t1 ? ir_parse(t1, l1, "generated", err) : NULL;
        if (!g && invalid++ < 3)
            fprintf(stderr, "generated graph refused: %s\n", t1 ? err : "no text");
        different += !t1 || !t2 || l1 != l2 || memcmp(t1, t2, l1) != 0;
        for (size_t a = 0; t1 && a < sizeof apart / sizeof apart[0]; a++)
            seen_apart[a] += strstr(t1, apart[a]) != NULL;
        for (size_t a = 0; t1 && a < sizeof scalings / sizeof scalings[0]; a++)
            seen_scaling[a] += strstr(t1, scalings[a]) != NULL;
        if (g && (g->nops > FUZZ_GEN_MAX_OPS || ir_values_plan_bytes(g) > ((int64_t)8 << 20)))
            large++;
        for (int m = 0; m < FUZZ_MOTIF_COUNT; m++)
            motifs[m] += st.motifs[m];
        for (int h = 0; h < FUZZ_HAZARD_COUNT; h++)
            hazards[h] += st.hazards[h];
        ir_graph_free(g);
        free(t1);
        free(t2);
    }
    CHECKF(invalid == 0, "%d generated graphs were refused by the validator", invalid);
    CHECKF(different == 0, "%d byte strings gave two different graphs", different);
    CHECKF(large == 0, "%d generated graphs are larger than promised", large);
    for (int m = 0; m < FUZZ_MOTIF_COUNT; m++)
        CHECKF(motifs[m] > 0, "motif %s never generated", fuzz_motif_name((enum fuzz_motif)m));
    for (int h = 0; h < FUZZ_HAZARD_COUNT; h++)
        CHECKF(hazards[h] > 0, "hazard %s never generated", fuzz_hazard_name((enum fuzz_hazard)h));
    for (size_t a = 0; a < sizeof apart / sizeof apart[0]; a++)
        CHECKF(seen_apart[a] > 0, "no generated graph declares or reads '%s'", apart[a]);
    for (size_t a = 0; a < sizeof scalings / sizeof scalings[0]; a++)
        CHECKF(seen_scaling[a] > 0, "no generated rope has '%s'", scalings[a]);
    /* Two bytes pick one motif: a count byte of 0 (one motif), then the motif. */
    for (int m = 0; m < FUZZ_MOTIF_COUNT; m++) {
        uint8_t two[2] = {0, (uint8_t)m};
        struct fuzz_bytes b = {two, 2, 0};
        struct fuzz_gen_stats st;
        char err[IR_ERR_LEN];
        struct ir_graph *g = fuzz_generate_graph(&b, &st, err);
        CHECKF(g && st.motifs[m] == 1 && g->nops > 0, "motif %s alone: %s", fuzz_motif_name((enum fuzz_motif)m),
               g ? "not built" : err);
        ir_graph_free(g);
    }
}

/* Collect the steps that fired. */
static void note_fired(const struct rules_report *rep, bool *fired, const struct rules_rule *const *table, int n)
{
    for (int32_t i = 0; i < rep->n; i++)
        for (int k = 0; k < n; k++)
            if (rep->d[i].outcome == RULES_FIRED && strcmp(rep->d[i].rule, table[k]->name) == 0)
                fired[k] = true;
}

/* The rules' patterns are among what the generator makes: most shared rules fire on generated graphs under the
 * reference shim. */
static void test_generator_fires_rules(void)
{
    int n;
    const struct rules_rule *const *table = rules_table(&n);
    bool fired[128] = {false};
    struct shim *ref = shim_reference();
    for (int i = 0; i < 1500 && ref; i++) {
        uint8_t buf[64];
        size_t len = (size_t)(i % 40);
        fill(buf, len);
        if (i < 2 * FUZZ_MOTIF_COUNT) { /* each motif alone, plainest and with a byte of variety */
            memset(buf, 0, sizeof buf);
            buf[1] = (uint8_t)(i % FUZZ_MOTIF_COUNT);
            buf[2] = (uint8_t)(i / FUZZ_MOTIF_COUNT);
            len = 3;
        }
        struct fuzz_bytes b = {buf, len, 0};
        char err[IR_ERR_LEN];
        struct ir_graph *g = fuzz_generate_graph(&b, NULL, err);
        struct rules_optimized o;
        if (g && rules_optimize(g, ref, NULL, 0, &o, err) == 0) {
            note_fired(&o.report, fired, table, n < 128 ? n : 128);
            rules_optimized_free(&o);
        }
        ir_graph_free(g);
    }
    shim_free(ref);
    int count = 0;
    for (int k = 0; k < n && k < 128; k++) {
        count += fired[k];
        if (!fired[k])
            fprintf(stderr, "note: rule %s did not fire on the generated graphs of this test\n", table[k]->name);
    }
    CHECKF(count * 10 >= n * 8, "only %d of %d shared rules fire on generated graphs", count, n);
}

/* ── The optimizer checks ────────────────────────────────────────────────────────────────────────────────── */

/* Generated cases under every kind of shim pass every check on the faithful optimizer, but for known findings. */
static void test_optimize_passes(void)
{
    int unknown = 0, checked = 0;
    for (int i = 0; i < 240; i++) {
        uint8_t buf[200];
        size_t len = FUZZ_CTL + (size_t)(i % 120);
        fill(buf, len);
        buf[4] = (uint8_t)(buf[4] & ~3u); /* every case runs the prefix-hold check */
        struct fuzz_finding f;
        if (fuzz_check_optimize(buf, len, &f) && !is_known(&f) && unknown++ < 3)
            fprintf(stderr, "finding %s:%s: %s\n", f.check, f.detail, f.message);
        checked++;
    }
    CHECKF(unknown == 0, "%d of %d generated cases fail a check (not a known finding)", unknown, checked);
}

/* Parse a file into a graph (NULL + message on failure). */
static struct ir_graph *load(const char *path)
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_file(path, err);
    if (!g)
        fprintf(stderr, "%s\n", err);
    return g;
}

/* A reference-shim plan with no holds and the prefix check from step k. */
static struct fuzz_plan plan_ref(int k)
{
    struct fuzz_plan p = {0, {-1, -1}, 4 * k, 7};
    return p;
}

/* The index of shim `name` in the fuzz shim list, or -1. */
static int shim_index(const char *name)
{
    for (int i = 0; i < fuzz_shim_count(); i++)
        if (strcmp(fuzz_shim_name(i), name) == 0)
            return i;
    return -1;
}

/* The harness catches the optimizer bugs planted in it (rules_plant), on a tiny model's one layer under the lane's
 * two-word numerics: a dropped keep and a wrong operand leave an invalid graph; a fold in the wrong words differs from the
 * reference built from the chip's answers or leaves its bound. The faithful optimizer passes the same case. */
static void test_optimize_catches_plants(void)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    o.layers = 1; /* within the harness's evaluation budget */
    struct ir_graph *g = models_lift(models_find("tiny-qwen3-moe"), &o, err);
    int lane = shim_index("cuda-lane:h200:int8x2");
    CHECKF(g && lane >= 0, "tiny-qwen3-moe under the lane: %s", g ? "no such shim" : err);
    CHECKF(!g || ir_values_plan_bytes(g) <= ((int64_t)4 << 20), "%lld bytes",
           g ? (long long)ir_values_plan_bytes(g) : 0LL);
    if (!g || lane < 0) {
        ir_graph_free(g);
        return;
    }
    struct fuzz_plan p = {lane, {-1, -1}, 4, 7};
    struct fuzz_finding f;
    CHECKF(fuzz_check_graph(g, &p, &f) == 0, "the faithful optimizer fails %s:%s", f.check, f.detail);
    static const struct {
        const char *plant, *check;
    } cases[] = {{"drop_keep", "invalid"}, {"wrong_operand", "invalid"}, {"quant_words", "diff"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(rules_plant(cases[i].plant) == 0);
        int bad = fuzz_check_graph(g, &p, &f);
        rules_plant(NULL);
        CHECKF(bad && strcmp(f.check, cases[i].check) == 0, "planted %s: expected %s, got %s", cases[i].plant,
               cases[i].check, bad ? f.check : "no finding");
    }
    CHECK(rules_plant("no_such_bug") == -1 && rules_planted() == RULES_PLANT_NONE);
    ir_graph_free(g);
}

/* Whether some leaf under op reads t. */
static bool leaf_reads(const struct ir_op *op, ir_tid t)
{
    for (int32_t k = 0; op->sym != IR_SYM_FUSED && k < op->nins; k++)
        if (op->ins[k] == t)
            return true;
    for (int32_t i = 0; i < op->nparts; i++)
        if (leaf_reads(&op->parts[i], t))
            return true;
    return false;
}

/* Mark in seen[] the class of every top-level fused op of o's graph whose leaves read both a value and its
 * quantized form (a top-level quantize's result): the pattern the sweep is after. */
static void mark_two_roles(const struct ir_graph *o, bool seen[IR_CLASS_COUNT])
{
    for (int32_t q = 0; q < o->nops; q++) {
        const struct ir_op *z = &o->ops[q];
        if (z->sym != IR_SYM_QUANT)
            continue;
        for (int32_t i = q + 1; i < o->nops; i++) {
            const struct ir_op *op = &o->ops[i];
            if (op->sym == IR_SYM_FUSED && leaf_reads(op, z->out) && leaf_reads(op, z->ins[0]))
                seen[op->cls] = true;
        }
    }
}

/* Every rule's fixture case with one value read in two roles (fuzz_alias_apply: each pair of reads of one length,
 * both ways) passes every optimizer check under the lane's one- and two-word numerics and the reference shim: no
 * fused class may lose a read when the fold quantizes a product's activation that another part reads as it is. The
 * fold planted to list the source first (the issue-38 finding) is caught on the same sweep. Returns the findings. */
static const char *const alias_shims[] = {"cuda-lane:h200:int8", "cuda-lane:h100:int8x2", "reference"};

/* Sweep one graph: the graph as it is and each pair both ways, every variant that validates held to every optimizer
 * check under the sweep's shims. Counts the variants; marks
 * the classes where the pattern formed; returns the findings. */
static int alias_sweep_graph(const struct ir_graph *g, const char *what, int *variants,
                             bool two_roles[IR_CLASS_COUNT])
{
    int found = 0;
    char err[IR_ERR_LEN];
    int64_t pairs = fuzz_alias_count(g);
    for (int64_t k = -2; k < 2 * pairs; k++) { /* -2: the graph as it is */
        struct ir_graph *v = ir_graph_clone(g);
        bool made = k == -2 || (k >= 0 && fuzz_alias_apply(v, k / 2, k % 2 == 0));
        if (!made || ir_validate(v, err) != 0) {
            ir_graph_free(v);
            continue;
        }
        (*variants)++;
        for (size_t s = 0; s < sizeof alias_shims / sizeof alias_shims[0]; s++) {
            struct rules_optimized o;
            struct shim *sh = shim_lookup(alias_shims[s], err);
            if (sh && rules_optimize(v, sh, NULL, 0, &o, err) == 0) {
                mark_two_roles(o.graph, two_roles);
                rules_optimized_free(&o);
            }
            shim_free(sh);
            struct fuzz_plan p = {shim_index(alias_shims[s]), {-1, -1}, 1, (uint64_t)(k + 2)};
            struct fuzz_finding f;
            if (fuzz_check_graph(v, &p, &f) && !is_known(&f) && found++ < 3 && !rules_planted())
                fprintf(stderr, "%s, pair %lld %s, %s: %s:%s: %s\n", what, (long long)(k / 2),
                        k % 2 ? "activation moved" : "read moved", alias_shims[s], f.check, f.detail, f.message);
        }
        ir_graph_free(v);
    }
    return found;
}

/* Sweep every rule's fixture case under dir. Returns the findings. */
static int alias_sweep(const char *dir, int *variants, bool two_roles[IR_CLASS_COUNT])
{
    int found = 0;
    char err[IR_ERR_LEN];
    DIR *top = opendir(dir);
    CHECKF(top != NULL, "%s: cannot list", dir);
    for (struct dirent *e; top && (e = readdir(top));) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        DIR *d = e->d_name[0] == '.' ? NULL : opendir(sub);
        for (struct dirent *c; d && (c = readdir(d));) {
            size_t n = strlen(c->d_name);
            if (n < 4 || strcmp(c->d_name + n - 3, ".fc") != 0)
                continue;
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", sub, c->d_name);
            struct ir_graph *g = ir_parse_file(path, err);
            if (g)
                found += alias_sweep_graph(g, path, variants, two_roles);
            ir_graph_free(g);
        }
        if (d)
            closedir(d);
    }
    if (top)
        closedir(top);
    return found;
}

/* The sweep passes on the faithful optimizer and finds the planted fold. */
static void test_alias_sweep(void)
{
    int variants = 0;
    bool two_roles[IR_CLASS_COUNT] = {false};
    int found = alias_sweep("tests/rules", &variants, two_roles);
    static const enum ir_class formed[] = {IR_CLASS_MERGED_QKV, IR_CLASS_GEMV_NORM_EPILOGUE,
                                           IR_CLASS_MOE_DEFERRED_FINALIZE};
    for (size_t c = 0; c < sizeof formed / sizeof formed[0]; c++)
        CHECKF(two_roles[formed[c]], "no swept graph reads a value both quantized and as it is in one %s",
               ir_class_name(formed[c]));
    CHECKF(found == 0, "%d checks fail on fixture cases with a value read in two roles (%d variants)", found,
           variants);
    CHECKF(variants >= 200, "only %d variants with a value read in two roles", variants);
    CHECK(rules_plant("source_first") == 0);
    int planted = alias_sweep("tests/rules", &variants, two_roles);
    rules_plant(NULL);
    CHECKF(planted > 0, "the sweep misses the fold that lists a quantized read's source first");
}

/* Control bytes that encode a plan decode to it, for every offered shim with and without holds; a plan no bytes reach
 * is refused. */
static void test_plan_encode(void)
{
    static const int holds[][2] = {{-1, -1}, {0, -1}, {41, 7}, {255, 255}};
    int wrong = 0;
    for (int s = 0; s < fuzz_shim_count(); s++) {
        for (size_t h = 0; h < sizeof holds / sizeof holds[0]; h++) {
            struct fuzz_plan p = {s, {holds[h][0], holds[h][1]}, (int)(4 * h + 1), 0x123456u + (uint64_t)s};
            uint8_t ctl[FUZZ_CTL + 1];
            memset(ctl, 0, sizeof ctl);
            ctl[FUZZ_CTL] = '\n'; /* a body the parser reads as no op: the generator's, which is not checked here */
            struct fuzz_case c;
            char err[IR_ERR_LEN];
            if (fuzz_plan_encode(&p, ctl)) {
                wrong++;
                continue;
            }
            fuzz_case_decode(ctl, sizeof ctl, &c, err);
            wrong += c.plan.shim != p.shim || c.plan.hold[0] != p.hold[0] || c.plan.hold[1] != p.hold[1] ||
                     c.plan.prefix != p.prefix || c.plan.seed != p.seed;
            fuzz_case_free(&c);
        }
        CHECK(fuzz_shim_index(fuzz_shim_name(s)) == s);
    }
    CHECKF(wrong == 0, "%d plans did not come back from their control bytes", wrong);
    uint8_t ctl[FUZZ_CTL];
    CHECK(fuzz_plan_encode(&(struct fuzz_plan){-1, {-1, -1}, 0, 7}, ctl) == 1);
    CHECK(fuzz_plan_encode(&(struct fuzz_plan){fuzz_shim_count(), {-1, -1}, 0, 7}, ctl) == 1);
    CHECK(fuzz_plan_encode(&(struct fuzz_plan){0, {256, -1}, 0, 7}, ctl) == 1);
    CHECK(fuzz_plan_encode(&(struct fuzz_plan){0, {-1, -1}, 0, 1u << 24}, ctl) == 1);
    CHECK(fuzz_shim_index("no-such-chip") == -1);
}

/* The harness holds every report to its contract: a refusal asked again at once and reported again (the planted
 * repeat_refusal) is caught on the fixture graph where one product is both summands of an add-and-norm whose
 * epilogue fold the lane refuses, with the rule named; the faithful optimizer reports it once and passes. */
static void test_optimize_catches_repeated_refusal(void)
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_file(FUSECHECK_SOURCE_DIR
                                       "/tests/rules/gemv_norm_epilogue/refused_once_for_both_summands.fc", err);
    int lane = shim_index("cuda-lane:h200:int8");
    CHECKF(g && lane >= 0, "%s", g ? "no such shim" : err);
    if (!g || lane < 0) {
        ir_graph_free(g);
        return;
    }
    struct fuzz_plan p = {lane, {-1, -1}, 1, 3};
    struct fuzz_finding f;
    CHECKF(fuzz_check_graph(g, &p, &f) == 0, "the faithful optimizer fails %s:%s", f.check, f.detail);
    CHECK(rules_plant("repeat_refusal") == 0);
    int bad = fuzz_check_graph(g, &p, &f);
    rules_plant(NULL);
    CHECKF(bad && strcmp(f.check, "report") == 0 && strcmp(f.detail, "gemv_norm_epilogue") == 0,
           "planted repeat_refusal: got %s:%s", bad ? f.check : "no finding", bad ? f.detail : "");
    ir_graph_free(g);
}

/* The checks catch a dropped guard atom: on its near-miss case the mutant optimizer is caught, with the rule blamed
 * (a diff, or a result the host reads no longer written); the faithful one passes. */
static void test_optimize_catches_mutants(void)
{
    static const struct {
        const char *path, *atom, *check, *detail;
    } cases[] = {
        {"tests/rules/row_write/table_untouched.fc", "row_write:table_untouched", "diff", "row_write"},
        {"tests/rules/row_write/not_observed.fc", "row_write:not_observed", "invalid", "row_write/graph"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ir_graph *g = load(cases[i].path);
        CHECKF(g != NULL, "%s", cases[i].path);
        if (!g)
            continue;
        struct fuzz_plan p = plan_ref(0);
        struct fuzz_finding f;
        CHECKF(fuzz_check_graph(g, &p, &f) == 0, "%s: the faithful optimizer fails %s:%s", cases[i].path, f.check,
               f.detail);
        rules_drop_atom(cases[i].atom);
        int bad = fuzz_check_graph(g, &p, &f);
        rules_drop_atom(NULL);
        CHECKF(bad && strcmp(f.check, cases[i].check) == 0 && strcmp(f.detail, cases[i].detail) == 0,
               "%s without %s: expected %s:%s, got %s:%s", cases[i].path, cases[i].atom, cases[i].check,
               cases[i].detail, bad ? f.check : "no finding", bad ? f.detail : "-");
        ir_graph_free(g);
    }
}

/* A validator that refuses every firing of add_norm. */
static int refuse_add_norm(const struct ir_graph *lifted, const struct shim *shim, const struct rules_optimized *o,
                           int32_t decision, char why[IR_ERR_LEN])
{
    (void)lifted;
    (void)shim;
    if (strcmp(o->report.d[decision].rule, "add_norm") != 0)
        return 0;
    snprintf(why, IR_ERR_LEN, "refused by the test");
    return 1;
}

/* The decision validator hook is called on fired decisions, and its refusal is a finding naming the rule. */
static void test_validator_hook(void)
{
    static const char text[] = "tensor x f32 1x8 input\ntensor res f32 1x8 input\ntensor w f32 1x8 constant\n"
                               "tensor s f32 1x8 activation\ntensor n f32 1x8 activation observed\n"
                               "op s = elementwise(x, res) op=add n=8\n"
                               "op n = rms_norm(s, w) rows=1 cols=8 eps=1e-06 weight offset=0\n";
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse(text, sizeof text - 1, "add_norm", err);
    CHECKF(g != NULL, "%s", err);
    if (!g)
        return;
    struct fuzz_plan p = plan_ref(1);
    struct fuzz_finding f;
    fuzz_set_validator(refuse_add_norm);
    CHECK(fuzz_validator() == refuse_add_norm);
    int bad = fuzz_check_graph(g, &p, &f);
    fuzz_set_validator(NULL);
    CHECKF(bad && strcmp(f.check, "validate") == 0 && strcmp(f.detail, "add_norm") == 0, "got %s:%s",
           bad ? f.check : "-", bad ? f.detail : "-");
    CHECK(fuzz_check_graph(g, &p, &f) == 0);
    ir_graph_free(g);
}

/* Cases decode: control bytes choose the plan; a text body is the graph; other bytes go to the generator. */
static void test_cases(void)
{
    static const char text[] = "\x02\x00\x00\x00\x08\x01\x00\x00"
                               "tensor x f32 1x4 input\ntensor y f32 1x4 activation observed\n"
                               "op y = relu(x) n=4\n";
    struct fuzz_case c;
    char err[IR_ERR_LEN];
    CHECK(fuzz_case_decode((const uint8_t *)text, sizeof text - 1, &c, err) == 0);
    CHECK(c.g && !c.generated && c.g->nops == 1);
    CHECK(c.plan.prefix == 8 && c.plan.seed == 1 && c.plan.hold[0] == -1 && c.plan.hold[1] == -1);
    CHECK_STR(fuzz_shim_name(c.plan.shim), "none");
    fuzz_case_free(&c);
    static const uint8_t bytes[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
    CHECK(fuzz_case_decode(bytes, sizeof bytes, &c, err) == 0);
    CHECK(c.g && c.generated && c.g->nops > 0);
    CHECK_STR(fuzz_shim_name(c.plan.shim), "reference");
    fuzz_case_free(&c);
    CHECK(fuzz_case_decode(bytes, 0, &c, err) == 0 && c.g && c.generated);
    fuzz_case_free(&c);
}

/* The shim list: the plain shims first, each name loads, the lane's names when it is linked. */
static void test_shims(void)
{
    int n = fuzz_shim_count();
    CHECK(n >= 2);
    CHECK_STR(fuzz_shim_name(0), "reference");
    CHECK_STR(fuzz_shim_name(1), "none");
    int lanes = 0, loads = 0;
    for (int i = 0; i < n; i++) {
        char err[IR_ERR_LEN];
        struct shim *s = shim_lookup(fuzz_shim_name(i), err);
        loads += s != NULL;
        lanes += strncmp(fuzz_shim_name(i), "cuda-lane:", 10) == 0;
        shim_free(s);
    }
    CHECK(loads == n);
    /* every row of the shim table stands for at least one name that loads */
    CHECKF(fuzz_shim_dead_row() == NULL, "the shim list's row '%s' gives no name that loads", fuzz_shim_dead_row());
    char err[IR_ERR_LEN];
    struct shim *lane = shim_lookup("cuda-lane:h200:int8", err);
    CHECKF(!lane || lanes >= 15, "the lane is linked but only %d of its names are offered", lanes);
    shim_free(lane);
    /* names one edit from every offered name: each refused or spelled as the list says; and the probe's edits do
     * reach names that load (a cut after the activations) and names refused */
    int probes = 0, loaded = 0;
    for (int i = 0; i < n; i += 7)
        for (uint64_t pick = 0; pick < 64; pick++, probes++) {
            char name[FUZZ_NAME_LEN + 2];
            uint64_t p = pick * 0x9E3779B97F4A7C15ull;
            CHECKF(fuzz_shim_name_probe(i, p, name, sizeof name) == 0, "'%s' loads, misspelled", name);
            struct shim *s = shim_lookup(name, err);
            loaded += s != NULL;
            shim_free(s);
        }
    CHECKF(loaded > 0 && loaded < probes, "%d of %d probe names load", loaded, probes);
}

/* ── Format, facts and db checks ─────────────────────────────────────────────────────────────────────────── */

/* The format check passes on the canonical files, on bytes, and on texts cut and flipped. */
static void test_format(void)
{
    static const char *const files[] = {"tests/data/format/example.fc", "tests/data/format/rewritten.fc",
                                        "tests/rules/mla_prologue/fires.fc",
                                        "tests/rules/qk_norm_rope_gate_split/fires.fc"};
    int bad = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        size_t len;
        char *text = ir_read_file(files[i], &len);
        CHECKF(text != NULL, "%s", files[i]);
        for (int k = 0; text && k < 60; k++) {
            char *m = malloc(len + 1);
            memcpy(m, text, len + 1);
            size_t n = k == 0 ? len : (size_t)next_byte() * len / 256;
            if (k % 3 == 1 && n < len)
                m[n] = (char)next_byte();
            struct fuzz_finding f;
            if (fuzz_check_format((const uint8_t *)m, k % 3 == 2 ? n : len, &f) && bad++ < 3)
                fprintf(stderr, "%s: %s:%s: %s\n", files[i], f.check, f.detail, f.message);
            free(m);
        }
        free(text);
    }
    for (int i = 0; i < 300; i++) {
        uint8_t buf[128];
        fill(buf, sizeof buf);
        struct fuzz_finding f;
        bad += fuzz_check_format(buf, (size_t)(i % 128), &f);
    }
    CHECKF(bad == 0, "%d format inputs fail", bad);
}

/* The facts check passes on generated inputs (the indexed facts equal the specification). */
static void test_facts(void)
{
    int bad = 0;
    for (int i = 0; i < 150; i++) {
        uint8_t buf[256];
        size_t len = (size_t)(i % 256);
        fill(buf, len);
        struct fuzz_finding f;
        if (fuzz_check_facts(buf, len, &f) && bad++ < 3)
            fprintf(stderr, "facts: %s:%s: %s\n", f.check, f.detail, f.message);
    }
    CHECKF(bad == 0, "%d facts inputs fail", bad);
}

/* The db check passes on arbitrary bytes (text of every kind round-trips) and cleans up after itself. */
static void test_db(void)
{
    int bad = 0;
    for (int i = 0; i < 120; i++) {
        uint8_t buf[400];
        size_t len = (size_t)(i * 3 % 400);
        fill(buf, len);
        for (size_t k = 0; k < len; k++) /* fields: a NUL now and then */
            if (buf[k] < 24)
                buf[k] = 0;
        struct fuzz_finding f;
        if (fuzz_check_db(buf, len, &f) && bad++ < 3)
            fprintf(stderr, "db: %s:%s: %s\n", f.check, f.detail, f.message);
    }
    fuzz_db_cleanup();
    CHECKF(bad == 0, "%d db inputs fail", bad);
}

/* The db check's merge runs after inputs 1, 2, 4, ... (the schedule fuzz_db_cleanup restarts) and a merge that fails
 * is a finding: its output, the scratch db's name plus ".merged", is made a folder no merge may write. */
static void test_db_merge_fails(void)
{
    char dir[] = "/tmp/fusecheck-test-merge-XXXXXX", blocked[128], inside[160];
    const char *was = getenv("TMPDIR");
    char *saved = was ? strdup(was) : NULL;
    CHECK(mkdtemp(dir) != NULL);
    setenv("TMPDIR", dir, 1);
    fuzz_db_cleanup();
    snprintf(blocked, sizeof blocked, "%s/fusecheck-fuzz-db-%ld.db.merged", dir, (long)getpid());
    snprintf(inside, sizeof inside, "%s/keep", blocked);
    CHECK(mkdir(blocked, 0700) == 0);
    FILE *k = fopen(inside, "w"); /* a folder that is not empty: the check's clean-up cannot remove it */
    CHECK(k != NULL);
    if (k)
        fclose(k);
    const uint8_t input[] = {'c', 0, 'g', 0, 'f', 0, 'm', 0, 's', 0, 'k', 0, 'h', 0, 'x', 0, 1, 'r', 0, 'c', 0};
    for (int i = 1; i <= 4; i++) {
        struct fuzz_finding f = {0};
        int bad = fuzz_check_db(input, sizeof input, &f);
        bool merged = i != 3;
        CHECKF(bad == merged, "input %d: %s (%s:%s: %s)", i, merged ? "no finding from a merge that failed" : "a finding",
               f.check, f.detail, f.message);
        CHECKF(!merged || (strcmp(f.check, "db") == 0 && strcmp(f.detail, "merge") == 0), "input %d: %s:%s", i,
               f.check, f.detail);
    }
    fuzz_db_cleanup();
    remove(inside);
    rmdir(blocked);
    rmdir(dir);
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
}

/* ── The mutator ─────────────────────────────────────────────────────────────────────────────────────────── */

/* A byte mutator for the tests: flip one byte. */
static size_t flip_byte(uint8_t *data, size_t size, size_t max)
{
    (void)max;
    if (size)
        data[next_byte() % size] ^= 0x5a;
    return size;
}

/* Every mutation applies to some rule case and keeps it valid and no larger than FUZZ_GROW_MAX_OPS (or the input);
 * the same seed gives the same text; a splice of two graphs is valid and holds both graphs' ops, until they would
 * pass FUZZ_GROW_MAX_OPS; the case mutator and crossover stay within their room. */
static void test_mutator(void)
{
    static const char *const files[] = {
        "tests/rules/gdn_decode_whole/fires.fc", "tests/rules/moe_rows/fires.fc",
        "tests/rules/attn_output_gate/fires.fc", "tests/rules/mla_prologue/fires.fc",
        "tests/rules/join_in_place/fires.fc",    "tests/rules/elementwise_regions/fires.fc"};
    enum { NFILES = sizeof files / sizeof files[0] };
    int applied[FUZZ_MUT_COUNT] = {0}, invalid = 0, unstable = 0, grew = 0;
    char *texts[NFILES];
    size_t lens[NFILES];
    for (int i = 0; i < NFILES; i++)
        texts[i] = ir_read_file(files[i], &lens[i]);
    for (int i = 0; i < NFILES; i++) {
        CHECKF(texts[i] != NULL, "%s", files[i]);
        char perr[IR_ERR_LEN];
        struct ir_graph *in = texts[i] ? ir_parse(texts[i], lens[i], files[i], perr) : NULL;
        int32_t limit = in && in->nops > FUZZ_GROW_MAX_OPS ? in->nops : FUZZ_GROW_MAX_OPS;
        ir_graph_free(in);
        for (int m = 0; texts[i] && m < FUZZ_MUT_COUNT; m++)
            for (uint64_t seed = 1; seed <= 6; seed++) {
                size_t n, n2;
                char *out = fuzz_mutate_with(texts[i], lens[i], (enum fuzz_mutation)m, seed, &n);
                char *again = fuzz_mutate_with(texts[i], lens[i], (enum fuzz_mutation)m, seed, &n2);
                unstable += (out == NULL) != (again == NULL) || (out && (n != n2 || memcmp(out, again, n) != 0));
                if (out) {
                    char err[IR_ERR_LEN];
                    struct ir_graph *g = ir_parse(out, n, "mutated", err);
                    invalid += g == NULL;
                    applied[m] += g != NULL;
                    grew += g && g->nops > limit;
                    ir_graph_free(g);
                }
                free(out);
                free(again);
            }
    }
    for (int m = 0; m < FUZZ_MUT_COUNT; m++)
        CHECKF(applied[m] > 0, "mutation %s never applied", fuzz_mutation_name((enum fuzz_mutation)m));
    CHECKF(invalid == 0, "%d mutated graphs do not validate", invalid);
    CHECKF(unstable == 0, "%d mutations are not deterministic", unstable);
    CHECKF(grew == 0, "%d mutations grew a graph past %d ops", grew, FUZZ_GROW_MAX_OPS);
    char err[IR_ERR_LEN];
    struct ir_graph *a = texts[0] ? ir_parse(texts[0], lens[0], "a", err) : NULL;
    struct ir_graph *b = texts[1] ? ir_parse(texts[1], lens[1], "b", err) : NULL;
    for (uint64_t seed = 1; a && b && seed <= 4; seed++) {
        size_t n;
        char *s = fuzz_splice_text(texts[0], lens[0], texts[1], lens[1], seed, &n);
        struct ir_graph *c = s ? ir_parse(s, n, "spliced", err) : NULL;
        CHECKF(c && c->nops == a->nops + b->nops, "splice %d: %s", (int)seed, c ? "ops lost" : err);
        ir_graph_free(c);
        free(s);
    }
    /* A graph spliced with itself doubles until the next splice would pass FUZZ_GROW_MAX_OPS. */
    char *doubled = a ? ir_print(a, NULL) : NULL;
    int32_t ops = a ? a->nops : 0, rounds = 0;
    while (doubled && rounds++ < 8) {
        size_t dn = strlen(doubled), n;
        char *s = fuzz_splice_text(doubled, dn, doubled, dn, 7, &n);
        if (!s)
            break;
        struct ir_graph *c = ir_parse(s, n, "doubled", err);
        CHECKF(c && c->nops == 2 * ops && c->nops <= FUZZ_GROW_MAX_OPS, "doubling to %d ops", 2 * ops);
        ops = c ? c->nops : FUZZ_GROW_MAX_OPS;
        ir_graph_free(c);
        free(doubled);
        doubled = s;
    }
    CHECKF(a && 2 * ops > FUZZ_GROW_MAX_OPS && rounds < 8, "splices stopped at %d ops", ops);
    free(doubled);
    ir_graph_free(a);
    ir_graph_free(b);
    /* The case mutator and crossover on libFuzzer's side. */
    size_t room = lens[2] + 4096;
    uint8_t *buf = malloc(room), *out = malloc(room);
    memset(buf, 0, FUZZ_CTL);
    memcpy(buf + FUZZ_CTL, texts[2], lens[2]);
    size_t size = FUZZ_CTL + lens[2];
    int within = 1, graphs = 0;
    for (unsigned seed = 1; seed <= 40; seed++) {
        size = fuzz_mutate_case(buf, size, room, seed, flip_byte);
        within &= size >= FUZZ_CTL && size <= room;
        struct fuzz_case c;
        if (fuzz_case_decode(buf, size, &c, err) == 0) {
            graphs += !c.generated;
            fuzz_case_free(&c);
        }
        size_t x = fuzz_cross_case(buf, size, buf, size, out, room, seed);
        within &= x <= room;
        size_t y = fuzz_mutate_format(out, x, room, seed, flip_byte);
        within &= y <= room;
    }
    CHECK(within);
    CHECKF(graphs > 20, "the case mutator kept a graph in only %d of 40 rounds", graphs);
    free(buf);
    free(out);
    for (int i = 0; i < NFILES; i++)
        free(texts[i]);
}

/* ── The dictionary ──────────────────────────────────────────────────────────────────────────────────────── */

/* Whether the dictionary has the quoted word. */
static bool in_dict(const char *dict, const char *word)
{
    char q[128];
    snprintf(q, sizeof q, "\"%s\"\n", word);
    return strstr(dict, q) != NULL;
}

/* fuzz/fc.dict names every row of the format's tables, and every field of a mixture and of a rope. */
static void test_dictionary(void)
{
    size_t len;
    char *dict = ir_read_file("fuzz/fc.dict", &len);
    CHECK(dict != NULL);
    if (!dict)
        return;
    int missing = 0;
    for (int k = 0; k < IR_KIND_COUNT; k++)
        missing += !in_dict(dict, ir_kind_name((enum ir_kind)k));
    for (int c = 0; c < IR_CLASS_COUNT; c++)
        missing += !in_dict(dict, ir_class_name((enum ir_class)c));
    for (int e = 0; e < IR_ELEM_COUNT; e++)
        missing += !in_dict(dict, ir_elem_name((enum ir_elem)e));
    for (int r = 0; r < IR_ROLE_COUNT; r++)
        missing += !in_dict(dict, ir_role_name((enum ir_role)r));
    for (int f = 0; f < IR_FMT_COUNT; f++)
        missing += !in_dict(dict, ir_format_name((enum ir_format)f));
    for (int a = 0; a < IR_MOE_COUNT; a++)
        missing += !in_dict(dict, ir_moeact_name((enum ir_moeact)a));
    for (int a = 0; a < IR_ROPESCALE_COUNT; a++)
        missing += !in_dict(dict, ir_ropescale_name((enum ir_ropescale)a));
    int nrope = 0;
    const struct ir_field *rope = ir_spec_fields(IR_KIND_ROPE, &nrope);
    for (int f = 0; f < nrope; f++)
        missing += !in_dict(dict, rope[f].name);
    int nmoe = 0;
    const struct ir_field *moe = ir_spec_fields(IR_KIND_MOE, &nmoe);
    for (int f = 0; f < nmoe; f++)
        missing += !in_dict(dict, moe[f].name);
    CHECKF(missing == 0, "%d table names are missing from fuzz/fc.dict", missing);
    free(dict);
}

/* The optimizer harness over an optimizer run as its own process: fusecheck's own served passes; served with a
 * planted bug, it is caught by the same check as in process; a hang, an exit in the middle of an answer and garbage
 * are findings external:<fault>, the process's stderr tail kept; one that never greets is refused at the start. */
static void test_optimize_external(void)
{
    char err[IR_ERR_LEN], cmd[1024];
    struct models_options o = models_default_options();
    o.layers = 1;
    struct ir_graph *g = models_lift(models_find("tiny-qwen3-moe"), &o, err);
    int lane = shim_index("cuda-lane:h200:int8x2");
    CHECKF(g && lane >= 0, "%s", g ? "no such shim" : err);
    if (!g || lane < 0) {
        ir_graph_free(g);
        return;
    }
    struct fuzz_plan p = {lane, {-1, -1}, 4, 7};
    struct fuzz_finding f;
    snprintf(cmd, sizeof cmd, "exec '%s' optimize --serve", FUSECHECK_BINARY);
    CHECKF(fuzz_external_use(cmd, 0, err) == 0 && fuzz_external_on(), "%s", err);
    CHECK(fuzz_external_name() && strcmp(fuzz_external_name(), "fusecheck") == 0);
    CHECKF(fuzz_check_graph(g, &p, &f) == 0, "the served optimizer fails %s:%s: %s", f.check, f.detail, f.message);
    static const struct {
        const char *plant, *check;
    } plants[] = {{"drop_keep", "invalid"}, {"wrong_operand", "invalid"}, {"quant_words", "diff"}};
    for (size_t i = 0; i < sizeof plants / sizeof plants[0]; i++) {
        snprintf(cmd, sizeof cmd, "FUSECHECK_PLANT=%s exec '%s' optimize --serve", plants[i].plant, FUSECHECK_BINARY);
        CHECKF(fuzz_external_use(cmd, 0, err) == 0, "%s", err);
        int bad = fuzz_check_graph(g, &p, &f);
        CHECKF(bad && strcmp(f.check, plants[i].check) == 0, "served with %s: expected %s, got %s:%s", plants[i].plant,
               plants[i].check, bad ? f.check : "no finding", bad ? f.detail : "");
    }
    static const struct {
        const char *shell, *detail;
    } hostile[] = {
        {"echo 'it went wrong' >&2; '%s' optimize --serve | { head -c 62; sleep 30; }", "timeout"},
        {"printf 'fusecheck-optimizer/1 hello 0 17\\nname x\\nversion 1\\n'; head -c 1 >/dev/null # %s", "exit"},
        {"'%s' optimize --serve | { head -c 62; echo garbage; cat >/dev/null; }", "framing"},
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        snprintf(cmd, sizeof cmd, hostile[i].shell, FUSECHECK_BINARY);
        CHECKF(fuzz_external_use(cmd, 1000, err) == 0, "%s", err);
        int bad = fuzz_check_graph(g, &p, &f);
        CHECKF(bad && strcmp(f.check, "external") == 0 && strcmp(f.detail, hostile[i].detail) == 0,
               "%s: expected external:%s, got %s:%s", cmd, hostile[i].detail, bad ? f.check : "no finding",
               bad ? f.detail : "");
        if (i == 0)
            CHECKF(strstr(fuzz_external_fault_stderr(), "it went wrong") != NULL, "stderr kept: '%s'",
                   fuzz_external_fault_stderr());
    }
    CHECK(fuzz_external_use("echo hello", 300, err) == -1 && strstr(err, "echo hello"));
    CHECK(!fuzz_external_on());
    ir_graph_free(g);
}

int main(void)
{
    read_known();
    test_generator();
    test_generator_fires_rules();
    test_cases();
    test_shims();
    test_optimize_passes();
    test_optimize_catches_mutants();
    test_optimize_catches_plants();
    test_optimize_external();
    test_optimize_catches_repeated_refusal();
    test_alias_sweep();
    test_plan_encode();
    test_validator_hook();
    test_format();
    test_facts();
    test_db();
    test_db_merge_fails();
    test_mutator();
    test_dictionary();
    return check_done("fuzz");
}
