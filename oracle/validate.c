/* oracle/validate.c — translation validation: a concrete optimization re-checked firing by firing. When a rule's
 * guards hold, the slots as they stand are cut down to the ops and tensors the binding can see (every op touching a
 * tensor the bound ops touch, in order) and checked with the oracle's own interpreters: each atom's twin, the rule's
 * premises, and whether its motion breaks a dependence; a row a param names is checked with Z3 for every value it
 * may take. When the firing is reported, the rewritten slots must be what the motion says (the fused op where the
 * motion puts it, the moved ops' slots empty). */
#include "oracle.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ── Cutting the slots down ──────────────────────────────────────────────────────────────────────────────── */

/* Every live slot's reads and writes. */
struct access {
    int32_t n;
    ir_tid **reads, **writes;
    int *nreads, *nwrites;
};

/* A tensor set of op, malloc'd (reads or writes); *n its size. */
static ir_tid *tensors_of(const struct ir_op *op, bool writes, int *n)
{
    int count = writes ? ir_op_writes(op, NULL, 0) : ir_op_reads(op, NULL, 0);
    ir_tid *v = oracle_xcalloc((size_t)count, sizeof *v);
    *n = writes ? ir_op_writes(op, v, count) : ir_op_reads(op, v, count);
    return v;
}

/* The reads and writes of every live slot of s. */
static struct access access_of(const struct ir_slots *s)
{
    struct access a;
    a.n = ir_slots_len(s);
    a.reads = oracle_xcalloc((size_t)a.n, sizeof *a.reads);
    a.writes = oracle_xcalloc((size_t)a.n, sizeof *a.writes);
    a.nreads = oracle_xcalloc((size_t)a.n, sizeof *a.nreads);
    a.nwrites = oracle_xcalloc((size_t)a.n, sizeof *a.nwrites);
    for (int32_t i = 0; i < a.n; i++) {
        const struct ir_op *op = ir_slots_get(s, i);
        if (!op)
            continue;
        a.reads[i] = tensors_of(op, false, &a.nreads[i]);
        a.writes[i] = tensors_of(op, true, &a.nwrites[i]);
    }
    return a;
}

static void access_free(struct access *a)
{
    for (int32_t i = 0; i < a->n; i++) {
        free(a->reads[i]);
        free(a->writes[i]);
    }
    free(a->reads);
    free(a->writes);
    free(a->nreads);
    free(a->nwrites);
}

/* Mark slot i as key and its tensors as relevant. */
static void mark_key(const struct access *a, int32_t i, bool *key, bool *rel, int32_t nt)
{
    if (i < 0 || i >= a->n || !a->reads[i])
        return;
    key[i] = true;
    for (int k = 0; k < a->nreads[i]; k++)
        if (a->reads[i][k] >= 0 && a->reads[i][k] < nt)
            rel[a->reads[i][k]] = true;
    for (int k = 0; k < a->nwrites[i]; k++)
        if (a->writes[i][k] >= 0 && a->writes[i][k] < nt)
            rel[a->writes[i][k]] = true;
}

/* Whether slot i touches a relevant tensor. */
static bool touches(const struct access *a, int32_t i, const bool *rel, int32_t nt)
{
    for (int k = 0; k < a->nreads[i]; k++)
        if (a->reads[i][k] >= 0 && a->reads[i][k] < nt && rel[a->reads[i][k]])
            return true;
    for (int k = 0; k < a->nwrites[i]; k++)
        if (a->writes[i][k] >= 0 && a->writes[i][k] < nt && rel[a->writes[i][k]])
            return true;
    return false;
}

/* The role kinds of the role table. */
static const char role_kind[] = {
#define X(e, s, k) k,
    RULES_ROLES(X)
#undef X
};

/* A tensor's role as the model has it: state, activation, or host-set. */
static enum ir_role model_role(enum ir_role r)
{
    return r == IR_ROLE_STATE || r == IR_ROLE_ACTIVATION ? r : IR_ROLE_INPUT;
}

/* Which slots and tensors a cut keeps, and their numbers in it (-1: dropped). */
struct cutmap {
    bool *key, *rel;         /* per slot: bound; per tensor: touched by a bound slot, or bound */
    int32_t *slot, *tensor;  /* the numbering */
    int nops, ntensors;
    int32_t half[2];         /* place_units: the halves' producers */
};

