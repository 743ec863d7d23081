/* oracle/premises.c — what the oracle assumes besides a rule's guards, each a listed assumption: the graph invariants
 * DESIGN.md states (the validator enforces them), what each motion means about its roles, and the shape facts a
 * rule's matcher establishes (the ops it matches read and write only what their roles name). Premises are rows of
 * data: one row gives both the formula and its line of text. Translation validation checks them on every firing. */
#include "oracle.h"

#include <stdio.h>
#include <string.h>

/* ── Invariants ──────────────────────────────────────────────────────────────────────────────────────────── */

/* What the invariants' bodies need: the tensor and slot a nested quantifier is at. */
struct ictx {
    struct oracle_term t, k;
};

/* I1: only state and activations are written (inputs, params and constants never). */
static struct oracle_term host_set_unwritten(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    const struct ictx *c = vc;
    struct oracle_term computed = oracle_ob_or(b, oracle_ob_state(b, t), oracle_ob_activation(b, t));
    return oracle_ob_implies(b, oracle_ob_writes(b, c->k, t), computed);
}

/* I2 (inner): no other slot than k writes activation t. */
static struct oracle_term sole_writer(struct oracle_builder *b, struct oracle_term j, const void *vc)
{
    const struct ictx *c = vc;
    struct oracle_term both = oracle_ob_and(b, oracle_ob_writes(b, c->k, c->t), oracle_ob_writes(b, j, c->t));
    return oracle_ob_implies(b, oracle_ob_and(b, both, oracle_ob_activation(b, c->t)), oracle_ob_eq(b, j, c->k));
}

/* Slot w writes t before slot k. */
static struct oracle_term written_before(struct oracle_builder *b, struct oracle_term w, const void *vc)
{
    const struct ictx *c = vc;
    return oracle_ob_and(b, oracle_ob_lt(b, w, c->k), oracle_ob_writes(b, w, c->t));
}

/* I1, I2, I3, I4 for slot k (in c) and tensor t. */
static struct oracle_term slot_tensor_invariants(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    struct ictx c = *(const struct ictx *)vc;
    c.t = t;
    struct oracle_term f = host_set_unwritten(b, t, &c);
    f = oracle_ob_and(b, f, oracle_ob_forall_slot(b, sole_writer, &c));
    struct oracle_term read_act = oracle_ob_and(b, oracle_ob_reads(b, c.k, t), oracle_ob_activation(b, t));
    f = oracle_ob_and(b, f, oracle_ob_implies(b, read_act, oracle_ob_exists_slot(b, written_before, &c)));
    struct oracle_term in_place = oracle_ob_and(b, oracle_ob_reads(b, c.k, t), oracle_ob_writes(b, c.k, t));
    return oracle_ob_and(b, f, oracle_ob_implies(b, in_place, oracle_ob_state(b, t)));
}

/* The invariants at slot k, over every tensor. */
static struct oracle_term slot_invariants(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    (void)vc;
    struct ictx c = {{NULL, 0}, k};
    return oracle_ob_forall_tensor(b, slot_tensor_invariants, &c);
}

/* A tensor is not both state and an activation. */
static struct oracle_term one_role(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    (void)vc;
    return oracle_ob_not(b, oracle_ob_and(b, oracle_ob_state(b, t), oracle_ob_activation(b, t)));
}

struct oracle_term oracle_invariants(struct oracle_builder *b)
{
    struct oracle_term f = oracle_ob_forall_tensor(b, one_role, NULL);
    f = oracle_ob_and(b, f, oracle_ob_forall_slot(b, slot_invariants, NULL));
    if (b->mode == ORACLE_Z3 && b->unbounded)
        f = oracle_ob_and(b, f, oracle_ob_le(b, oracle_ob_int(b, 1), oracle_ob_len(b)));
    return f;
}

/* ── Premise rows ────────────────────────────────────────────────────────────────────────────────────────── */

