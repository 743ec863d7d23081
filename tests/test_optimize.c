/* tests/test_optimize.c — the optimizer over the model zoo: diff bit-identical under `reference` and `none`, the
 * rewritten graphs valid, `none` leaving every graph as lifted with every would-be firing refused, report digests
 * the same on a second run and equal to the committed ones (so both presets and both compilers agree), and holding
 * every step from the k-th on leaving the graph the earlier steps make. */
#include "check.h"
#include "check_values.h"
#include "models/models.h"
#include "rules/rules.h"
#include "shim/shim.h"

#include <stdlib.h>
#include <string.h>

#define DIGESTS "tests/data/digests.expected"

static const char *const modes[] = {"decode", "prefill:8", "batch:4"};

/* A lifted zoo graph (layers cut to `layers` when positive). */
static struct ir_graph *lift(const struct models_config *c, const char *mode, int32_t layers)
{
    char err[IR_ERR_LEN];
    struct models_options o = models_default_options();
    o.layers = layers;
    models_parse_mode(mode, &o.mode, err);
    struct ir_graph *g = models_lift(c, &o, err);
    CHECKF(g != NULL, "%s %s: %s", c->name, mode, err);
    return g;
}

/* Whether two graphs print the same. */
static bool same_text(const struct ir_graph *a, const struct ir_graph *b)
{
    size_t la, lb;
    char *ta = ir_print(a, &la), *tb = ir_print(b, &lb);
    bool same = ta && tb && la == lb && memcmp(ta, tb, la) == 0;
    free(ta);
    free(tb);
    return same;
}