/* Mark the bound slots (the sets' members and the join's producers too) as key, and what they touch as relevant. */
static void mark_bound(struct cutmap *m, const struct access *a, const struct rules_rewriter *r,
                       const struct rules_rule *rule, const struct rules_binding *b, int32_t nt)
{
    for (int role = 1; role < RULES_ROLE_COUNT; role++) {
        if (role_kind[role] == 'S' && role != RULES_ROLE_EACH)
            mark_key(a, b->slot[role], m->key, m->rel, nt);
        if (role_kind[role] == 'T' && b->tensor[role] >= 0 && b->tensor[role] < nt)
            m->rel[b->tensor[role]] = true;
        for (int32_t i = 0; role_kind[role] == 'G' && i < b->nset[role]; i++)
            mark_key(a, b->set[role][i], m->key, m->rel, nt);
    }
    m->half[0] = m->half[1] = -1;
    if (rule->motion == RULES_MOTION_PLACE_UNITS)
        for (int h = 0; h < 2; h++) {
            m->half[h] = ir_facts_producer(r->s, b->tensor[h ? RULES_ROLE_OTHER : RULES_ROLE_INPUT]);
            mark_key(a, m->half[h], m->key, m->rel, nt);
        }
}

/* Number the kept slots (key, or touching a relevant tensor) and tensors, in order. */
static void number(struct cutmap *m, const struct access *a, int32_t nt)
{
    for (int32_t i = 0; i < a->n; i++)
        m->slot[i] = a->reads[i] && (m->key[i] || touches(a, i, m->rel, nt)) ? m->nops++ : -1;
    for (int32_t t = 0; t < nt; t++)
        m->tensor[t] = m->rel[t] ? m->ntensors++ : -1;
}

/* The cut's relations, roles and flags. */
static void fill(struct oracle_sched *s, const struct cutmap *m, const struct access *a, const struct ir_graph *g)
{
    int32_t nt = g->ntensors;
    for (int32_t i = 0; i < a->n; i++) {
        if (m->slot[i] < 0)
            continue;
        for (int k = 0; k < a->nreads[i]; k++)
            if (a->reads[i][k] >= 0 && a->reads[i][k] < nt && m->rel[a->reads[i][k]])
                s->reads[m->slot[i] * s->ntensors + m->tensor[a->reads[i][k]]] = true;
        for (int k = 0; k < a->nwrites[i]; k++)
            if (a->writes[i][k] >= 0 && a->writes[i][k] < nt && m->rel[a->writes[i][k]])
                s->writes[m->slot[i] * s->ntensors + m->tensor[a->writes[i][k]]] = true;
    }
    for (int32_t t = 0; t < nt; t++) {
        if (m->tensor[t] < 0)
            continue;
        s->role[m->tensor[t]] = model_role(g->tensors[t].role);
        s->observed[m->tensor[t]] = g->tensors[t].observed;
        s->carried[m->tensor[t]] = g->tensors[t].carried;
    }
}

/* The binding renumbered into the cut. */
static void rebind(struct oracle_sched *s, const struct cutmap *m, const struct rules_binding *b, int32_t nslots,
                   int32_t nt, enum rules_motion motion)
{
    int32_t *members = oracle_xcalloc((size_t)nslots + 1, sizeof *members);
    for (int role = 1; role < RULES_ROLE_COUNT; role++) {
        int32_t x = b->slot[role];
        s->bind.slot[role] = x >= 0 && x < nslots ? m->slot[x] : -1;
        ir_tid t = b->tensor[role];
        s->bind.tensor[role] = t >= 0 && t < nt ? m->tensor[t] : IR_NONE;
        if (role_kind[role] != 'G' || !b->set[role])
            continue;
        int32_t n = 0;
        for (int32_t i = 0; i < b->nset[role]; i++)
            if (b->set[role][i] >= 0 && b->set[role][i] < nslots && m->slot[b->set[role][i]] >= 0)
                members[n++] = m->slot[b->set[role][i]];
        oracle_sched_set(s, (enum rules_role)role, members, n);
    }
    for (int h = 0; h < 2 && motion == RULES_MOTION_PLACE_UNITS; h++)
        s->half[h] = m->half[h] >= 0 ? m->slot[m->half[h]] : -1;
    free(members);
}

/* The slots as they stand under binding b, cut down to what the binding can see: the bound slots, the sets' members
 * and the join's producers (key), every tensor they touch, and every slot touching one of those (the full cut: the
 * specification the window below is tested against). */
static struct oracle_sched *cut_full(const struct rules_rewriter *r, const struct rules_rule *rule,
                                     const struct rules_binding *b, const struct access *a)
{
    int32_t nt = r->g->ntensors;
    struct cutmap m;
    memset(&m, 0, sizeof m);
    m.key = oracle_xcalloc((size_t)a->n, sizeof *m.key);
    m.rel = oracle_xcalloc((size_t)nt, sizeof *m.rel);
    m.slot = oracle_xcalloc((size_t)a->n, sizeof *m.slot);
    m.tensor = oracle_xcalloc((size_t)nt, sizeof *m.tensor);
    mark_bound(&m, a, r, rule, b, nt);
    number(&m, a, nt);
    struct oracle_sched *s = oracle_sched_new(m.nops, m.ntensors);
    fill(s, &m, a, r->g);
    rebind(s, &m, b, a->n, nt, rule->motion);
    free(m.key);
    free(m.rel);
    free(m.slot);
    free(m.tensor);
    return s;
}

