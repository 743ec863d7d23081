/* oracle/motion.c — what each motion does to the schedule, and the formula that it breaks a dependence.
 *
 * Every op's reads and writes are events. A motion gives each event a new place — a host slot (where the op now
 * runs), the op's own slot as a minor key (the parts of a fused op run in slot order) and a phase (an op reads before
 * it writes) — and may remove a read the motion makes internal (the consumer of a placement now gets the value
 * straight from its producer), drop a write no one needs any more, or repeat an event (a recomputed producer reads
 * its input inside every reader; a join's destination is written by both halves' producers). The motion is legal
 * when every remaining read, and the host's final read of every observed or carried tensor, reads from the same op
 * as before, and every internal read did read from the op that now computes its value in place. */
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

/* ── Event generators ────────────────────────────────────────────────────────────────────────────────────── */

/* How an event instance arises: the op's own (moved or not), its repeat at the second producer of a join's halves
 * (place_units), or the recomputed producer's read at one of its readers (recompute). */
enum gen { GEN_OWN, GEN_SECOND, GEN_COPY, GEN_COUNT };

/* A place in the new program order. */
struct pos {
    struct oracle_term host, minor, phase;
};

/* Whether place x comes before place y. */
static struct oracle_term before(struct oracle_builder *b, struct pos x, struct pos y)
{
    struct oracle_term same_host = oracle_ob_eq(b, x.host, y.host), same_minor = oracle_ob_eq(b, x.minor, y.minor);
    struct oracle_term later = oracle_ob_or(b, oracle_ob_lt(b, x.minor, y.minor), oracle_ob_and(b, same_minor, oracle_ob_lt(b, x.phase, y.phase)));
    return oracle_ob_or(b, oracle_ob_lt(b, x.host, y.host), oracle_ob_and(b, same_host, later));
}

/* Whether a generator applies to a motion's reads (or writes). */
static bool gen_applies(enum rules_motion m, enum gen g, bool write)
{
    switch (g) {
    case GEN_OWN: return true;
    case GEN_SECOND: return m == RULES_MOTION_PLACE_UNITS;
    case GEN_COPY: return m == RULES_MOTION_RECOMPUTE && !write;
    case GEN_COUNT: break;
    }
    return false;
}

/* Whether a generator ranges over a slot e (an instance per reader). */
static bool gen_uses_e(enum gen g)
{
    return g == GEN_COPY;
}

/* Role shorthands. */
static struct oracle_term producer(struct oracle_builder *b) { return oracle_ob_slot(b, RULES_ROLE_PRODUCER); }
static struct oracle_term consumer(struct oracle_builder *b) { return oracle_ob_slot(b, RULES_ROLE_CONSUMER); }

/* Whether the motion makes op k's read of t internal (the value now comes straight from its producer). */
static struct oracle_term removed_read(struct oracle_builder *b, enum rules_motion m, struct oracle_term k, struct oracle_term t)
{
    struct oracle_term is_c = oracle_ob_eq(b, k, consumer(b));
    switch (m) {
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_READ_IN_PLACE: return oracle_ob_and(b, is_c, oracle_ob_eq(b, t, oracle_ob_tensor(b, RULES_ROLE_RESULT)));
    case RULES_MOTION_PLACE_UNITS: {
        struct oracle_term half = oracle_ob_or(b, oracle_ob_eq(b, t, oracle_ob_tensor(b, RULES_ROLE_INPUT)),
                               oracle_ob_eq(b, t, oracle_ob_tensor(b, RULES_ROLE_OTHER)));
        return oracle_ob_and(b, is_c, half);
    }
    case RULES_MOTION_RECOMPUTE: {
        struct oracle_term reader = oracle_ob_and(b, oracle_ob_in(b, RULES_ROLE_MEMBERS, k), oracle_ob_eq(b, t, oracle_ob_tensor(b, RULES_ROLE_RESULT)));
        return oracle_ob_or(b, oracle_ob_eq(b, k, producer(b)), reader);
    }
    default: return oracle_ob_bool(b, false);
    }
}

