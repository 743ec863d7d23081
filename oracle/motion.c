/* oracle/motion.c — what each motion does to the schedule, and the formula that it breaks a dependence.
 *
 * Every op's reads and writes are events. A motion gives each event a new place — a host slot (where the op now
 * runs), the op's own slot as a minor key (the parts of a fused op run in slot order) and a phase (an op reads before
 * it writes) — and may remove a read the motion makes internal (the consumer of a placement now gets the value
 * straight from its producer), drop a write no one needs any more, or repeat an event (a recomputed producer reads
 * its input inside every reader; a join's destination is written by both halves' producers). The motion is legal
 * when every remaining read, and the host's final read of every observed or carried tensor, reads from the same op
 * as before, and every internal read did read from the op that now computes its value in place. */
#include "internal.h"

#include <string.h>

/* ── Event generators ────────────────────────────────────────────────────────────────────────────────────── */

/* How an event instance arises: the op's own (moved or not), its repeat at the second producer of a join's halves
 * (place_units), or the recomputed producer's read at one of its readers (recompute). */
enum gen { GEN_OWN, GEN_SECOND, GEN_COPY, GEN_COUNT };

/* A place in the new program order. */
struct pos {
    struct ot host, minor, phase;
};

/* Whether place x comes before place y. */
static struct ot before(struct ob *b, struct pos x, struct pos y)
{
    struct ot same_host = ob_eq(b, x.host, y.host), same_minor = ob_eq(b, x.minor, y.minor);
    struct ot later = ob_or(b, ob_lt(b, x.minor, y.minor), ob_and(b, same_minor, ob_lt(b, x.phase, y.phase)));
    return ob_or(b, ob_lt(b, x.host, y.host), ob_and(b, same_host, later));
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
static struct ot producer(struct ob *b) { return ob_slot(b, RULES_ROLE_PRODUCER); }
static struct ot consumer(struct ob *b) { return ob_slot(b, RULES_ROLE_CONSUMER); }

/* Whether the motion makes op k's read of t internal (the value now comes straight from its producer). */
static struct ot removed_read(struct ob *b, enum rules_motion m, struct ot k, struct ot t)
{
    struct ot is_c = ob_eq(b, k, consumer(b));
    switch (m) {
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_READ_IN_PLACE: return ob_and(b, is_c, ob_eq(b, t, ob_tensor(b, RULES_ROLE_RESULT)));
    case RULES_MOTION_PLACE_UNITS: {
        struct ot half = ob_or(b, ob_eq(b, t, ob_tensor(b, RULES_ROLE_INPUT)),
                               ob_eq(b, t, ob_tensor(b, RULES_ROLE_OTHER)));
        return ob_and(b, is_c, half);
    }
    case RULES_MOTION_RECOMPUTE: {
        struct ot reader = ob_and(b, ob_in(b, RULES_ROLE_MEMBERS, k), ob_eq(b, t, ob_tensor(b, RULES_ROLE_RESULT)));
        return ob_or(b, ob_eq(b, k, producer(b)), reader);
    }
    default: return ob_bool(b, false);
    }
}

/* Whether the motion drops op k's write of t (no one reads that value any more). */
static struct ot dropped_write(struct ob *b, enum rules_motion m, struct ot k, struct ot t)
{
    switch (m) {
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_READ_IN_PLACE:
        return ob_and(b, ob_eq(b, k, producer(b)), ob_eq(b, t, ob_tensor(b, RULES_ROLE_RESULT)));
    case RULES_MOTION_PLACE_UNITS: {
        struct ot a = ob_and(b, ob_eq(b, k, oracle_half_producer(b, 0)), ob_eq(b, t, ob_tensor(b, RULES_ROLE_INPUT)));
        struct ot o = ob_and(b, ob_eq(b, k, oracle_half_producer(b, 1)), ob_eq(b, t, ob_tensor(b, RULES_ROLE_OTHER)));
        return ob_or(b, a, o);
    }
    case RULES_MOTION_RECOMPUTE: return ob_eq(b, k, producer(b));
    default: return ob_bool(b, false);
    }
}

/* The slot op k's own events now happen at. */
static struct ot host_of(struct ob *b, enum rules_motion m, struct ot k)
{
    switch (m) {
    case RULES_MOTION_SINK_TO_CONSUMER:
    case RULES_MOTION_READ_IN_PLACE: return ob_ite(b, ob_eq(b, k, producer(b)), consumer(b), k);
    case RULES_MOTION_HOIST_TO_PRODUCER:
    case RULES_MOTION_PLACE_ROWS: return ob_ite(b, ob_eq(b, k, consumer(b)), producer(b), k);
    case RULES_MOTION_HOIST_TO_FIRST:
        return ob_ite(b, ob_in(b, RULES_ROLE_MEMBERS, k), ob_slot(b, RULES_ROLE_FIRST), k);
    case RULES_MOTION_GROUP_AT_LAST:
        return ob_ite(b, ob_in(b, RULES_ROLE_MEMBERS, k), ob_slot(b, RULES_ROLE_ANCHOR), k);
    case RULES_MOTION_PLACE_UNITS: return ob_ite(b, ob_eq(b, k, consumer(b)), oracle_half_producer(b, 0), k);
    default: return k;
    }
}

/* One event instance: op k's read (or write) of t by generator g at e. */
struct event {
    enum gen g;
    bool write;
    struct ot k, t, e;
};

/* Whether the instance exists in the new program. */
static struct ot present(struct ob *b, enum rules_motion m, const struct event *ev)
{
    struct ot happens = ev->write ? ob_writes(b, ev->k, ev->t) : ob_reads(b, ev->k, ev->t);
    struct ot gone = ev->write ? dropped_write(b, m, ev->k, ev->t) : removed_read(b, m, ev->k, ev->t);
    switch (ev->g) {
    case GEN_OWN: return ob_and(b, happens, ob_not(b, gone));
    case GEN_SECOND: return ob_and(b, ob_eq(b, ev->k, consumer(b)), ob_and(b, happens, ob_not(b, gone)));
    case GEN_COPY:
        return ob_and(b, ob_and(b, ob_eq(b, ev->k, producer(b)), ob_in(b, RULES_ROLE_MEMBERS, ev->e)), happens);
    case GEN_COUNT: break;
    }
    return ob_bool(b, false);
}

/* Where the instance happens in the new program. */
static struct pos place(struct ob *b, enum rules_motion m, const struct event *ev)
{
    struct pos p;
    p.minor = ev->k;
    p.phase = ob_int(b, ev->write ? 1 : 0);
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
    struct ot k, t, e;
    struct ot korig; /* the read's place in the old program (the window's length for the host's final read) */
    struct pos pr;   /* the read's place in the new program */
    struct ot a;     /* the op the read read from before (-1: none) */
    struct ot w;     /* a write instance's op */
    enum gen wg;     /* its generator */
    struct ot from;  /* an internal read's expected producer */
};

/* No slot m with lo < m < korig writes t. */
static struct ot unwritten_until(struct ob *b, struct ot m, const void *vc)
{
    const struct vctx *c = vc;
    struct ot inside = ob_and(b, ob_lt(b, c->a, m), ob_lt(b, m, c->korig));
    return ob_implies(b, inside, ob_not(b, ob_writes(b, m, c->t)));
}

/* a is the last op before korig writing t in the old program (a = -1: none does). */
static struct ot last_writer(struct ob *b, const struct vctx *c)
{
    struct ot none = ob_eq(b, c->a, ob_int(b, -1));
    struct ot some = ob_and(b, ob_le(b, ob_int(b, 0), c->a), ob_lt(b, c->a, c->korig));
    some = ob_and(b, some, ob_writes(b, c->a, c->t));
    struct ot candidate = ob_or(b, none, some);
    if (b->mode == OB_CONCRETE && !candidate.v)
        return candidate;
    return ob_and(b, candidate, ob_forall_slot(b, unwritten_until, c));
}

/* The write instance of op a (generator c->wg, at e) does not come before the read. */
static struct ot a_not_before_read(struct ob *b, struct ot e, const void *vc)
{
    const struct vctx *c = vc;
    struct event ev = {c->wg, true, c->a, c->t, e};
    return ob_not(b, ob_and(b, present(b, c->m, &ev), before(b, place(b, c->m, &ev), c->pr)));
}

/* V1: the op the read read from writes nowhere before the read in the new program. */
static struct ot source_lost(struct ob *b, const struct vctx *c0)
{
    struct vctx c = *c0;
    struct ot f = ob_not(b, ob_eq(b, c.a, ob_int(b, -1)));
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c.m, (enum gen)g, true))
            continue;
        c.wg = (enum gen)g;
        f = ob_and(b, f, gen_uses_e((enum gen)g) ? ob_forall_slot(b, a_not_before_read, &c)
                                                  : a_not_before_read(b, ob_int(b, 0), &c));
    }
    return f;
}