/* The committed digests, one "model mode shim digest" a line; NULL when missing. */
static char *read_digests(void)
{
    FILE *f = fopen(DIGESTS, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Every zoo model in every mode under both shims. Digest lines are appended to `lines`. */
static void test_zoo(char *lines, size_t cap)
{
    char err[IR_ERR_LEN];
    struct shim *shims[2] = {shim_reference(), shim_none()};
    for (int m = 0; m < models_count(); m++) {
        const struct models_config *c = models_get(m);
        for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
            /* Real configurations are optimized whole; their diff needs --eval-real (the nightly check). */
            struct ir_graph *g = lift(c, modes[k], 0);
            if (!g)
                continue;
            for (int s = 0; s < 2; s++) {
                struct rules_optimized o, again;
                CHECK(rules_optimize(g, shims[s], NULL, 0, &o, err) == 0);
                CHECK(rules_optimize(g, shims[s], NULL, 0, &again, err) == 0);
                CHECKF(ir_validate(o.graph, err) == 0, "%s %s %s: %s", c->name, modes[k], shims[s]->name, err);
                char d1[65], d2[65];
                rules_report_digest(&o.report, d1);
                rules_report_digest(&again.report, d2);
                CHECKF(strcmp(d1, d2) == 0, "%s %s %s: digest differs between runs", c->name, modes[k],
                       shims[s]->name);
                size_t n = strlen(lines);
                snprintf(lines + n, cap - n, "%s %s %s %s\n", c->name, modes[k], shims[s]->name, d1);
                if (s == 1) {
                    CHECKF(same_text(g, o.graph), "%s %s: none changed the graph", c->name, modes[k]);
                    CHECKF(rules_report_count(&o.report, RULES_FIRED, NULL) == 0, "%s %s: none fired", c->name,
                           modes[k]);
                    CHECK(rules_report_count(&o.report, RULES_REFUSED, NULL) > 0);
                } else {
                    CHECKF(rules_report_count(&o.report, RULES_FIRED, NULL) > 0, "%s %s: nothing fired", c->name,
                           modes[k]);
                }
                if (c->tiny)
                    CHECKF(check_same_values(g, o.graph, 11), "%s %s under %s", c->name, modes[k], shims[s]->name);
                rules_optimized_free(&o);
                rules_optimized_free(&again);
            }
            ir_graph_free(g);
        }
    }
    shim_free(shims[0]);
    shim_free(shims[1]);
}

/* The digests equal the committed ones (FUSECHECK_WRITE_EXPECTED=1 writes them afresh). */
static void test_digests(const char *lines)
{
    if (getenv("FUSECHECK_WRITE_EXPECTED")) {
        FILE *f = fopen(DIGESTS, "wb");
        if (f) {
            fputs(lines, f);
            fclose(f);
        }
    }
    const char *want = read_digests();
    CHECKF(want != NULL, "%s missing", DIGESTS);
    if (want && strcmp(want, lines) != 0) {
        check_failed++;
        fprintf(stderr, "report digests differ from %s; now:\n%s", DIGESTS, lines);
    } else if (want) {
        check_passed++;
    }
}

/* Collect step names. */
struct names {
    const char *v[128];
    int n;
};
static void add_name(const char *name, void *ctx)
{
    struct names *s = ctx;
    if (s->n < 128)
        s->v[s->n++] = name;
}

/* The lines of the decisions step `name` made, joined (malloc'd); with as_held a firing is written as held. */
static char *step_lines(const struct rules_report *rep, const char *name, bool as_held)
{
    size_t cap = 1 << 16, n = 0;
    char *out = calloc(1, cap);
    for (int32_t i = 0; out && i < rep->n; i++) {
        if (strcmp(rep->d[i].rule, name) != 0)
            continue;
        struct rules_decision d = rep->d[i];
        if (as_held && d.outcome == RULES_FIRED)
            d.outcome = RULES_HELD;
        char *line = rules_decision_line(&d);
        n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s\n", line ? line : "?");
        free(line);
    }
    return out;
}

/* For every k, holding every step from the k-th on gives the graph of running only the first k steps, and the k-th
 * step's dry run reports held exactly where the full compile fired it (its refusals as they were). */
static void test_holds(void)
{
    char err[IR_ERR_LEN];
    struct shim *shim = shim_reference();
    struct names steps = {.n = 0};
    rules_steps(shim, add_name, &steps);
    static const char *const models[] = {"tiny-qwen3", "tiny-gemma2", "tiny-qwen3-moe"};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        for (size_t k = 0; k < 2; k++) {
            struct ir_graph *g = lift(models_find(models[m]), modes[k], 0);
            struct rules_optimized full;
            CHECK(rules_optimize(g, shim, NULL, 0, &full, err) == 0);
            for (int from = 0; from <= steps.n; from++) {
                struct rules_optimized held, until;
                CHECK(rules_optimize(g, shim, steps.v + from, steps.n - from, &held, err) == 0);
                CHECK(rules_optimize_steps(g, shim, NULL, 0, from, &until, err) == 0);
                CHECKF(same_text(held.graph, until.graph), "%s %s: holding from step %d (%s) differs", models[m],
                       modes[k], from, from < steps.n ? steps.v[from] : "end");
                if (from < steps.n) {
                    char *ran = step_lines(&full.report, steps.v[from], true);
                    char *dry = step_lines(&held.report, steps.v[from], false);
                    CHECKF(ran && dry && strcmp(ran, dry) == 0, "%s %s: step %s held reports\n%s\nbut runs as\n%s",
                           models[m], modes[k], steps.v[from], dry ? dry : "?", ran ? ran : "?");
                    free(ran);
                    free(dry);
                }
                /* A held step fires nothing: the firings are exactly the earlier steps'. */
                CHECK(rules_report_count(&held.report, RULES_FIRED, NULL) ==
                      rules_report_count(&until.report, RULES_FIRED, NULL));
                rules_optimized_free(&held);
                rules_optimized_free(&until);
            }
            /* Holding everything leaves the lifted graph but for the views and the arg-max's advance. */
            struct rules_optimized all;
            CHECK(rules_optimize(g, shim, steps.v, steps.n, &all, err) == 0);
            CHECK(rules_report_count(&all.report, RULES_HELD, NULL) > 0);
            CHECK(rules_report_count(&all.report, RULES_FIRED, NULL) == rules_report_count(&all.report, RULES_FIRED,
                                                                                              "argmax_advance"));
            CHECK(check_same_values(g, all.graph, 11));
            rules_optimized_free(&all);
            rules_optimized_free(&full);
            ir_graph_free(g);
        }
    }
    shim_free(shim);
}

int main(void)
{
    static char lines[1 << 16];
    test_zoo(lines, sizeof lines);
    test_digests(lines);
    test_holds();
    return check_done("optimize");
}
