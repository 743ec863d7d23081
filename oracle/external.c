/* oracle/external.c — another optimizer's firings re-checked on the lifted graph, without its guard evaluation.
 *
 * An optimizer run as its own process answers with a report (rule, class, covers) and a rewritten graph; it shows no
 * binding. Two checks need none:
 *
 *   own verdict  fusecheck's own rules, run under the same shim and seed mode with translation validation
 *                (oracle_validate_run), fire the same rule over the same class and covers: that firing's verdict is
 *                the external one's. A firing fusecheck's rules do not make is listed, not failed by itself.
 *   no cycle     whatever made the firing, fusing its covered lifted ops into one op must keep the graph acyclic: no
 *                lifted op outside the cover may depend on a covered op (through the tensors ops read and write, in
 *                place and state writes included) while a covered op depends on it. Lifted ops are in program order,
 *                so every dependence points forward, and only the ops between the first and the last covered one
 *                can be such an op: one forward pass marks what depends on the cover, one backward pass marks what
 *                the cover depends on. */
#include "oracle.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ── The cycle check ───────────────────────────────────────────────────────────────────────────────────────── */

/* What a pass over the lifted ops keeps per tensor, by generation (a mark equal to the pass's generation is set): the
 * last access that wrote it, and whether an access that read it since, is tainted (in the cover, or depending on /
 * depended on by it). */
struct taint {
    int32_t ntensors;
    uint32_t *wrote, *read; /* generation marks */
    uint32_t gen;
    ir_tid *buf;
    int cap;
};

/* Scratch for the passes over g. */
static struct taint taint_new(const struct ir_graph *g)
{
    struct taint t = {g->ntensors, NULL, NULL, 0, NULL, 0};
    t.wrote = oracle_xcalloc((size_t)g->ntensors, sizeof *t.wrote);
    t.read = oracle_xcalloc((size_t)g->ntensors, sizeof *t.read);
    return t;
}

static void taint_free(struct taint *t)
{
    free(t->wrote);
    free(t->read);
    free(t->buf);
}

/* The tensors op reads (writes false) or writes, in t's buffer; the count. */
static int accesses(struct taint *t, const struct ir_op *op, bool writes)
{
    int n = writes ? ir_op_writes(op, NULL, 0) : ir_op_reads(op, NULL, 0);
    if (n > t->cap) {
        free(t->buf);
        t->cap = n;
        t->buf = oracle_xcalloc((size_t)n, sizeof *t->buf);
    }
    return writes ? ir_op_writes(op, t->buf, n) : ir_op_reads(op, t->buf, n);
}

/* Whether x is a tensor of the graph. */
static bool in_graph(const struct taint *t, ir_tid x) { return x >= 0 && x < t->ntensors; }

/* Forward: whether op depends on a tainted access before it (reads what a tainted op wrote last; writes what a
 * tainted op wrote or read since); then its own accesses recorded, tainted when `mine` or it depended. */
static bool forward_step(struct taint *t, const struct ir_op *op, bool mine)
{
    bool dep = false;
    int n = accesses(t, op, false);
    for (int i = 0; i < n; i++)
        dep = dep || (in_graph(t, t->buf[i]) && t->wrote[t->buf[i]] == t->gen);
    n = accesses(t, op, true);
    for (int i = 0; i < n; i++)
        dep = dep || (in_graph(t, t->buf[i]) && (t->wrote[t->buf[i]] == t->gen || t->read[t->buf[i]] == t->gen));
    bool tainted = mine || dep;
    n = accesses(t, op, false); /* its reads come before its writes */
    for (int i = 0; i < n; i++)
        if (in_graph(t, t->buf[i]) && tainted)
            t->read[t->buf[i]] = t->gen;
    n = accesses(t, op, true);
    for (int i = 0; i < n; i++)
        if (in_graph(t, t->buf[i])) {
            t->wrote[t->buf[i]] = tainted ? t->gen : 0;
            t->read[t->buf[i]] = 0;
        }
    return dep;
}

/* Backward: whether a tainted access after op depends on it (reads or overwrites what it writes; overwrites what it
 * reads); then its accesses recorded, as the first of those after the ops before it. Here `wrote` marks the next
 * write of a tensor tainted, `read` a read before that write tainted. */