/* Some write instance of op a comes before the write instance (c->w, c->wg) in the new program. */
static struct ot a_before_w(struct ob *b, const struct vctx *c)
{
    struct event w = {c->wg, true, c->w, c->t, ob_int(b, 0)};
    struct pos pw = place(b, c->m, &w);
    struct ot any = ob_bool(b, false);
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c->m, (enum gen)g, true))
            continue;
        struct event ev = {(enum gen)g, true, c->a, c->t, ob_int(b, 0)};
        any = ob_or(b, any, ob_and(b, present(b, c->m, &ev), before(b, place(b, c->m, &ev), pw)));
    }
    return ob_or(b, ob_eq(b, c->a, ob_int(b, -1)), any);
}

/* Another op's write instance (generator c->wg) lands between the read's source and the read. */
static struct ot intruder(struct ob *b, struct ot w, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.w = w;
    struct event ev = {c.wg, true, w, c.t, ob_int(b, 0)};
    struct ot f = ob_and(b, ob_not(b, ob_eq(b, w, c.a)), present(b, c.m, &ev));
    f = ob_and(b, f, before(b, place(b, c.m, &ev), c.pr));
    if (b->mode == OB_CONCRETE && !f.v)
        return f;
    return ob_and(b, f, a_before_w(b, &c));
}

