/* oracle/atoms.c — the symbolic twin of every guard atom kind, written once against the term builder: the same
 * construction evaluates on a concrete schedule (what the exhaustive agreement test compares with rules/guards.c)
 * and builds the Z3 formula the proofs assume. Each twin follows its kind's meaning in RULES_ATOMS (rules/rules.h). */
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

/* What a twin's bodies need: the atom and its roles' terms, and the slot a nested quantifier is at. */
struct actx {
    const struct rules_atom *at;
    struct oracle_term t, a, b;
    struct oracle_term k;
};

/* Whether slot k lies strictly between the atom's a and b and outside its set. */
static struct oracle_term between(struct oracle_builder *b, const struct actx *c, struct oracle_term k)
{
    struct oracle_term inside = oracle_ob_and(b, oracle_ob_lt(b, c->a, k), oracle_ob_lt(b, k, c->b));
    return oracle_ob_and(b, inside, oracle_ob_not(b, oracle_ob_in(b, c->at->g, k)));
}

/* The slot a nested body speaks of, carried in a copy of the context. */
static struct actx at_slot(const void *vc, struct oracle_term k)
{
    struct actx c = *(const struct actx *)vc;
    c.k = k;
    return c;
}

/* Slot c->k is a. */
static struct oracle_term is_a(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return oracle_ob_eq(b, c->k, c->a);
}

/* Only a reads t: every reader of t is a. */
static struct oracle_term reader_is_a(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return oracle_ob_implies_then(b, oracle_ob_reads(b, k, c.t), is_a, &c);
}

/* Slot c->k does not read t. */
static struct oracle_term not_reading(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return oracle_ob_not(b, oracle_ob_reads(b, c->k, c->t));
}

/* No slot before a reads t. */
static struct oracle_term none_reads_before_a(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return oracle_ob_implies_then(b, oracle_ob_lt(b, k, c.a), not_reading, &c);
}

/* Slot c->k is in the set g. */
static struct oracle_term in_g(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return oracle_ob_in(b, c->at->g, c->k);
}

/* Every reader of t is in the set g. */
static struct oracle_term reader_in_g(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return oracle_ob_implies_then(b, oracle_ob_reads(b, k, c.t), in_g, &c);
}

/* Slot c->k does not write t. */
static struct oracle_term not_writing(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return oracle_ob_not(b, oracle_ob_writes(b, c->k, c->t));
}

/* Slot c->k neither reads nor writes t. */
static struct oracle_term not_touching(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return oracle_ob_not(b, oracle_ob_or(b, oracle_ob_writes(b, c->k, c->t), oracle_ob_reads(b, c->k, c->t)));
}

/* No slot between writes t. */
static struct oracle_term unwritten_at(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return oracle_ob_implies_then(b, between(b, &c, k), not_writing, &c);
}

/* No slot between reads or writes t. */
static struct oracle_term untouched_at(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return oracle_ob_implies_then(b, between(b, &c, k), not_touching, &c);
}

/* Whether op k touches tensor t so that it cannot swap with the mover (c->t holds the mover): k writes what the
 * mover reads, or reads or writes what the mover writes. */
static struct oracle_term conflict_on(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    const struct actx *c = vc;
    struct oracle_term mover = c->t;
    struct oracle_term raw = oracle_ob_and(b, oracle_ob_reads(b, mover, t), oracle_ob_writes(b, c->k, t));
    struct oracle_term touch = oracle_ob_or(b, oracle_ob_reads(b, c->k, t), oracle_ob_writes(b, c->k, t));
    return oracle_ob_or(b, raw, oracle_ob_and(b, oracle_ob_writes(b, mover, t), touch));
}

/* The mover (in c->t's place) conflicts with slot c->k on no tensor. */
static struct oracle_term no_conflict(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    return oracle_ob_not(b, oracle_ob_exists_tensor(b, conflict_on, vc));
}

/* Slot k, if between, conflicts with the mover on no tensor. */
static struct oracle_term passes_freely(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return oracle_ob_implies_then(b, between(b, &c, k), no_conflict, &c);
}

/* Slot c->b (standing for a reader) is in the set g. */
static struct oracle_term reader_slot_in_g(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return oracle_ob_in(b, c->at->g, c->b);
}

/* Every reader of tensor t (in c->k's place) is in the set g. */
static struct oracle_term read_within(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    struct actx c = *(const struct actx *)vc;
    c.b = k;
    return oracle_ob_implies_then(b, oracle_ob_reads(b, k, c.k), reader_slot_in_g, &c);
}

