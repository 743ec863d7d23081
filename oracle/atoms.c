/* oracle/atoms.c — the symbolic twin of every guard atom kind, written once against the term builder: the same
 * construction evaluates on a concrete schedule (what the exhaustive agreement test compares with rules/guards.c)
 * and builds the Z3 formula the proofs assume. Each twin follows its kind's meaning in RULES_ATOMS (rules/rules.h). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* What a twin's bodies need: the atom and its roles' terms, and the slot a nested quantifier is at. */
struct actx {
    const struct rules_atom *at;
    struct ot t, a, b;
    struct ot k;
};

/* Whether slot k lies strictly between the atom's a and b and outside its set. */
static struct ot between(struct ob *b, const struct actx *c, struct ot k)
{
    struct ot inside = ob_and(b, ob_lt(b, c->a, k), ob_lt(b, k, c->b));
    return ob_and(b, inside, ob_not(b, ob_in(b, c->at->g, k)));
}

/* The slot a nested body speaks of, carried in a copy of the context. */
static struct actx at_slot(const void *vc, struct ot k)
{
    struct actx c = *(const struct actx *)vc;
    c.k = k;
    return c;
}

/* Slot c->k is a. */
static struct ot is_a(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return ob_eq(b, c->k, c->a);
}

/* Only a reads t: every reader of t is a. */
static struct ot reader_is_a(struct ob *b, struct ot k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return ob_implies_then(b, ob_reads(b, k, c.t), is_a, &c);
}

/* Slot c->k does not read t. */
static struct ot not_reading(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return ob_not(b, ob_reads(b, c->k, c->t));
}

/* No slot before a reads t. */
static struct ot none_reads_before_a(struct ob *b, struct ot k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return ob_implies_then(b, ob_lt(b, k, c.a), not_reading, &c);
}

/* Slot c->k is in the set g. */
static struct ot in_g(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return ob_in(b, c->at->g, c->k);
}

/* Every reader of t is in the set g. */
static struct ot reader_in_g(struct ob *b, struct ot k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return ob_implies_then(b, ob_reads(b, k, c.t), in_g, &c);
}

/* Slot c->k does not write t. */
static struct ot not_writing(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return ob_not(b, ob_writes(b, c->k, c->t));
}

/* Slot c->k neither reads nor writes t. */
static struct ot not_touching(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return ob_not(b, ob_or(b, ob_writes(b, c->k, c->t), ob_reads(b, c->k, c->t)));
}

/* No slot between writes t. */
static struct ot unwritten_at(struct ob *b, struct ot k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return ob_implies_then(b, between(b, &c, k), not_writing, &c);
}

/* No slot between reads or writes t. */
static struct ot untouched_at(struct ob *b, struct ot k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return ob_implies_then(b, between(b, &c, k), not_touching, &c);
}

/* Whether op k touches tensor t so that it cannot swap with the mover (c->t holds the mover): k writes what the
 * mover reads, or reads or writes what the mover writes. */
static struct ot conflict_on(struct ob *b, struct ot t, const void *vc)
{
    const struct actx *c = vc;
    struct ot mover = c->t;
    struct ot raw = ob_and(b, ob_reads(b, mover, t), ob_writes(b, c->k, t));
    struct ot touch = ob_or(b, ob_reads(b, c->k, t), ob_writes(b, c->k, t));
    return ob_or(b, raw, ob_and(b, ob_writes(b, mover, t), touch));
}

/* The mover (in c->t's place) conflicts with slot c->k on no tensor. */
static struct ot no_conflict(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    return ob_not(b, ob_exists_tensor(b, conflict_on, vc));
}

/* Slot k, if between, conflicts with the mover on no tensor. */
static struct ot passes_freely(struct ob *b, struct ot k, const void *vc)
{
    struct actx c = at_slot(vc, k);
    return ob_implies_then(b, between(b, &c, k), no_conflict, &c);
}

/* Slot c->b (standing for a reader) is in the set g. */
static struct ot reader_slot_in_g(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    return ob_in(b, c->at->g, c->b);
}

/* Every reader of tensor t (in c->k's place) is in the set g. */
static struct ot read_within(struct ob *b, struct ot k, const void *vc)
{
    struct actx c = *(const struct actx *)vc;
    c.b = k;
    return ob_implies_then(b, ob_reads(b, k, c.k), reader_slot_in_g, &c);
}

/* Tensor c->k is unseen by the host and read only within g. */
static struct ot kept_within(struct ob *b, struct ot x, const void *vc)
{
    (void)x;
    const struct actx *c = vc;
    struct ot seen = ob_or(b, ob_observed(b, c->k), ob_carried(b, c->k));
    return ob_and(b, ob_not(b, seen), ob_forall_slot(b, read_within, c));
}

/* A tensor a writes is unseen by the host and read only within g. */
static struct ot written_kept_within(struct ob *b, struct ot t, const void *vc)
{
    struct actx c = at_slot(vc, t);
    return ob_implies_then(b, ob_writes(b, c.a, t), kept_within, &c);
}