/* ── The window: the same verdicts from a neighbourhood ──────────────────────────────────────────────────
 *
 * The full cut keeps every slot touching a relevant tensor (one the key slots touch, or a bound tensor), and a table
 * every row of a prefill chunk writes, or a norm every row reads, makes that O(graph) per firing. The window keeps
 * the key slots, every slot between the first key slot (lo) and the last (hi) touching a relevant tensor, and per
 * relevant tensor t only these slots outside [lo, hi]:
 *   - the first reader of t before lo and the first after hi (whether any other slot reads t: only_reader,
 *     first_reader, readers_within, read_only_within);
 *   - the last writer of t before lo (the source of every read of t in [lo, hi] that no writer in [lo, hi] precedes);
 *   - the first writer of t after hi, and the last writer of t (the source of the host's final read).
 * Every verdict is the full cut's: the motion moves only key ops' events and only to key slots, so a read before lo
 * keeps its source in both programs; a read after hi either follows a writer after hi (kept, unmoved: its source
 * stays) or has the same source as the first read of t after hi (kept: its verdict is theirs); every atom's
 * between-range lies in [lo, hi]; and every quantifier over readers outside it needs only one of each side.
 * test_oracle checks it against the full cut on the zoo. Its cost is the slots between the bound ones and a binary
 * search per relevant tensor, not the graph. */

/* A growable array of ints, sorted and unique once settled. */
struct ivec {
    int32_t *v;
    int32_t n, cap;
};

/* Append k. */
static void ivec_push(struct ivec *x, int32_t k)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 16;
        x->v = realloc(x->v, sizeof *x->v * (size_t)x->cap);
        if (!x->v)
            abort();
    }
    x->v[x->n++] = k;
}

/* Sort and drop repeats. */
static void ivec_settle(struct ivec *x) { x->n = (int32_t)ir_ids_sort_unique(x->v, (size_t)x->n); }

/* The first index of ascending v[0..n) whose entry is >= k. */
static int32_t first_at_least(const int32_t *v, int32_t n, int64_t k) { return oracle_lower_bound(v, 0, n, k); }

/* k's index in a settled vector, or -1. */
static int32_t ivec_find(const struct ivec *x, int64_t k)
{
    int32_t at = first_at_least(x->v, x->n, k);
    return at < x->n && x->v[at] == k ? at : -1;
}

/* What a window keeps: key slots, relevant tensors, kept slots (each settled), the key slots' span. */
struct window {
    struct ivec key, tensors, slots;
    int32_t lo, hi;
    int32_t half[2]; /* place_units: the halves' producers */
};

/* Add live slot i as key and the tensors it reads and writes as relevant. */
static void window_key(struct window *w, const struct ir_slots *s, int32_t i, int32_t nt)
{
    int32_t nr, nw;
    if (i < 0 || i >= ir_slots_len(s) || !ir_slots_get(s, i))
        return;
    ivec_push(&w->key, i);
    const ir_tid *rd = ir_facts_slot_reads(s, i, &nr), *wr = ir_facts_slot_writes(s, i, &nw);
    for (int32_t k = 0; k < nr; k++)
        if (rd[k] >= 0 && rd[k] < nt)
            ivec_push(&w->tensors, rd[k]);
    for (int32_t k = 0; k < nw; k++)
        if (wr[k] >= 0 && wr[k] < nt)
            ivec_push(&w->tensors, wr[k]);
}

/* The key slots and relevant tensors of binding b (as mark_bound has them). */
static void window_bound(struct window *w, const struct rules_rewriter *r, const struct rules_rule *rule,
                         const struct rules_binding *b, int32_t nt)
{
    for (int role = 1; role < RULES_ROLE_COUNT; role++) {
        if (role_kind[role] == 'S' && role != RULES_ROLE_EACH)
            window_key(w, r->s, b->slot[role], nt);
        if (role_kind[role] == 'T' && b->tensor[role] >= 0 && b->tensor[role] < nt)
            ivec_push(&w->tensors, b->tensor[role]);
        for (int32_t i = 0; role_kind[role] == 'G' && i < b->nset[role]; i++)
            window_key(w, r->s, b->set[role][i], nt);
    }
    w->half[0] = w->half[1] = -1;
    if (rule->motion == RULES_MOTION_PLACE_UNITS)
        for (int h = 0; h < 2; h++) {
            w->half[h] = ir_facts_producer(r->s, b->tensor[h ? RULES_ROLE_OTHER : RULES_ROLE_INPUT]);
            window_key(w, r->s, w->half[h], nt);
        }
    ivec_settle(&w->key);
    ivec_settle(&w->tensors);
    w->lo = w->key.n ? w->key.v[0] : 0;
    w->hi = w->key.n ? w->key.v[w->key.n - 1] : -1;
}