/* Tensor c->k is unseen by the host and read only within g. */
static struct oracle_term kept_within(struct oracle_builder *b, struct oracle_term x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    struct oracle_term seen = oracle_ob_or(b, oracle_ob_observed(b, c->k), oracle_ob_carried(b, c->k));
    return oracle_ob_and(b, oracle_ob_not(b, seen), oracle_ob_forall_slot(b, read_within, c));
}

/* A tensor a writes is unseen by the host and read only within g. */
static struct oracle_term written_kept_within(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    struct actx c = at_slot(vc, t);
    return oracle_ob_implies_then(b, oracle_ob_writes(b, c.a, t), kept_within, &c);
}

/* The twin of one atom with every role bound (EACH included). */
static struct oracle_term atom_once(struct oracle_builder *b, const struct rules_atom *at)
{
    struct actx c = {at, oracle_ob_tensor(b, at->t), oracle_ob_slot(b, at->a), oracle_ob_slot(b, at->b), {NULL, 0}};
    switch (at->kind) {
    case RULES_ATOM_ONLY_READER: return oracle_ob_and(b, oracle_ob_reads(b, c.a, c.t), oracle_ob_forall_slot(b, reader_is_a, &c));
    case RULES_ATOM_FIRST_READER:
        return oracle_ob_and(b, oracle_ob_reads(b, c.a, c.t), oracle_ob_forall_slot(b, none_reads_before_a, &c));
    case RULES_ATOM_READERS_WITHIN: return oracle_ob_forall_slot(b, reader_in_g, &c);
    case RULES_ATOM_UNTOUCHED: return oracle_ob_forall_slot(b, unwritten_at, &c);
    case RULES_ATOM_UNREAD_UNWRITTEN: return oracle_ob_forall_slot(b, untouched_at, &c);
    case RULES_ATOM_NO_CROSS: c.t = c.b; return oracle_ob_forall_slot(b, passes_freely, &c);
    case RULES_ATOM_NO_SINK_PAST: c.t = c.a; return oracle_ob_forall_slot(b, passes_freely, &c);
    case RULES_ATOM_NOT_OBSERVED: return oracle_ob_not(b, oracle_ob_or(b, oracle_ob_observed(b, c.t), oracle_ob_carried(b, c.t)));
    case RULES_ATOM_NOT_CARRIED: return oracle_ob_not(b, oracle_ob_carried(b, c.t));
    case RULES_ATOM_READ_ONLY_WITHIN: return oracle_ob_forall_tensor(b, written_kept_within, &c);
    case RULES_ATOM_COUNT: break;
    }
    return oracle_ob_bool(b, false);
}

/* The atom with EACH bound to slot e, when e is in the quantified set. */
static struct oracle_term atom_at_each(struct oracle_builder *b, struct oracle_term e, const void *vc)
{
    const struct rules_atom *at = vc;
    Z3_ast saved = b->slot_role[RULES_ROLE_EACH];
    long long saved_each = b->each;
    bool saved_bound = b->each_bound;
    if (b->mode == ORACLE_Z3)
        b->slot_role[RULES_ROLE_EACH] = e.z;
    b->each = e.v;
    b->each_bound = true;
    struct oracle_term f = atom_once(b, at);
    b->slot_role[RULES_ROLE_EACH] = saved;
    b->each = saved_each;
    b->each_bound = saved_bound;
    return oracle_ob_implies(b, oracle_ob_in(b, at->forall, e), f);
}

struct oracle_term oracle_atom_term(struct oracle_builder *b, const struct rules_atom *atom)
{
    if (atom->forall == RULES_ROLE_NONE)
        return atom_once(b, atom);
    return oracle_ob_forall_slot(b, atom_at_each, atom);
}

/* ── The twins on an indexed schedule ─────────────────────────────────────────────────────────────────────
 * The same meanings answered from the sorted lists: a quantifier over slots becomes a range of a tensor's readers
 * or writers, counted less the range's members of the atom's set. test_oracle checks them against the formulas. */

/* One of a tensor's two lists (readers or writers) in an index, with its running member counts for set g. */
struct tlist {
    const int32_t *v, *in; /* in: NULL when g has none */
    int32_t lo, hi;        /* the tensor's entries: v[lo .. hi) */
};

/* Tensor t's readers (or writers) in s, with set g's counts. */
static struct tlist tlist_of(const struct oracle_sched *s, long long t, bool writers, enum rules_role g)
{
    const struct oracle_index *ix = s->ix;
    struct tlist l = {NULL, NULL, 0, 0};
    if (t < 0 || t >= s->ntensors)
        return l;
    l.v = writers ? ix->writers : ix->readers;
    l.lo = (writers ? ix->writers_at : ix->readers_at)[t];
    l.hi = (writers ? ix->writers_at : ix->readers_at)[t + 1];
    if (g != RULES_ROLE_NONE && g < RULES_ROLE_COUNT)
        l.in = writers ? ix->writers_in[g] : ix->readers_in[g];
    return l;
}

