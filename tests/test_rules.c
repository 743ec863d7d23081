/* tests/test_rules.c — the rule tests: every text-format graph under tests/rules/<rule>/ is optimized and checked
 * against the directives in its leading comments, and its rewritten graph evaluated against its lifted one.
 *
 * Directives (comment lines before the first declaration):
 *   # rule: <name>              the rule the case is about (required)
 *   # shim: <name>              the shim (default: reference)
 *   # hold: <step>[,<step>...]  steps held
 *   # fires: <report line>      this exact report line appears (e.g. "add_norm add_norm [1, 2] fired")
 *   # reports: <report line>    this exact report line appears (refusals, holds)
 *   # near-miss: <atom>         the rule must not fire; with only that atom dropped it must fire
 *   # quiet                     the rule must make no decision at all
 *   # seed-quiet                a firing case the seed's rules leave alone (a matcher the seed has otherwise)
 * A firing case fires the same lines of its rule under the seed's rules (`--seed-rules`), unless `seed-quiet`.
 * A case with a `fires` directive must have a sibling <case>.expected: the rewritten graph's canonical text.
 * Every case's rewritten graph must give bit-identical observed and carried tensors to the lifted one.
 *
 * The suite also checks that every rule of the table (and the late rules, argmax_advance, the numerics fold and the
 * lane's rules) has at least one firing case, and a near-miss case for every guard atom it declares. Set
 * FUSECHECK_WRITE_EXPECTED=1 to write missing .expected files (then review them). */
#include "check.h"
#include "rules/rules.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIRECTIVES 32

/* A case's directives. */
struct directives {
    char rule[128], shim[128], hold[512];
    char fires[MAX_DIRECTIVES][512];
    int nfires;
    char reports[MAX_DIRECTIVES][512];
    int nreports;
    char near_miss[128];
    bool quiet, seed_quiet;
};

/* Per rule: whether a firing case and which atoms' near misses were seen. */
struct coverage {
    const struct rules_rule *rule;
    bool fired, seed_fired; /* a firing case under fusecheck's rules; one the seed's fire alike */
    bool near[32];
};

/* Copy the value after `key` on a directive line into dst, trimmed. */
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

/* Apply one directive line (the text after '#'). */
static void read_directive(const char *line, struct directives *d)
{
    while (*line == ' ')
        line++;
    char tmp[512];
    if (directive(line, "rule:", d->rule, sizeof d->rule) || directive(line, "shim:", d->shim, sizeof d->shim) ||
        directive(line, "hold:", d->hold, sizeof d->hold) ||
        directive(line, "near-miss:", d->near_miss, sizeof d->near_miss))
        return;
    if (directive(line, "fires:", tmp, sizeof tmp) && d->nfires < MAX_DIRECTIVES)
        memcpy(d->fires[d->nfires++], tmp, sizeof tmp);
    else if (directive(line, "reports:", tmp, sizeof tmp) && d->nreports < MAX_DIRECTIVES)
        memcpy(d->reports[d->nreports++], tmp, sizeof tmp);
    else if (strncmp(line, "quiet", 5) == 0)
        d->quiet = true;
    else if (strncmp(line, "seed-quiet", 10) == 0)
        d->seed_quiet = true;
}

/* Read the directives from the comment and blank lines that open text. */
static void read_directives(const char *text, struct directives *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->shim, sizeof d->shim, "reference");
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && *p != '#' && *p != '\r')
            break;
        if (*p == '#') {
            char line[600];
            snprintf(line, sizeof line, "%.*s", (int)(n - 1), p + 1);
            read_directive(line, d);
        }
        p += n + (end ? 1 : 0);
    }
}

/* Whether the report has the exact line. */
static bool has_line(const struct rules_report *rep, const char *want)
{
    for (int32_t i = 0; i < rep->n; i++) {
        char *s = rules_decision_line(&rep->d[i]);
        bool eq = strcmp(s, want) == 0;
        free(s);
        if (eq)
            return true;
    }
    return false;
}