/* Keep the entries of ascending list v[0..n) that lie in [lo, hi]. */
static void keep_span(struct window *w, const int32_t *v, int32_t n, int32_t lo, int32_t hi)
{
    for (int32_t i = first_at_least(v, n, lo); i < n && v[i] <= hi; i++)
        ivec_push(&w->slots, v[i]);
}

/* Keep what one relevant tensor needs: its readers and writers in [lo, hi], and its representatives outside (see
 * above); every one of them when nothing is key. */
static void window_tensor(struct window *w, const struct ir_slots *s, ir_tid t)
{
    int32_t nr, nw;
    const int32_t *rd = ir_facts_reader_list(s, t, &nr), *wr = ir_facts_writer_list(s, t, &nw);
    if (!w->key.n) {
        keep_span(w, rd, nr, INT32_MIN, INT32_MAX);
        keep_span(w, wr, nw, INT32_MIN, INT32_MAX);
        return;
    }
    keep_span(w, rd, nr, w->lo, w->hi);
    keep_span(w, wr, nw, w->lo, w->hi);
    if (nr && rd[0] < w->lo)
        ivec_push(&w->slots, rd[0]);                      /* the first reader before lo */
    int32_t after = first_at_least(rd, nr, (int64_t)w->hi + 1);
    if (after < nr)
        ivec_push(&w->slots, rd[after]);                  /* the first reader after hi */
    int32_t at = first_at_least(wr, nw, w->lo);
    if (at > 0)
        ivec_push(&w->slots, wr[at - 1]);                 /* the last writer before lo */
    after = first_at_least(wr, nw, (int64_t)w->hi + 1);
    if (after < nw) {
        ivec_push(&w->slots, wr[after]);                  /* the first writer after hi */
        ivec_push(&w->slots, wr[nw - 1]);                 /* the last writer */
    }
}

/* Op k's tensors of one kind (reads or writes) that the window keeps, renumbered, appended to *v. */
static void window_row(const struct window *w, const ir_tid *ts, int32_t nts, struct ivec *v)
{
    for (int32_t i = 0; i < nts; i++) {
        int32_t t = ivec_find(&w->tensors, ts[i]);
        if (t >= 0)
            ivec_push(v, t); /* ascending: the renumbering keeps the order */
    }
}

/* The window's schedule, indexed: relations, roles, flags. */
static struct oracle_sched *window_sched(const struct window *w, const struct ir_slots *slots,
                                        const struct ir_graph *g)
{
    struct ivec rd = {0}, wr = {0};
    int32_t *rd_at = oracle_xcalloc((size_t)w->slots.n + 1, sizeof *rd_at), *wr_at = oracle_xcalloc((size_t)w->slots.n + 1, sizeof *wr_at);
    for (int32_t k = 0; k < w->slots.n; k++) {
        int32_t nr, nw;
        const ir_tid *r = ir_facts_slot_reads(slots, w->slots.v[k], &nr);
        const ir_tid *x = ir_facts_slot_writes(slots, w->slots.v[k], &nw);
        window_row(w, r, nr, &rd);
        window_row(w, x, nw, &wr);
        rd_at[k + 1] = rd.n;
        wr_at[k + 1] = wr.n;
    }
    struct oracle_sched *s = oracle_sched_new_sparse(w->slots.n, w->tensors.n, rd_at, rd.v, wr_at, wr.v);
    for (int32_t t = 0; t < w->tensors.n; t++) {
        const struct ir_tensor *x = &g->tensors[w->tensors.v[t]];
        s->role[t] = model_role(x->role);
        s->observed[t] = x->observed;
        s->carried[t] = x->carried;
    }
    free(rd_at);
    free(wr_at);
    free(rd.v);
    free(wr.v);
    return s;
}