/* Whether the motion drops op k's write of t (no one reads that value any more). */
static struct oracle_term dropped_write(struct oracle_builder *b, enum rules_motion m, struct oracle_term k, struct oracle_term t)
{
    switch (m) {
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_READ_IN_PLACE:
        return oracle_ob_and(b, oracle_ob_eq(b, k, producer(b)), oracle_ob_eq(b, t, oracle_ob_tensor(b, RULES_ROLE_RESULT)));
    case RULES_MOTION_PLACE_UNITS: {
        struct oracle_term a = oracle_ob_and(b, oracle_ob_eq(b, k, oracle_half_producer(b, 0)), oracle_ob_eq(b, t, oracle_ob_tensor(b, RULES_ROLE_INPUT)));
        struct oracle_term o = oracle_ob_and(b, oracle_ob_eq(b, k, oracle_half_producer(b, 1)), oracle_ob_eq(b, t, oracle_ob_tensor(b, RULES_ROLE_OTHER)));
        return oracle_ob_or(b, a, o);
    }
    case RULES_MOTION_RECOMPUTE: return oracle_ob_eq(b, k, producer(b));
    default: return oracle_ob_bool(b, false);
    }
}

/* The slot op k's own events now happen at. */
static struct oracle_term host_of(struct oracle_builder *b, enum rules_motion m, struct oracle_term k)
{
    switch (m) {
    case RULES_MOTION_SINK_TO_CONSUMER:
    case RULES_MOTION_READ_IN_PLACE: return oracle_ob_ite(b, oracle_ob_eq(b, k, producer(b)), consumer(b), k);
    case RULES_MOTION_HOIST_TO_PRODUCER:
    case RULES_MOTION_PLACE_ROWS: return oracle_ob_ite(b, oracle_ob_eq(b, k, consumer(b)), producer(b), k);
    case RULES_MOTION_HOIST_TO_FIRST:
        return oracle_ob_ite(b, oracle_ob_in(b, RULES_ROLE_MEMBERS, k), oracle_ob_slot(b, RULES_ROLE_FIRST), k);
    case RULES_MOTION_GROUP_AT_LAST:
    case RULES_MOTION_GROUP_AT_ANCHOR:
        return oracle_ob_ite(b, oracle_ob_in(b, RULES_ROLE_MEMBERS, k), oracle_ob_slot(b, RULES_ROLE_ANCHOR), k);
    case RULES_MOTION_PLACE_UNITS: return oracle_ob_ite(b, oracle_ob_eq(b, k, consumer(b)), oracle_half_producer(b, 0), k);
    default: return k;
    }
}

/* One event instance: op k's read (or write) of t by generator g at e. */
struct event {
    enum gen g;
    bool write;
    struct oracle_term k, t, e;
};

/* Whether the instance exists in the new program. */
static struct oracle_term present(struct oracle_builder *b, enum rules_motion m, const struct event *ev)
{
    struct oracle_term happens = ev->write ? oracle_ob_writes(b, ev->k, ev->t) : oracle_ob_reads(b, ev->k, ev->t);
    struct oracle_term gone = ev->write ? dropped_write(b, m, ev->k, ev->t) : removed_read(b, m, ev->k, ev->t);
    switch (ev->g) {
    case GEN_OWN: return oracle_ob_and(b, happens, oracle_ob_not(b, gone));
    case GEN_SECOND: return oracle_ob_and(b, oracle_ob_eq(b, ev->k, consumer(b)), oracle_ob_and(b, happens, oracle_ob_not(b, gone)));
    case GEN_COPY:
        return oracle_ob_and(b, oracle_ob_and(b, oracle_ob_eq(b, ev->k, producer(b)), oracle_ob_in(b, RULES_ROLE_MEMBERS, ev->e)), happens);
    case GEN_COUNT: break;
    }
    return oracle_ob_bool(b, false);
}

/* Where the instance happens in the new program. */
static struct pos place(struct oracle_builder *b, enum rules_motion m, const struct event *ev)
{
    struct pos p;
    p.minor = ev->k;
    p.phase = oracle_ob_int(b, ev->write ? 1 : 0);
    switch (ev->g) {
    case GEN_SECOND: p.host = oracle_half_producer(b, 1); break;
    case GEN_COPY: p.host = ev->e; break;
    default: p.host = host_of(b, m, ev->k); break;
    }
    return p;
}

