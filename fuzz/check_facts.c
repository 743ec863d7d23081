/* fuzz/check_facts.c — the facts harness's checks: the slots of a generated graph (its lifted ops, and the fused
 * ops its optimized form holds as material) go through takes, puts, replaces, clones and journals rolled back,
 * chosen by the bytes; after each every indexed fact equals the scanning specification, and a rollback gives back
 * the slots as they were when their journal began. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ACTIONS 48
#define MAX_POOL 64
#define QUERIES_AN_ACTION 4
#define TENSORS_AN_ACTION 4

/* The state of one run: the slots, the tensors they read, the ops available to put, the bytes. */
struct facts_run {
    struct ir_slots *s;
    const struct ir_graph *tensors;
    struct ir_op pool[MAX_POOL];
    int npool;
    const struct ir_op *material;
    int32_t nmaterial;
    struct ir_slots *before; /* while the slots journal their changes: a copy of them as the journal began */
    struct fuzz_bytes *b;
};

/* A slot index from the bytes, one either side of the slots now and then. */
static int32_t some_slot(struct facts_run *r)
{
    int32_t n = ir_slots_len(r->s);
    return (int32_t)fuzz_pick(r->b, n + 2) - 1;
}

/* A set of up to three slots from the bytes. */
static int32_t some_set(struct facts_run *r, int32_t set[3])
{
    int32_t n = fuzz_pick(r->b, 4);
    for (int32_t i = 0; i < n; i++)
        set[i] = some_slot(r);
    return n;
}

/* Readers of t, indexed and specified, compared in full. */
static int same_readers(struct facts_run *r, ir_tid t, struct fuzz_finding *f)
{
    int32_t cap = ir_slots_len(r->s) + 1;
    int32_t *a = malloc(sizeof *a * (size_t)cap), *b = malloc(sizeof *b * (size_t)cap);
    if (!a || !b)
        abort();
    int32_t na = ir_facts_readers(r->s, t, a, cap), nb = ir_facts_spec_readers(r->s, t, b, cap);
    bool same = na == nb && (na == 0 || memcmp(a, b, sizeof *a * (size_t)(na < cap ? na : cap)) == 0);
    free(a);
    free(b);
    if (same)
        return 0;
    return fuzz_fail(f, "facts", "readers", "readers of %s: indexed %d, specified %d", r->tensors->tensors[t].name,
                     (int)na, (int)nb);
}

/* The per-tensor facts of tensor t. */
static int check_tensor(struct facts_run *r, ir_tid t, struct fuzz_finding *f)
{
    const char *name = r->tensors->tensors[t].name;
    int32_t a = ir_facts_producer(r->s, t), b = ir_facts_spec_producer(r->s, t);
    if (a != b)
        return fuzz_fail(f, "facts", "producer", "producer of %s: indexed %d, specified %d", name, (int)a, (int)b);
    a = ir_facts_maker(r->s, t);
    b = ir_facts_spec_maker(r->s, t);
    if (a != b)
        return fuzz_fail(f, "facts", "maker", "maker of %s: indexed %d, specified %d", name, (int)a, (int)b);
    return same_readers(r, t, f);
}

/* The per-tensor facts of every tensor (all: true), or of a few the bytes pick. */
static int check_tensors(struct facts_run *r, bool all, struct fuzz_finding *f)
{
    int n = all ? r->tensors->ntensors : TENSORS_AN_ACTION;
    for (int k = 0; k < n; k++)
        if (check_tensor(r, all ? (ir_tid)k : (ir_tid)fuzz_pick(r->b, r->tensors->ntensors), f))
            return 1;
    return 0;
}

