/* rules/guards.c — the guard atoms as data: their names and meanings, and their concrete interpreter over the facts
 * of the slots. The oracle (oracle/) interprets the same atoms symbolically. */
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const role_names[] = {
#define X(e, s, k) s,
    RULES_ROLES(X)
#undef X
};
static const char *const atom_names[] = {
#define X(e, s, m) s,
    RULES_ATOMS(X)
#undef X
};
static const char *const atom_meanings[] = {
#define X(e, s, m) m,
    RULES_ATOMS(X)
#undef X
};
static const char *const motion_names[] = {
#define X(e, s, m) s,
    RULES_MOTIONS(X)
#undef X
};
static const char *const motion_meanings[] = {
#define X(e, s, m) m,
    RULES_MOTIONS(X)
#undef X
};

static const char *const origin_names[] = {"unsaid",
#define X(e, s) s,
                                           RULES_ORIGINS(X)
#undef X
};

const char *rules_origin_name(enum rules_origin o) { return o < RULES_ORIGIN_COUNT ? origin_names[o] : "?"; }
const char *rules_role_name(enum rules_role r) { return r < RULES_ROLE_COUNT ? role_names[r] : "-"; }
const char *rules_atom_name(enum rules_atom_kind k) { return k < RULES_ATOM_COUNT ? atom_names[k] : "?"; }
const char *rules_atom_meaning(enum rules_atom_kind k) { return k < RULES_ATOM_COUNT ? atom_meanings[k] : "?"; }
const char *rules_motion_name(enum rules_motion m) { return m < RULES_MOTION_COUNT ? motion_names[m] : "?"; }
const char *rules_motion_meaning(enum rules_motion m) { return m < RULES_MOTION_COUNT ? motion_meanings[m] : "?"; }

#ifdef FUSECHECK_MUTANT_SPEC
static const char mutant_spec[] = FUSECHECK_MUTANT_SPEC;
#else
static const char mutant_spec[] = "";
#endif

/* The atom dropped at run time by rules_drop_atom, overriding the build's. */
static char dropped_now[256];
static bool dropping_now;

const char *rules_mutant(void) { return mutant_spec[0] ? mutant_spec : NULL; }

void rules_drop_atom(const char *rule_atom)
{
    dropping_now = rule_atom != NULL;
    snprintf(dropped_now, sizeof dropped_now, "%s", rule_atom ? rule_atom : "");
}

/* Whether the seed's rules are in force (rules_seed_mode). */
static bool seed_now;

void rules_seed_mode(bool on) { seed_now = on; }
bool rules_seed_rules(void) { return seed_now; }

/* The bug planted by rules_plant, if any. */
static enum rules_plant planted;
static const char *const plant_names[] = {"none",
#define X(n, m) #n,
                                          RULES_PLANTS(X)
#undef X
};
static const char *const plant_meanings[] = {"no bug",
#define X(n, m) m,
                                             RULES_PLANTS(X)
#undef X
};

int rules_plant(const char *name)
{
    planted = RULES_PLANT_NONE;
    if (!name)
        return 0;
    for (int p = 1; p < RULES_PLANT_COUNT; p++)
        if (strcmp(name, plant_names[p]) == 0) {
            planted = (enum rules_plant)p;
            return 0;
        }
    return -1;
}

enum rules_plant rules_planted(void) { return planted; }
const char *rules_plant_name(enum rules_plant p) { return p < RULES_PLANT_COUNT ? plant_names[p] : "?"; }
const char *rules_plant_meaning(enum rules_plant p) { return p < RULES_PLANT_COUNT ? plant_meanings[p] : "?"; }

struct rules_binding rules_binding_empty(void)
{
    struct rules_binding b;
    memset(&b, 0, sizeof b);
    for (int i = 0; i < RULES_ROLE_COUNT; i++) {
        b.slot[i] = -1;
        b.tensor[i] = IR_NONE;
    }
    return b;
}

struct rules_binding rules_group_binding(int32_t first, const int32_t *members, int32_t n)
{
    struct rules_binding b = rules_binding_empty();
    b.slot[RULES_ROLE_FIRST] = first;
    b.set[RULES_ROLE_MEMBERS] = members;
    b.nset[RULES_ROLE_MEMBERS] = n;
    return b;
}

/* The set bound to g (or empty), as a pointer and a count. */
static const int32_t *set_of(const struct rules_binding *b, enum rules_role g, int32_t *n)
{
    if (g == RULES_ROLE_NONE) {
        *n = 0;
        return NULL;
    }
    *n = b->nset[g];
    return b->set[g];
}