/* ── Read-from ───────────────────────────────────────────────────────────────────────────────────────────── */

/* What the violation's bodies need. */
struct vctx {
    const struct rules_rule *rule;
    enum rules_motion m;
    enum gen g;      /* the read's generator */
    struct oracle_term k, t, e;
    struct oracle_term korig; /* the read's place in the old program (the window's length for the host's final read) */
    struct pos pr;   /* the read's place in the new program */
    struct oracle_term a;     /* the op the read read from before (-1: none) */
    struct oracle_term w;     /* a write instance's op */
    enum gen wg;     /* its generator */
    struct oracle_term from;  /* an internal read's expected producer */
};

/* No slot m with lo < m < korig writes t. */
static struct oracle_term unwritten_until(struct oracle_builder *b, struct oracle_term m, const void *vc)
{
    const struct vctx *c = vc;
    struct oracle_term inside = oracle_ob_and(b, oracle_ob_lt(b, c->a, m), oracle_ob_lt(b, m, c->korig));
    return oracle_ob_implies(b, inside, oracle_ob_not(b, oracle_ob_writes(b, m, c->t)));
}

/* a is the last op before korig writing t in the old program (a = -1: none does). */
static struct oracle_term last_writer(struct oracle_builder *b, const struct vctx *c)
{
    struct oracle_term none = oracle_ob_eq(b, c->a, oracle_ob_int(b, -1));
    struct oracle_term some = oracle_ob_and(b, oracle_ob_le(b, oracle_ob_int(b, 0), c->a), oracle_ob_lt(b, c->a, c->korig));
    some = oracle_ob_and(b, some, oracle_ob_writes(b, c->a, c->t));
    struct oracle_term candidate = oracle_ob_or(b, none, some);
    if (b->mode == ORACLE_CONCRETE && !candidate.v)
        return candidate;
    return oracle_ob_and(b, candidate, oracle_ob_forall_slot(b, unwritten_until, c));
}

/* The write instance of op a (generator c->wg, at e) does not come before the read. */
static struct oracle_term a_not_before_read(struct oracle_builder *b, struct oracle_term e, const void *vc)
{
    const struct vctx *c = vc;
    struct event ev = {c->wg, true, c->a, c->t, e};
    return oracle_ob_not(b, oracle_ob_and(b, present(b, c->m, &ev), before(b, place(b, c->m, &ev), c->pr)));
}

/* V1: the op the read read from writes nowhere before the read in the new program. */
static struct oracle_term source_lost(struct oracle_builder *b, const struct vctx *c0)
{
    struct vctx c = *c0;
    struct oracle_term f = oracle_ob_not(b, oracle_ob_eq(b, c.a, oracle_ob_int(b, -1)));
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c.m, (enum gen)g, true))
            continue;
        c.wg = (enum gen)g;
        f = oracle_ob_and(b, f, gen_uses_e((enum gen)g) ? oracle_ob_forall_slot(b, a_not_before_read, &c)
                                                  : a_not_before_read(b, oracle_ob_int(b, 0), &c));
    }
    return f;
}

/* Some write instance of op a comes before the write instance (c->w, c->wg) in the new program. */
static struct oracle_term a_before_w(struct oracle_builder *b, const struct vctx *c)
{
    struct event w = {c->wg, true, c->w, c->t, oracle_ob_int(b, 0)};
    struct pos pw = place(b, c->m, &w);
    struct oracle_term any = oracle_ob_bool(b, false);
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c->m, (enum gen)g, true))
            continue;
        struct event ev = {(enum gen)g, true, c->a, c->t, oracle_ob_int(b, 0)};
        any = oracle_ob_or(b, any, oracle_ob_and(b, present(b, c->m, &ev), before(b, place(b, c->m, &ev), pw)));
    }
    return oracle_ob_or(b, oracle_ob_eq(b, c->a, oracle_ob_int(b, -1)), any);
}

