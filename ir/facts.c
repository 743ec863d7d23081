/* ir/facts.c — the dataflow facts the optimizer's guards ask of a graph being rewritten in slots.
 *
 * Each live slot caches the sorted tensors its op reads, writes and makes; each tensor keeps sorted lists of the live
 * slots that read it, write it, produce it (their op's result) and make it (their op's or a leaf's result). Taking,
 * putting and replacing a slot update both. Range questions ("does a slot strictly between i and j write t?")
 * binary-search the tensor's list. ir/facts_spec.c answers the same questions by scanning every slot: the
 * specification these are tested against. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ── Allocation ──────────────────────────────────────────────────────────────────────────────────────────── */

/* realloc that treats exhaustion as fatal, as the rest of ir/ does. */
static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("fusecheck: out of memory\n", stderr);
        abort();
    }
    return q;
}

/* A zeroed array of n elements of size sz (exhaustion is fatal). */
static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fputs("fusecheck: out of memory\n", stderr);
        abort();
    }
    return p;
}

/* ── Tensor sets: what an op reads, writes and makes ─────────────────────────────────────────────────────── */

/* A growable list of tensor ids, with room on the stack for the common small op. */
struct tbuf {
    ir_tid *v;
    size_t n, cap;
    ir_tid small[64];
};

/* An empty list using its own stack room. */
static void tbuf_init(struct tbuf *b)
{
    b->v = b->small;
    b->n = 0;
    b->cap = sizeof b->small / sizeof b->small[0];
}

/* Release the list's heap room, if any. */
static void tbuf_free(struct tbuf *b)
{
    if (b->v != b->small)
        free(b->v);
}

/* Append t. */
static void tbuf_push(struct tbuf *b, ir_tid t)
{
    if (b->n == b->cap) {
        size_t cap = b->cap * 2;
        ir_tid *v = b->v == b->small ? NULL : b->v;
        v = xrealloc(v, cap * sizeof *v);
        if (b->v == b->small)
            memcpy(v, b->small, b->n * sizeof *v);
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = t;
}

/* Order tensor ids ascending. */
static int tid_cmp(const void *a, const void *b)
{
    ir_tid x = *(const ir_tid *)a, y = *(const ir_tid *)b;
    return (x > y) - (x < y);
}

size_t ir_ids_sort_unique(int32_t *v, size_t n)
{
    if (n < 2)
        return n;
    if (n <= 16) { /* an op's few tensors: insertion sort, no call per comparison */
        for (size_t i = 1; i < n; i++) {
            int32_t x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1] > x; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
    } else {
        qsort(v, n, sizeof *v, tid_cmp);
    }
    size_t m = 1;
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[m - 1])
            v[m++] = v[i];
    return m;
}

/* Sort the list and drop repeats. */
static void tbuf_sort_unique(struct tbuf *b) { b->n = ir_ids_sort_unique(b->v, b->n); }

/* Add what one leaf reads: its inputs and the param its row destination names. */
static void leaf_reads(const struct ir_op *leaf, void *ctx)
{
    struct tbuf *b = ctx;
    for (int32_t k = 0; k < leaf->nins; k++)
        tbuf_push(b, leaf->ins[k]);
    if (leaf->dst.row == IR_ROWSEL_PARAM)
        tbuf_push(b, leaf->dst.row_param);
}

/* Add what one leaf writes: a destination placed elsewhere than its own buffer, and state written in place. */
static void leaf_writes(const struct ir_op *leaf, void *ctx)
{
    struct tbuf *b = ctx;
    if (!ir_dst_is_own(&leaf->dst))
        tbuf_push(b, leaf->dst.buf);
    int idx[4], n = ir_op_state_inputs(leaf, idx);
    for (int i = 0; i < n; i++)
        tbuf_push(b, leaf->ins[idx[i]]);
}

/* Add one leaf's result. */
static void leaf_makes(const struct ir_op *leaf, void *ctx)
{
    tbuf_push(ctx, leaf->out);
}

/* The tensors op reads, sorted and unique, into b. */
static void op_reads(const struct ir_op *op, struct tbuf *b)
{
    for (int32_t k = 0; k < op->nins; k++)
        tbuf_push(b, op->ins[k]);
    if (op->dst.row == IR_ROWSEL_PARAM)
        tbuf_push(b, op->dst.row_param);
    if (op->sym == IR_SYM_FUSED)
        ir_op_leaves(op, leaf_reads, b);
    tbuf_sort_unique(b);
}