/* One atom, with every role already bound. */
static bool atom_once(const struct rules_rewriter *r, const struct rules_atom *at, const struct rules_binding *b)
{
    const struct ir_slots *s = r->s;
    ir_tid t = b->tensor[at->t];
    int32_t a = b->slot[at->a];
    int32_t bb = b->slot[at->b];
    int32_t ng;
    const int32_t *g = set_of(b, at->g, &ng);
    switch (at->kind) {
    case RULES_ATOM_ONLY_READER:
    case RULES_ATOM_FIRST_READER: {
        int32_t first = -1;
        int32_t n = ir_facts_readers(s, t, &first, 1);
        return at->kind == RULES_ATOM_ONLY_READER ? n == 1 && first == a : n >= 1 && first == a;
    }
    case RULES_ATOM_READERS_WITHIN: return ir_facts_readers_within(s, t, g, ng);
    case RULES_ATOM_UNTOUCHED: return ir_facts_untouched(s, t, a, bb, false, g, ng);
    case RULES_ATOM_UNREAD_UNWRITTEN: return ir_facts_untouched(s, t, a, bb, true, g, ng);
    case RULES_ATOM_NO_CROSS: return !ir_facts_crosses(s, a, bb, g, ng);
    case RULES_ATOM_NO_SINK_PAST: return !ir_facts_sinks_past(s, a, bb, g, ng);
    case RULES_ATOM_NOT_OBSERVED: return !ir_facts_observed(s, t);
    case RULES_ATOM_NOT_CARRIED: return !ir_facts_carried(s, t);
    case RULES_ATOM_READ_ONLY_WITHIN: return ir_facts_read_only_within(s, a, g, ng);
    case RULES_ATOM_COUNT: break;
    }
    return false;
}

/* Whether the facts answer atom's quantifier in one question: a sink of each slot of the set to one anchor, or what
 * each slot writes read only within one group. */
static bool quantified_at_once(const struct rules_rewriter *r, const struct rules_atom *atom,
                               const struct rules_binding *b)
{
    (void)r;
    if (atom->a != RULES_ROLE_EACH || atom->g == RULES_ROLE_EACH)
        return false;
    if (atom->kind == RULES_ATOM_NO_SINK_PAST)
        return atom->b != RULES_ROLE_EACH && b->slot[atom->b] >= 0;
    return atom->kind == RULES_ATOM_READ_ONLY_WITHIN;
}

/* The quantified atom asked of the facts at once (what atom_once gives for every slot of the set, and-ed). */
static bool quantified(const struct rules_rewriter *r, const struct rules_atom *atom, const struct rules_binding *b)
{
    int32_t n, ng;
    const int32_t *each = set_of(b, atom->forall, &n);
    const int32_t *g = set_of(b, atom->g, &ng);
    if (atom->kind == RULES_ATOM_NO_SINK_PAST)
        return ir_facts_none_sinks_past(r->s, each, n, b->slot[atom->b], g, ng);
    return ir_facts_all_read_only_within(r->s, each, n, g, ng);
}

bool rules_atom_holds(const struct rules_rewriter *r, const struct rules_atom *atom, const struct rules_binding *b)
{
    if (atom->forall == RULES_ROLE_NONE)
        return atom_once(r, atom, b);
    if (quantified_at_once(r, atom, b))
        return quantified(r, atom, b);
    struct rules_binding each = *b;
    for (int32_t i = 0; i < b->nset[atom->forall]; i++) {
        each.slot[RULES_ROLE_EACH] = b->set[atom->forall][i];
        if (!atom_once(r, atom, &each))
            return false;
    }
    return true;
}

/* Whether this build drops atom `name` of rule `rule`. */
static bool dropped(const char *rule, const char *name)
{
    const char *spec = dropping_now ? dropped_now : mutant_spec;
    size_t n = strlen(rule);
    return spec[0] && strncmp(spec, rule, n) == 0 && spec[n] == ':' && strcmp(spec + n + 1, name) == 0;
}

/* The atom of rule named `name`, or NULL. */
static const struct rules_atom *atom_named(const struct rules_rule *rule, const char *name)
{
    for (int i = 0; i < rule->nguards; i++)
        if (strcmp(rule->guards[i].name, name) == 0)
            return &rule->guards[i];
    return NULL;
}

bool rules_atom_in_force(const struct rules_rule *rule, const struct rules_atom *at)
{
    return !dropped(rule->name, at->name) && !(seed_now && rules_seed_drops(at));
}