/* The binding renumbered into the window. */
static void window_rebind(struct oracle_sched *s, const struct window *w, const struct rules_binding *b,
                          enum rules_motion motion)
{
    int32_t *members = oracle_xcalloc((size_t)w->slots.n + 1, sizeof *members);
    for (int role = 1; role < RULES_ROLE_COUNT; role++) {
        s->bind.slot[role] = ivec_find(&w->slots, b->slot[role]);
        ir_tid t = ivec_find(&w->tensors, b->tensor[role]);
        s->bind.tensor[role] = t >= 0 ? t : IR_NONE;
        if (role_kind[role] != 'G' || !b->set[role])
            continue;
        int32_t n = 0;
        for (int32_t i = 0; i < b->nset[role]; i++) {
            int32_t k = ivec_find(&w->slots, b->set[role][i]);
            if (k >= 0)
                members[n++] = k;
        }
        oracle_sched_set(s, (enum rules_role)role, members, n);
    }
    for (int h = 0; h < 2 && motion == RULES_MOTION_PLACE_UNITS; h++)
        s->half[h] = w->half[h] >= 0 ? ivec_find(&w->slots, w->half[h]) : -1;
    free(members);
}

/* The slots as they stand under binding b, cut down to the window. */
static struct oracle_sched *cut_window(const struct rules_rewriter *r, const struct rules_rule *rule,
                                       const struct rules_binding *b)
{
    struct window w;
    memset(&w, 0, sizeof w);
    window_bound(&w, r, rule, b, r->g->ntensors);
    for (int32_t k = 0; k < w.key.n; k++)
        ivec_push(&w.slots, w.key.v[k]);
    for (int32_t t = 0; t < w.tensors.n; t++)
        window_tensor(&w, r->s, w.tensors.v[t]);
    ivec_settle(&w.slots);
    struct oracle_sched *s = window_sched(&w, r->s, r->g);
    window_rebind(s, &w, b, rule->motion);
    free(w.key.v);
    free(w.tensors.v);
    free(w.slots.v);
    return s;
}

/* ── Named rows ──────────────────────────────────────────────────────────────────────────────────────────── */

/* Whether, for every start row pos in 0..rows-need, the `len` values placed from pos·row_cols lie inside the table of
 * rows·cols values (Z3 over pos). */
static bool rows_fit(const struct oracle_options *opt, int64_t rows, int64_t cols, int64_t row_cols, int64_t need,
                     int64_t len, bool *unknown, char why[ORACLE_REASON_LEN])
{
    Z3_context z = oracle_z3_new(opt);
    Z3_sort s = Z3_mk_int_sort(z);
    Z3_ast pos = Z3_mk_const(z, Z3_mk_string_symbol(z, "pos"), s);
    Z3_ast start = Z3_mk_mul(z, 2, (Z3_ast[]){pos, Z3_mk_int64(z, row_cols, s)});
    Z3_ast end = Z3_mk_add(z, 2, (Z3_ast[]){start, Z3_mk_int64(z, len, s)});
    Z3_ast range = Z3_mk_and(z, 2,
                             (Z3_ast[]){Z3_mk_le(z, Z3_mk_int64(z, 0, s), pos),
                                        Z3_mk_le(z, pos, Z3_mk_int64(z, rows - need, s))});
    Z3_ast outside = Z3_mk_or(z, 2,
                              (Z3_ast[]){Z3_mk_lt(z, start, Z3_mk_int64(z, 0, s)),
                                         Z3_mk_lt(z, Z3_mk_int64(z, rows * cols, s), end)});
    Z3_model m = NULL;
    char reason[ORACLE_REASON_LEN];
    enum oracle_verdict v =
        oracle_check(z, Z3_mk_and(z, 2, (Z3_ast[]){range, outside}), opt, "validate.rows", &m, reason);
    if (v == ORACLE_REFUTED && m)
        snprintf(why, ORACLE_REASON_LEN, "at row %lld the placed values leave the table",
                 oracle_model_value(z, m, pos));
    else if (v == ORACLE_UNKNOWN)
        snprintf(why, ORACLE_REASON_LEN, "named row: unknown (z3: %.200s)", reason);
    *unknown = v == ORACLE_UNKNOWN;
    if (m)
        Z3_model_dec_ref(z, m);
    oracle_z3_free(z);
    return v == ORACLE_PROVED;
}

/* A decided rows_fit question and its answer: the question is its five numbers alone, so a chunk's every layer asks
 * Z3 once per table shape rather than once per firing. */
struct fit {
    int64_t q[5];
    bool fits;
    char why[ORACLE_REASON_LEN];
};

/* The decided answers so far (at most FITS_MAX, the first ones asked; an unknown is asked again). */
enum { FITS_MAX = 64 };
struct fits {
    struct fit v[FITS_MAX];
    int n;
};

