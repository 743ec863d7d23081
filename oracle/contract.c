/* oracle/contract.c — the kernel-contract obligation: with a rule's guards, every inner result its fold computes
 * that the fused op must keep (another op reads it, the host observes or carries it: what rules_fuse keeps) is one
 * the built class's kernel writes for that need (ir_class_writes), and no op outside the fold touches an operand
 * the kernel updates in place. The formula of a breach is written once against the term builder, so a
 * counterexample is checked and described on the concrete schedule by the same construction. */
#include "oracle.h"

#include <stdio.h>
#include <string.h>

/* What the breach's bodies need: the contract, its class's writes, the roles the rule binds, and the tensor, the
 * producer and the reader a nested body speaks of. */
struct cctx {
    const struct rules_contract *c;
    unsigned writes;
    bool used[RULES_ROLE_COUNT];
    struct oracle_term t, p;
};

/* The slot roles a fold always includes when the rule binds them. */
static const enum rules_role fold_slots[] = {RULES_ROLE_PRODUCER, RULES_ROLE_CONSUMER, RULES_ROLE_FIRST,
                                             RULES_ROLE_ANCHOR};

/* Whether slot k is one of the fold's slots. */
static struct oracle_term in_fold(struct oracle_builder *b, const struct cctx *c, struct oracle_term k)
{
    struct oracle_term f = oracle_ob_in(b, c->c->fold, k);
    for (size_t i = 0; i < sizeof fold_slots / sizeof fold_slots[0]; i++)
        if (c->used[fold_slots[i]])
            f = oracle_ob_or(b, f, oracle_ob_eq(b, k, oracle_ob_slot(b, fold_slots[i])));
    return f;
}

/* Slot k, outside the fold, reads c->t — before the fold's last stage when the kernel serves later readers only. */
static struct oracle_term unserved_reader(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    const struct cctx *c = vc;
    struct oracle_term f = oracle_ob_and(b, oracle_ob_reads(b, k, c->t), oracle_ob_not(b, in_fold(b, c, k)));
    if (c->writes & IR_WRITES_READ_AFTER)
        f = oracle_ob_and(b, f, oracle_ob_lt(b, k, oracle_ob_slot(b, RULES_ROLE_CONSUMER)));
    return f;
}

/* Inner result c->t must be kept for a need the kernel does not serve. */
static struct oracle_term unserved(struct oracle_builder *b, const struct cctx *c)
{
    struct oracle_term f = oracle_ob_bool(b, false);
    if (!(c->writes & IR_WRITES_OBSERVED))
        f = oracle_ob_or(b, f, oracle_ob_observed(b, c->t));
    if (!(c->writes & IR_WRITES_CARRIED))
        f = oracle_ob_or(b, f, oracle_ob_carried(b, c->t));
    if (!(c->writes & IR_WRITES_READ))
        f = oracle_ob_or(b, f, oracle_ob_witness_slot(b, unserved_reader, c));
    return f;
}

/* Tensor t, written by the set's slot c->p, must be kept for a need the kernel does not serve. */
static struct oracle_term written_unserved(struct oracle_builder *b, struct oracle_term t, const void *vc)
{
    struct cctx c = *(const struct cctx *)vc;
    c.t = t;
    return oracle_ob_and(b, oracle_ob_writes(b, c.p, t), unserved(b, &c));
}

/* Slot p is in the inner set and writes an inner result kept for a need the kernel does not serve. */
static struct oracle_term member_unserved(struct oracle_builder *b, struct oracle_term p, const void *vc)
{
    struct cctx c = *(const struct cctx *)vc;
    c.p = p;
    struct oracle_term in = oracle_ob_in(b, c.c->inner_of, p);
    if (b->mode == ORACLE_CONCRETE && !in.v)
        return in;
    return oracle_ob_and(b, in, oracle_ob_witness_tensor(b, written_unserved, &c));
}

/* Slot k, strictly between FIRST and ANCHOR and outside the fold, reads or writes the in-place operand. */
static struct oracle_term in_place_touched(struct oracle_builder *b, struct oracle_term k, const void *vc)
{
    const struct cctx *c = vc;
    struct oracle_term between = oracle_ob_and(b, oracle_ob_lt(b, oracle_ob_slot(b, RULES_ROLE_FIRST), k),
                                               oracle_ob_lt(b, k, oracle_ob_slot(b, RULES_ROLE_ANCHOR)));
    struct oracle_term touch = oracle_ob_or(b, oracle_ob_reads(b, k, c->t), oracle_ob_writes(b, k, c->t));
    return oracle_ob_and(b, oracle_ob_and(b, between, oracle_ob_not(b, in_fold(b, c, k))), touch);
}