/* Another op's write instance (generator c->wg) lands between the read's source and the read. */
static struct oracle_term intruder(struct oracle_builder *b, struct oracle_term w, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.w = w;
    struct event ev = {c.wg, true, w, c.t, oracle_ob_int(b, 0)};
    struct oracle_term f = oracle_ob_and(b, oracle_ob_not(b, oracle_ob_eq(b, w, c.a)), present(b, c.m, &ev));
    f = oracle_ob_and(b, f, before(b, place(b, c.m, &ev), c.pr));
    if (b->mode == ORACLE_CONCRETE && !f.v)
        return f;
    return oracle_ob_and(b, f, a_before_w(b, &c));
}

/* V2: some other write comes between the read's source (or the start) and the read in the new program. */
static struct oracle_term source_shadowed(struct oracle_builder *b, const struct vctx *c0)
{
    struct vctx c = *c0;
    struct oracle_term f = oracle_ob_bool(b, false);
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c.m, (enum gen)g, true))
            continue;
        c.wg = (enum gen)g;
        f = oracle_ob_or(b, f, oracle_ob_witness_slot(b, intruder, &c));
    }
    return f;
}

/* Given the read's old source a: it now reads from another op. */
static struct oracle_term source_changes(struct oracle_builder *b, struct oracle_term a, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.a = a;
    struct oracle_term last = last_writer(b, &c);
    if (b->mode == ORACLE_CONCRETE && !last.v)
        return last;
    return oracle_ob_and(b, last, oracle_ob_or(b, source_lost(b, &c), source_shadowed(b, &c)));
}

/* The read instance (generator c->g of op k at e, of tensor t) exists and reads from another op than before. */
static struct oracle_term instance_broken(struct oracle_builder *b, struct oracle_term e, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.e = e;
    struct event ev = {c.g, false, c.k, c.t, e};
    c.pr = place(b, c.m, &ev);
    c.korig = c.k;
    struct oracle_term exists = present(b, c.m, &ev);
    if (b->mode == ORACLE_CONCRETE && !exists.v)
        return exists;
    return oracle_ob_and(b, exists, oracle_ob_witness_slot_or_none(b, source_changes, &c));
}

/* Some read of tensor t by op k (in c) breaks. */
static struct oracle_term tensor_broken(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.t = t;
    if (gen_uses_e(c.g))
        return oracle_ob_witness_slot(b, instance_broken, &c);
    return instance_broken(b, oracle_ob_int(b, 0), &c);
}

/* Some read by op k (in c) breaks. */
static struct oracle_term op_broken(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.k = k;
    return oracle_ob_witness_tensor(b, tensor_broken, &c);
}

/* The host's final read of tensor t (observed or carried) sees another write than before. */
static struct oracle_term final_broken(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.t = t;
    c.korig = oracle_ob_len(b);
    c.pr.host = oracle_ob_len(b);
    c.pr.minor = oracle_ob_int(b, 0);
    c.pr.phase = oracle_ob_int(b, 0);
    struct oracle_term seen = oracle_ob_or(b, oracle_ob_observed(b, t), oracle_ob_carried(b, t));
    if (b->mode == ORACLE_CONCRETE && !seen.v)
        return seen;
    return oracle_ob_and(b, seen, oracle_ob_witness_slot_or_none(b, source_changes, &c));
}

/* ── Internal reads ──────────────────────────────────────────────────────────────────────────────────────── */

/* The read's old source a is not the op expected to compute its value in place. */
static struct oracle_term other_source(struct oracle_builder *b, struct oracle_term a, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.a = a;
    struct oracle_term last = oracle_ob_and(b, oracle_ob_or(b, oracle_ob_eq(b, a, oracle_ob_int(b, -1)), oracle_ob_le(b, oracle_ob_int(b, 0), a)), oracle_ob_lt(b, a, c.korig));
    last = oracle_ob_and(b, last, oracle_ob_or(b, oracle_ob_eq(b, a, oracle_ob_int(b, -1)), oracle_ob_writes(b, a, c.t)));
    last = oracle_ob_and(b, last, oracle_ob_not(b, oracle_ob_eq(b, a, c.from)));
    if (b->mode == ORACLE_CONCRETE && !last.v)
        return last;
    return oracle_ob_and(b, last, oracle_ob_forall_slot(b, unwritten_until, &c));
}