/* How many decisions of any outcome are about rule. */
static int32_t decisions_of(const struct rules_report *rep, const char *rule)
{
    int32_t n = 0;
    for (int32_t i = 0; i < rep->n; i++)
        n += strcmp(rep->d[i].rule, rule) == 0;
    return n;
}

/* Split a comma list in place into at most cap names. */
static int split_list(char *s, const char **out, int cap)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < cap; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

/* Optimize g under the case's shim and holds; 0 on success. */
static int optimize_case(const struct ir_graph *g, const struct directives *d, struct rules_optimized *o)
{
    char err[IR_ERR_LEN];
    struct shim *shim = shim_lookup(d->shim, err);
    if (!shim) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    char hold[512];
    snprintf(hold, sizeof hold, "%s", d->hold);
    const char *held[32];
    int nheld = split_list(hold, held, 32);
    int rc = rules_optimize(g, shim, held, nheld, o, err);
    shim_free(shim);
    return rc;
}

/* Evaluate the lifted and the rewritten graph from one seed; whether every observed and carried tensor agrees. */
static bool diff_identical(const struct ir_graph *lifted, const struct ir_graph *rewritten, const char *path)
{
    char err[IR_ERR_LEN];
    struct ir_values *a = ir_values_new(lifted, 7, err), *b = ir_values_new_like(rewritten, 7, lifted, err);
    bool ok = a && b && ir_eval(lifted, a, err) == 0 && ir_eval(rewritten, b, err) == 0;
    if (!ok)
        fprintf(stderr, "%s: evaluation failed: %s\n", path, err);
    struct ir_compare c = ok ? ir_values_compare(lifted, a, rewritten, b) : (struct ir_compare){0};
    if (ok && !c.identical)
        fprintf(stderr, "%s: %s differs at %lld: %.9g vs %.9g\n", path, lifted->tensors[c.tensor].name,
                (long long)c.index, (double)c.a, (double)c.b);
    ir_values_free(a);
    ir_values_free(b);
    return ok && c.identical;
}

/* Check the rewritten text against <case>.expected (writing it when asked and missing). */
static void check_expected(const char *path, const struct ir_graph *rewritten)
{
    char exp_path[1024];
    snprintf(exp_path, sizeof exp_path, "%.*s.expected", (int)(strlen(path) - 3), path);
    size_t len, elen;
    char *text = ir_print(rewritten, &len);
    char *want = ir_read_file(exp_path, &elen);
    if (!want && getenv("FUSECHECK_WRITE_EXPECTED")) {
        FILE *f = fopen(exp_path, "wb");
        if (f) {
            fwrite(text, 1, len, f);
            fclose(f);
        }
        want = ir_read_file(exp_path, &elen);
    }
    CHECKF(want != NULL, "%s: missing", exp_path);
    if (want)
        CHECKF(elen == len && memcmp(want, text, len) == 0, "%s: rewritten graph differs:\n%s", exp_path, text);
    free(want);
    free(text);
}

/* The coverage entry of rule `name`, or NULL. */
static struct coverage *coverage_of(struct coverage *cov, int ncov, const char *name)
{
    for (int i = 0; i < ncov; i++)
        if (strcmp(cov[i].rule->name, name) == 0)
            return &cov[i];
    return NULL;
}

/* Whether the case's own rule fires the same lines under the seed's rules (or, for a seed-quiet case, none). */
static bool fires_under_seed(const struct ir_graph *g, const struct directives *d, const char *path)
{
    struct rules_optimized s;
    rules_seed_mode(true);
    int rc = optimize_case(g, d, &s);
    rules_seed_mode(false);
    CHECKF(rc == 0, "%s: optimize under the seed's rules failed", path);
    if (rc != 0)
        return false;
    size_t n = strlen(d->rule);
    bool all = true;
    for (int i = 0; i < d->nfires; i++)
        if (strncmp(d->fires[i], d->rule, n) == 0 && d->fires[i][n] == ' ')
            all = all && has_line(&s.report, d->fires[i]);
    if (d->seed_quiet)
        CHECKF(rules_report_count(&s.report, RULES_FIRED, d->rule) == 0, "%s: the seed's %s fired", path, d->rule);
    else
        CHECKF(all, "%s: %s fires otherwise under the seed's rules", path, d->rule);
    rules_optimized_free(&s);
    return all && !d->seed_quiet;
}

