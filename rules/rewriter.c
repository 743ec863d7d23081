/* rules/rewriter.c — the rewriter's moves: asking the chip, recording a firing, fusing slots into one op, absorbing
 * a placement, pairing a producer with its consumer, grouping members at the last one's slot. */
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sort n covers ascending, repeats kept: a lifted op two parts each compute (a producer recomputed in each of its
 * readers) is covered once for each copy, as the seed covers it. */
static void sort_covers(int32_t *v, int32_t n) { qsort(v, (size_t)n, sizeof *v, rules_cmp_i32); }

/* Whether the rewriter's dry run counts class c as linked. */
static bool linking(const struct rules_rewriter *r, enum ir_class c)
{
    for (int i = 0; i < r->nlinking; i++)
        if (r->linking[i] == c)
            return true;
    return false;
}

/* rules_allows, with the refusal's stable code into *code (NULL when it fits, or its shim gives no code). */
static int allows_coded(const struct rules_rewriter *r, const struct ir_op *op, char why[IR_ERR_LEN],
                        const char **code)
{
    bool classes[IR_CLASS_COUNT] = {false};
    rules_realizes(op, r->g, classes);
    *code = NULL;
    for (int c = 0; c < IR_CLASS_COUNT; c++) {
        if (!classes[c] || linking(r, (enum ir_class)c))
            continue;
        struct shim_support s = r->shim->supports(r->shim, (enum ir_class)c);
        if (s.kind == SHIM_REFUSE) {
            snprintf(why, IR_ERR_LEN, "%s", s.why ? s.why : "refused");
            *code = rules_reason_code(r->shim, why, true);
            return 1;
        }
        if (s.kind == SHIM_DECOMPOSE) {
            int own = rules_class(op);
            const char *name = own >= 0 ? ir_class_name((enum ir_class)own)
                                        : (op->sym == IR_SYM_PRIM ? ir_kind_name(op->spec.kind) : "op");
            snprintf(why, IR_ERR_LEN, "the chip runs `%s` as its parts", name);
            *code = rules_reason_code(r->shim, why, true);
            return 1;
        }
    }
    why[0] = '\0';
    if (!r->shim->fits(r->shim, op, r->g, why))
        return 0;
    *code = rules_reason_code(r->shim, why, false);
    return 1;
}

int rules_allows(const struct rules_rewriter *r, const struct ir_op *op, char why[IR_ERR_LEN])
{
    const char *code;
    return allows_coded(r, op, why, &code);
}

/* The sorted covers of every leaf of op, malloc'd; *n receives their count. */
static int32_t *leaf_covers(const struct ir_op *op, int32_t *n)
{
    int32_t count = 0, nleaves = rules_leaves(op, NULL, 0);
    const struct ir_op **leaves = rules_xmalloc(sizeof *leaves * (size_t)(nleaves ? nleaves : 1));
    rules_leaves(op, leaves, nleaves);
    for (int32_t i = 0; i < nleaves; i++)
        count += leaves[i]->ncovers;
    int32_t *covers = rules_xmalloc(sizeof *covers * (size_t)(count ? count : 1));
    count = 0;
    for (int32_t i = 0; i < nleaves; i++)
        for (int32_t k = 0; k < leaves[i]->ncovers; k++)
            covers[count++] = leaves[i]->covers[k];
    free(leaves);
    sort_covers(covers, count);
    *n = count;
    return covers;
}

bool rules_admits(struct rules_rewriter *r, const struct ir_op *op)
{
    char why[IR_ERR_LEN];
    const char *code;
    if (allows_coded(r, op, why, &code) == 0)
        return true;
    int own = rules_class(op);
    enum ir_class cls = own >= 0 ? (enum ir_class)own : r->building;
    int32_t n;
    int32_t *covers = leaf_covers(op, &n);
    if (rules_planted() == RULES_PLANT_repeat_refusal ||
        !rules_report_repeats(r->report, r->step, cls, covers, n, RULES_REFUSED, why)) {
        rules_report_push(r->report, r->step, cls, covers, n, RULES_REFUSED, why);
        r->report->d[r->report->n - 1].code = code;
    }
    free(covers);
    return false;
}

/* The observer of guard successes and firings (rules_trace), and its context. */
static rules_trace_fn trace_fn;
static void *trace_ctx;

void rules_trace(rules_trace_fn fn, void *ctx)
{
    trace_fn = fn;
    trace_ctx = ctx;
}

void rules_trace_emit(enum rules_trace_kind kind, const struct rules_rewriter *r, const struct rules_rule *rule,
                      const struct rules_binding *b, enum ir_class cls, int32_t at)
{
    if (trace_fn)
        trace_fn(kind, r, rule, b, cls, at, trace_ctx);
}