/* The context of rule's contract row c. */
static struct cctx contract_ctx(const struct rules_rule *rule, const struct rules_contract *c)
{
    struct cctx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.writes = ir_class_writes(c->cls);
    oracle_rule_roles(rule, x.used);
    return x;
}

struct oracle_term oracle_contract_breach(struct oracle_builder *b, const struct rules_rule *rule)
{
    const struct rules_contract *row = rules_contract_of(rule);
    if (!row)
        return oracle_ob_bool(b, false);
    struct cctx c = contract_ctx(rule, row);
    struct oracle_term f = oracle_ob_bool(b, false);
    for (int i = 0; i < 3; i++)
        if (row->inner[i] != RULES_ROLE_NONE) {
            c.t = oracle_ob_tensor(b, row->inner[i]);
            f = oracle_ob_or(b, f, unserved(b, &c));
        }
    if (row->inner_of != RULES_ROLE_NONE)
        f = oracle_ob_or(b, f, oracle_ob_witness_slot(b, member_unserved, &c));
    if (row->in_place != RULES_ROLE_NONE) {
        c.t = oracle_ob_tensor(b, row->in_place);
        f = oracle_ob_or(b, f, oracle_ob_witness_slot(b, in_place_touched, &c));
    }
    return f;
}

/* The needs of tensor t the kernel does not serve on a concrete schedule, in words (empty when none). */
static void unserved_words(struct oracle_builder *b, struct cctx *c, long long t, char *buf, size_t n)
{
    c->t = oracle_ob_int(b, t);
    buf[0] = '\0';
    if (!unserved(b, c).v)
        return;
    for (long long k = 0; k < b->cs->nops; k++)
        if (!(c->writes & IR_WRITES_READ) && unserved_reader(b, oracle_ob_int(b, k), c).v) {
            snprintf(buf, n, "op %lld, outside the fold, reads t%lld%s", k, t,
                     (c->writes & IR_WRITES_READ_AFTER) ? " before the fold's last stage" : "");
            return;
        }
    snprintf(buf, n, "the host %s t%lld", b->cs->carried[t] && !(c->writes & IR_WRITES_CARRIED) ? "carries" : "observes",
             t);
}

void oracle_contract_note(const struct oracle_sched *s, const struct rules_rule *rule, char *buf, size_t n)
{
    const struct rules_contract *row = rules_contract_of(rule);
    snprintf(buf, n, "the kernel contract holds (a modelling error)");
    if (!row)
        return;
    struct oracle_builder b;
    oracle_ob_concrete(&b, s, &s->bind);
    struct cctx c = contract_ctx(rule, row);
    const char *cls = ir_class_name(row->cls);
    char why[ORACLE_REASON_LEN];
    for (int i = 0; i < 3; i++) {
        if (row->inner[i] == RULES_ROLE_NONE)
            continue;
        unserved_words(&b, &c, s->bind.tensor[row->inner[i]], why, sizeof why);
        if (why[0]) {
            snprintf(buf, n, "%s, which the %s kernel does not write", why, cls);
            return;
        }
    }
    for (long long p = 0; row->inner_of != RULES_ROLE_NONE && p < s->nops; p++)
        for (long long t = 0; oracle_ob_in(&b, row->inner_of, oracle_ob_int(&b, p)).v && t < s->ntensors; t++) {
            if (!s->writes[p * s->ntensors + t])
                continue;
            unserved_words(&b, &c, t, why, sizeof why);
            if (why[0]) {
                snprintf(buf, n, "%s (written by op %lld), which the %s kernel does not write", why, p, cls);
                return;
            }
        }
    if (row->in_place != RULES_ROLE_NONE) {
        c.t = oracle_ob_tensor(&b, row->in_place);
        for (long long k = 0; k < s->nops; k++)
            if (in_place_touched(&b, oracle_ob_int(&b, k), &c).v) {
                snprintf(buf, n, "op %lld, outside the fold, touches t%lld, which the %s kernel updates in place", k,
                         c.t.v, cls);
                return;
            }
    }
}