/* Run one case file. */
static void run_case(const char *path, struct coverage *cov, int ncov)
{
    size_t len;
    char *text = ir_read_file(path, &len);
    CHECKF(text != NULL, "%s: unreadable", path);
    if (!text)
        return;
    struct directives d;
    read_directives(text, &d);
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse(text, len, path, err);
    free(text);
    CHECKF(g != NULL, "%s", err);
    struct coverage *c = coverage_of(cov, ncov, d.rule);
    CHECKF(c != NULL, "%s: unknown rule '%s'", path, d.rule);
    if (!g || !c) {
        ir_graph_free(g);
        return;
    }
    struct rules_optimized o;
    CHECKF(optimize_case(g, &d, &o) == 0, "%s: optimize failed", path);
    CHECKF(ir_validate(o.graph, err) == 0, "%s: rewritten graph invalid: %s", path, err);
    for (int i = 0; i < d.nfires; i++)
        CHECKF(has_line(&o.report, d.fires[i]), "%s: no report line '%s'", path, d.fires[i]);
    for (int i = 0; i < d.nreports; i++)
        CHECKF(has_line(&o.report, d.reports[i]), "%s: no report line '%s'", path, d.reports[i]);
    if (d.nfires) {
        c->fired = true;
        check_expected(path, o.graph);
        c->seed_fired |= fires_under_seed(g, &d, path);
    }
    if (d.quiet)
        CHECKF(decisions_of(&o.report, d.rule) == 0, "%s: %s made a decision", path, d.rule);
    if (d.near_miss[0]) {
        CHECKF(rules_report_count(&o.report, RULES_FIRED, d.rule) == 0, "%s: %s fired on a near miss", path, d.rule);
        char spec[300];
        snprintf(spec, sizeof spec, "%s:%s", d.rule, d.near_miss);
        rules_drop_atom(spec);
        struct rules_optimized m;
        optimize_case(g, &d, &m);
        rules_drop_atom(NULL);
        CHECKF(rules_report_count(&m.report, RULES_FIRED, d.rule) > 0, "%s: %s does not fire with %s dropped", path,
               d.rule, d.near_miss);
        for (int a = 0; a < c->rule->nguards && a < 32; a++)
            if (strcmp(c->rule->guards[a].name, d.near_miss) == 0)
                c->near[a] = true;
        rules_optimized_free(&m);
    }
    /* Under a shim whose products read quantized activations, the reference side has those quantizations. */
    struct shim *shim = shim_lookup(d.shim, err);
    struct ir_graph *ref = shim ? rules_quantized_lifted(g, shim) : NULL;
    CHECKF(ref && diff_identical(ref, o.graph, path), "%s: diff", path);
    ir_graph_free(ref);
    shim_free(shim);
    rules_optimized_free(&o);
    ir_graph_free(g);
}

/* Ascending order of strings, for qsort. */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every .fc file under dir, sorted, run as a case. */
static void run_dir(const char *dir, struct coverage *cov, int ncov)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    char *names[1024];
    int n = 0;
    for (struct dirent *e; (e = readdir(dp)) && n < 1024;) {
        size_t l = strlen(e->d_name);
        if (l > 3 && strcmp(e->d_name + l - 3, ".fc") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        run_case(path, cov, ncov);
        free(names[i]);
    }
}

/* Each rule's atoms the seed has (fuse.rs, lane_shim.rs), in table order, as the audit of the seed found them; a
 * trailing '+' marks one fusecheck widened. Every other atom is fusecheck's own. */