/* rows_fit, answered from the decided answers when asked before. */
static bool rows_fit_known(struct fits *known, const struct oracle_options *opt, int64_t rows, int64_t cols,
                           int64_t row_cols, int64_t need, int64_t len, bool *unknown, char why[ORACLE_REASON_LEN])
{
    int64_t q[5] = {rows, cols, row_cols, need, len};
    for (int i = 0; i < known->n; i++)
        if (memcmp(known->v[i].q, q, sizeof q) == 0) {
            *unknown = false;
            if (!known->v[i].fits)
                snprintf(why, ORACLE_REASON_LEN, "%s", known->v[i].why);
            return known->v[i].fits;
        }
    char said[ORACLE_REASON_LEN] = "";
    bool fits = rows_fit(opt, rows, cols, row_cols, need, len, unknown, said);
    if (!*unknown && known->n < FITS_MAX) {
        struct fit *f = &known->v[known->n++];
        memcpy(f->q, q, sizeof q);
        f->fits = fits;
        snprintf(f->why, sizeof f->why, "%s", said);
    }
    if (said[0])
        snprintf(why, ORACLE_REASON_LEN, "%s", said);
    return fits;
}

/* The named-row check of a placement under binding b (true when it names none). */
static bool positions_ok(const struct rules_rewriter *r, const struct rules_rule *rule, const struct rules_binding *b,
                         const struct oracle_options *opt, struct fits *known, bool *unknown,
                         char why[ORACLE_REASON_LEN])
{
    *unknown = false;
    const struct ir_op *c = ir_slots_get(r->s, b->slot[RULES_ROLE_CONSUMER]);
    if (!c || b->tensor[RULES_ROLE_PARAM] < 0)
        return true;
    if (rule->motion == RULES_MOTION_PLACE_ROWS && rules_is(c, IR_KIND_SET_ROW)) {
        const struct ir_set_row *sr = &c->spec.u.set_row;
        return rows_fit_known(known, opt, sr->rows, sr->cols, sr->cols, sr->count, sr->count * sr->cols, unknown, why);
    }
    if (rule->motion == RULES_MOTION_PLACE_UNITS && c->dst.row == IR_ROWSEL_PARAM && c->dst.row_cols > 0) {
        const struct ir_tensor *t = &r->g->tensors[c->dst.buf];
        int64_t len = ir_tensor_len(r->g, c->out);
        int64_t need = len / c->dst.row_cols + (len % c->dst.row_cols != 0);
        return rows_fit_known(known, opt, t->rows, t->cols, c->dst.row_cols, need, len, unknown, why);
    }
    return true;
}

/* ── The hook ────────────────────────────────────────────────────────────────────────────────────────────── */

/* A guard success awaiting its firing: what was found, and what the rewrite must look like. */
struct pending {
    bool set;
    char rule[ORACLE_NAME_LEN];   /* the rule's name and motion, copied: the rule may not outlive its step */
    enum rules_motion motion;
    struct oracle_check check;
    int32_t expect_at;      /* the slot the fused or placed op must be at (-1: any) */
    int32_t *gone;          /* slots the rewrite must empty */
    int32_t ngone;
};

/* The validation's state across the optimizer's callbacks. */
struct vstate {
    const struct oracle_options *opt;
    oracle_check_fn fn;
    void *ctx;
    struct oracle_validation *v;
    struct pending p;
    struct fits *fits; /* the named-row answers decided so far */
    /* Every slot's reads and writes, kept until the slots change: a firing, another step, other slots. */
    bool cached;
    struct access access;
    const struct ir_slots *slots;
    const char *step;
    int32_t len;
};

/* Every slot's reads and writes for r, from the cache when the slots have not changed since. */
static const struct access *current_access(struct vstate *st, const struct rules_rewriter *r)
{
    if (st->cached && st->slots == r->s && st->step == r->step && st->len == ir_slots_len(r->s))
        return &st->access;
    if (st->cached)
        access_free(&st->access);
    st->access = access_of(r->s);
    st->cached = true;
    st->slots = r->s;
    st->step = r->step;
    st->len = ir_slots_len(r->s);
    return &st->access;
}

/* Forget the cached reads and writes. */
static void forget_access(struct vstate *st)
{
    if (st->cached)
        access_free(&st->access);
    st->cached = false;
}

/* Forget the pending guard success. */
static void drop_pending(struct pending *p)
{
    free(p->gone);
    memset(p, 0, sizeof *p);
}