/* Op x's read of t, made internal, did not read from op `from`. */
static struct oracle_term internal_broken(struct oracle_builder *b, struct oracle_term x, struct oracle_term t, struct oracle_term from)
{
    struct vctx c;
    memset(&c, 0, sizeof c);
    c.k = c.korig = x;
    c.t = t;
    c.from = from;
    struct oracle_term reads = oracle_ob_reads(b, x, t);
    if (b->mode == ORACLE_CONCRETE && !reads.v)
        return reads;
    return oracle_ob_and(b, reads, oracle_ob_witness_slot_or_none(b, other_source, &c));
}

/* A recomputing reader e's read of the result did not read from the producer. */
static struct oracle_term member_broken(struct oracle_builder *b, struct oracle_term e, const void *vc)
{
    (void)vc;
    struct oracle_term member = oracle_ob_in(b, RULES_ROLE_MEMBERS, e);
    if (b->mode == ORACLE_CONCRETE && !member.v)
        return member;
    return oracle_ob_and(b, member, internal_broken(b, e, oracle_ob_tensor(b, RULES_ROLE_RESULT), producer(b)));
}

/* V0: some read the motion makes internal did not read from the op now computing its value in place. */
static struct oracle_term internals_broken(struct oracle_builder *b, enum rules_motion m)
{
    struct oracle_term result = oracle_ob_tensor(b, RULES_ROLE_RESULT);
    switch (m) {
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_READ_IN_PLACE: return internal_broken(b, consumer(b), result, producer(b));
    case RULES_MOTION_PLACE_UNITS: {
        struct oracle_term a = internal_broken(b, consumer(b), oracle_ob_tensor(b, RULES_ROLE_INPUT), oracle_half_producer(b, 0));
        struct oracle_term o = internal_broken(b, consumer(b), oracle_ob_tensor(b, RULES_ROLE_OTHER), oracle_half_producer(b, 1));
        return oracle_ob_or(b, a, o);
    }
    case RULES_MOTION_RECOMPUTE: return oracle_ob_witness_slot(b, member_broken, NULL);
    default: return oracle_ob_bool(b, false);
    }
}

/* ── The violation ───────────────────────────────────────────────────────────────────────────────────────── */

struct oracle_term oracle_violation(struct oracle_builder *b, const struct rules_rule *rule)
{
    struct vctx c;
    memset(&c, 0, sizeof c);
    c.rule = rule;
    c.m = rule->motion;
    struct oracle_term f = internals_broken(b, c.m);
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c.m, (enum gen)g, false))
            continue;
        c.g = (enum gen)g;
        if (b->mode == ORACLE_CONCRETE && f.v)
            return f;
        f = oracle_ob_or(b, f, oracle_ob_witness_slot(b, op_broken, &c));
    }
    if (b->mode == ORACLE_CONCRETE && f.v)
        return f;
    return oracle_ob_or(b, f, oracle_ob_witness_tensor(b, final_broken, &c));
}

/* ── The violation on an indexed schedule ────────────────────────────────────────────────────────────────────
 * The same question answered by sorting instead of searching: per tensor, every write instance present in the new
 * program is placed (present and place above, unchanged) and sorted; each read instance then finds what comes before
 * it by binary search. A read whose old source is a breaks when no instance of a comes before it (V1), or another
 * op's instance comes after a's first and before the read (V2; with no source, any instance before it). test_oracle
 * checks it against the formula. */

/* A write instance: its place in the new program and its op. */
struct winst {
    long long host, minor, phase;
    long long op;
};

/* Whether place x comes before place y (as `before`, on values). */
static bool place_lt(long long xh, long long xm, long long xp, long long yh, long long ym, long long yp)
{
    return xh < yh || (xh == yh && (xm < ym || (xm == ym && xp < yp)));
}

/* Ascending places, for qsort. */
static int cmp_winst(const void *pa, const void *pb)
{
    const struct winst *x = pa, *y = pb;
    return place_lt(x->host, x->minor, x->phase, y->host, y->minor, y->phase)
               ? -1
               : place_lt(y->host, y->minor, y->phase, x->host, x->minor, x->phase);
}

/* An instance's op and its index in the place order. */
struct opat {
    long long op;
    int32_t i;
};