/* The kinds of premise: a formula over roles, and a line of text. */
enum pkind {
    P_BEFORE,      /* slot a is before slot b */
    P_READS,       /* slot a reads tensor t[0] */
    P_WRITES,      /* slot a writes tensor t[0] */
    P_READS_ONLY,  /* slot a reads only t[0..2] (and, with hostset, tensors no op writes) */
    P_WRITES_ONLY, /* slot a writes only t[0..2] */
    P_STATE,       /* tensor t[0] is state */
    P_FIRST_OF,    /* slot a is the first of set b (every member a slot) */
    P_LAST_OF,     /* slot a is the last of set b (every member a slot) */
    P_ONE_OF,      /* slot a is a member of set b */
    P_EACH_AFTER,  /* every slot of set b is after slot a */
    P_EACH_READS,  /* every slot of set b reads tensor t[0] */
    P_HALVES,      /* the join's halves t[0], t[1] are written by two slots before b, the first of them a */
    P_DISTINCT     /* tensors t[0] and t[1] differ */
};

struct premise {
    enum pkind kind;
    enum rules_role a, b;
    enum rules_role t[3];
    bool hostset; /* P_READS_ONLY: reading tensors no op writes is allowed too */
    bool if_used; /* only when the rule uses t[0] otherwise */
};

#define R(x) RULES_ROLE_##x

/* What each motion means about its roles. */
static const struct premise sink_premises[] = {
    {P_BEFORE, R(PRODUCER), R(CONSUMER), {0}, false, false},
    {P_WRITES, R(PRODUCER), 0, {R(RESULT)}, false, true},
    {P_READS, R(CONSUMER), 0, {R(RESULT)}, false, true},
};
static const struct premise first_premises[] = {{P_FIRST_OF, R(FIRST), R(MEMBERS), {0}, false, false}};
static const struct premise last_premises[] = {{P_LAST_OF, R(ANCHOR), R(MEMBERS), {0}, false, false}};
static const struct premise anchor_premises[] = {{P_ONE_OF, R(ANCHOR), R(MEMBERS), {0}, false, false}};
static const struct premise rows_premises[] = {
    {P_BEFORE, R(PRODUCER), R(CONSUMER), {0}, false, false},
    {P_WRITES, R(PRODUCER), 0, {R(RESULT)}, false, false},
    {P_READS, R(CONSUMER), 0, {R(RESULT)}, false, false},
    {P_READS, R(CONSUMER), 0, {R(TABLE)}, false, false},
    {P_READS_ONLY, R(CONSUMER), 0, {R(TABLE), R(RESULT), R(PARAM)}, false, false},
    {P_WRITES_ONLY, R(CONSUMER), 0, {R(TABLE)}, false, false},
    {P_STATE, 0, 0, {R(TABLE)}, false, false},
};
static const struct premise units_premises[] = {
    {P_DISTINCT, 0, 0, {R(TABLE), R(PARAM)}, false, false},
    {P_HALVES, R(FIRST), R(CONSUMER), {R(INPUT), R(OTHER)}, false, false},
    {P_READS, R(CONSUMER), 0, {R(INPUT)}, false, false},
    {P_READS, R(CONSUMER), 0, {R(OTHER)}, false, false},
    {P_READS_ONLY, R(CONSUMER), 0, {R(INPUT), R(OTHER), R(PARAM)}, false, false},
    {P_WRITES_ONLY, R(CONSUMER), 0, {R(TABLE)}, false, false},
};
static const struct premise in_place_read_premises[] = {
    {P_BEFORE, R(PRODUCER), R(CONSUMER), {0}, false, false},
    {P_READS_ONLY, R(PRODUCER), 0, {R(SOURCE)}, false, false},
    {P_WRITES_ONLY, R(PRODUCER), 0, {R(RESULT)}, false, false},
    {P_WRITES, R(PRODUCER), 0, {R(RESULT)}, false, false},
    {P_READS, R(CONSUMER), 0, {R(RESULT)}, false, false},
};
static const struct premise recompute_premises[] = {
    {P_READS_ONLY, R(PRODUCER), 0, {R(INPUT)}, false, false},
    {P_WRITES_ONLY, R(PRODUCER), 0, {R(RESULT)}, false, false},
    {P_WRITES, R(PRODUCER), 0, {R(RESULT)}, false, false},
    {P_EACH_AFTER, R(PRODUCER), R(MEMBERS), {0}, false, false},
    {P_EACH_READS, 0, R(MEMBERS), {R(RESULT)}, false, false},
};

