/* tests/test_rules.c — the rule tests: every fixture case under tests/rules/<rule>/ run as `fusecheck check
 * --fixtures` runs it (oracle/fixtures.c: optimized, held to the directives of its leading comments and to its
 * .expected, validated and diffed bit for bit; docs/oracle.md lists the directives), and the coverage of the cases:
 * every rule of the table (and the late rules, argmax_advance, the numerics fold and the lane's rules) has a firing
 * case, one that fires alike under the seed's rules, and a near-miss case for every guard atom it declares. Each
 * atom's origin is checked against docs/findings.md. Set FUSECHECK_WRITE_EXPECTED=1 to write missing .expected
 * files (then review them). */
#include "check.h"
#include "oracle/oracle.h"
#include "rules/rules.h"

#include <stdlib.h>
#include <string.h>

/* Per rule: whether a firing case and which atoms' near misses were seen. */
struct coverage {
    const struct rules_rule *rule;
    bool fired, seed_fired; /* a firing case under fusecheck's rules; one the seed's fire alike */
    bool near[32];
};

/* The coverage entries being filled. */
struct coverage_set {
    struct coverage *cov;
    int n;
};

/* A failed check of a case: one failed assertion, printed. */
static void case_failed(const struct oracle_fixture *f, const char *what, void *ctx)
{
    (void)ctx;
    CHECKF(false, "%s: %s", f->path, what);
}

/* A case done: its checks counted, and what it covers marked on its rule's entry. */
static void case_done(const struct oracle_fixture *f, void *ctx)
{
    struct coverage_set *set = ctx;
    check_passed += f->checks - f->failed;
    struct coverage *c = NULL;
    for (int i = 0; i < set->n && !c; i++)
        if (strcmp(set->cov[i].rule->name, f->rule) == 0)
            c = &set->cov[i];
    CHECKF(c != NULL, "%s: rule '%s' is not among the rules covered", f->path, f->rule);
    if (!c || f->failed)
        return;
    c->fired |= f->fires;
    c->seed_fired |= f->seed_fires;
    for (int a = 0; f->near_miss[0] && a < c->rule->nguards && a < 32; a++)
        if (strcmp(c->rule->guards[a].name, f->near_miss) == 0)
            c->near[a] = true;
}

/* Each rule's atoms the seed has (fuse.rs, lane_shim.rs), in table order, as the audit of the seed found them; a
 * trailing '+' marks one fusecheck widened. Every other atom is fusecheck's own. Re-checked rule by rule against the
 * seed for issue 33 (docs/findings.md, *Totals*): a seed atom whose condition is looser than the seed's as a
 * predicate has its matcher ask the seed's exact test while the atom is active (attn_output_gate:readers_within,
 * moe_rows:views_read_within). */
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
    {"join_in_place", "only_reader_a only_reader_b dst_untouched+ index_untouched"},
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
    struct coverage_set set = {cov, ncov};
    struct oracle_fixture_hooks hooks = {case_failed, case_done, &set, getenv("FUSECHECK_WRITE_EXPECTED") != NULL};
    int failed_cases = 0;
    int ncases = oracle_fixtures_run("tests/rules", &hooks, &failed_cases, err);
    CHECKF(ncases > 0, "%s", err);
    CHECKF(failed_cases == 0, "%d of %d fixture cases failed", failed_cases, ncases);
    for (int i = 0; i < ncov; i++) {
        CHECKF(cov[i].fired, "rule %s has no firing case under tests/rules/%s", cov[i].rule->name, cov[i].rule->name);
        CHECKF(cov[i].seed_fired, "rule %s has no case firing alike under the seed's rules", cov[i].rule->name);
        for (int a = 0; a < cov[i].rule->nguards && a < 32; a++)
            CHECKF(cov[i].near[a], "rule %s: atom %s has no near-miss case", cov[i].rule->name,
                   cov[i].rule->guards[a].name);
    }
    return check_done("rules");
}