/* The slot the motion puts the rewritten op at, under binding b. */
static int32_t expected_at(const struct rules_rule *rule, const struct rules_binding *b, const struct ir_slots *s)
{
    switch (rule->motion) {
    case RULES_MOTION_SINK_TO_CONSUMER:
    case RULES_MOTION_READ_IN_PLACE: return b->slot[RULES_ROLE_CONSUMER];
    case RULES_MOTION_HOIST_TO_PRODUCER:
    case RULES_MOTION_PLACE_ROWS: return b->slot[RULES_ROLE_PRODUCER];
    case RULES_MOTION_HOIST_TO_FIRST: return b->slot[RULES_ROLE_FIRST];
    case RULES_MOTION_GROUP_AT_LAST:
    case RULES_MOTION_GROUP_AT_ANCHOR: return b->slot[RULES_ROLE_ANCHOR];
    case RULES_MOTION_PLACE_UNITS: {
        int32_t pa = ir_facts_producer(s, b->tensor[RULES_ROLE_INPUT]);
        int32_t pb = ir_facts_producer(s, b->tensor[RULES_ROLE_OTHER]);
        return pa > pb ? pa : pb;
    }
    default: return -1;
    }
}

/* The slots the motion empties under binding b, malloc'd; *n their count. */
static int32_t *expected_gone(const struct rules_rule *rule, const struct rules_binding *b, int32_t at, int32_t *n)
{
    int32_t cap = 2 + b->nset[RULES_ROLE_MEMBERS];
    int32_t *gone = oracle_xcalloc((size_t)cap, sizeof *gone);
    *n = 0;
    switch (rule->motion) {
    case RULES_MOTION_SINK_TO_CONSUMER:
    case RULES_MOTION_READ_IN_PLACE: gone[(*n)++] = b->slot[RULES_ROLE_PRODUCER]; break;
    case RULES_MOTION_HOIST_TO_PRODUCER:
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_PLACE_UNITS: gone[(*n)++] = b->slot[RULES_ROLE_CONSUMER]; break;
    case RULES_MOTION_HOIST_TO_FIRST:
    case RULES_MOTION_GROUP_AT_LAST:
    case RULES_MOTION_GROUP_AT_ANCHOR:
        for (int32_t i = 0; i < b->nset[RULES_ROLE_MEMBERS]; i++)
            if (b->set[RULES_ROLE_MEMBERS][i] != at)
                gone[(*n)++] = b->set[RULES_ROLE_MEMBERS][i];
        break;
    default: break;
    }
    return gone;
}

/* Check the guard success of rule under b on the slots as they stand, and keep it pending. */
static void on_guards(struct vstate *st, const struct rules_rewriter *r, const struct rules_rule *rule,
                      const struct rules_binding *b)
{
    drop_pending(&st->p);
    struct pending *p = &st->p;
    p->set = true;
    snprintf(p->rule, sizeof p->rule, "%s", rule->name);
    p->motion = rule->motion;
    struct oracle_check *c = &p->check;
    c->rule = p->rule;
    c->bound = true;
    struct oracle_sched *s = st->opt->full_cut ? cut_full(r, rule, b, current_access(st, r)) : cut_window(r, rule, b);
    c->atoms = true;
    for (int i = 0; i < rule->nguards && c->atoms; i++)
        if (!oracle_atom_twin(s, &s->bind, &rule->guards[i])) {
            c->atoms = false;
            snprintf(c->why, sizeof c->why, "atom %s does not hold", rule->guards[i].name);
        }
    c->legal = oracle_motion_legal(s, rule, &c->premises);
    if (!c->premises && !c->why[0])
        snprintf(c->why, sizeof c->why, "a premise of %s does not hold", rules_motion_name(rule->motion));
    else if (!c->legal && !c->why[0])
        snprintf(c->why, sizeof c->why, "%s breaks a dependence", rules_motion_name(rule->motion));
    char why[ORACLE_REASON_LEN] = "";
    c->positions = positions_ok(r, rule, b, st->opt, st->fits, &c->unknown, why);
    if (!c->positions && !c->why[0])
        snprintf(c->why, sizeof c->why, "%s", why);
    p->expect_at = expected_at(rule, b, r->s);
    p->gone = expected_gone(rule, b, p->expect_at, &p->ngone);
    oracle_sched_free(s);
}

/* Whether the rewritten slots are what the pending motion says; the first difference into why. */
static bool rewrite_matches(const struct pending *p, const struct rules_rewriter *r, int32_t at,
                            char why[ORACLE_REASON_LEN])
{
    if (p->expect_at >= 0 && at != p->expect_at) {
        snprintf(why, ORACLE_REASON_LEN, "fired at slot %d, the motion puts it at %d", (int)at, (int)p->expect_at);
        return false;
    }
    for (int32_t i = 0; i < p->ngone; i++)
        if (p->gone[i] >= 0 && ir_slots_get(r->s, p->gone[i])) {
            snprintf(why, ORACLE_REASON_LEN, "slot %d should have moved but is still there", (int)p->gone[i]);
            return false;
        }
    return true;
}

/* Whether the shim admits the op now at slot at (a dry run's firing, reported held or refused and never kept, needs
 * no admission); its refusal into why when not. */