/* V2: some other write comes between the read's source (or the start) and the read in the new program. */
static struct ot source_shadowed(struct ob *b, const struct vctx *c0)
{
    struct vctx c = *c0;
    struct ot f = ob_bool(b, false);
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c.m, (enum gen)g, true))
            continue;
        c.wg = (enum gen)g;
        f = ob_or(b, f, ob_witness_slot(b, intruder, &c));
    }
    return f;
}

/* Given the read's old source a: it now reads from another op. */
static struct ot source_changes(struct ob *b, struct ot a, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.a = a;
    struct ot last = last_writer(b, &c);
    if (b->mode == OB_CONCRETE && !last.v)
        return last;
    return ob_and(b, last, ob_or(b, source_lost(b, &c), source_shadowed(b, &c)));
}

/* The read instance (generator c->g of op k at e, of tensor t) exists and reads from another op than before. */
static struct ot instance_broken(struct ob *b, struct ot e, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.e = e;
    struct event ev = {c.g, false, c.k, c.t, e};
    c.pr = place(b, c.m, &ev);
    c.korig = c.k;
    struct ot exists = present(b, c.m, &ev);
    if (b->mode == OB_CONCRETE && !exists.v)
        return exists;
    return ob_and(b, exists, ob_witness_slot_or_none(b, source_changes, &c));
}

/* Some read of tensor t by op k (in c) breaks. */
static struct ot tensor_broken(struct ob *b, struct ot t, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.t = t;
    if (gen_uses_e(c.g))
        return ob_witness_slot(b, instance_broken, &c);
    return instance_broken(b, ob_int(b, 0), &c);
}

/* Some read by op k (in c) breaks. */
static struct ot op_broken(struct ob *b, struct ot k, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.k = k;
    return ob_witness_tensor(b, tensor_broken, &c);
}

/* The host's final read of tensor t (observed or carried) sees another write than before. */
static struct ot final_broken(struct ob *b, struct ot t, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.t = t;
    c.korig = ob_len(b);
    c.pr.host = ob_len(b);
    c.pr.minor = ob_int(b, 0);
    c.pr.phase = ob_int(b, 0);
    struct ot seen = ob_or(b, ob_observed(b, t), ob_carried(b, t));
    if (b->mode == OB_CONCRETE && !seen.v)
        return seen;
    return ob_and(b, seen, ob_witness_slot_or_none(b, source_changes, &c));
}

/* ── Internal reads ──────────────────────────────────────────────────────────────────────────────────────── */

/* The read's old source a is not the op expected to compute its value in place. */
static struct ot other_source(struct ob *b, struct ot a, const void *vc)
{
    struct vctx c = *(const struct vctx *)vc;
    c.a = a;
    struct ot last = ob_and(b, ob_or(b, ob_eq(b, a, ob_int(b, -1)), ob_le(b, ob_int(b, 0), a)), ob_lt(b, a, c.korig));
    last = ob_and(b, last, ob_or(b, ob_eq(b, a, ob_int(b, -1)), ob_writes(b, a, c.t)));
    last = ob_and(b, last, ob_not(b, ob_eq(b, a, c.from)));
    if (b->mode == OB_CONCRETE && !last.v)
        return last;
    return ob_and(b, last, ob_forall_slot(b, unwritten_until, &c));
}

/* Op x's read of t, made internal, did not read from op `from`. */
static struct ot internal_broken(struct ob *b, struct ot x, struct ot t, struct ot from)
{
    struct vctx c;
    memset(&c, 0, sizeof c);
    c.k = c.korig = x;
    c.t = t;
    c.from = from;
    struct ot reads = ob_reads(b, x, t);
    if (b->mode == OB_CONCRETE && !reads.v)
        return reads;
    return ob_and(b, reads, ob_witness_slot_or_none(b, other_source, &c));
}

