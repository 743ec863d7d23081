/* oracle/report.c — the decision report held to its own contract, whatever optimizer wrote it: each decision names
 * a rule and lists the lifted ops it covers in ascending order, each one an op the compiled graph covers (a firing
 * or a hold at least one); a refusal says why and nothing else does; and no refusal repeats the decision before it
 * (a place the chip refused, asked about again at once, is reported once). A report that breaks it misstates what
 * the compile decided, so check, the fixture cases and the fuzz harness hold every report they see to it.
 *
 * Only what the seed's optimizer keeps on every valid graph is asked: covers may name a lifted op more than once (a
 * recomputed producer is covered by each copy), and two firings may say the same (two ops that cover the same lifted
 * ops, each fused alike) — also when a step the chip does not link reports its firings refused — so neither is a
 * fault. */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether two decisions say the same: rule, class, covers, outcome and reason. Written here again rather than taken
 * from the optimizer's own repeat test (rules_report_repeats), so that a broken repeat test is not also the check's. */
static bool same_decision(const struct rules_decision *a, const struct rules_decision *b)
{
    if (!rules_same_name(a->rule, b->rule) || a->cls != b->cls || a->outcome != b->outcome ||
        a->ncovers != b->ncovers)
        return false;
    if ((a->why == NULL) != (b->why == NULL) || (a->why && strcmp(a->why, b->why) != 0))
        return false;
    return a->ncovers == 0 || memcmp(a->covers, b->covers, sizeof *a->covers * (size_t)a->ncovers) == 0;
}

/* The lifted ops the graph covers, as a sorted list without repeats. */
struct universe {
    int32_t *v;
    size_t n, cap;
};

/* Add the covers of op and of its parts, at any depth, to u. */
static void add_covers(struct universe *u, const struct ir_op *op)
{
    if (u->n + (size_t)op->ncovers > u->cap) {
        u->cap = 2 * (u->n + (size_t)op->ncovers) + 16;
        u->v = realloc(u->v, sizeof *u->v * u->cap);
        if (!u->v)
            abort();
    }
    if (op->ncovers)
        memcpy(u->v + u->n, op->covers, sizeof *op->covers * (size_t)op->ncovers);
    u->n += (size_t)op->ncovers;
    for (int32_t i = 0; i < op->nparts; i++)
        add_covers(u, &op->parts[i]);
}

/* Why decision d breaks the contract on its own (its covers against the graph's, u), or NULL. */
static const char *decision_fault(const struct rules_decision *d, const struct universe *u, char buf[IR_ERR_LEN])
{
    if (!d->rule || !d->rule[0])
        return "it names no rule";
    if (d->outcome != RULES_REFUSED && d->ncovers < 1)
        return "a firing or a hold covers no lifted op";
    for (int32_t k = 0; k < d->ncovers; k++) {
        if (!u->n || !bsearch(&d->covers[k], u->v, u->n, sizeof *u->v, rules_cmp_i32)) {
            snprintf(buf, IR_ERR_LEN, "it covers lifted op %d, which no op of the compiled graph covers",
                     (int)d->covers[k]);
            return buf;
        }
        if (k > 0 && d->covers[k] < d->covers[k - 1])
            return "its covers are not in ascending order";
    }
    if (d->outcome == RULES_REFUSED && (!d->why || !d->why[0]))
        return "a refusal gives no reason";
    if (d->outcome != RULES_REFUSED && d->why)
        return "a decision other than a refusal gives a reason";
    return NULL;
}

/* Whether step's refusals may repeat the decision before them: a step the chip does not link, unheld, runs dry and
 * reports each firing refused with one reason, so two firings alike (two ops covering the same lifted ops, each
 * fused alike) are two refusals alike, as the seed reports them. A held step's firings are reported held, and a
 * linked step's refusals are the chip's answers, each reported once. */
static bool may_repeat(const struct shim *shim, const char *const *held, int nheld, const char *step)
{
    for (int i = 0; i < nheld; i++)
        if (held[i] && rules_same_name(held[i], step))
            return false;
    if (shim->holds && shim->holds(shim, step))
        return false;
    return !rules_step_linked(shim, step);
}

int32_t oracle_report_check(const struct ir_graph *g, const struct shim *shim, const char *const *held, int nheld,
                            const struct rules_report *rep, char why[IR_ERR_LEN])
{
    struct universe u = {0};
    for (int32_t i = 0; i < g->nops; i++)
        add_covers(&u, &g->ops[i]);
    u.n = ir_ids_sort_unique(u.v, u.n);
    char buf[IR_ERR_LEN];
    int32_t bad = -1;
    for (int32_t i = 0; i < rep->n && bad < 0; i++) {
        const struct rules_decision *d = &rep->d[i];
        const char *fault = decision_fault(d, &u, buf);
        if (!fault && d->outcome == RULES_REFUSED && i > 0 && same_decision(d, &rep->d[i - 1]) &&
            !may_repeat(shim, held, nheld, d->rule))
            fault = "the same refusal twice in a row (a place refused, asked about again at once, is reported once)";
        if (!fault)
            continue;
        char *line = d->rule ? rules_decision_line(d) : NULL;
        snprintf(why, IR_ERR_LEN, "decision %d (%.200s): %.260s", (int)i, line ? line : "?", fault);
        free(line);
        bad = i;
    }
    free(u.v);
    return bad;
}