/* A tensor's write instances sorted by place (w), and the same sorted by op, then place (by_op). */
struct winsts {
    struct winst *w;
    struct opat *by_op;
    int32_t n;
};

/* Ascending op, then place, for qsort. */
static int cmp_opat(const void *pa, const void *pb)
{
    const struct opat *x = pa, *y = pb;
    return x->op != y->op ? (x->op > y->op) - (x->op < y->op) : (x->i > y->i) - (x->i < y->i);
}

/* The present write instances of tensor t, sorted by place, into ws (room for twice t's writers). */
static void write_instances(struct oracle_builder *b, enum rules_motion m, long long t, struct winsts *ws)
{
    struct winst *w = ws->w;
    const struct oracle_index *ix = b->cs->ix;
    int32_t n = 0;
    for (int32_t i = ix->writers_at[t]; i < ix->writers_at[t + 1]; i++)
        for (int g = 0; g < GEN_COUNT; g++) {
            if (!gen_applies(m, (enum gen)g, true))
                continue;
            struct event ev = {(enum gen)g, true, oracle_ob_int(b, ix->writers[i]), oracle_ob_int(b, t), oracle_ob_int(b, 0)};
            if (!present(b, m, &ev).v)
                continue;
            struct pos p = place(b, m, &ev);
            w[n++] = (struct winst){p.host.v, p.minor.v, p.phase.v, ix->writers[i]};
        }
    qsort(w, (size_t)n, sizeof *w, cmp_winst);
    ws->n = n;
    for (int32_t i = 0; i < n; i++)
        ws->by_op[i] = (struct opat){w[i].op, i};
    qsort(ws->by_op, (size_t)n, sizeof *ws->by_op, cmp_opat);
}

/* The last op before slot k writing tensor t in the old program (-1: none). */
static long long source_before(const struct oracle_sched *s, long long t, long long k)
{
    const struct oracle_index *ix = s->ix;
    int32_t i = oracle_lower_bound(ix->writers, ix->writers_at[t], ix->writers_at[t + 1], k);
    return i > ix->writers_at[t] ? ix->writers[i - 1] : -1;
}

/* Whether a read at place pr whose old source was a reads from another op in the new program, given t's write
 * instances ws. */