/* A motion's premise rows. */
struct motion_premises {
    const struct premise *rows;
    int n;
};

#define ROWS(a) {a, (int)(sizeof(a) / sizeof((a)[0]))}

/* Per motion, in RULES_MOTIONS order. */
static const struct motion_premises by_motion[RULES_MOTION_COUNT] = {
    [RULES_MOTION_SINK_TO_CONSUMER] = ROWS(sink_premises),
    [RULES_MOTION_HOIST_TO_PRODUCER] = ROWS(sink_premises),
    [RULES_MOTION_HOIST_TO_FIRST] = ROWS(first_premises),
    [RULES_MOTION_GROUP_AT_LAST] = ROWS(last_premises),
    [RULES_MOTION_GROUP_AT_ANCHOR] = ROWS(anchor_premises),
    [RULES_MOTION_PLACE_ROWS] = ROWS(rows_premises),
    [RULES_MOTION_PLACE_UNITS] = ROWS(units_premises),
    [RULES_MOTION_READ_IN_PLACE] = ROWS(in_place_read_premises),
    [RULES_MOTION_RECOMPUTE] = ROWS(recompute_premises),
    [RULES_MOTION_IN_PLACE] = {NULL, 0},
};

/* What a rule's matcher establishes beyond its motion: the ops it matches read and write only what their roles
 * name. Rules whose atoms speak of whole ops (no_cross, no_sink_past) need none. */
struct rule_premises {
    const char *rule;
    struct premise rows[2];
    int n;
};

static const struct rule_premises by_rule[] = {
    /* the add reads its two summands, writes the sum */
    {"add_norm",
     {{P_READS_ONLY, R(PRODUCER), 0, {R(INPUT), R(OTHER)}, false, false},
      {P_WRITES_ONLY, R(PRODUCER), 0, {R(RESULT)}, false, false}},
     2},
    /* the inner norm reads its input and a constant weight, writes its result */
    {"sandwich_norm",
     {{P_READS_ONLY, R(PRODUCER), 0, {R(INPUT)}, true, false},
      {P_WRITES_ONLY, R(PRODUCER), 0, {R(RESULT)}, false, false}},
     2},
};

#undef R

/* The rule-specific rows of rule, or NULL. */
static const struct rule_premises *rule_rows(const struct rules_rule *rule)
{
    for (size_t i = 0; i < sizeof by_rule / sizeof by_rule[0]; i++)
        if (strcmp(by_rule[i].rule, rule->name) == 0)
            return &by_rule[i];
    return NULL;
}

/* ── Roles a rule uses ───────────────────────────────────────────────────────────────────────────────────── */

/* Mark the roles a premise row names (if_used rows only when t[0] is already used). */
static void mark_row(const struct premise *p, bool used[RULES_ROLE_COUNT], bool if_used_pass)
{
    if (p->if_used != if_used_pass || (p->if_used && !used[p->t[0]]))
        return;
    used[p->a] = used[p->b] = true;
    for (int i = 0; i < 3; i++)
        used[p->t[i]] = true;
}

void oracle_rule_roles(const struct rules_rule *rule, bool used[RULES_ROLE_COUNT])
{
    memset(used, 0, sizeof(bool) * RULES_ROLE_COUNT);
    for (int i = 0; i < rule->nguards; i++) {
        const struct rules_atom *at = &rule->guards[i];
        used[at->t] = used[at->a] = used[at->b] = used[at->g] = used[at->forall] = true;
    }
    const struct motion_premises *m = &by_motion[rule->motion];
    const struct rule_premises *rp = rule_rows(rule);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < m->n; i++)
            mark_row(&m->rows[i], used, pass == 1);
        for (int i = 0; rp && i < rp->n; i++)
            mark_row(&rp->rows[i], used, pass == 1);
    }
    used[RULES_ROLE_NONE] = false;
    used[RULES_ROLE_EACH] = false;
}

/* ── Formulas ────────────────────────────────────────────────────────────────────────────────────────────── */

/* What a premise's bodies need. */
struct pctx {
    const struct premise *p;
    struct oracle_term a;
    bool used[RULES_ROLE_COUNT];
};