/* A few slot queries with arguments from the bytes. */
static int check_queries(struct facts_run *r, struct fuzz_finding *f)
{
    for (int q = 0; q < QUERIES_AN_ACTION; q++) {
        int32_t i = some_slot(r), j = some_slot(r), set[3];
        int32_t nset = some_set(r, set);
        ir_tid t = (ir_tid)fuzz_pick(r->b, r->tensors->ntensors);
        bool also = fuzz_pick(r->b, 2);
        if (ir_facts_untouched(r->s, t, i, j, also, set, nset) !=
            ir_facts_spec_untouched(r->s, t, i, j, also, set, nset))
            return fuzz_fail(f, "facts", "untouched", "untouched(%s, %d, %d, reads=%d) disagrees",
                             r->tensors->tensors[t].name, (int)i, (int)j, (int)also);
        if (ir_facts_crosses(r->s, i, j, set, nset) != ir_facts_spec_crosses(r->s, i, j, set, nset))
            return fuzz_fail(f, "facts", "crosses", "crosses(%d, %d) disagrees", (int)i, (int)j);
        if (ir_facts_sinks_past(r->s, i, j, set, nset) != ir_facts_spec_sinks_past(r->s, i, j, set, nset))
            return fuzz_fail(f, "facts", "sinks_past", "sinks_past(%d, %d) disagrees", (int)i, (int)j);
        if (ir_facts_read_only_within(r->s, i, set, nset) != ir_facts_spec_read_only_within(r->s, i, set, nset))
            return fuzz_fail(f, "facts", "read_only_within", "read_only_within(%d) disagrees", (int)i);
        const struct ir_tensor *x = &r->tensors->tensors[t];
        if (ir_facts_observed(r->s, t) != (x->observed || x->carried) || ir_facts_carried(r->s, t) != x->carried)
            return fuzz_fail(f, "facts", "flags", "observed or carried of %s disagrees with its flags", x->name);
    }
    return 0;
}

/* A live slot from the bytes, or -1 when none is live. */
static int32_t live_slot(struct facts_run *r)
{
    int32_t n = ir_slots_len(r->s), start = fuzz_pick(r->b, n > 0 ? n : 1);
    for (int32_t k = 0; k < n; k++)
        if (ir_slots_get(r->s, (start + k) % n))
            return (start + k) % n;
    return -1;
}

/* An empty slot from the bytes, or -1 when none is empty. */
static int32_t empty_slot(struct facts_run *r)
{
    int32_t n = ir_slots_len(r->s), start = fuzz_pick(r->b, n > 0 ? n : 1);
    for (int32_t k = 0; k < n; k++)
        if (!ir_slots_get(r->s, (start + k) % n))
            return (start + k) % n;
    return -1;
}

/* Whether the slots hold the same ops as `before` in every slot and their indexes answer alike for every tensor. */
static bool same_as_before(const struct facts_run *r)
{
    int32_t n = ir_slots_len(r->s), cap = n + 1;
    if (n != ir_slots_len(r->before))
        return false;
    for (int32_t i = 0; i < n; i++) {
        const struct ir_op *x = ir_slots_get(r->s, i), *y = ir_slots_get(r->before, i);
        if ((x == NULL) != (y == NULL) || (x && !ir_op_equal(x, y)))
            return false;
    }
    int32_t *a = malloc(sizeof *a * (size_t)cap), *b = malloc(sizeof *b * (size_t)cap);
    if (!a || !b)
        abort();
    bool same = true;
    for (ir_tid t = 0; same && t < r->tensors->ntensors; t++) {
        int32_t na = ir_facts_readers(r->s, t, a, cap), nb = ir_facts_readers(r->before, t, b, cap);
        same = ir_facts_producer(r->s, t) == ir_facts_producer(r->before, t) &&
               ir_facts_maker(r->s, t) == ir_facts_maker(r->before, t) && na == nb &&
               (na == 0 || memcmp(a, b, sizeof *a * (size_t)(na < cap ? na : cap)) == 0);
    }
    free(a);
    free(b);
    return same;
}