static bool read_breaks(const struct winsts *ws, long long a, struct pos pr)
{
    const struct winst *w = ws->w;
    int32_t n = ws->n;
    int32_t before = 0; /* the instances before the read: w[0 .. before) */
    for (int32_t lo = 0, hi = n; lo < hi;) {
        int32_t mid = lo + (hi - lo) / 2;
        if (place_lt(w[mid].host, w[mid].minor, w[mid].phase, pr.host.v, pr.minor.v, pr.phase.v))
            lo = before = mid + 1;
        else
            hi = mid;
    }
    if (a == -1)
        return before > 0;
    int32_t first = -1, later_a = 0; /* a's first instance, and a's instances after it before the read */
    int32_t lo = 0, hi = n;
    while (lo < hi) { /* a's instances in by_op: from the first whose op is >= a */
        int32_t mid = lo + (hi - lo) / 2;
        if (ws->by_op[mid].op < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int32_t i = lo; i < n && ws->by_op[i].op == a && ws->by_op[i].i < before; i++) {
        if (first < 0)
            first = ws->by_op[i].i;
        else
            later_a++;
    }
    return first < 0 || before - first - 1 - later_a > 0;
}

/* Whether op x's read of tensor t, made internal, did not read from op `from` (V0, on values). */
static bool internal_breaks(const struct oracle_sched *s, long long x, long long t, long long from)
{
    struct oracle_builder b;
    oracle_ob_concrete(&b, s, &s->bind);
    if (!oracle_ob_reads(&b, oracle_ob_int(&b, x), oracle_ob_int(&b, t)).v)
        return false;
    return source_before(s, t, x) != from;
}

/* V0 on an indexed schedule. */
static bool internals_break(struct oracle_builder *b, enum rules_motion m)
{
    const struct oracle_sched *s = b->cs;
    long long result = oracle_ob_tensor(b, RULES_ROLE_RESULT).v, c = consumer(b).v, p = producer(b).v;
    switch (m) {
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_READ_IN_PLACE: return internal_breaks(s, c, result, p);
    case RULES_MOTION_PLACE_UNITS:
        return internal_breaks(s, c, oracle_ob_tensor(b, RULES_ROLE_INPUT).v, oracle_half_producer(b, 0).v) ||
               internal_breaks(s, c, oracle_ob_tensor(b, RULES_ROLE_OTHER).v, oracle_half_producer(b, 1).v);
    case RULES_MOTION_RECOMPUTE:
        for (long long e = 0; e < s->nops; e++)
            if (oracle_ob_in(b, RULES_ROLE_MEMBERS, oracle_ob_int(b, e)).v && internal_breaks(s, e, result, p))
                return true;
        return false;
    default: return false;
    }
}

/* Whether some read instance of tensor t by op k (generator g, at e) exists and breaks. */
static bool instance_breaks(struct oracle_builder *b, enum rules_motion m, enum gen g, long long k, long long t,
                            long long e, const struct winsts *ws)
{
    struct event ev = {g, false, oracle_ob_int(b, k), oracle_ob_int(b, t), oracle_ob_int(b, e)};
    if (!present(b, m, &ev).v)
        return false;
    return read_breaks(ws, source_before(b->cs, t, k), place(b, m, &ev));
}

/* Whether some read of tensor t (its readers' instances, and the host's final read) breaks. */
static bool tensor_breaks(struct oracle_builder *b, enum rules_motion m, long long t, struct winsts *ws)
{
    const struct oracle_sched *s = b->cs;
    const struct oracle_index *ix = s->ix;
    write_instances(b, m, t, ws);
    for (int32_t i = ix->readers_at[t]; i < ix->readers_at[t + 1]; i++)
        for (int g = 0; g < GEN_COUNT; g++) {
            if (!gen_applies(m, (enum gen)g, false))
                continue;
            if (g == GEN_COPY && ix->readers[i] != producer(b).v)
                continue; /* only the recomputed producer's reads are copied */
            for (long long e = 0; e < (gen_uses_e((enum gen)g) ? s->nops : 1); e++)
                if (instance_breaks(b, m, (enum gen)g, ix->readers[i], t, e, ws))
                    return true;
        }
    if (!(s->observed[t] || s->carried[t]))
        return false;
    struct pos end = {oracle_ob_int(b, s->nops), oracle_ob_int(b, 0), oracle_ob_int(b, 0)};
    return read_breaks(ws, source_before(s, t, s->nops), end);
}

/* Whether the rule's motion breaks a dependence, on an indexed schedule with its own binding. */
static bool violation_indexed(struct oracle_builder *b, const struct rules_rule *rule)
{
    const struct oracle_sched *s = b->cs;
    if (internals_break(b, rule->motion))
        return true;
    int32_t most = 0;
    for (int t = 0; t < s->ntensors; t++)
        if (s->ix->writers_at[t + 1] - s->ix->writers_at[t] > most)
            most = s->ix->writers_at[t + 1] - s->ix->writers_at[t];
    struct winsts ws = {calloc(2 * (size_t)most + 1, sizeof *ws.w), calloc(2 * (size_t)most + 1, sizeof *ws.by_op), 0};
    if (!ws.w || !ws.by_op)
        abort();
    bool broken = false;
    for (int t = 0; t < s->ntensors && !broken; t++)
        broken = tensor_breaks(b, rule->motion, t, &ws);
    free(ws.w);
    free(ws.by_op);
    return broken;
}

bool oracle_motion_legal(const struct oracle_sched *s, const struct rules_rule *rule, bool *premises)
{
    struct oracle_builder b;
    oracle_ob_concrete(&b, s, &s->bind);
    if (premises)
        *premises = oracle_premises(&b, rule).v != 0;
    if (oracle_ob_indexed(&b))
        return !violation_indexed(&b, rule);
    return oracle_violation(&b, rule).v == 0;
}

/* ── What a counterexample breaks, in words ──────────────────────────────────────────────────────────────── */

/* The op a read read from before (c->a set), searched over -1 and the window's slots; false when none fits. */
static bool find_source(struct oracle_builder *b, struct vctx *c)
{
    for (long long a = -1; a < b->cs->nops; a++) {
        c->a = oracle_ob_int(b, a);
        if (last_writer(b, c).v)
            return true;
    }
    return false;
}

/* The op whose write now comes between the read's source and the read (-1: none). */
static long long find_intruder(struct oracle_builder *b, struct vctx *c)
{
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c->m, (enum gen)g, true))
            continue;
        c->wg = (enum gen)g;
        for (long long w = 0; w < b->cs->nops; w++)
            if (intruder(b, oracle_ob_int(b, w), c).v)
                return w;
    }
    return -1;
}