/* A recomputing reader e's read of the result did not read from the producer. */
static struct ot member_broken(struct ob *b, struct ot e, const void *vc)
{
    (void)vc;
    struct ot member = ob_in(b, RULES_ROLE_MEMBERS, e);
    if (b->mode == OB_CONCRETE && !member.v)
        return member;
    return ob_and(b, member, internal_broken(b, e, ob_tensor(b, RULES_ROLE_RESULT), producer(b)));
}

/* V0: some read the motion makes internal did not read from the op now computing its value in place. */
static struct ot internals_broken(struct ob *b, enum rules_motion m)
{
    struct ot result = ob_tensor(b, RULES_ROLE_RESULT);
    switch (m) {
    case RULES_MOTION_PLACE_ROWS:
    case RULES_MOTION_READ_IN_PLACE: return internal_broken(b, consumer(b), result, producer(b));
    case RULES_MOTION_PLACE_UNITS: {
        struct ot a = internal_broken(b, consumer(b), ob_tensor(b, RULES_ROLE_INPUT), oracle_half_producer(b, 0));
        struct ot o = internal_broken(b, consumer(b), ob_tensor(b, RULES_ROLE_OTHER), oracle_half_producer(b, 1));
        return ob_or(b, a, o);
    }
    case RULES_MOTION_RECOMPUTE: return ob_witness_slot(b, member_broken, NULL);
    default: return ob_bool(b, false);
    }
}

/* ── The violation ───────────────────────────────────────────────────────────────────────────────────────── */

struct ot oracle_violation(struct ob *b, const struct rules_rule *rule)
{
    struct vctx c;
    memset(&c, 0, sizeof c);
    c.rule = rule;
    c.m = rule->motion;
    struct ot f = internals_broken(b, c.m);
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c.m, (enum gen)g, false))
            continue;
        c.g = (enum gen)g;
        if (b->mode == OB_CONCRETE && f.v)
            return f;
        f = ob_or(b, f, ob_witness_slot(b, op_broken, &c));
    }
    if (b->mode == OB_CONCRETE && f.v)
        return f;
    return ob_or(b, f, ob_witness_tensor(b, final_broken, &c));
}

bool oracle_motion_legal(const struct oracle_sched *s, const struct rules_rule *rule, bool *premises)
{
    struct ob b;
    ob_concrete(&b, s, &s->bind);
    if (premises)
        *premises = oracle_premises(&b, rule).v != 0;
    return oracle_violation(&b, rule).v == 0;
}

/* ── What a counterexample breaks, in words ──────────────────────────────────────────────────────────────── */

/* The op a read read from before (c->a set), searched over -1 and the window's slots; false when none fits. */
static bool find_source(struct ob *b, struct vctx *c)
{
    for (long long a = -1; a < b->cs->nops; a++) {
        c->a = ob_int(b, a);
        if (last_writer(b, c).v)
            return true;
    }
    return false;
}

/* The op whose write now comes between the read's source and the read (-1: none). */
static long long find_intruder(struct ob *b, struct vctx *c)
{
    for (int g = 0; g < GEN_COUNT; g++) {
        if (!gen_applies(c->m, (enum gen)g, true))
            continue;
        c->wg = (enum gen)g;
        for (long long w = 0; w < b->cs->nops; w++)
            if (intruder(b, ob_int(b, w), c).v)
                return w;
    }
    return -1;
}

/* Describe how the read in c (its source found) now breaks, into buf; false when it does not. */
static bool describe_read(struct ob *b, struct vctx *c, const char *reader, char *buf, size_t n)
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
static bool describe_internal(struct ob *b, const struct rules_rule *rule, char *buf, size_t n)
{
    for (long long x = 0; x < b->cs->nops; x++)
        for (long long t = 0; t < b->cs->ntensors; t++) {
            struct vctx c;
            memset(&c, 0, sizeof c);
            c.k = c.korig = ob_int(b, x);
            c.t = ob_int(b, t);
            if (!removed_read(b, rule->motion, c.k, c.t).v || !ob_reads(b, c.k, c.t).v)
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
    struct ob b;
    ob_concrete(&b, s, &s->bind);
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
                    c.k = c.korig = ob_int(&b, k);
                    c.t = ob_int(&b, t);
                    c.e = ob_int(&b, e);
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
        c.t = ob_int(&b, t);
        c.korig = ob_len(&b);
        c.pr.host = ob_len(&b);
        c.pr.minor = ob_int(&b, 0);
        c.pr.phase = ob_int(&b, 0);
        if (describe_read(&b, &c, "the host's final read", buf, n))
            return;
    }
}