static const struct {
    const char *rule, *seed;
} seed_atoms[] = {
    {"add_norm", "first_reader"},
    {"sandwich_norm", "first_reader untouched_input"},
    {"gemv_bias", "only_reader"},
    {"gemm_scale", "only_reader no_cross"},
    {"affine_input_fold", "only_reader no_sink_past"},
    {"gemv_norm_epilogue", "only_reader no_sink_past"},
    {"prefill_norm_epilogues", "only_reader no_sink_past"},
    {"norm_scale", "only_reader no_cross"},
    {"head_norm_rope", "only_reader"},
    {"slice_read", "only_reader untouched_source"},
    {"row_write", "only_reader table_untouched"},
    {"qkv_head_epilogue", "only_reader no_sink_past"},
    {"join_in_place", "only_reader_a only_reader_b dst_untouched index_untouched"},
    {"conv_silu", "only_reader"},
    {"conv_silu_l2", "only_reader"},
    {"conv_parts", "no_cross"},
    {"gates", "only_reader_b only_reader_a"},
    {"gate_projections", "only_reader_b only_reader_a no_sink_past+"},
    {"gdn_input_epilogue", "made_for no_sink_past"},
    {"gdn_post_conv_prep", "made_for no_sink_past"},
    {"gdn_decode_whole", "made_for no_sink_past"},
    {"act_gate", "only_reader"},
    {"attn_output_gate", "not_observed readers_within made_for no_sink_past"},
    {"glu_pair", "only_reader_gate only_reader_up no_sink_past+"},
    {"relu_sqr", "only_reader no_cross"},
    {"elementwise_regions", "no_sink_past not_carried"},
    {"elementwise_chains", "only_reader not_carried"},
    {"recompute_fanout", "not_observed readers_within untouched_input"},
    {"shared_expert", "only_reader_mixture only_reader_shared only_reader_hidden no_sink_past+"},
    {"moe_rows", "table_untouched views_read_within+ no_sink_past+"},
    {"moe_deferred_finalize", "only_reader_mixture only_reader_sum no_sink_past"},
    {"gather_scale", "only_reader"},
    {"embed_norm", "first_reader no_cross"},
    {"strided_values", "only_reader untouched_source"},
    {"mla_unabsorb_in_fold", "only_reader no_cross"},
    {"dual_norm", "no_cross"},
    {"cross_layer_launch", "no_cross"},
    {"rope_parts", "no_cross"},
    {"qk_norm_rope_gate_split", "no_sink_past"},
    {"horizontal_norm_rope_insert", "no_cross"},
    {"mla_prologue", "made_for no_sink_past"},
    {"last_layer_rows", "made_for no_sink_past"},
    {"argmax_advance", ""},
    {"merged_projections", "no_cross"},
    {"fused_quant", "no_cross"}, /* the seed's numerics are not in the reference: taken as the seed's */
    {"latent_expanded", "made_for+"},
    {"gemv_parts", "no_cross"},
};

/* The rule's seed atoms as the table says them, space-separated, '+' after a widened one, into buf. */
static void seed_atoms_of(const struct rules_rule *rule, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < rule->nguards; i++) {
        const struct rules_atom *a = &rule->guards[i];
        if (a->origin != RULES_ORIGIN_ADDED && at < cap)
            at += (size_t)snprintf(buf + at, cap - at, "%s%s%s", at ? " " : "", a->name,
                                   a->origin == RULES_ORIGIN_WIDENED ? "+" : "");
    }
}

/* Whether docs/findings.md defines finding `id` (a "## F<n>" heading). */
static bool finding_defined(const char *docs, const char *id)
{
    char head[64];
    snprintf(head, sizeof head, "\n## %s ", id);
    return docs && strstr(docs, head) != NULL;
}

/* Every atom says its origin; a widened or added one names a finding docs/findings.md defines, a seed one none. */
static void check_origins(const struct rules_rule *rule, const char *docs)
{
    for (int i = 0; i < rule->nguards; i++) {
        const struct rules_atom *a = &rule->guards[i];
        CHECKF(a->origin > RULES_ORIGIN_UNSAID && a->origin < RULES_ORIGIN_COUNT, "%s:%s says no origin", rule->name,
               a->name);
        if (a->origin == RULES_ORIGIN_SEED)
            CHECKF(a->finding == NULL, "%s:%s is the seed's yet names %s", rule->name, a->name, a->finding);
        else
            CHECKF(a->finding && finding_defined(docs, a->finding), "%s:%s (%s) names no finding docs/findings.md "
                   "defines", rule->name, a->name, rules_origin_name(a->origin));
    }
}