/* Whether tensor t is one of the row's named tensors (those the rule uses). */
static struct oracle_term named(struct oracle_builder *b, const struct pctx *c, struct oracle_term t)
{
    struct oracle_term any = oracle_ob_bool(b, false);
    for (int i = 0; i < 3; i++)
        if (c->p->t[i] != RULES_ROLE_NONE && c->used[c->p->t[i]])
            any = oracle_ob_or(b, any, oracle_ob_eq(b, t, oracle_ob_tensor(b, c->p->t[i])));
    return any;
}

/* Slot a reads t only when t is named (or host-set, when allowed). */
static struct oracle_term read_named(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    const struct pctx *c = vc;
    struct oracle_term ok = named(b, c, t);
    if (c->p->hostset)
        ok = oracle_ob_or(b, ok, oracle_ob_not(b, oracle_ob_or(b, oracle_ob_state(b, t), oracle_ob_activation(b, t))));
    return oracle_ob_implies(b, oracle_ob_reads(b, c->a, t), ok);
}

/* Slot a writes t only when t is named. */
static struct oracle_term written_named(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    const struct pctx *c = vc;
    return oracle_ob_implies(b, oracle_ob_writes(b, c->a, t), named(b, c, t));
}

/* A member k of set b is a slot no earlier (first) or no later (last) than a. */
static struct oracle_term member_first(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    const struct pctx *c = vc;
    return oracle_ob_implies(b, oracle_ob_in(b, c->p->b, k), oracle_ob_and(b, oracle_ob_is_slot(b, k), oracle_ob_le(b, c->a, k)));
}

static struct oracle_term member_last(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    const struct pctx *c = vc;
    return oracle_ob_implies(b, oracle_ob_in(b, c->p->b, k), oracle_ob_and(b, oracle_ob_is_slot(b, k), oracle_ob_le(b, k, c->a)));
}

static struct oracle_term member_after(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    const struct pctx *c = vc;
    return oracle_ob_implies(b, oracle_ob_in(b, c->p->b, k), oracle_ob_and(b, oracle_ob_is_slot(b, k), oracle_ob_lt(b, c->a, k)));
}

static struct oracle_term member_reads(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    const struct pctx *c = vc;
    return oracle_ob_implies(b, oracle_ob_in(b, c->p->b, k), oracle_ob_reads(b, k, oracle_ob_tensor(b, c->p->t[0])));
}

struct oracle_term oracle_half_producer(struct oracle_builder *b, int h)
{
    if (b->mode == ORACLE_Z3)
        return (struct oracle_term){b->half[h], 0};
    if (b->cs->half[h] != -2)
        return oracle_ob_int(b, b->cs->half[h]);
    long long t = b->cb->tensor[h ? RULES_ROLE_OTHER : RULES_ROLE_INPUT];
    long long c = b->cb->slot[RULES_ROLE_CONSUMER];
    for (long long k = 0; k < c && k < b->cs->nops; k++)
        if (oracle_ob_writes(b, oracle_ob_int(b, k), oracle_ob_int(b, t)).v)
            return oracle_ob_int(b, k);
    return oracle_ob_int(b, -1);
}

/* The join's halves: two distinct slots before the consumer write them, the first of the two is FIRST. */
static struct oracle_term halves(struct oracle_builder *b, const struct premise *p)
{
    struct oracle_term pa = oracle_half_producer(b, 0), pb = oracle_half_producer(b, 1), c = oracle_ob_slot(b, p->b);
    struct oracle_term f = oracle_ob_and(b, oracle_ob_is_slot(b, pa), oracle_ob_is_slot(b, pb));
    f = oracle_ob_and(b, f, oracle_ob_not(b, oracle_ob_eq(b, pa, pb)));
    f = oracle_ob_and(b, f, oracle_ob_and(b, oracle_ob_lt(b, pa, c), oracle_ob_lt(b, pb, c)));
    f = oracle_ob_and(b, f, oracle_ob_eq(b, oracle_ob_slot(b, p->a), oracle_ob_ite(b, oracle_ob_lt(b, pa, pb), pa, pb)));
    f = oracle_ob_and(b, f, oracle_ob_writes(b, pa, oracle_ob_tensor(b, p->t[0])));
    f = oracle_ob_and(b, f, oracle_ob_writes(b, pb, oracle_ob_tensor(b, p->t[1])));
    /* The rule binds each half's producer too: PRODUCER the first half's, MOVER the second's. */
    f = oracle_ob_and(b, f, oracle_ob_eq(b, oracle_ob_slot(b, RULES_ROLE_PRODUCER), pa));
    return oracle_ob_and(b, f, oracle_ob_eq(b, oracle_ob_slot(b, RULES_ROLE_MOVER), pb));
}