static bool admitted_at(const struct rules_rewriter *r, int32_t at, char why[ORACLE_REASON_LEN])
{
    const struct ir_op *op = at >= 0 && !r->dry ? ir_slots_get(r->s, at) : NULL;
    char refusal[IR_ERR_LEN];
    if (!op || rules_allows(r, op, refusal) == 0)
        return true;
    snprintf(why, ORACLE_REASON_LEN, "fired an op the chip refuses: %.200s", refusal);
    return false;
}

/* Give check c the covers of the op at slot at (none when there is none). */
static void covers_at(struct oracle_check *c, const struct rules_rewriter *r, int32_t at)
{
    const struct ir_op *op = at >= 0 ? ir_slots_get(r->s, at) : NULL;
    c->covers = op ? op->covers : NULL;
    c->ncovers = op ? op->ncovers : 0;
}

/* A firing: pair it with the pending guard success of its step, or report it unbound. */
static void on_fired(struct vstate *st, const struct rules_rewriter *r, enum ir_class cls, int32_t at)
{
    forget_access(st);
    st->v->rewrites++;
    const char *step = r->step ? r->step : "?";
    if (!st->p.set || strcmp(st->p.rule, step) != 0) {
        struct oracle_check c;
        memset(&c, 0, sizeof c);
        c.rule = step;
        c.cls = cls;
        c.at = at;
        const struct rules_rule *rule = oracle_rule_find(step);
        bool still = rule && rule->motion == RULES_MOTION_IN_PLACE;
        c.atoms = c.premises = c.legal = c.positions = still;
        snprintf(c.why, sizeof c.why, "%s", still ? "nothing moves (in_place)" : "fired without a guard binding");
        char refused[ORACLE_REASON_LEN];
        c.admitted = admitted_at(r, at, refused);
        if (still && !c.admitted) {
            still = false;
            snprintf(c.why, sizeof c.why, "%s", refused);
        }
        covers_at(&c, r, at);
        st->v->unbound++;
        if (still)
            st->v->checked++;
        else
            st->v->failed++;
        if (st->fn)
            st->fn(&c, st->ctx);
        return;
    }
    struct oracle_check c = st->p.check;
    c.cls = cls;
    c.at = at;
    covers_at(&c, r, at);
    char why[ORACLE_REASON_LEN];
    if (st->p.motion != RULES_MOTION_RECOMPUTE && !rewrite_matches(&st->p, r, at, why)) {
        c.legal = false;
        if (!c.why[0])
            snprintf(c.why, sizeof c.why, "%s", why);
    }
    c.admitted = admitted_at(r, at, why);
    if (!c.admitted && !c.why[0])
        snprintf(c.why, sizeof c.why, "%s", why);
    st->v->checked++;
    if (!(c.atoms && c.premises && c.legal && c.admitted) || (!c.positions && !c.unknown))
        st->v->failed++;
    else if (c.unknown)
        st->v->unknown++; /* Z3 gave no answer (a timeout): unknown, as prove calls it, not a failure */
    if (st->fn)
        st->fn(&c, st->ctx);
    if (st->p.motion != RULES_MOTION_RECOMPUTE)
        drop_pending(&st->p);
}

/* The optimizer's callback. */
static void hook(enum rules_trace_kind kind, const struct rules_rewriter *r, const struct rules_rule *rule,
                 const struct rules_binding *b, enum ir_class cls, int32_t at, void *ctx)
{
    struct vstate *st = ctx;
    if (kind == RULES_TRACE_GUARDS && rule && b)
        on_guards(st, r, rule, b);
    else if (kind == RULES_TRACE_FIRED)
        on_fired(st, r, cls, at);
}

int oracle_validate_run(const struct ir_graph *g, const struct shim *shim, const struct oracle_options *opt,
                        oracle_check_fn fn, void *ctx, struct oracle_validation *v, char err[IR_ERR_LEN])
{
    memset(v, 0, sizeof *v);
    err[0] = '\0';
    struct vstate st;
    memset(&st, 0, sizeof st);
    st.opt = opt;
    st.fn = fn;
    st.ctx = ctx;
    st.v = v;
    st.fits = oracle_xcalloc(1, sizeof *st.fits);
    struct rules_optimized out;
    rules_trace(hook, &st);
    int rc = rules_optimize(g, shim, NULL, 0, &out, err);
    rules_trace(NULL, NULL);
    drop_pending(&st.p);
    forget_access(&st);
    free(st.fits);
    if (rc == 0) {
        v->invalid = ir_validate(out.graph, v->invalid_why) != 0;
        rules_optimized_free(&out);
    }
    return rc;
}