/* The tensors op writes, sorted and unique, into b. */
static void op_writes(const struct ir_op *op, struct tbuf *b)
{
    tbuf_push(b, op->dst.buf);
    ir_op_leaves(op, leaf_writes, b);
    for (int32_t k = 0; k < op->nkeeps; k++)
        tbuf_push(b, op->keeps[k]);
    tbuf_sort_unique(b);
}

/* The tensors op computes (its result and every leaf's), sorted and unique, into b. */
static void op_makes(const struct ir_op *op, struct tbuf *b)
{
    tbuf_push(b, op->out);
    ir_op_leaves(op, leaf_makes, b);
    tbuf_sort_unique(b);
}

/* Copy the first cap entries of b to out; return b's full count. */
static int tbuf_export(struct tbuf *b, ir_tid *out, int cap)
{
    size_t m = cap > 0 ? ((size_t)cap < b->n ? (size_t)cap : b->n) : 0;
    if (m)
        memcpy(out, b->v, m * sizeof *out);
    int n = (int)b->n;
    tbuf_free(b);
    return n;
}

int ir_op_reads(const struct ir_op *op, ir_tid *out, int cap)
{
    struct tbuf b;
    tbuf_init(&b);
    op_reads(op, &b);
    return tbuf_export(&b, out, cap);
}

int ir_op_writes(const struct ir_op *op, ir_tid *out, int cap)
{
    struct tbuf b;
    tbuf_init(&b);
    op_writes(op, &b);
    return tbuf_export(&b, out, cap);
}

int ir_op_makes(const struct ir_op *op, ir_tid *out, int cap)
{
    struct tbuf b;
    tbuf_init(&b);
    op_makes(op, &b);
    return tbuf_export(&b, out, cap);
}

/* ── The slots and their index ───────────────────────────────────────────────────────────────────────────── */

/* A slot's cached tensor set (sorted, unique). A slot's three sets share one allocation, owned by its read set. */
struct tset {
    ir_tid *v;
    int32_t n;
};

/* A tensor's sorted list of live slots (its room taken from the slots' list storage). */
struct slist {
    int32_t *v;
    int32_t n, cap;
};

/* One chunk of the slots' list storage: handed out front to back, freed with the slots. A list that outgrows its
 * room takes twice as much from here and leaves the old room unused, so a compile's lists cost a few allocations
 * instead of one each. */
struct chunk {
    struct chunk *next;
    size_t cap, used;
    int32_t v[];
};

/* The per-tensor lists: slots that read it, write it, produce it, make it. */
enum { L_READ, L_WRITE, L_PRODUCE, L_MAKE, L_COUNT };

/* What slot i held before one change: its op (owned by the journal) when it was live. */
struct undo {
    int32_t i;
    bool was_live;
    struct ir_op was;
};

struct ir_slots {
    const struct ir_graph *g;
    struct ir_op *ops;
    bool *live;
    int32_t n;
    struct tset *reads, *writes, *makes; /* per slot, while live */
    struct slist *lists[L_COUNT];        /* per tensor */
    int32_t nt;                          /* tensors the lists have room for */
    struct chunk *chunks;                /* the lists' storage, newest chunk first */
    bool journaling;                     /* changes are recorded so ir_slots_rollback can undo them */
    struct undo *journal;
    int32_t njournal, journal_cap;
};

/* Whether t is a tensor of the graph (ids beyond it are never indexed). */
static bool tid_ok(const struct ir_slots *s, ir_tid t)
{
    return t >= 0 && t < s->g->ntensors;
}

/* Make room in the per-tensor lists for every tensor the graph now has (it may grow while being rewritten). */
static void ensure_tensors(struct ir_slots *s)
{
    int32_t nt = s->g->ntensors;
    if (nt <= s->nt)
        return;
    for (int l = 0; l < L_COUNT; l++) {
        s->lists[l] = xrealloc(s->lists[l], (size_t)nt * sizeof *s->lists[l]);
        memset(s->lists[l] + s->nt, 0, (size_t)(nt - s->nt) * sizeof *s->lists[l]);
    }
    s->nt = nt;
}