static bool backward_step(struct taint *t, const struct ir_op *op, bool mine)
{
    bool dep = false;
    int n = accesses(t, op, true);
    for (int i = 0; i < n; i++)
        dep = dep || (in_graph(t, t->buf[i]) && (t->wrote[t->buf[i]] == t->gen || t->read[t->buf[i]] == t->gen));
    n = accesses(t, op, false);
    for (int i = 0; i < n; i++)
        dep = dep || (in_graph(t, t->buf[i]) && t->wrote[t->buf[i]] == t->gen);
    bool tainted = mine || dep;
    n = accesses(t, op, true); /* walking backwards: its writes are seen before its reads */
    for (int i = 0; i < n; i++)
        if (in_graph(t, t->buf[i])) {
            t->wrote[t->buf[i]] = tainted ? t->gen : 0;
            t->read[t->buf[i]] = 0;
        }
    n = accesses(t, op, false);
    for (int i = 0; i < n; i++)
        if (in_graph(t, t->buf[i]) && tainted)
            t->read[t->buf[i]] = t->gen;
    return dep;
}

/* The cycle check with scratch t (see oracle_fusion_cycle). */
static int32_t cycle_with(struct taint *t, const struct ir_graph *g, const int32_t *covers, int32_t n)
{
    if (n < 2)
        return -1; /* one op fused alone is that op */
    for (int32_t i = 0; i < n; i++)
        if (covers[i] < 0 || covers[i] >= g->nops || (i && covers[i] <= covers[i - 1]))
            return -2;
    int32_t lo = covers[0], hi = covers[n - 1], span = hi - lo + 1;
    bool *after = oracle_xcalloc((size_t)span, sizeof *after); /* depends on the cover */
    t->gen++;
    for (int32_t i = lo, k = 0; i <= hi; i++) {
        bool mine = k < n && covers[k] == i;
        k += mine;
        after[i - lo] = forward_step(t, &g->ops[i], mine) && !mine;
    }
    t->gen++;
    int32_t found = -1;
    for (int32_t i = hi, k = n - 1; i >= lo; i--) {
        bool mine = k >= 0 && covers[k] == i;
        k -= mine;
        if (backward_step(t, &g->ops[i], mine) && !mine && after[i - lo])
            found = i; /* the first such op, in program order */
    }
    free(after);
    return found;
}

int32_t oracle_fusion_cycle(const struct ir_graph *g, const int32_t *covers, int32_t ncovers)
{
    struct taint t = taint_new(g);
    int32_t r = cycle_with(&t, g, covers, ncovers);
    taint_free(&t);
    return r;
}

/* ── fusecheck's own firings, for the verdicts ─────────────────────────────────────────────────────────────── */

/* One of fusecheck's own firings and its verdict. */
struct own_firing {
    char *rule; /* a copy: the check's name need not outlive its callback */
    enum ir_class cls;
    int32_t *covers;
    int32_t ncovers;
    bool ok, unknown;
    char why[ORACLE_REASON_LEN];
};
struct own_firings {
    struct own_firing *v;
    int32_t n, cap;
};

/* Keep one of fusecheck's own checked firings (oracle_check_fn). */
static void keep_own(const struct oracle_check *c, void *ctx)
{
    struct own_firings *o = ctx;
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->v = realloc(o->v, sizeof *o->v * (size_t)o->cap);
        if (!o->v)
            abort();
    }
    struct own_firing *f = &o->v[o->n++];
    f->rule = strdup(c->rule ? c->rule : "?");
    if (!f->rule)
        abort();
    f->cls = c->cls;
    f->ncovers = c->ncovers;
    f->covers = oracle_xcalloc((size_t)c->ncovers, sizeof *f->covers);
    if (c->ncovers)
        memcpy(f->covers, c->covers, sizeof *f->covers * (size_t)c->ncovers);
    bool held = c->atoms && c->premises && c->legal && c->admitted;
    f->ok = held && c->positions;
    f->unknown = held && !c->positions && c->unknown;
    snprintf(f->why, sizeof f->why, "%s", c->why);
}

/* Order firings by rule, class and covers, for the search. */
static int firing_order(const char *rule_a, enum ir_class cls_a, const int32_t *ca, int32_t na, const char *rule_b,
                        enum ir_class cls_b, const int32_t *cb, int32_t nb)
{
    int c = strcmp(rule_a, rule_b);
    if (c)
        return c;
    if (cls_a != cls_b)
        return cls_a < cls_b ? -1 : 1;
    if (na != nb)
        return na < nb ? -1 : 1;
    for (int32_t i = 0; i < na; i++)
        if (ca[i] != cb[i])
            return ca[i] < cb[i] ? -1 : 1;
    return 0;
}