/* One premise row as a formula. */
static struct oracle_term premise_term(struct oracle_builder *b, const struct premise *p, const bool used[RULES_ROLE_COUNT])
{
    struct pctx c;
    c.p = p;
    c.a = oracle_ob_slot(b, p->a);
    memcpy(c.used, used, sizeof c.used);
    switch (p->kind) {
    case P_BEFORE: return oracle_ob_lt(b, c.a, oracle_ob_slot(b, p->b));
    case P_READS: return oracle_ob_reads(b, c.a, oracle_ob_tensor(b, p->t[0]));
    case P_WRITES: return oracle_ob_writes(b, c.a, oracle_ob_tensor(b, p->t[0]));
    case P_READS_ONLY: return oracle_ob_forall_tensor(b, read_named, &c);
    case P_WRITES_ONLY: return oracle_ob_forall_tensor(b, written_named, &c);
    case P_STATE: return oracle_ob_state(b, oracle_ob_tensor(b, p->t[0]));
    case P_FIRST_OF: return oracle_ob_and(b, oracle_ob_in(b, p->b, c.a), oracle_ob_forall_slot(b, member_first, &c));
    case P_LAST_OF: return oracle_ob_and(b, oracle_ob_in(b, p->b, c.a), oracle_ob_forall_slot(b, member_last, &c));
    case P_ONE_OF: return oracle_ob_in(b, p->b, c.a);
    case P_EACH_AFTER: return oracle_ob_forall_slot(b, member_after, &c);
    case P_EACH_READS: return oracle_ob_forall_slot(b, member_reads, &c);
    case P_HALVES: return halves(b, p);
    case P_DISTINCT: return oracle_ob_not(b, oracle_ob_eq(b, oracle_ob_tensor(b, p->t[0]), oracle_ob_tensor(b, p->t[1])));
    }
    return oracle_ob_bool(b, false);
}

/* The role kinds ('S' slot, 'T' tensor, 'G' set), from the role table. */
static const char role_kind[] = {
#define X(e, s, k) k,
    RULES_ROLES(X)
#undef X
};

/* Every used slot role is a slot of the window and every used tensor role a tensor. */
static struct oracle_term roles_in_range(struct oracle_builder *b, const bool used[RULES_ROLE_COUNT])
{
    struct oracle_term f = oracle_ob_bool(b, true);
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        if (!used[r])
            continue;
        if (role_kind[r] == 'S')
            f = oracle_ob_and(b, f, oracle_ob_is_slot(b, oracle_ob_slot(b, (enum rules_role)r)));
        else if (role_kind[r] == 'T')
            f = oracle_ob_and(b, f, oracle_ob_is_tensor(b, oracle_ob_tensor(b, (enum rules_role)r)));
    }
    return f;
}

/* Whether a row applies to the rule (an if_used row only when its tensor is used). */
static bool applies(const struct premise *p, const bool used[RULES_ROLE_COUNT])
{
    return !p->if_used || used[p->t[0]];
}

/* A5, when assumed: what the rule's producers compute — RESULT, and a join's two halves — is an activation. */
static struct oracle_term fresh_results(struct oracle_builder *b, const struct rules_rule *rule, const bool used[RULES_ROLE_COUNT])
{
    struct oracle_term f = oracle_ob_bool(b, true);
    if (used[RULES_ROLE_RESULT])
        f = oracle_ob_and(b, f, oracle_ob_activation(b, oracle_ob_tensor(b, RULES_ROLE_RESULT)));
    if (rule->motion == RULES_MOTION_PLACE_UNITS) {
        f = oracle_ob_and(b, f, oracle_ob_activation(b, oracle_ob_tensor(b, RULES_ROLE_INPUT)));
        f = oracle_ob_and(b, f, oracle_ob_activation(b, oracle_ob_tensor(b, RULES_ROLE_OTHER)));
    }
    return f;
}