/* The first index of list entries >= k. */
static int32_t lower_bound(const struct slist *l, int64_t k)
{
    int32_t lo = 0, hi = l->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (l->v[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Make sure the newest chunk of the slots' list storage has room for n more entries. */
static void storage_reserve(struct ir_slots *s, size_t n)
{
    struct chunk *c = s->chunks;
    if (c && c->cap - c->used >= n)
        return;
    size_t cap = c ? 2 * c->cap : 1024;
    if (cap < n)
        cap = n;
    struct chunk *fresh = xrealloc(NULL, sizeof *fresh + cap * sizeof fresh->v[0]);
    fresh->next = c;
    fresh->cap = cap;
    fresh->used = 0;
    s->chunks = fresh;
}

/* Room for n list entries from the slots' list storage. */
static int32_t *storage_take(struct ir_slots *s, size_t n)
{
    storage_reserve(s, n);
    int32_t *v = s->chunks->v + s->chunks->used;
    s->chunks->used += n;
    return v;
}

/* Free the slots' list storage. */
static void storage_free(struct ir_slots *s)
{
    for (struct chunk *c = s->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    s->chunks = NULL;
}

/* Insert slot i into a sorted list of s. */
static void slist_insert(struct ir_slots *s, struct slist *l, int32_t i)
{
    int32_t at = lower_bound(l, i);
    if (at < l->n && l->v[at] == i)
        return;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        int32_t *v = storage_take(s, (size_t)l->cap);
        if (l->n)
            memcpy(v, l->v, (size_t)l->n * sizeof *v);
        l->v = v;
    }
    memmove(l->v + at + 1, l->v + at, (size_t)(l->n - at) * sizeof *l->v);
    l->v[at] = i;
    l->n++;
}

/* Remove slot i from a sorted list. */
static void slist_remove(struct slist *l, int32_t i)
{
    int32_t at = lower_bound(l, i);
    if (at == l->n || l->v[at] != i)
        return;
    memmove(l->v + at, l->v + at + 1, (size_t)(l->n - at - 1) * sizeof *l->v);
    l->n--;
}

/* Append b's tensors that are ids of the graph to v, from v[*n] on; the set over them. */
static struct tset tset_append(const struct ir_slots *s, const struct tbuf *b, ir_tid *v, int32_t *n)
{
    struct tset t = {v + *n, 0};
    for (size_t k = 0; k < b->n; k++)
        if (tid_ok(s, b->v[k]))
            t.v[t.n++] = b->v[k];
    *n += t.n;
    return t;
}

/* Cache slot i's read, write and make sets, all three in one allocation (owned by the read set's pointer). */
static void sets_fill(struct ir_slots *s, int32_t i)
{
    const struct ir_op *op = &s->ops[i];
    struct tbuf r, w, m;
    tbuf_init(&r);
    tbuf_init(&w);
    tbuf_init(&m);
    op_reads(op, &r);
    op_writes(op, &w);
    op_makes(op, &m);
    ir_tid *v = xcalloc(r.n + w.n + m.n, sizeof(ir_tid));
    int32_t n = 0;
    s->reads[i] = tset_append(s, &r, v, &n);
    s->writes[i] = tset_append(s, &w, v, &n);
    s->makes[i] = tset_append(s, &m, v, &n);
    tbuf_free(&r);
    tbuf_free(&w);
    tbuf_free(&m);
}

/* Free slot i's cached sets (one allocation). */
static void sets_free(struct ir_slots *s, int32_t i)
{
    free(s->reads[i].v);
    memset(&s->reads[i], 0, sizeof s->reads[i]);
    memset(&s->writes[i], 0, sizeof s->writes[i]);
    memset(&s->makes[i], 0, sizeof s->makes[i]);
}

/* Copy slot i's cached sets from `from` into c (one allocation, as sets_fill makes them). */
static void sets_copy(struct ir_slots *c, const struct ir_slots *from, int32_t i)
{
    const struct tset *r = &from->reads[i], *w = &from->writes[i], *m = &from->makes[i];
    ir_tid *v = xcalloc((size_t)(r->n + w->n + m->n), sizeof(ir_tid));
    memcpy(v, r->v, sizeof *v * (size_t)r->n);
    memcpy(v + r->n, w->v, sizeof *v * (size_t)w->n);
    memcpy(v + r->n + w->n, m->v, sizeof *v * (size_t)m->n);
    c->reads[i] = (struct tset){v, r->n};
    c->writes[i] = (struct tset){v + r->n, w->n};
    c->makes[i] = (struct tset){v + r->n + w->n, m->n};
}

/* Add (or, with add false, remove) slot i to the list `l` of every tensor in set. */
static void index_set(struct ir_slots *s, int l, const struct tset *set, int32_t i, bool add)
{
    for (int32_t k = 0; k < set->n; k++) {
        struct slist *list = &s->lists[l][set->v[k]];
        if (add)
            slist_insert(s, list, i);
        else
            slist_remove(list, i);
    }
}

/* Cache slot i's sets and enter it in the per-tensor lists. */
static void index_slot(struct ir_slots *s, int32_t i)
{
    const struct ir_op *op = &s->ops[i];
    ensure_tensors(s);
    sets_fill(s, i);
    index_set(s, L_READ, &s->reads[i], i, true);
    index_set(s, L_WRITE, &s->writes[i], i, true);
    index_set(s, L_MAKE, &s->makes[i], i, true);
    if (tid_ok(s, op->out))
        slist_insert(s, &s->lists[L_PRODUCE][op->out], i);
}

/* Move slot i in list `l` from the tensors of set `was` to those of set `now` (both sorted): only the tensors in one
 * set and not the other have their lists changed, so replacing an op that reads what thousands of slots read costs
 * nothing there. */
static void index_diff(struct ir_slots *s, int l, const struct tset *was, const struct tset *now, int32_t i)
{
    int32_t a = 0, b = 0;
    while (a < was->n || b < now->n) {
        if (b == now->n || (a < was->n && was->v[a] < now->v[b]))
            slist_remove(&s->lists[l][was->v[a++]], i);
        else if (a == was->n || now->v[b] < was->v[a])
            slist_insert(s, &s->lists[l][now->v[b++]], i);
        else
            a++, b++;
    }
}

/* Index slot i's new op (already in s->ops[i]) in place of the one whose sets and result were was[3] and was_out:
 * the per-tensor lists end as unindexing the old and indexing the new would leave them. Frees the old sets. */
static void reindex_slot(struct ir_slots *s, int32_t i, struct tset was[3], ir_tid was_out)
{
    ensure_tensors(s);
    sets_fill(s, i);
    index_diff(s, L_READ, &was[0], &s->reads[i], i);
    index_diff(s, L_WRITE, &was[1], &s->writes[i], i);
    index_diff(s, L_MAKE, &was[2], &s->makes[i], i);
    ir_tid out = s->ops[i].out;
    if (was_out != out) {
        if (tid_ok(s, was_out) && was_out < s->nt)
            slist_remove(&s->lists[L_PRODUCE][was_out], i);
        if (tid_ok(s, out))
            slist_insert(s, &s->lists[L_PRODUCE][out], i);
    }
    free(was[0].v); /* the old op's three sets */
}

/* Drop slot i from the per-tensor lists and free its cached sets. */
static void unindex_slot(struct ir_slots *s, int32_t i)
{
    index_set(s, L_READ, &s->reads[i], i, false);
    index_set(s, L_WRITE, &s->writes[i], i, false);
    index_set(s, L_MAKE, &s->makes[i], i, false);
    if (tid_ok(s, s->ops[i].out) && s->ops[i].out < s->nt)
        slist_remove(&s->lists[L_PRODUCE][s->ops[i].out], i);
    sets_free(s, i);
}

/* Slots over `ops` (owned), live where `live` says (NULL: all live), indexed. */
static struct ir_slots *slots_make(const struct ir_graph *g, struct ir_op *ops, const bool *live, int32_t n)
{
    struct ir_slots *s = xcalloc(1, sizeof *s);
    s->g = g;
    s->n = n > 0 ? n : 0;
    s->ops = ops ? ops : xcalloc(1, sizeof *s->ops);
    s->live = xcalloc((size_t)s->n, sizeof *s->live);
    s->reads = xcalloc((size_t)s->n, sizeof *s->reads);
    s->writes = xcalloc((size_t)s->n, sizeof *s->writes);
    s->makes = xcalloc((size_t)s->n, sizeof *s->makes);
    ensure_tensors(s);
    for (int32_t i = 0; i < s->n; i++) {
        s->live[i] = live ? live[i] : true;
        if (s->live[i])
            index_slot(s, i);
    }
    return s;
}

struct ir_slots *ir_slots_new(const struct ir_graph *g, struct ir_op *ops, int32_t n)
{
    return slots_make(g, ops, NULL, n);
}

/* Record that slot i is about to change (the journal takes `was`, slot i's op when it was live). */
static void journal_note(struct ir_slots *s, int32_t i, bool was_live, struct ir_op was)
{
    if (s->njournal == s->journal_cap) {
        s->journal_cap = s->journal_cap ? 2 * s->journal_cap : 8;
        s->journal = xrealloc(s->journal, sizeof *s->journal * (size_t)s->journal_cap);
    }
    s->journal[s->njournal++] = (struct undo){i, was_live, was};
}

/* Drop the journal's entries (and the ops they keep) and stop recording. */
static void journal_clear(struct ir_slots *s)
{
    for (int32_t k = 0; k < s->njournal; k++)
        if (s->journal[k].was_live)
            ir_op_free(&s->journal[k].was);
    free(s->journal);
    s->journal = NULL;
    s->njournal = s->journal_cap = 0;
    s->journaling = false;
}

void ir_slots_journal(struct ir_slots *s)
{
    journal_clear(s);
    s->journaling = true;
}

void ir_slots_rollback(struct ir_slots *s)
{
    for (int32_t k = s->njournal - 1; k >= 0; k--) {
        struct undo *u = &s->journal[k];
        if (s->live[u->i]) {
            unindex_slot(s, u->i);
            ir_op_free(&s->ops[u->i]);
            s->live[u->i] = false;
        }
        if (u->was_live) {
            s->ops[u->i] = u->was;
            s->live[u->i] = true;
            index_slot(s, u->i);
            u->was_live = false; /* moved back into the slot */
        }
    }
    journal_clear(s);
}

void ir_slots_free(struct ir_slots *s)
{
    if (!s)
        return;
    journal_clear(s);
    for (int32_t i = 0; i < s->n; i++) {
        if (s->live[i])
            ir_op_free(&s->ops[i]);
        free(s->reads[i].v); /* the slot's three sets */
    }
    for (int l = 0; l < L_COUNT; l++)
        free(s->lists[l]);
    storage_free(s);
    free(s->ops);
    free(s->live);
    free(s->reads);
    free(s->writes);
    free(s->makes);
    free(s);
}

/* A copy of n values of size sz (NULL for none). */
static void *dup_n(const void *v, size_t n, size_t sz)
{
    if (!n || !v)
        return NULL;
    void *c = xcalloc(n, sz);
    memcpy(c, v, n * sz);
    return c;
}

struct ir_slots *ir_slots_clone(const struct ir_slots *s)
{
    /* The index is copied as it stands rather than rebuilt: a dry run clones the slots once a step. */
    struct ir_slots *c = xcalloc(1, sizeof *c);
    c->g = s->g;
    c->n = s->n;
    c->nt = s->nt;
    c->ops = xcalloc((size_t)(s->n ? s->n : 1), sizeof *c->ops);
    c->live = dup_n(s->live, (size_t)s->n, sizeof *s->live);
    c->reads = xcalloc((size_t)(s->n ? s->n : 1), sizeof *c->reads);
    c->writes = xcalloc((size_t)(s->n ? s->n : 1), sizeof *c->writes);
    c->makes = xcalloc((size_t)(s->n ? s->n : 1), sizeof *c->makes);
    if (!c->live)
        c->live = xcalloc(1, sizeof *c->live);
    for (int32_t i = 0; i < s->n; i++) {
        if (!s->live[i])
            continue;
        c->ops[i] = ir_op_clone(&s->ops[i]);
        sets_copy(c, s, i);
    }
    size_t entries = 0;
    for (int l = 0; l < L_COUNT; l++)
        for (int32_t t = 0; t < s->nt; t++)
            entries += (size_t)s->lists[l][t].n;
    if (entries)
        storage_reserve(c, entries); /* one chunk holds every copied list */
    for (int l = 0; l < L_COUNT; l++) {
        c->lists[l] = xcalloc((size_t)(s->nt ? s->nt : 1), sizeof *c->lists[l]);
        for (int32_t t = 0; t < s->nt; t++) {
            const struct slist *from = &s->lists[l][t];
            if (!from->n)
                continue;
            int32_t *v = storage_take(c, (size_t)from->n);
            memcpy(v, from->v, (size_t)from->n * sizeof *v);
            c->lists[l][t] = (struct slist){v, from->n, from->n};
        }
    }
    return c;
}

const struct ir_graph *ir_slots_graph(const struct ir_slots *s) { return s->g; }

int32_t ir_slots_len(const struct ir_slots *s)
{
    return s->n;
}

/* Whether i is a live slot. */
static bool is_live(const struct ir_slots *s, int32_t i)
{
    return i >= 0 && i < s->n && s->live[i];
}

const struct ir_op *ir_slots_get(const struct ir_slots *s, int32_t i)
{
    return is_live(s, i) ? &s->ops[i] : NULL;
}

struct ir_op ir_slots_take(struct ir_slots *s, int32_t i)
{
    struct ir_op op;
    memset(&op, 0, sizeof op);
    if (!is_live(s, i)) {
        op.out = IR_NONE;
        op.dst = ir_dst_own(IR_NONE);
        return op;
    }
    unindex_slot(s, i);
    op = s->ops[i];
    if (s->journaling)
        journal_note(s, i, true, ir_op_clone(&op));
    memset(&s->ops[i], 0, sizeof s->ops[i]);
    s->live[i] = false;
    return op;
}

void ir_slots_put(struct ir_slots *s, int32_t i, struct ir_op op)
{
    if (i < 0 || i >= s->n) {
        ir_op_free(&op);
        return;
    }
    if (s->journaling)
        journal_note(s, i, s->live[i], s->live[i] ? s->ops[i] : (struct ir_op){0});
    if (s->live[i]) {
        struct tset was[3] = {s->reads[i], s->writes[i], s->makes[i]};
        ir_tid was_out = s->ops[i].out;
        if (!s->journaling) /* else the journal keeps it */
            ir_op_free(&s->ops[i]);
        s->ops[i] = op;
        reindex_slot(s, i, was, was_out);
        return;
    }
    s->ops[i] = op;
    s->live[i] = true;
    index_slot(s, i);
}

void ir_slots_replace(struct ir_slots *s, int32_t i, struct ir_op op)
{
    ir_slots_put(s, i, op);
}

struct ir_op *ir_slots_into_ops(struct ir_slots *s, int32_t *n)
{
    int32_t count = 0;
    for (int32_t i = 0; i < s->n; i++)
        count += s->live[i];
    struct ir_op *ops = xcalloc((size_t)count, sizeof *ops);
    int32_t m = 0;
    for (int32_t i = 0; i < s->n; i++)
        if (s->live[i])
            ops[m++] = ir_slots_take(s, i);
    *n = m;
    return ops;
}

/* ── Indexed facts ───────────────────────────────────────────────────────────────────────────────────────── */

/* Tensor t's list `l`, or NULL when t is not indexed. */
static const struct slist *list_of(const struct ir_slots *s, int l, ir_tid t)
{
    return t >= 0 && t < s->nt ? &s->lists[l][t] : NULL;
}

/* Whether slot k is one of set[0..n). */
static bool in_group(int32_t k, const int32_t *set, int32_t n)
{
    for (int32_t x = 0; x < n; x++)
        if (set[x] == k)
            return true;
    return false;
}

/* Ascending int32 values, for qsort and bsearch. */
static int cmp_slot(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A group of slots, searched as given while that is cheap and through a sorted copy (made on first need: in `room`
 * when it fits, else its own allocation, which group_done frees) when not. */
struct sorted_group {
    const int32_t *raw;
    int32_t n;
    int32_t *v; /* the sorted copy, or NULL before it is needed */
    int32_t room[64];
};

/* The group of group[0..n), its sorted copy not made yet. */
static void group_over(struct sorted_group *g, const int32_t *group, int32_t n)
{
    g->raw = group;
    g->n = n > 0 ? n : 0;
    g->v = NULL;
}

/* The group's sorted copy, made now if it is not yet. */
static const int32_t *group_sorted(struct sorted_group *g)
{
    if (!g->v) {
        g->v = g->n <= 64 ? g->room : xcalloc((size_t)g->n, sizeof *g->v);
        if (g->n)
            memcpy(g->v, g->raw, sizeof *g->v * (size_t)g->n);
        qsort(g->v, (size_t)g->n, sizeof *g->v, cmp_slot);
    }
    return g->v;
}

/* Free what group_sorted allocated. */
static void group_done(struct sorted_group *g)
{
    if (g->v && g->v != g->room)
        free(g->v);
}

/* Whether list l holds a slot k with i < k < j that is not in the group. The list's slots in the range are
 * distinct, so more of them than the group has members settles it at once; a short range is looked up in the group
 * as given, a long one in its sorted copy. The cost is never the range's length times the group's (a chunk's tables
 * are read by hundreds of slots, and a group can hold hundreds). */
static bool any_between(const struct slist *l, int32_t i, int32_t j, struct sorted_group *g)
{
    if (!l || j <= i + 1)
        return false;
    int32_t lo = lower_bound(l, (int64_t)i + 1), hi = lower_bound(l, j);
    if (hi - lo > g->n)
        return true;
    if ((int64_t)(hi - lo) * g->n <= 4096 || hi - lo <= 8) {
        for (int32_t at = lo; at < hi; at++)
            if (!in_group(l->v[at], g->raw, g->n))
                return true;
        return false;
    }
    const int32_t *sorted = group_sorted(g);
    for (int32_t at = lo; at < hi; at++)
        if (!bsearch(&l->v[at], sorted, (size_t)g->n, sizeof *sorted, cmp_slot))
            return true;
    return false;
}

int32_t ir_facts_producer(const struct ir_slots *s, ir_tid t)
{
    const struct slist *l = list_of(s, L_PRODUCE, t);
    return l && l->n ? l->v[0] : -1;
}

int32_t ir_facts_maker(const struct ir_slots *s, ir_tid t)
{
    const struct slist *l = list_of(s, L_MAKE, t);
    return l && l->n ? l->v[0] : -1;
}

/* The slots of tensor t's list `l`, ascending, into out (at most cap); their count. */
static int32_t list_copy(const struct ir_slots *s, int l, ir_tid t, int32_t *out, int32_t cap)
{
    const struct slist *sl = list_of(s, l, t);
    if (!sl)
        return 0;
    int32_t m = cap < sl->n ? cap : sl->n;
    if (m > 0)
        memcpy(out, sl->v, (size_t)m * sizeof *out);
    return sl->n;
}

int32_t ir_facts_writers(const struct ir_slots *s, ir_tid t, int32_t *out, int32_t cap)
{
    return list_copy(s, L_WRITE, t, out, cap);
}

int32_t ir_facts_readers(const struct ir_slots *s, ir_tid t, int32_t *out, int32_t cap)
{
    return list_copy(s, L_READ, t, out, cap);
}

const int32_t *ir_facts_reader_list(const struct ir_slots *s, ir_tid t, int32_t *n)
{
    const struct slist *sl = list_of(s, L_READ, t);
    *n = sl ? sl->n : 0;
    return sl && sl->n ? sl->v : NULL;
}

const int32_t *ir_facts_writer_list(const struct ir_slots *s, ir_tid t, int32_t *n)
{
    const struct slist *sl = list_of(s, L_WRITE, t);
    *n = sl ? sl->n : 0;
    return sl && sl->n ? sl->v : NULL;
}

const ir_tid *ir_facts_slot_reads(const struct ir_slots *s, int32_t i, int32_t *n)
{
    bool live = i >= 0 && i < s->n && s->live[i];
    *n = live ? s->reads[i].n : 0;
    return live && s->reads[i].n ? s->reads[i].v : NULL;
}

const ir_tid *ir_facts_slot_writes(const struct ir_slots *s, int32_t i, int32_t *n)
{
    bool live = i >= 0 && i < s->n && s->live[i];
    *n = live ? s->writes[i].n : 0;
    return live && s->writes[i].n ? s->writes[i].v : NULL;
}

bool ir_facts_observed(const struct ir_slots *s, ir_tid t)
{
    return tid_ok(s, t) && (s->g->tensors[t].observed || s->g->tensors[t].carried);
}

bool ir_facts_carried(const struct ir_slots *s, ir_tid t)
{
    return tid_ok(s, t) && s->g->tensors[t].carried;
}

bool ir_facts_untouched(const struct ir_slots *s, ir_tid t, int32_t i, int32_t j, bool also_reads,
                        const int32_t *except, int32_t nexcept)
{
    struct sorted_group g;
    group_over(&g, except, nexcept);
    bool touched = any_between(list_of(s, L_WRITE, t), i, j, &g) ||
                   (also_reads && any_between(list_of(s, L_READ, t), i, j, &g));
    group_done(&g);
    return !touched;
}

/* Whether a live slot strictly between i and j, not in group, writes what slot m reads, or reads or writes what
 * slot m writes. */
static bool conflicts(const struct ir_slots *s, int32_t m, int32_t i, int32_t j, const int32_t *group,
                      int32_t ngroup)
{
    if (!is_live(s, m))
        return false;
    const struct tset *r = &s->reads[m], *w = &s->writes[m];
    struct sorted_group g;
    group_over(&g, group, ngroup);
    bool found = false;
    for (int32_t k = 0; k < r->n && !found; k++)
        found = any_between(list_of(s, L_WRITE, r->v[k]), i, j, &g);
    for (int32_t k = 0; k < w->n && !found; k++)
        found = any_between(list_of(s, L_WRITE, w->v[k]), i, j, &g) || any_between(list_of(s, L_READ, w->v[k]), i, j, &g);
    group_done(&g);
    return found;
}

bool ir_facts_crosses(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *group, int32_t ngroup)
{
    return conflicts(s, j, i, j, group, ngroup);
}

bool ir_facts_sinks_past(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *members, int32_t nmembers)
{
    return conflicts(s, i, i, j, members, nmembers);
}

/* Whether every slot of list l is in the group: more slots than members settles it at once; a short list is looked
 * up in the group as given, a long one in its sorted copy. */
static bool all_in_group(const struct slist *l, struct sorted_group *g)
{
    if (!l || l->n == 0)
        return true;
    if (l->n > g->n)
        return false;
    if (!g->v && ((int64_t)l->n * g->n <= 4096 || l->n <= 8)) {
        for (int32_t x = 0; x < l->n; x++)
            if (!in_group(l->v[x], g->raw, g->n))
                return false;
        return true;
    }
    const int32_t *sorted = group_sorted(g);
    for (int32_t x = 0; x < l->n; x++)
        if (!bsearch(&l->v[x], sorted, (size_t)g->n, sizeof *sorted, cmp_slot))
            return false;
    return true;
}

/* Whether every tensor slot i writes is unobserved and read only by slots of the group. */
static bool read_only_within(const struct ir_slots *s, int32_t i, struct sorted_group *g)
{
    if (!is_live(s, i))
        return true;
    const struct tset *w = &s->writes[i];
    for (int32_t k = 0; k < w->n; k++)
        if (ir_facts_observed(s, w->v[k]) || !all_in_group(list_of(s, L_READ, w->v[k]), g))
            return false;
    return true;
}

bool ir_facts_read_only_within(const struct ir_slots *s, int32_t i, const int32_t *within, int32_t nwithin)
{
    struct sorted_group g;
    group_over(&g, within, nwithin);
    bool ok = read_only_within(s, i, &g);
    group_done(&g);
    return ok;
}

bool ir_facts_all_read_only_within(const struct ir_slots *s, const int32_t *ps, int32_t nps, const int32_t *within,
                                   int32_t nwithin)
{
    struct sorted_group g;
    group_over(&g, within, nwithin);
    if (nps > 1 && nwithin > 64)
        group_sorted(&g); /* asked once a slot: sorted once for all */
    bool ok = true;
    for (int32_t x = 0; x < nps && ok; x++)
        ok = read_only_within(s, ps[x], &g);
    group_done(&g);
    return ok;
}

bool ir_facts_readers_within(const struct ir_slots *s, ir_tid t, const int32_t *group, int32_t ngroup)
{
    struct sorted_group g;
    group_over(&g, group, ngroup);
    bool ok = all_in_group(list_of(s, L_READ, t), &g);
    group_done(&g);
    return ok;
}

/* One question of the quantified sink: list `l` of tensor t, asked for the earliest mover `from` that has t in the
 * set the list answers for. */
struct sink_ask {
    ir_tid t;
    int l;
    int32_t from;
};

/* Order by tensor, then list, then mover. */
static int cmp_ask(const void *pa, const void *pb)
{
    const struct sink_ask *a = pa, *b = pb;
    if (a->t != b->t)
        return (a->t > b->t) - (a->t < b->t);
    if (a->l != b->l)
        return (a->l > b->l) - (a->l < b->l);
    return (a->from > b->from) - (a->from < b->from);
}

/* Whether list l holds a slot k with from < k < j outside the group: the last such slot below j is found walking down
 * past the group's own slots, and stops at `from`. */
static bool any_after(const struct slist *l, int32_t from, int32_t j, struct sorted_group *g)
{
    if (!l || j <= from + 1)
        return false;
    const int32_t *sorted = NULL;
    for (int32_t at = lower_bound(l, j) - 1; at >= 0 && l->v[at] > from; at--) {
        bool member;
        if (g->n <= 8)
            member = in_group(l->v[at], g->raw, g->n);
        else {
            if (!sorted)
                sorted = group_sorted(g);
            member = bsearch(&l->v[at], sorted, (size_t)g->n, sizeof *sorted, cmp_slot) != NULL;
        }
        if (!member)
            return true;
    }
    return false;
}

bool ir_facts_none_sinks_past(const struct ir_slots *s, const int32_t *movers, int32_t nmovers, int32_t j,
                              const int32_t *members, int32_t nmembers)
{
    size_t n = 0;
    for (int32_t x = 0; x < nmovers; x++)
        if (is_live(s, movers[x]))
            n += (size_t)s->reads[movers[x]].n + 2 * (size_t)s->writes[movers[x]].n;
    struct sink_ask *ask = xcalloc(n, sizeof *ask);
    n = 0;
    for (int32_t x = 0; x < nmovers; x++) {
        int32_t m = movers[x];
        if (!is_live(s, m))
            continue;
        for (int32_t k = 0; k < s->reads[m].n; k++)
            ask[n++] = (struct sink_ask){s->reads[m].v[k], L_WRITE, m};
        for (int32_t k = 0; k < s->writes[m].n; k++) {
            ask[n++] = (struct sink_ask){s->writes[m].v[k], L_WRITE, m};
            ask[n++] = (struct sink_ask){s->writes[m].v[k], L_READ, m};
        }
    }
    qsort(ask, n, sizeof *ask, cmp_ask);
    struct sorted_group g;
    group_over(&g, members, nmembers);
    bool past = false;
    for (size_t x = 0; x < n && !past; x++)
        if (x == 0 || ask[x].t != ask[x - 1].t || ask[x].l != ask[x - 1].l) /* the earliest mover asks for all */
            past = any_after(list_of(s, ask[x].l, ask[x].t), ask[x].from, j, &g);
    group_done(&g);
    free(ask);
    return !past;
}