void rules_record(struct rules_rewriter *r, enum ir_class cls, int32_t at)
{
    rules_trace_emit(RULES_TRACE_FIRED, r, r->rule, NULL, cls, at);
    const struct ir_op *op = ir_slots_get(r->s, at);
    rules_report_push(r->report, r->step, cls, op->covers, op->ncovers, RULES_FIRED, NULL);
}

/* Whether t is in the first n entries of list. */
static bool has_tid(const ir_tid *list, int32_t n, ir_tid t)
{
    for (int32_t i = 0; i < n; i++)
        if (list[i] == t)
            return true;
    return false;
}

/* Append every leaf's result of op to list (room assured by the caller). */
static void leaf_outs(const struct ir_op *op, ir_tid *list, int32_t *n)
{
    if (op->sym != IR_SYM_FUSED) {
        list[(*n)++] = op->out;
        return;
    }
    for (int32_t i = 0; i < op->nparts; i++)
        leaf_outs(&op->parts[i], list, n);
}

struct ir_slots *rules_slots(struct rules_rewriter *r)
{
    if (r->borrowed) {
        if (r->journal)
            ir_slots_journal(r->s);
        else
            r->s = ir_slots_clone(r->s);
        r->borrowed = false;
    }
    return r->s;
}

void rules_fuse(struct rules_rewriter *r, enum ir_class cls, int32_t at, const int32_t *gone, int32_t ngone,
                const ir_tid *ins, const struct ir_access *access, int32_t nins, ir_tid out, struct ir_dst dst)
{
    int32_t nslots = ngone + 1;
    int32_t *slots = rules_xmalloc(sizeof *slots * (size_t)nslots);
    slots[0] = at;
    if (ngone)
        memcpy(slots + 1, gone, sizeof *gone * (size_t)ngone);
    qsort(slots, (size_t)nslots, sizeof *slots, rules_cmp_i32);
    struct ir_op *parts = rules_xmalloc(sizeof *parts * (size_t)nslots);
    int32_t ncovers = 0;
    for (int32_t i = nslots - 1; i >= 0; i--) { /* last first: each leaves its tensors' slot lists at their tail */
        parts[i] = ir_slots_take(rules_slots(r), slots[i]);
        ncovers += parts[i].ncovers;
    }
    int32_t *covers = rules_xmalloc(sizeof *covers * (size_t)(ncovers ? ncovers : 1));
    ncovers = 0;
    for (int32_t i = 0; i < nslots; i++)
        for (int32_t k = 0; k < parts[i].ncovers; k++)
            covers[ncovers++] = parts[i].covers[k];
    sort_covers(covers, ncovers);
    /* What the parts compute that something outside them reads, or the host sees, outlives the op. */
    int32_t nleaves = 0;
    for (int32_t i = 0; i < nslots; i++)
        nleaves += rules_leaves(&parts[i], NULL, 0);
    ir_tid *inside = rules_xmalloc(sizeof *inside * (size_t)(nleaves + 1));
    int32_t ninside = 0;
    for (int32_t i = 0; i < nslots; i++)
        leaf_outs(&parts[i], inside, &ninside);
    qsort(inside, (size_t)ninside, sizeof *inside, rules_cmp_i32);
    ir_tid *keeps = rules_xmalloc(sizeof *keeps * (size_t)(ninside + 1));
    int32_t nkeeps = 0, probe;
    for (int32_t i = 0; i < ninside; i++) {
        ir_tid t = inside[i];
        if ((i > 0 && inside[i - 1] == t) || t == out)
            continue;
        if (ir_facts_observed(r->s, t) || ir_facts_readers(r->s, t, &probe, 1) > 0)
            keeps[nkeeps++] = t;
    }
    if (rules_planted() == RULES_PLANT_drop_keep)
        nkeeps = 0;
    /* The operands are what the parts read from outside: a tensor a part computes is no operand of the fold. The
     * seed passes the rule's operands through as they are (F23: under its rules, so do we). */
    ir_tid *outer = rules_xmalloc(sizeof *outer * (size_t)(nins ? nins : 1));
    struct ir_access *outer_access = rules_xmalloc(sizeof *outer_access * (size_t)(nins ? nins : 1));
    int32_t nouter = 0;
    bool seed = rules_seed_rules();
    for (int32_t k = 0; k < nins; k++) {
        if (!seed && bsearch(&ins[k], inside, (size_t)ninside, sizeof *inside, rules_cmp_i32))
            continue;
        outer[nouter] = ins[k];
        outer_access[nouter++] = access ? access[k] : (struct ir_access){0};
    }
    if (rules_planted() == RULES_PLANT_wrong_operand && nouter >= 2) {
        outer[nouter - 1] = outer[0];
        outer_access[nouter - 1] = outer_access[0];
    }
    struct ir_op op = ir_op_fused(cls, parts, nslots, outer, outer_access, nouter, out, dst);
    free(outer);
    free(outer_access);
    ir_op_set_keeps(&op, keeps, nkeeps);
    ir_op_set_covers(&op, covers, ncovers);
    ir_slots_put(rules_slots(r), at, op);
    rules_record(r, cls, at);
    free(inside);
    free(keeps);
    free(covers);
    free(slots);
}