/* How many entries of l lie strictly between slots a and b and outside its set. */
static int32_t outside_between(struct tlist l, long long a, long long b)
{
    if (!l.v || a + 1 >= b)
        return 0;
    int32_t i = oracle_lower_bound(l.v, l.lo, l.hi, a + 1), j = oracle_lower_bound(l.v, i, l.hi, b);
    return (j - i) - (l.in ? l.in[j] - l.in[i] : 0);
}

/* How many entries of l lie outside its set. */
static int32_t outside_all(struct tlist l)
{
    return (l.hi - l.lo) - (l.in ? l.in[l.hi] - l.in[l.lo] : 0);
}

/* Whether the ascending list v[lo .. hi) holds x. */
static bool holds(const int32_t *v, int32_t lo, int32_t hi, long long x)
{
    int32_t i = oracle_lower_bound(v, lo, hi, x);
    return i < hi && v[i] == x;
}

/* Whether op k reads tensor t. */
static bool ix_reads(const struct oracle_sched *s, long long k, long long t)
{
    return k >= 0 && k < s->nops && t >= 0 && t < s->ntensors && holds(s->ix->rd, s->ix->rd_at[k], s->ix->rd_at[k + 1], t);
}

/* Whether the mover passes every slot strictly between a and b outside set g freely: none of them writes what it
 * reads, or reads or writes what it writes. */
static bool passes_between(const struct oracle_sched *s, long long mover, long long a, long long b, enum rules_role g)
{
    const struct oracle_index *ix = s->ix;
    if (mover < 0 || mover >= s->nops)
        return true;
    for (int32_t i = ix->rd_at[mover]; i < ix->rd_at[mover + 1]; i++)
        if (outside_between(tlist_of(s, ix->rd[i], true, g), a, b))
            return false;
    for (int32_t i = ix->wr_at[mover]; i < ix->wr_at[mover + 1]; i++)
        if (outside_between(tlist_of(s, ix->wr[i], true, g), a, b) ||
            outside_between(tlist_of(s, ix->wr[i], false, g), a, b))
            return false;
    return true;
}

/* Whether every tensor op a writes is unseen by the host and read only by slots of set g. */
static bool written_kept_in(const struct oracle_sched *s, long long a, enum rules_role g)
{
    const struct oracle_index *ix = s->ix;
    if (a < 0 || a >= s->nops)
        return true;
    for (int32_t i = ix->wr_at[a]; i < ix->wr_at[a + 1]; i++) {
        int32_t t = ix->wr[i];
        if (s->observed[t] || s->carried[t] || outside_all(tlist_of(s, t, false, g)))
            return false;
    }
    return true;
}

/* The atom with every role bound (EACH to each), on an indexed schedule. */
static bool atom_once_indexed(const struct oracle_sched *s, const struct rules_binding *bind,
                              const struct rules_atom *at, long long each)
{
    long long t = bind->tensor[at->t];
    long long a = at->a == RULES_ROLE_EACH ? each : bind->slot[at->a];
    long long b = at->b == RULES_ROLE_EACH ? each : bind->slot[at->b];
    bool seen = t >= 0 && t < s->ntensors && (s->observed[t] || s->carried[t]);
    struct tlist readers = tlist_of(s, t, false, at->g), writers = tlist_of(s, t, true, at->g);
    switch (at->kind) {
    case RULES_ATOM_ONLY_READER: return ix_reads(s, a, t) && readers.hi - readers.lo == 1;
    case RULES_ATOM_FIRST_READER: return ix_reads(s, a, t) && readers.v[readers.lo] == a;
    case RULES_ATOM_READERS_WITHIN: return outside_all(readers) == 0;
    case RULES_ATOM_UNTOUCHED: return outside_between(writers, a, b) == 0;
    case RULES_ATOM_UNREAD_UNWRITTEN: return outside_between(writers, a, b) == 0 && outside_between(readers, a, b) == 0;
    case RULES_ATOM_NO_CROSS: return passes_between(s, b, a, b, at->g);
    case RULES_ATOM_NO_SINK_PAST: return passes_between(s, a, a, b, at->g);
    case RULES_ATOM_NOT_OBSERVED: return !seen;
    case RULES_ATOM_NOT_CARRIED: return !(t >= 0 && t < s->ntensors && s->carried[t]);
    case RULES_ATOM_READ_ONLY_WITHIN: return written_kept_in(s, a, at->g);
    case RULES_ATOM_COUNT: break;
    }
    return false;
}

