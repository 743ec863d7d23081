/* oracle/sched.c — concrete schedules: made, bound, printed as a minimal counterexample, and turned into IR slots
 * whose facts are the schedule's (so the optimizer's own interpreter of the atoms can be asked of them). */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *oracle_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        abort();
    return p;
}

struct oracle_sched *oracle_sched_new(int nops, int ntensors)
{
    struct oracle_sched *s = oracle_xcalloc(1, sizeof *s);
    s->nops = nops > 0 ? nops : 0;
    s->ntensors = ntensors > 0 ? ntensors : 0;
    size_t cells = (size_t)s->nops * (size_t)s->ntensors;
    s->reads = oracle_xcalloc(cells, sizeof *s->reads);
    s->writes = oracle_xcalloc(cells, sizeof *s->writes);
    s->observed = oracle_xcalloc((size_t)s->ntensors, sizeof *s->observed);
    s->carried = oracle_xcalloc((size_t)s->ntensors, sizeof *s->carried);
    s->role = oracle_xcalloc((size_t)s->ntensors, sizeof *s->role);
    for (int t = 0; t < s->ntensors; t++)
        s->role[t] = IR_ROLE_ACTIVATION;
    s->set_store = oracle_xcalloc((size_t)RULES_ROLE_COUNT * (size_t)(s->nops + 1), sizeof *s->set_store);
    s->bind = rules_binding_empty();
    s->half[0] = s->half[1] = -2;
    return s;
}

/* ── The index ───────────────────────────────────────────────────────────────────────────────────────────── */