/* Start the slots' journal (keeping a copy to compare with), or roll it back: the slots must then be the copy. */
static int journal_or_rollback(struct facts_run *r, struct fuzz_finding *f)
{
    if (!r->before) {
        r->before = ir_slots_clone(r->s);
        ir_slots_journal(r->s);
        return 0;
    }
    ir_slots_rollback(r->s);
    bool same = same_as_before(r);
    ir_slots_free(r->before);
    r->before = NULL;
    return same ? 0 : fuzz_fail(f, "facts", "rollback", "rolled back, the slots differ from the slots before");
}

/* One action from the bytes: take, put, replace, clone, start or roll back the journal, or nothing. */
static int act_once(struct facts_run *r, struct fuzz_finding *f)
{
    int what = fuzz_pick(r->b, 6);
    if (what == 0 && r->npool < MAX_POOL) {
        int32_t i = live_slot(r);
        if (i >= 0)
            r->pool[r->npool++] = ir_slots_take(r->s, i);
    } else if (what == 1 && r->npool > 0) {
        int32_t i = empty_slot(r);
        if (i >= 0) {
            int p = fuzz_pick(r->b, r->npool);
            ir_slots_put(r->s, i, r->pool[p]);
            r->pool[p] = r->pool[--r->npool];
        }
    } else if (what == 2 && r->nmaterial > 0) {
        int32_t i = live_slot(r);
        if (i >= 0)
            ir_slots_replace(r->s, i, ir_op_clone(&r->material[fuzz_pick(r->b, r->nmaterial)]));
    } else if (what == 3) { /* the copy keeps no journal: a journal begun on the original ends here */
        struct ir_slots *c = ir_slots_clone(r->s);
        ir_slots_free(r->s);
        r->s = c;
        ir_slots_free(r->before);
        r->before = NULL;
    } else if (what == 4) {
        return journal_or_rollback(r, f);
    }
    return 0;
}

/* The lifted ops and, when the bytes ask, the optimized graph's (fused) ops: what puts and replaces draw on. The
 * optimized graph (whose tensors extend the lifted graph's) is kept for the slots' tensors. */
static struct rules_optimized material(const struct ir_graph *g, bool fused)
{
    struct rules_optimized o;
    memset(&o, 0, sizeof o);
    char err[IR_ERR_LEN];
    if (fused) {
        struct shim *ref = shim_reference();
        if (ref && rules_optimize(g, ref, NULL, 0, &o, err) != 0)
            memset(&o, 0, sizeof o);
        shim_free(ref);
    }
    return o;
}

int fuzz_check_facts(const uint8_t *data, size_t size, struct fuzz_finding *f)
{
    struct fuzz_bytes b = {data, size, 0};
    char err[IR_ERR_LEN];
    struct ir_graph *g = fuzz_generate_graph(&b, NULL, err);
    if (!g)
        return fuzz_fail(f, "generator", "invalid", "the generator made a graph the validator refuses: %s", err);
    struct rules_optimized o = material(g, fuzz_pick(&b, 2));
    struct facts_run r;
    memset(&r, 0, sizeof r);
    r.b = &b;
    r.tensors = o.graph ? o.graph : g;
    r.material = o.graph ? o.graph->ops : g->ops;
    r.nmaterial = o.graph ? o.graph->nops : g->nops;
    struct ir_op *ops = malloc(sizeof *ops * (size_t)(g->nops + 1));
    if (!ops)
        abort();
    for (int32_t i = 0; i < g->nops; i++)
        ops[i] = ir_op_clone(&g->ops[i]);
    r.s = ir_slots_new(r.tensors, ops, g->nops);
    int bad = check_tensors(&r, true, f) || check_queries(&r, f);
    for (int a = 0; !bad && a < MAX_ACTIONS && !fuzz_bytes_done(&b); a++) {
        bad = act_once(&r, f) || check_tensors(&r, false, f) || check_queries(&r, f);
    }
    if (!bad)
        bad = check_tensors(&r, true, f);
    for (int i = 0; i < r.npool; i++)
        ir_op_free(&r.pool[i]);
    ir_slots_free(r.before);
    ir_slots_free(r.s);
    rules_optimized_free(&o);
    ir_graph_free(g);
    return bad;
}