/* Describe how the read in c (its source found) now breaks, into buf; false when it does not. */
static bool describe_read(struct oracle_builder *b, struct vctx *c, const char *reader, char *buf, size_t n)
{
    if (!find_source(b, c))
        return false;
    char from[32];
    if (c->a.v < 0)
        snprintf(from, sizeof from, "the value before the window");
    else
        snprintf(from, sizeof from, "op %lld", c->a.v);
    if (source_lost(b, c).v) {
        snprintf(buf, n, "%s of t%lld read from %s, whose write no longer comes before it", reader, c->t.v, from);
        return true;
    }
    long long w = find_intruder(b, c);
    if (w < 0)
        return false;
    snprintf(buf, n, "%s of t%lld read from %s, but now reads from op %lld", reader, c->t.v, from, w);
    return true;
}

/* The first internal read that did not read from the op now computing its value, into buf. */
static bool describe_internal(struct oracle_builder *b, const struct rules_rule *rule, char *buf, size_t n)
{
    for (long long x = 0; x < b->cs->nops; x++)
        for (long long t = 0; t < b->cs->ntensors; t++) {
            struct vctx c;
            memset(&c, 0, sizeof c);
            c.k = c.korig = oracle_ob_int(b, x);
            c.t = oracle_ob_int(b, t);
            if (!removed_read(b, rule->motion, c.k, c.t).v || !oracle_ob_reads(b, c.k, c.t).v)
                continue;
            if (!internals_broken(b, rule->motion).v)
                return false;
            if (find_source(b, &c)) {
                snprintf(buf, n, "op %lld's read of t%lld, now made inside the op that computes it, read from op %lld",
                         x, t, c.a.v);
                return true;
            }
        }
    return false;
}

void oracle_violation_note(const struct oracle_sched *s, const struct rules_rule *rule, char *buf, size_t n)
{
    struct oracle_builder b;
    oracle_ob_concrete(&b, s, &s->bind);
    snprintf(buf, n, "%s breaks a dependence", rules_motion_name(rule->motion));
    if (describe_internal(&b, rule, buf, n))
        return;
    struct vctx c;
    memset(&c, 0, sizeof c);
    c.rule = rule;
    c.m = rule->motion;
    char reader[64];
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c.m, (enum gen)g, false))
            continue;
        c.g = (enum gen)g;
        for (long long k = 0; k < s->nops; k++)
            for (long long t = 0; t < s->ntensors; t++)
                for (long long e = 0; e < (gen_uses_e(c.g) ? s->nops : 1); e++) {
                    c.k = c.korig = oracle_ob_int(&b, k);
                    c.t = oracle_ob_int(&b, t);
                    c.e = oracle_ob_int(&b, e);
                    struct event ev = {c.g, false, c.k, c.t, c.e};
                    if (!present(&b, c.m, &ev).v)
                        continue;
                    c.pr = place(&b, c.m, &ev);
                    snprintf(reader, sizeof reader, "op %lld's read", k);
                    if (describe_read(&b, &c, reader, buf, n))
                        return;
                }
    }
    for (long long t = 0; t < s->ntensors; t++) {
        if (!s->observed[t] && !s->carried[t])
            continue;
        c.t = oracle_ob_int(&b, t);
        c.korig = oracle_ob_len(&b);
        c.pr.host = oracle_ob_len(&b);
        c.pr.minor = oracle_ob_int(&b, 0);
        c.pr.phase = oracle_ob_int(&b, 0);
        if (describe_read(&b, &c, "the host's final read", buf, n))
            return;
    }
}