void rules_absorb(struct rules_rewriter *r, enum ir_class cls, int32_t at, const int32_t *gone, int32_t ngone)
{
    const struct ir_op *cur = ir_slots_get(r->s, at);
    int32_t n = cur->ncovers;
    int32_t *covers = rules_xmalloc(sizeof *covers * (size_t)(n + 1));
    memcpy(covers, cur->covers, sizeof *covers * (size_t)n);
    for (int32_t i = 0; i < ngone; i++) {
        struct ir_op g = ir_slots_take(rules_slots(r), gone[i]);
        covers = realloc(covers, sizeof *covers * (size_t)(n + g.ncovers + 1));
        if (!covers)
            abort();
        memcpy(covers + n, g.covers, sizeof *covers * (size_t)g.ncovers);
        n += g.ncovers;
        ir_op_free(&g);
    }
    sort_covers(covers, n);
    struct ir_op op = ir_op_clone(ir_slots_get(r->s, at));
    ir_op_set_covers(&op, covers, n);
    ir_slots_replace(rules_slots(r), at, op);
    rules_record(r, cls, at);
    free(covers);
}

struct ir_op rules_candidate(enum ir_class cls, const struct ir_op *const *parts, int32_t nparts, const ir_tid *ins,
                             int32_t nins, ir_tid out, struct ir_dst dst)
{
    struct ir_op *copies = rules_xmalloc(sizeof *copies * (size_t)(nparts > 0 ? nparts : 1));
    for (int32_t i = 0; i < nparts; i++)
        copies[i] = ir_op_clone(parts[i]);
    return ir_op_fused(cls, copies, nparts, ins, NULL, nins, out, dst);
}

struct ir_op rules_candidate_slots(const struct rules_rewriter *r, enum ir_class cls, const int32_t *slots,
                                   int32_t nslots, const ir_tid *ins, int32_t nins, ir_tid out, struct ir_dst dst)
{
    const struct ir_op **parts = rules_xmalloc(sizeof *parts * (size_t)(nslots > 0 ? nslots : 1));
    for (int32_t i = 0; i < nslots; i++)
        parts[i] = ir_slots_get(r->s, slots[i]);
    struct ir_op op = rules_candidate(cls, parts, nslots, ins, nins, out, dst);
    free(parts);
    return op;
}

/* Whether the op at a member slot makes t, as the operand lists count it: any of its leaves (fusecheck's), or its
 * own result only (the seed's `external`, F23). */
static bool member_makes(const struct ir_op *m, ir_tid t, bool seed) { return seed ? m->out == t : ir_op_computes(m, t); }

int32_t rules_external(const struct rules_rewriter *r, const int32_t *slots, int32_t nslots, ir_tid *ins,
                       struct ir_access *access, int32_t cap)
{
    int32_t n = 0;
    bool seed = rules_seed_rules();
    for (int32_t i = 0; i < nslots; i++) {
        const struct ir_op *m = ir_slots_get(r->s, slots[i]);
        for (int32_t k = 0; k < m->nins; k++) {
            ir_tid t = m->ins[k];
            bool made = false;
            for (int32_t j = 0; j < nslots && !made; j++)
                made = member_makes(ir_slots_get(r->s, slots[j]), t, seed);
            if (made || has_tid(ins, n, t) || n >= cap)
                continue;
            ins[n] = t;
            if (access)
                access[n] = m->access[k];
            n++;
        }
    }
    return n;
}

/* The most operands a fused op of the given slots can take. */
static int32_t operand_room(const struct rules_rewriter *r, const int32_t *slots, int32_t n)
{
    int32_t room = 1;
    for (int32_t i = 0; i < n; i++)
        room += ir_slots_get(r->s, slots[i])->nins;
    return room;
}

bool rules_admits_slots(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t nslots,
                        const ir_tid *ins, int32_t nins, ir_tid out, struct ir_dst dst)
{
    struct ir_op cand = rules_candidate_slots(r, cls, slots, nslots, ins, nins, out, dst);
    bool ok = rules_admits(r, &cand);
    ir_op_free(&cand);
    return ok;
}