/* The twin of one atom with every role bound (EACH included). */
static struct ot atom_once(struct ob *b, const struct rules_atom *at)
{
    struct actx c = {at, ob_tensor(b, at->t), ob_slot(b, at->a), ob_slot(b, at->b), {NULL, 0}};
    switch (at->kind) {
    case RULES_ATOM_ONLY_READER: return ob_and(b, ob_reads(b, c.a, c.t), ob_forall_slot(b, reader_is_a, &c));
    case RULES_ATOM_FIRST_READER:
        return ob_and(b, ob_reads(b, c.a, c.t), ob_forall_slot(b, none_reads_before_a, &c));
    case RULES_ATOM_READERS_WITHIN: return ob_forall_slot(b, reader_in_g, &c);
    case RULES_ATOM_UNTOUCHED: return ob_forall_slot(b, unwritten_at, &c);
    case RULES_ATOM_UNREAD_UNWRITTEN: return ob_forall_slot(b, untouched_at, &c);
    case RULES_ATOM_NO_CROSS: c.t = c.b; return ob_forall_slot(b, passes_freely, &c);
    case RULES_ATOM_NO_SINK_PAST: c.t = c.a; return ob_forall_slot(b, passes_freely, &c);
    case RULES_ATOM_NOT_OBSERVED: return ob_not(b, ob_or(b, ob_observed(b, c.t), ob_carried(b, c.t)));
    case RULES_ATOM_NOT_CARRIED: return ob_not(b, ob_carried(b, c.t));
    case RULES_ATOM_READ_ONLY_WITHIN: return ob_forall_tensor(b, written_kept_within, &c);
    case RULES_ATOM_COUNT: break;
    }
    return ob_bool(b, false);
}

/* The atom with EACH bound to slot e, when e is in the quantified set. */
static struct ot atom_at_each(struct ob *b, struct ot e, const void *vc)
{
    const struct rules_atom *at = vc;
    Z3_ast saved = b->slot_role[RULES_ROLE_EACH];
    long long saved_each = b->each;
    bool saved_bound = b->each_bound;
    if (b->mode == OB_Z3)
        b->slot_role[RULES_ROLE_EACH] = e.z;
    b->each = e.v;
    b->each_bound = true;
    struct ot f = atom_once(b, at);
    b->slot_role[RULES_ROLE_EACH] = saved;
    b->each = saved_each;
    b->each_bound = saved_bound;
    return ob_implies(b, ob_in(b, at->forall, e), f);
}

struct ot oracle_atom_term(struct ob *b, const struct rules_atom *atom)
{
    if (atom->forall == RULES_ROLE_NONE)
        return atom_once(b, atom);
    return ob_forall_slot(b, atom_at_each, atom);
}

bool oracle_atom_twin(const struct oracle_sched *s, const struct rules_binding *bind, const struct rules_atom *atom)
{
    struct ob b;
    ob_concrete(&b, s, bind);
    return oracle_atom_term(&b, atom).v != 0;
}

/* Assert that the Z3 builder's relations, flags, sets and roles are exactly the schedule's and binding's, over the
 * slots and tensors -1..n (out of range: nothing read, written or flagged). */
static Z3_ast pin(struct ob *b, const struct oracle_sched *s, const struct rules_binding *bind)
{
    struct ot all = ob_bool(b, true);
    for (int k = -1; k <= s->nops; k++) {
        for (int t = -1; t <= s->ntensors; t++) {
            bool in = k >= 0 && k < s->nops && t >= 0 && t < s->ntensors;
            bool r = in && s->reads[k * s->ntensors + t], w = in && s->writes[k * s->ntensors + t];
            struct ot kk = ob_int(b, k), tt = ob_int(b, t);
            struct ot rr = ob_reads(b, kk, tt), ww = ob_writes(b, kk, tt);
            all = ob_and(b, all, ob_and(b, r ? rr : ob_not(b, rr), w ? ww : ob_not(b, ww)));
        }
        for (int g = 1; g < RULES_ROLE_COUNT; g++) {
            bool member = false;
            for (int32_t i = 0; i < bind->nset[g]; i++)
                member |= bind->set[g][i] == k;
            struct ot m = ob_in(b, (enum rules_role)g, ob_int(b, k));
            all = ob_and(b, all, member ? m : ob_not(b, m));
        }
    }
    for (int t = -1; t <= s->ntensors; t++) {
        bool in = t >= 0 && t < s->ntensors;
        struct ot tt = ob_int(b, t);
        struct ot o = ob_observed(b, tt), c = ob_carried(b, tt);
        all = ob_and(b, all, (in && s->observed[t]) ? o : ob_not(b, o));
        all = ob_and(b, all, (in && s->carried[t]) ? c : ob_not(b, c));
    }
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        all = ob_and(b, all, ob_eq(b, ob_slot(b, (enum rules_role)r), ob_int(b, bind->slot[r])));
        all = ob_and(b, all, ob_eq(b, ob_tensor(b, (enum rules_role)r), ob_int(b, bind->tensor[r])));
    }
    return all.z;
}

int oracle_atom_twin_z3(const struct oracle_sched *s, const struct rules_binding *bind, const struct rules_atom *atom)
{
    struct oracle_options opt = oracle_defaults();
    Z3_context z = oracle_z3_new(&opt);
    struct ob b;
    ob_symbolic(&b, z, s->nops > 0 ? s->nops : 1, s->ntensors > 0 ? s->ntensors : 1);
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