/* The atom, its quantifier applied, on an indexed schedule with its own binding. */
static bool atom_indexed(const struct oracle_sched *s, const struct rules_atom *at)
{
    const struct rules_binding *bind = &s->bind;
    if (at->forall == RULES_ROLE_NONE)
        return atom_once_indexed(s, bind, at, bind->slot[RULES_ROLE_EACH]);
    const bool *member = s->ix->member[at->forall];
    for (long long e = 0; member && e < s->nops; e++)
        if (member[e] && !atom_once_indexed(s, bind, at, e))
            return false;
    return true;
}

bool oracle_atom_twin(const struct oracle_sched *s, const struct rules_binding *bind, const struct rules_atom *atom)
{
    struct oracle_builder b;
    oracle_ob_concrete(&b, s, bind);
    if (oracle_ob_indexed(&b))
        return atom_indexed(s, atom);
    return oracle_atom_term(&b, atom).v != 0;
}

/* Assert that the Z3 builder's relations, flags, sets and roles are exactly the schedule's and binding's, over the
 * slots and tensors -1..n (out of range: nothing read, written or flagged). */
static Z3_ast pin(struct oracle_builder *b, const struct oracle_sched *s, const struct rules_binding *bind)
{
    struct oracle_term all = oracle_ob_bool(b, true);
    for (int k = -1; k <= s->nops; k++) {
        for (int t = -1; t <= s->ntensors; t++) {
            bool in = k >= 0 && k < s->nops && t >= 0 && t < s->ntensors;
            bool r = in && s->reads[k * s->ntensors + t], w = in && s->writes[k * s->ntensors + t];
            struct oracle_term kk = oracle_ob_int(b, k), tt = oracle_ob_int(b, t);
            struct oracle_term rr = oracle_ob_reads(b, kk, tt), ww = oracle_ob_writes(b, kk, tt);
            all = oracle_ob_and(b, all, oracle_ob_and(b, r ? rr : oracle_ob_not(b, rr), w ? ww : oracle_ob_not(b, ww)));
        }
        for (int g = 1; g < RULES_ROLE_COUNT; g++) {
            bool member = false;
            for (int32_t i = 0; i < bind->nset[g]; i++)
                member |= bind->set[g][i] == k;
            struct oracle_term m = oracle_ob_in(b, (enum rules_role)g, oracle_ob_int(b, k));
            all = oracle_ob_and(b, all, member ? m : oracle_ob_not(b, m));
        }
    }
    for (int t = -1; t <= s->ntensors; t++) {
        bool in = t >= 0 && t < s->ntensors;
        struct oracle_term tt = oracle_ob_int(b, t);
        struct oracle_term o = oracle_ob_observed(b, tt), c = oracle_ob_carried(b, tt);
        all = oracle_ob_and(b, all, (in && s->observed[t]) ? o : oracle_ob_not(b, o));
        all = oracle_ob_and(b, all, (in && s->carried[t]) ? c : oracle_ob_not(b, c));
    }
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        all = oracle_ob_and(b, all, oracle_ob_eq(b, oracle_ob_slot(b, (enum rules_role)r), oracle_ob_int(b, bind->slot[r])));
        all = oracle_ob_and(b, all, oracle_ob_eq(b, oracle_ob_tensor(b, (enum rules_role)r), oracle_ob_int(b, bind->tensor[r])));
    }
    return all.z;
}

int oracle_atom_twin_z3(const struct oracle_sched *s, const struct rules_binding *bind, const struct rules_atom *atom)
{
    struct oracle_options opt = oracle_defaults();
    Z3_context z = oracle_z3_new(&opt);
    struct oracle_builder b;
    oracle_ob_symbolic(&b, z, s->nops > 0 ? s->nops : 1, s->ntensors > 0 ? s->ntensors : 1);
    Z3_ast facts = pin(&b, s, bind);
    Z3_ast twin = oracle_atom_term(&b, atom).z;
    Z3_ast with[2] = {facts, twin};
    Z3_ast without[2] = {facts, Z3_mk_not(z, twin)};
    char reason[ORACLE_REASON_LEN];
    enum oracle_verdict holds = oracle_check(z, Z3_mk_and(z, 2, with), &opt, NULL, NULL, reason);
    enum oracle_verdict fails = oracle_check(z, Z3_mk_and(z, 2, without), &opt, NULL, NULL, reason);
    oracle_z3_free(z);
    if (holds == ORACLE_REFUTED && fails == ORACLE_PROVED)
        return 1;
    if (holds == ORACLE_PROVED && fails == ORACLE_REFUTED)
        return 0;
    return -1;
}
