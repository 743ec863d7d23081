/* oracle/sched.c — concrete schedules: made, bound, printed as a minimal counterexample, and turned into IR slots
 * whose facts are the schedule's (so the optimizer's own interpreter of the atoms can be asked of them). */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* calloc that aborts on exhaustion. */
static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
    return p;
}

struct oracle_sched *oracle_sched_new(int nops, int ntensors)
{
    struct oracle_sched *s = xcalloc(1, sizeof *s);
    s->nops = nops > 0 ? nops : 0;
    s->ntensors = ntensors > 0 ? ntensors : 0;
    size_t cells = (size_t)s->nops * (size_t)s->ntensors;
    s->reads = xcalloc(cells, sizeof *s->reads);
    s->writes = xcalloc(cells, sizeof *s->writes);
    s->observed = xcalloc((size_t)s->ntensors, sizeof *s->observed);
    s->carried = xcalloc((size_t)s->ntensors, sizeof *s->carried);
    s->role = xcalloc((size_t)s->ntensors, sizeof *s->role);
    for (int t = 0; t < s->ntensors; t++)
        s->role[t] = IR_ROLE_ACTIVATION;
    s->set_store = xcalloc((size_t)RULES_ROLE_COUNT * (size_t)(s->nops + 1), sizeof *s->set_store);
    s->bind = rules_binding_empty();
    s->half[0] = s->half[1] = -2;
    return s;
}

void oracle_sched_free(struct oracle_sched *s)
{
    if (!s)
        return;
    free(s->reads);
    free(s->writes);
    free(s->observed);
    free(s->carried);
    free(s->role);
    free(s->set_store);
    free(s);
}

void oracle_sched_set(struct oracle_sched *s, enum rules_role g, const int32_t *slots, int32_t n)
{
    int32_t *dst = s->set_store + (size_t)g * (size_t)(s->nops + 1);
    int32_t m = 0;
    for (int32_t i = 0; i < n && m <= s->nops; i++)
        dst[m++] = slots[i];
    s->bind.set[g] = dst;
    s->bind.nset[g] = m;
}

/* ── Text ────────────────────────────────────────────────────────────────────────────────────────────────── */

/* The roles (of kind 'S' slot or 'T' tensor) bound to index i, as " [role, role]" (empty when none). */
static void role_tags(struct ir_text *b, const struct oracle_sched *s, char kind, int i)
{
    static const char kinds[] = {
#define X(e, str, k) k,
        RULES_ROLES(X)
#undef X
    };
    int n = 0;
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        if (kinds[r] != kind)
            continue;
        int bound = kind == 'S' ? s->bind.slot[r] : s->bind.tensor[r];
        if (bound != i)
            continue;
        ir_text_add(b, "%s%s", n++ ? ", " : " [", rules_role_name((enum rules_role)r));
    }
    if (n)
        ir_text_add(b, "]");
}

/* The tensors of row k of a matrix, as " t1 t3" (or " -"). */
static void row_tensors(struct ir_text *b, const struct oracle_sched *s, const bool *m, int k)
{
    int n = 0;
    for (int t = 0; t < s->ntensors; t++)
        if (m[k * s->ntensors + t]) {
            ir_text_add(b, " t%d", t);
            n++;
        }
    if (!n)
        ir_text_add(b, " -");
}

char *oracle_sched_text(const struct oracle_sched *s)
{
    struct ir_text b = {0};
    ir_text_add(&b, "window of %d ops over %d tensors\n", s->nops, s->ntensors);
    for (int k = 0; k < s->nops; k++) {
        ir_text_add(&b, "  op %d", k);
        role_tags(&b, s, 'S', k);
        ir_text_add(&b, ": reads");
        row_tensors(&b, s, s->reads, k);
        ir_text_add(&b, "; writes");
        row_tensors(&b, s, s->writes, k);
        ir_text_add(&b, "\n");
    }
    for (int t = 0; t < s->ntensors; t++) {
        ir_text_add(&b, "  tensor t%d %s%s%s", t, ir_role_name(s->role[t]), s->observed[t] ? " observed" : "",
                  s->carried[t] ? " carried" : "");
        role_tags(&b, s, 'T', t);
        ir_text_add(&b, "\n");
    }
    for (int g = 1; g < RULES_ROLE_COUNT; g++) {
        if (!s->bind.set[g])
            continue;
        ir_text_add(&b, "  %s = {", rules_role_name((enum rules_role)g));
        for (int32_t i = 0; i < s->bind.nset[g]; i++)
            ir_text_add(&b, "%s%d", i ? ", " : "", (int)s->bind.set[g][i]);
        ir_text_add(&b, "}\n");
    }
    if (s->note[0])
        ir_text_add(&b, "  breaks: %s\n", s->note);
    return ir_text_take(&b);
}

/* ── As IR slots ─────────────────────────────────────────────────────────────────────────────────────────── */

struct ir_slots *oracle_sched_slots(const struct oracle_sched *s, struct ir_graph **out)
{
    struct ir_graph *g = ir_graph_new();
    if (!g)
        abort();
    for (int t = 0; t < s->ntensors; t++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", t);
        ir_tid id = ir_tensor_add(g, name, IR_ELEM_F32, 1, 1, s->role[t]);
        g->tensors[id].observed = s->observed[t];
        g->tensors[id].carried = s->carried[t];
    }
    struct ir_op *ops = xcalloc((size_t)s->nops, sizeof *ops);
    ir_tid *list = xcalloc((size_t)s->ntensors, sizeof *list);
    for (int k = 0; k < s->nops; k++) {
        int nr = 0, nw = 0;
        for (int t = 0; t < s->ntensors; t++)
            if (s->reads[k * s->ntensors + t])
                list[nr++] = t;
        ops[k] = ir_op_prim(IR_KIND_SCALE, list, nr, IR_NONE);
        for (int t = 0; t < s->ntensors; t++)
            if (s->writes[k * s->ntensors + t])
                list[nw++] = t;
        /* The first tensor written is the result in its own buffer; the others are kept results. */
        if (nw > 0) {
            ops[k].out = list[0];
            ops[k].dst = ir_dst_own(list[0]);
            ir_op_set_keeps(&ops[k], list + 1, nw - 1);
        }
    }
    free(list);
    *out = g;
    return ir_slots_new(g, ops, s->nops);
}

void oracle_sched_slots_free(struct ir_slots *slots, struct ir_graph *g)
{
    ir_slots_free(slots);
    ir_graph_free(g);
}
