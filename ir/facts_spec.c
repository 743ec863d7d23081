/* ir/facts_spec.c — the facts' specification: every question ir/facts.c answers from its index, answered here by
 * scanning every slot and asking each op afresh what it reads, writes and computes, through the public slot and op
 * queries only. It shares no state and no helper with the index, so a fault in one is not mirrored in the other;
 * fuzz_facts and test_facts hold the index to it. Nothing in the optimizer calls it. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>

/* One of an op's tensor sets: ir_op_reads, ir_op_writes or ir_op_makes. */
typedef int (*tensor_set_fn)(const struct ir_op *op, ir_tid *out, int cap);

/* A tensor set of op, fetched whole. */
struct spec_set {
    ir_tid *v;
    int n;
};

/* op's set by `which`, in a new array (exhaustion is fatal, as in the rest of ir/). */
static struct spec_set set_of(const struct ir_op *op, tensor_set_fn which)
{
    struct spec_set set = {NULL, which(op, NULL, 0)};
    set.v = malloc((size_t)(set.n > 0 ? set.n : 1) * sizeof *set.v);
    if (!set.v) {
        fputs("fusecheck: out of memory\n", stderr);
        abort();
    }
    which(op, set.v, set.n);
    return set;
}

/* Whether op's set by `which` holds t, by a plain scan. */
static bool op_has(const struct ir_op *op, tensor_set_fn which, ir_tid t)
{
    struct spec_set set = set_of(op, which);
    bool has = false;
    for (int x = 0; x < set.n && !has; x++)
        has = set.v[x] == t;
    free(set.v);
    return has;
}

/* Whether t names a tensor of the slots' graph. */
static bool is_tensor(const struct ir_slots *s, ir_tid t) { return t >= 0 && t < ir_slots_graph(s)->ntensors; }

/* Whether k is one of set[0..n). */
static bool listed(int32_t k, const int32_t *set, int32_t n)
{
    for (int32_t x = 0; x < n; x++)
        if (set[x] == k)
            return true;
    return false;
}

int32_t ir_facts_spec_producer(const struct ir_slots *s, ir_tid t)
{
    for (int32_t k = 0; k < ir_slots_len(s) && is_tensor(s, t); k++) {
        const struct ir_op *op = ir_slots_get(s, k);
        if (op && op->out == t)
            return k;
    }
    return -1;
}

int32_t ir_facts_spec_maker(const struct ir_slots *s, ir_tid t)
{
    for (int32_t k = 0; k < ir_slots_len(s) && is_tensor(s, t); k++) {
        const struct ir_op *op = ir_slots_get(s, k);
        if (op && op_has(op, ir_op_makes, t))
            return k;
    }
    return -1;
}

int32_t ir_facts_spec_readers(const struct ir_slots *s, ir_tid t, int32_t *out, int32_t cap)
{
    int32_t n = 0;
    for (int32_t k = 0; k < ir_slots_len(s) && is_tensor(s, t); k++) {
        const struct ir_op *op = ir_slots_get(s, k);
        if (op && op_has(op, ir_op_reads, t)) {
            if (n < cap)
                out[n] = k;
            n++;
        }
    }
    return n;
}

bool ir_facts_spec_untouched(const struct ir_slots *s, ir_tid t, int32_t i, int32_t j, bool also_reads,
                             const int32_t *except, int32_t nexcept)
{
    for (int32_t k = i + 1; k < j && is_tensor(s, t); k++) {
        const struct ir_op *op = ir_slots_get(s, k);
        if (!op || listed(k, except, nexcept))
            continue;
        if (op_has(op, ir_op_writes, t) || (also_reads && op_has(op, ir_op_reads, t)))
            return false;
    }
    return true;
}

/* Whether a live slot k, i < k < j, outside group, writes a tensor slot m's op reads, or reads or writes one it
 * writes. */
static bool conflicts(const struct ir_slots *s, int32_t m, int32_t i, int32_t j, const int32_t *group,
                      int32_t ngroup)
{
    const struct ir_op *mop = ir_slots_get(s, m);
    if (!mop)
        return false;
    struct spec_set reads = set_of(mop, ir_op_reads), writes = set_of(mop, ir_op_writes);
    bool hit = false;
    for (int32_t k = i + 1; k < j && !hit; k++) {
        const struct ir_op *op = ir_slots_get(s, k);
        if (!op || listed(k, group, ngroup))
            continue;
        for (int x = 0; x < reads.n && !hit; x++)
            hit = is_tensor(s, reads.v[x]) && op_has(op, ir_op_writes, reads.v[x]);
        for (int x = 0; x < writes.n && !hit; x++)
            hit = is_tensor(s, writes.v[x]) &&
                  (op_has(op, ir_op_writes, writes.v[x]) || op_has(op, ir_op_reads, writes.v[x]));
    }
    free(reads.v);
    free(writes.v);
    return hit;
}

bool ir_facts_spec_crosses(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *group, int32_t ngroup)
{
    return conflicts(s, j, i, j, group, ngroup);
}

bool ir_facts_spec_sinks_past(const struct ir_slots *s, int32_t i, int32_t j, const int32_t *members,
                              int32_t nmembers)
{
    return conflicts(s, i, i, j, members, nmembers);
}

/* Whether tensor t is neither observed nor carried, and every live slot reading it is in within. */
static bool read_only_by(const struct ir_slots *s, ir_tid t, const int32_t *within, int32_t nwithin)
{
    const struct ir_tensor *tensor = &ir_slots_graph(s)->tensors[t];
    if (tensor->observed || tensor->carried)
        return false;
    for (int32_t k = 0; k < ir_slots_len(s); k++) {
        const struct ir_op *op = ir_slots_get(s, k);
        if (op && !listed(k, within, nwithin) && op_has(op, ir_op_reads, t))
            return false;
    }
    return true;
}

bool ir_facts_spec_read_only_within(const struct ir_slots *s, int32_t i, const int32_t *within, int32_t nwithin)
{
    const struct ir_op *op = ir_slots_get(s, i);
    if (!op)
        return true;
    struct spec_set writes = set_of(op, ir_op_writes);
    bool ok = true;
    for (int x = 0; x < writes.n && ok; x++)
        ok = !is_tensor(s, writes.v[x]) || read_only_by(s, writes.v[x], within, nwithin);
    free(writes.v);
    return ok;
}