int32_t oracle_lower_bound(const int32_t *v, int32_t lo, int32_t hi, long long k)
{
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (v[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The transpose of op lists (at, v) over n ops: each of nt tensors' ops, ascending, into *tat and *tv. */
static void transpose(int n, int nt, const int32_t *at, const int32_t *v, int32_t **tat, int32_t **tv)
{
    int32_t total = at[n];
    int32_t *cnt = oracle_xcalloc((size_t)nt + 1, sizeof *cnt);
    for (int32_t i = 0; i < total; i++)
        cnt[v[i] + 1]++;
    for (int t = 0; t < nt; t++)
        cnt[t + 1] += cnt[t];
    int32_t *out = oracle_xcalloc((size_t)total, sizeof *out), *fill = oracle_xcalloc((size_t)nt + 1, sizeof *fill);
    memcpy(fill, cnt, sizeof *fill * ((size_t)nt + 1));
    for (int k = 0; k < n; k++) /* ops in order: each tensor's list comes out ascending */
        for (int32_t i = at[k]; i < at[k + 1]; i++)
            out[fill[v[i]]++] = k;
    free(fill);
    *tat = cnt;
    *tv = out;
}

/* A copy of n ints. */
static int32_t *dup_ints(const int32_t *v, size_t n)
{
    int32_t *c = oracle_xcalloc(n, sizeof *c);
    if (n)
        memcpy(c, v, n * sizeof *c);
    return c;
}

/* Index set role g of the binding: its members' flags, and the running member counts of every tensor's lists. */
static void index_set(struct oracle_sched *s, int g)
{
    struct oracle_index *ix = s->ix;
    free(ix->member[g]);
    free(ix->readers_in[g]);
    free(ix->writers_in[g]);
    ix->member[g] = oracle_xcalloc((size_t)s->nops, sizeof *ix->member[g]);
    for (int32_t i = 0; i < s->bind.nset[g]; i++)
        if (s->bind.set[g][i] >= 0 && s->bind.set[g][i] < s->nops)
            ix->member[g][s->bind.set[g][i]] = true;
    int32_t nr = ix->readers_at[s->ntensors], nw = ix->writers_at[s->ntensors];
    ix->readers_in[g] = oracle_xcalloc((size_t)nr + 1, sizeof *ix->readers_in[g]);
    ix->writers_in[g] = oracle_xcalloc((size_t)nw + 1, sizeof *ix->writers_in[g]);
    for (int32_t i = 0; i < nr; i++)
        ix->readers_in[g][i + 1] = ix->readers_in[g][i] + ix->member[g][ix->readers[i]];
    for (int32_t i = 0; i < nw; i++)
        ix->writers_in[g][i + 1] = ix->writers_in[g][i] + ix->member[g][ix->writers[i]];
}

/* Index op lists (copied) and every set already bound. */
static void index_lists(struct oracle_sched *s, const int32_t *rd_at, const int32_t *rd, const int32_t *wr_at,
                        const int32_t *wr)
{
    struct oracle_index *ix = oracle_xcalloc(1, sizeof *ix);
    s->ix = ix;
    ix->rd_at = dup_ints(rd_at, (size_t)s->nops + 1);
    ix->rd = dup_ints(rd, (size_t)rd_at[s->nops]);
    ix->wr_at = dup_ints(wr_at, (size_t)s->nops + 1);
    ix->wr = dup_ints(wr, (size_t)wr_at[s->nops]);
    transpose(s->nops, s->ntensors, ix->rd_at, ix->rd, &ix->readers_at, &ix->readers);
    transpose(s->nops, s->ntensors, ix->wr_at, ix->wr, &ix->writers_at, &ix->writers);
    for (int g = 1; g < RULES_ROLE_COUNT; g++)
        if (s->bind.set[g])
            index_set(s, g);
}

struct oracle_sched *oracle_sched_new_sparse(int nops, int ntensors, const int32_t *rd_at, const int32_t *rd,
                                             const int32_t *wr_at, const int32_t *wr)
{
    struct oracle_sched *s = oracle_sched_new(0, ntensors);
    s->nops = nops > 0 ? nops : 0;
    free(s->reads);
    free(s->writes);
    s->reads = s->writes = NULL;
    free(s->set_store);
    s->set_store = oracle_xcalloc((size_t)RULES_ROLE_COUNT * (size_t)(s->nops + 1), sizeof *s->set_store);
    index_lists(s, rd_at, rd, wr_at, wr);
    return s;
}

/* One matrix's rows as op lists: *at (nops + 1 offsets) and *v. */
static void rows_of(const struct oracle_sched *s, const bool *m, int32_t **at, int32_t **v)
{
    size_t cells = (size_t)s->nops * (size_t)s->ntensors, total = 0;
    for (size_t i = 0; i < cells; i++)
        total += m[i];
    *at = oracle_xcalloc((size_t)s->nops + 1, sizeof **at);
    *v = oracle_xcalloc(total, sizeof **v);
    int32_t n = 0;
    for (int k = 0; k < s->nops; k++) {
        for (int t = 0; t < s->ntensors; t++)
            if (m[k * s->ntensors + t])
                (*v)[n++] = t;
        (*at)[k + 1] = n;
    }
}

/* Free an index. */
static void index_free(struct oracle_index *ix)
{
    if (!ix)
        return;
    free(ix->rd_at);
    free(ix->rd);
    free(ix->wr_at);
    free(ix->wr);
    free(ix->readers_at);
    free(ix->readers);
    free(ix->writers_at);
    free(ix->writers);
    for (int g = 0; g < RULES_ROLE_COUNT; g++) {
        free(ix->member[g]);
        free(ix->readers_in[g]);
        free(ix->writers_in[g]);
    }
    free(ix);
}

void oracle_sched_index(struct oracle_sched *s)
{
    if (!s->reads)
        return; /* sparse: indexed from the start */
    index_free(s->ix);
    int32_t *rd_at, *rd, *wr_at, *wr;
    rows_of(s, s->reads, &rd_at, &rd);
    rows_of(s, s->writes, &wr_at, &wr);
    index_lists(s, rd_at, rd, wr_at, wr);
    free(rd_at);
    free(rd);
    free(wr_at);
    free(wr);
}

void oracle_sched_free(struct oracle_sched *s)
{
    if (!s)
        return;
    index_free(s->ix);
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
    if (s->ix)
        index_set(s, (int)g);
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
    struct ir_op *ops = oracle_xcalloc((size_t)s->nops, sizeof *ops);
    ir_tid *list = oracle_xcalloc((size_t)s->ntensors, sizeof *list);
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