bool rules_atom_active(const struct rules_rule *rule, const char *atom)
{
    const struct rules_atom *at = rule ? atom_named(rule, atom) : NULL;
    return rule && (at ? rules_atom_in_force(rule, at) : !dropped(rule->name, atom));
}

bool rules_guards_hold(const struct rules_rewriter *r, const struct rules_rule *rule, const struct rules_binding *b,
                       const char **failed)
{
    if (!rule)
        return true;
    for (int i = 0; i < rule->nguards; i++) {
        const struct rules_atom *at = &rule->guards[i];
        if (!rules_atom_in_force(rule, at))
            continue;
        if (!rules_atom_holds(r, at, b)) {
            if (failed)
                *failed = at->name;
            return false;
        }
    }
    rules_trace_emit(RULES_TRACE_GUARDS, r, rule, b, IR_CLASS_COUNT, -1);
    return true;
}

/* ── Kernel contracts in the building rules' roles ─────────────────────────────────────────────────────────── */

#define R(x) RULES_ROLE_##x
/* One row per class whose kernel does not write every inner result (ir_class_writes): the roles its inner results,
 * its fold's slots and its in-place operand are bound to by the rule that builds it. */
static const struct rules_contract contracts[] = {
    {IR_CLASS_NORM_THEN_ADD, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_GEMM_BIAS, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_GEMM_SCALE, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_AFFINE_INPUT_FOLD, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_GEMV_NORM_EPILOGUE, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_PREFILL_NORM_EPILOGUES, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_NORM_SCALE, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_QK_NORM_ROPE, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_QKV_HEAD_EPILOGUE, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_CONV_BIAS_SILU, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_CONV_SILU_L2NORM, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_GDN_GATING, {R(RESULT), R(OTHER)}, R(NONE), R(MEMBERS), R(NONE)},
    {IR_CLASS_GDN_GATE_PROJECTIONS, {R(INPUT), R(OTHER)}, R(NONE), R(MEMBERS), R(NONE)},
    {IR_CLASS_GDN_INPUT_EPILOGUE, {R(NONE)}, R(PRODUCERS), R(WITHIN), R(NONE)},
    {IR_CLASS_GDN_POST_CONV_PREP, {R(NONE)}, R(PRODUCERS), R(WITHIN), R(NONE)},
    {IR_CLASS_GDN_DECODE_WHOLE, {R(NONE)}, R(PRODUCERS), R(WITHIN), R(NONE)},
    {IR_CLASS_GLU_ACT_MUL, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_ATTN_OUTPUT_GATE, {R(RESULT)}, R(PRODUCERS), R(MEMBERS), R(NONE)},
    {IR_CLASS_GEMV_GATE_UP_GLU, {R(RESULT), R(OTHER)}, R(NONE), R(MEMBERS), R(NONE)},
    {IR_CLASS_RELU_SQR, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_ELEMENTWISE_REGIONS, {R(RESULT)}, R(NONE), R(MEMBERS), R(NONE)},
    {IR_CLASS_ELEMENTWISE_CHAINS, {R(RESULT)}, R(NONE), R(MEMBERS), R(NONE)},
    {IR_CLASS_SHARED_EXPERT_FUSION, {R(SOURCE), R(OTHER), R(INPUT)}, R(NONE), R(MEMBERS), R(NONE)},
    {IR_CLASS_MOE_TOKEN_SORT, {R(NONE)}, R(PRODUCERS), R(MEMBERS), R(TABLE)},
    {IR_CLASS_MOE_DEFERRED_FINALIZE, {R(SOURCE), R(RESULT)}, R(NONE), R(MEMBERS), R(NONE)},
    {IR_CLASS_EMBED_SCALE, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_EMBED_NORM, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_MLA_UNABSORB_IN_FOLD, {R(RESULT)}, R(NONE), R(NONE), R(NONE)},
    {IR_CLASS_MLA_PROLOGUE, {R(NONE)}, R(PRODUCERS), R(WITHIN), R(NONE)},
    {IR_CLASS_LAST_LAYER_ROWS, {R(NONE)}, R(PRODUCERS), R(WITHIN), R(NONE)},
    {IR_CLASS_MLA, {R(NONE)}, R(PRODUCERS), R(WITHIN), R(NONE)},
};
#undef R

const struct rules_contract *rules_contract_of(const struct rules_rule *rule)
{
    for (int i = 0; rule && i < rule->nbuilds; i++)
        for (size_t k = 0; k < sizeof contracts / sizeof contracts[0]; k++)
            if (contracts[k].cls == rule->builds[i])
                return &contracts[k];
    return NULL;
}