/* qsort's comparison of two own firings. */
static int own_cmp(const void *a, const void *b)
{
    const struct own_firing *x = a, *y = b;
    return firing_order(x->rule, x->cls, x->covers, x->ncovers, y->rule, y->cls, y->covers, y->ncovers);
}

/* The own firing making decision d, or NULL (the first of equals: a verdict that failed is among them when any). */
static const struct own_firing *own_find(const struct own_firings *o, const struct rules_decision *d)
{
    int32_t lo = 0, hi = o->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const struct own_firing *f = &o->v[mid];
        if (firing_order(f->rule, f->cls, f->covers, f->ncovers, d->rule, d->cls, d->covers, d->ncovers) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct own_firing *f = lo < o->n ? &o->v[lo] : NULL;
    if (!f || firing_order(f->rule, f->cls, f->covers, f->ncovers, d->rule, d->cls, d->covers, d->ncovers) != 0)
        return NULL;
    for (int32_t k = lo; k < o->n && own_cmp(&o->v[k], f) == 0; k++)
        if (!o->v[k].ok)
            return &o->v[k];
    return f;
}

static void own_free(struct own_firings *o)
{
    for (int32_t i = 0; i < o->n; i++) {
        free(o->v[i].covers);
        free(o->v[i].rule);
    }
    free(o->v);
}

/* The name of the tensor lifted op i writes, or "?". */
static const char *result_name(const struct ir_graph *g, int32_t i)
{
    ir_tid out = g->ops[i].out;
    return out >= 0 && out < g->ntensors ? g->tensors[out].name : "?";
}

/* Re-check one reported firing: its own verdict where fusecheck makes it, and the cycle check. */
static void check_one(struct taint *t, const struct ir_graph *g, const struct own_firings *own,
                      const struct rules_decision *d, int32_t index, struct oracle_external_check *c)
{
    memset(c, 0, sizeof *c);
    c->d = d;
    c->index = index;
    const struct own_firing *f = own_find(own, d);
    c->matched = f != NULL;
    c->own_ok = f && f->ok;
    c->own_unknown = f && f->unknown;
    if (f && !f->ok && !f->unknown) {
        c->failed = true;
        snprintf(c->why, sizeof c->why, "fusecheck's own validation of this firing: %.200s", f->why);
    }
    c->cycle = cycle_with(t, g, d->covers, d->ncovers);
    if (c->cycle == -1)
        return;
    if (!c->failed && c->cycle == -2)
        snprintf(c->why, sizeof c->why, "its covers name no ops of the lifted graph (%d ops)", (int)g->nops);
    else if (!c->failed)
        snprintf(c->why, sizeof c->why, "fusing its covers makes a cycle: lifted op %d (writing `%.64s`), outside "
                 "them, depends on a covered op and a covered op depends on it", (int)c->cycle, result_name(g, c->cycle));
    c->failed = true;
}

int oracle_validate_external(const struct ir_graph *g, const struct shim *shim, const struct oracle_options *opt,
                             const struct rules_report *rep, oracle_external_fn fn, void *ctx,
                             struct oracle_external_totals *t, char err[IR_ERR_LEN])
{
    memset(t, 0, sizeof *t);
    struct own_firings own = {NULL, 0, 0};
    struct oracle_validation v;
    if (oracle_validate_run(g, shim, opt, keep_own, &own, &v, err)) {
        own_free(&own);
        return -1;
    }
    if (own.n) /* none fired: no array to sort (qsort wants one) */
        qsort(own.v, (size_t)own.n, sizeof *own.v, own_cmp);
    struct taint scratch = taint_new(g);
    for (int32_t i = 0; i < rep->n; i++) {
        const struct rules_decision *d = &rep->d[i];
        if (d->outcome != RULES_FIRED)
            continue;
        struct oracle_external_check c;
        check_one(&scratch, g, &own, d, i, &c);
        t->firings++;
        t->matched += c.matched;
        t->unmatched += !c.matched;
        t->failed += c.failed;
        t->unknown += !c.failed && c.own_unknown;
        if (fn)
            fn(&c, ctx);
    }
    taint_free(&scratch);
    own_free(&own);
    return 0;
}