bool rules_fold(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t n, int32_t at, ir_tid out,
                struct ir_dst dst)
{
    return rules_fold_asking(r, cls, slots, n, at, out, dst, true);
}

bool rules_fold_asking(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t n, int32_t at,
                       ir_tid out, struct ir_dst dst, bool ask)
{
    int32_t room = operand_room(r, slots, n);
    ir_tid *ins = rules_xmalloc(sizeof *ins * (size_t)room);
    struct ir_access *access = rules_xmalloc(sizeof *access * (size_t)room);
    int32_t nins = rules_external(r, slots, n, ins, access, room);
    bool ok = !ask || rules_admits_slots(r, cls, slots, n, ins, nins, out, dst);
    if (ok) {
        int32_t *gone = rules_xmalloc(sizeof *gone * (size_t)n);
        int32_t ngone = 0;
        for (int32_t i = 0; i < n; i++)
            if (slots[i] != at)
                gone[ngone++] = slots[i];
        rules_fuse(r, cls, at, gone, ngone, ins, access, nins, out, dst);
        free(gone);
    }
    free(ins);
    free(access);
    return ok;
}

bool rules_pair(struct rules_rewriter *r, enum ir_class cls, int32_t producer, int32_t consumer, int32_t anchor)
{
    int32_t slots[2] = {producer, consumer};
    /* The operands in the order producer then consumer read them; the parts in slot order. */
    int32_t room = operand_room(r, slots, 2);
    ir_tid *ins = rules_xmalloc(sizeof *ins * (size_t)room);
    struct ir_access *access = rules_xmalloc(sizeof *access * (size_t)room);
    int32_t nins = rules_external(r, slots, 2, ins, access, room);
    const struct ir_op *c = ir_slots_get(r->s, consumer);
    ir_tid out = c->out;
    struct ir_dst dst = c->dst;
    const struct ir_op *parts[2] = {ir_slots_get(r->s, producer), c};
    struct ir_op cand = rules_candidate(cls, parts, 2, ins, nins, out, dst);
    bool ok = rules_admits(r, &cand);
    ir_op_free(&cand);
    if (ok) {
        int32_t gone = anchor == producer ? consumer : producer;
        rules_fuse(r, cls, anchor, &gone, 1, ins, access, nins, out, dst);
    }
    free(ins);
    free(access);
    return ok;
}

bool rules_group_at_last(struct rules_rewriter *r, enum ir_class cls, int32_t *members, int32_t nmembers,
                         struct rules_binding *b)
{
    qsort(members, (size_t)nmembers, sizeof *members, rules_cmp_i32);
    int32_t n = 0;
    for (int32_t i = 0; i < nmembers; i++)
        if (n == 0 || members[n - 1] != members[i])
            members[n++] = members[i];
    int32_t at = members[n - 1];
    b->set[RULES_ROLE_MEMBERS] = members;
    b->nset[RULES_ROLE_MEMBERS] = n;
    b->slot[RULES_ROLE_ANCHOR] = at;
    if (!rules_guards_hold(r, r->rule, b, NULL))
        return false;
    const struct ir_op *last = ir_slots_get(r->s, at);
    return rules_fold(r, cls, members, n, at, last->out, last->dst);
}

int32_t rules_first_reader(const struct rules_rewriter *r, ir_tid t)
{
    int32_t first;
    return ir_facts_readers(r->s, t, &first, 1) > 0 ? first : -1;
}

int32_t rules_reader_count(const struct rules_rewriter *r, ir_tid t)
{
    int32_t first;
    return ir_facts_readers(r->s, t, &first, 1);
}

bool rules_sole_reader(const struct rules_rewriter *r, ir_tid t, int32_t j)
{
    int32_t two[2];
    return ir_facts_readers(r->s, t, two, 2) == 1 && two[0] == j;
}

const struct ir_op *rules_slot(const struct rules_rewriter *r, int32_t i) { return ir_slots_get(r->s, i); }

int32_t rules_projection_operands(const struct rules_rewriter *r, const int32_t *group, int32_t n, ir_tid x,
                                  ir_tid *ins, struct ir_access *access, int32_t cap)
{
    const struct ir_op *first = ir_slots_get(r->s, group[0]);
    int32_t nins = 1;
    ins[0] = x;
    access[0] = first->access[0];
    for (int32_t k = 0; k < n; k++) {
        const struct ir_op *m = ir_slots_get(r->s, group[k]);
        for (int32_t q = 1; q < m->nins; q++)
            if (!has_tid(ins, nins, m->ins[q]) && nins < cap) {
                ins[nins] = m->ins[q];
                access[nins++] = m->access[q];
            }
    }
    return nins;
}