struct oracle_term oracle_premises(struct oracle_builder *b, const struct rules_rule *rule)
{
    bool used[RULES_ROLE_COUNT];
    oracle_rule_roles(rule, used);
    struct oracle_term f = b->mode == ORACLE_Z3 ? roles_in_range(b, used) : oracle_ob_bool(b, true);
    const struct motion_premises *m = &by_motion[rule->motion];
    for (int i = 0; i < m->n; i++)
        if (applies(&m->rows[i], used))
            f = oracle_ob_and(b, f, premise_term(b, &m->rows[i], used));
    const struct rule_premises *rp = rule_rows(rule);
    for (int i = 0; rp && i < rp->n; i++)
        f = oracle_ob_and(b, f, premise_term(b, &rp->rows[i], used));
    if (b->fresh_results)
        f = oracle_ob_and(b, f, fresh_results(b, rule, used));
    return f;
}

/* ── Text ────────────────────────────────────────────────────────────────────────────────────────────────── */

/* The tensors a row names, as "{a, b}" into buf. */
static const char *tensor_list(const struct premise *p, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "{");
    for (int i = 0, k = 0; i < 3 && at < n; i++)
        if (p->t[i] != RULES_ROLE_NONE)
            at += (size_t)snprintf(buf + at, n - at, "%s%s", k++ ? ", " : "", rules_role_name(p->t[i]));
    if (at < n)
        snprintf(buf + at, n - at, "}%s", p->hostset ? " and tensors no op writes" : "");
    return buf;
}

/* One row as a line of text into buf. */
static void premise_text(const struct premise *p, char *buf, size_t n)
{
    char list[160];
    const char *a = rules_role_name(p->a), *bb = rules_role_name(p->b), *t0 = rules_role_name(p->t[0]);
    switch (p->kind) {
    case P_BEFORE: snprintf(buf, n, "%s is before %s", a, bb); break;
    case P_READS: snprintf(buf, n, "%s reads %s", a, t0); break;
    case P_WRITES: snprintf(buf, n, "%s writes %s", a, t0); break;
    case P_READS_ONLY: snprintf(buf, n, "%s reads only %s", a, tensor_list(p, list, sizeof list)); break;
    case P_WRITES_ONLY: snprintf(buf, n, "%s writes only %s", a, tensor_list(p, list, sizeof list)); break;
    case P_STATE: snprintf(buf, n, "%s is state", t0); break;
    case P_FIRST_OF: snprintf(buf, n, "%s is the first of %s", a, bb); break;
    case P_LAST_OF: snprintf(buf, n, "%s is the last of %s", a, bb); break;
    case P_ONE_OF: snprintf(buf, n, "%s is one of %s", a, bb); break;
    case P_EACH_AFTER: snprintf(buf, n, "every slot of %s is after %s", bb, a); break;
    case P_EACH_READS: snprintf(buf, n, "every slot of %s reads %s", bb, t0); break;
    case P_HALVES:
        snprintf(buf, n, "two slots before %s write %s and %s; %s is the first of them", bb, t0,
                 rules_role_name(p->t[1]), a);
        break;
    case P_DISTINCT: snprintf(buf, n, "%s and %s are different tensors", t0, rules_role_name(p->t[1])); break;
    }
}

int oracle_premise_lines(const struct rules_rule *rule, char lines[][ORACLE_REASON_LEN], int cap)
{
    bool used[RULES_ROLE_COUNT];
    oracle_rule_roles(rule, used);
    int n = 0;
    const struct motion_premises *m = &by_motion[rule->motion];
    for (int i = 0; i < m->n && n < cap; i++)
        if (applies(&m->rows[i], used))
            premise_text(&m->rows[i], lines[n++], ORACLE_REASON_LEN);
    const struct rule_premises *rp = rule_rows(rule);
    for (int i = 0; rp && i < rp->n && n < cap; i++)
        premise_text(&rp->rows[i], lines[n++], ORACLE_REASON_LEN);
    return n;
}