/* Each rule's seed atoms against the list above; every rule listed once. */
static void check_seed_atoms(const struct rules_rule *const *rules, int n)
{
    const char *docs = ir_read_file("docs/findings.md", &(size_t){0});
    CHECKF(docs != NULL, "docs/findings.md: unreadable");
    int nlist = (int)(sizeof seed_atoms / sizeof seed_atoms[0]);
    CHECKF(nlist == n, "the seed-atom list names %d rules, the tables %d", nlist, n);
    for (int i = 0; i < n; i++) {
        const char *want = NULL;
        for (int k = 0; k < nlist && !want; k++)
            if (strcmp(seed_atoms[k].rule, rules[i]->name) == 0)
                want = seed_atoms[k].seed;
        char got[512];
        seed_atoms_of(rules[i], got, sizeof got);
        CHECKF(want != NULL, "%s: not in the seed-atom list", rules[i]->name);
        if (want)
            CHECKF(strcmp(want, got) == 0, "%s: seed atoms '%s', the list says '%s'", rules[i]->name, got, want);
        check_origins(rules[i], docs);
    }
    free((void *)docs);
}

/* Every rule of the table, the late rules, argmax_advance, the fold and the lane's own, into out; their count. */
static int every_rule(const struct rules_rule **out, int cap)
{
    int n, nlate, k = 0;
    const struct rules_rule *const *table = rules_table(&n);
    const struct rules_rule *const *late = rules_late(&nlate);
    for (int i = 0; i < n && k < cap; i++)
        out[k++] = table[i];
    if (k < cap)
        out[k++] = rules_advance();
    for (int i = 0; i < nlate && k < cap; i++)
        out[k++] = late[i];
    if (k < cap)
        out[k++] = &rules_rule_fused_quant;
    char err[IR_ERR_LEN];
    struct shim *lane = shim_lookup("cuda-lane:h200:int8", err);
    for (int i = 0; lane && i < lane->nrules && k < cap; i++)
        out[k++] = lane->rules[i].rule;
    shim_free(lane);
    return k;
}

int main(void)
{
    const struct rules_rule *all[80];
    check_seed_atoms(all, every_rule(all, 80));
    int n, nlate;
    const struct rules_rule *const *table = rules_table(&n);
    const struct rules_rule *const *late = rules_late(&nlate);
    struct coverage cov[64];
    int ncov = 0;
    for (int i = 0; i < n; i++)
        cov[ncov++] = (struct coverage){.rule = table[i]};
    for (int i = 0; i < nlate; i++)
        cov[ncov++] = (struct coverage){.rule = late[i]};
    cov[ncov++] = (struct coverage){.rule = rules_advance()};
    cov[ncov++] = (struct coverage){.rule = &rules_rule_fused_quant};
    /* The lane's own rules (their cases name a cuda-lane shim). */
    char err[IR_ERR_LEN];
    struct shim *lane = shim_lookup("cuda-lane:h200:int8", err);
    for (int i = 0; lane && i < lane->nrules; i++)
        cov[ncov++] = (struct coverage){.rule = lane->rules[i].rule};
    shim_free(lane);
    for (int i = 0; i < ncov; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "tests/rules/%s", cov[i].rule->name);
        run_dir(dir, cov, ncov);
    }
    for (int i = 0; i < ncov; i++) {
        CHECKF(cov[i].fired, "rule %s has no firing case under tests/rules/%s", cov[i].rule->name, cov[i].rule->name);
        CHECKF(cov[i].seed_fired, "rule %s has no case firing alike under the seed's rules", cov[i].rule->name);
        for (int a = 0; a < cov[i].rule->nguards && a < 32; a++)
            CHECKF(cov[i].near[a], "rule %s: atom %s has no near-miss case", cov[i].rule->name,
                   cov[i].rule->guards[a].name);
    }
    return check_done("rules");
}
