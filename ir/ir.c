/* ir/ir.c — the tables' names, graph construction, deep copies and the op helpers every module shares. */
#include "ir.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ── Table names and lookups ─────────────────────────────────────────────────────────────────────────────── */

static const char *const elem_names[] = {
#define X(e, s, b) s,
    IR_ELEMS(X)
#undef X
};
static const int elem_bytes[] = {
#define X(e, s, b) b,
    IR_ELEMS(X)
#undef X
};
static const char *const role_names[] = {
#define X(e, s) s,
    IR_ROLES(X)
#undef X
};
static const char *const format_names[] = {
#define X(e, s, n, b) s,
    IR_FORMATS(X)
#undef X
};
static const int format_values[] = {
#define X(e, s, n, b) n,
    IR_FORMATS(X)
#undef X
};
static const int format_bytes[] = {
#define X(e, s, n, b) b,
    IR_FORMATS(X)
#undef X
};
static const char *const ewop_names[] = {
#define X(e, s) s,
    IR_EWOPS(X)
#undef X
};
static const char *const moeact_names[] = {
#define X(e, s) s,
    IR_MOEACTS(X)
#undef X
};
static const char *const gateact_names[] = {
#define X(e, s) s,
    IR_GATEACTS(X)
#undef X
};
static const char *const normkind_names[] = {
#define X(e, s) s,
    IR_NORMKINDS(X)
#undef X
};
static const char *const ropescale_names[] = {
#define X(e, s) s,
    IR_ROPESCALES(X)
#undef X
};
static const char *const kind_names[] = {
#define X(e, s, m) s,
    IR_KINDS(X)
#undef X
};
static const char *const class_names[] = {
#define X(e, s) s,
    IR_CLASSES(X)
#undef X
};

/* The index of the name equal to s[0..n) in a table of count names, or -1. */
static int lookup(const char *const *names, int count, const char *s, size_t n)
{
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
            return i;
    return -1;
}

/* The name at i of a table of count names, or "?" outside it. */
static const char *name_at(const char *const *names, int count, int i)
{
    return i >= 0 && i < count ? names[i] : "?";
}

const char *ir_elem_name(enum ir_elem e) { return name_at(elem_names, IR_ELEM_COUNT, (int)e); }
int ir_elem_lookup(const char *s, size_t n) { return lookup(elem_names, IR_ELEM_COUNT, s, n); }
int ir_elem_bytes(enum ir_elem e) { return (int)e >= 0 && (int)e < IR_ELEM_COUNT ? elem_bytes[e] : 0; }
const char *ir_role_name(enum ir_role r) { return name_at(role_names, IR_ROLE_COUNT, (int)r); }
int ir_role_lookup(const char *s, size_t n) { return lookup(role_names, IR_ROLE_COUNT, s, n); }
const char *ir_format_name(enum ir_format f) { return name_at(format_names, IR_FMT_COUNT, (int)f); }
int ir_format_lookup(const char *s, size_t n) { return lookup(format_names, IR_FMT_COUNT, s, n); }
int ir_format_block_values(enum ir_format f) { return (int)f >= 0 && (int)f < IR_FMT_COUNT ? format_values[f] : 0; }
int ir_format_block_bytes(enum ir_format f) { return (int)f >= 0 && (int)f < IR_FMT_COUNT ? format_bytes[f] : 0; }
const char *ir_ewop_name(enum ir_ewop o) { return name_at(ewop_names, IR_EW_COUNT, (int)o); }
int ir_ewop_lookup(const char *s, size_t n) { return lookup(ewop_names, IR_EW_COUNT, s, n); }
const char *ir_moeact_name(enum ir_moeact a) { return name_at(moeact_names, IR_MOE_COUNT, (int)a); }
int ir_moeact_lookup(const char *s, size_t n) { return lookup(moeact_names, IR_MOE_COUNT, s, n); }
const char *ir_gateact_name(enum ir_gateact a) { return name_at(gateact_names, IR_GATE_COUNT, (int)a); }
int ir_gateact_lookup(const char *s, size_t n) { return lookup(gateact_names, IR_GATE_COUNT, s, n); }
const char *ir_normkind_name(enum ir_normkind k) { return name_at(normkind_names, IR_NORM_COUNT, (int)k); }
int ir_normkind_lookup(const char *s, size_t n) { return lookup(normkind_names, IR_NORM_COUNT, s, n); }
const char *ir_ropescale_name(enum ir_ropescale k) { return name_at(ropescale_names, IR_ROPESCALE_COUNT, (int)k); }
int ir_ropescale_lookup(const char *s, size_t n) { return lookup(ropescale_names, IR_ROPESCALE_COUNT, s, n); }
const char *ir_kind_name(enum ir_kind k) { return name_at(kind_names, IR_KIND_COUNT, (int)k); }
int ir_kind_lookup(const char *s, size_t n) { return lookup(kind_names, IR_KIND_COUNT, s, n); }
const char *ir_class_name(enum ir_class c) { return name_at(class_names, IR_CLASS_COUNT, (int)c); }
int ir_class_lookup(const char *s, size_t n) { return lookup(class_names, IR_CLASS_COUNT, s, n); }

/* ── Kernel contracts ────────────────────────────────────────────────────────────────────────────────────── */

/* One class's kernel contract: what its kernel writes of the inner results its own fold computes. */
struct class_writes {
    enum ir_class cls;
    unsigned writes;
};

/* Abbreviations for the rows: what a kernel serves its inner results to. */
#define W_READ IR_WRITES_READ
#define W_AFTER IR_WRITES_READ_AFTER
#define W_NAMED IR_WRITES_READ_NAMED
#define W_HOST IR_WRITES_OBSERVED
#define W_KEPT IR_WRITES_CARRIED

/* The classes whose kernels do not write every inner result (docs/oracle.md, "Kernel contracts"); every other class
 * writes each inner result anything needs. Epilogue kernels keep their product (or norm, gate, activation) in
 * registers and store it only as a host tap; grouped kernels whose members feed one consumer store their results for
 * that consumer only (W_NAMED) or nothing of them;
 * the elementwise kernels write inner values into the step's buffers only, never into memory kept across steps. */
static const struct class_writes class_writes[] = {
    {IR_CLASS_NORM_THEN_ADD, W_READ | W_AFTER | W_HOST},
    {IR_CLASS_GEMM_BIAS, W_HOST | W_KEPT},
    {IR_CLASS_GEMM_SCALE, W_HOST | W_KEPT},
    {IR_CLASS_AFFINE_INPUT_FOLD, W_HOST | W_KEPT},
    {IR_CLASS_GEMV_NORM_EPILOGUE, W_HOST | W_KEPT},
    {IR_CLASS_PREFILL_NORM_EPILOGUES, W_HOST | W_KEPT},
    {IR_CLASS_NORM_SCALE, W_HOST | W_KEPT},
    {IR_CLASS_QK_NORM_ROPE, W_HOST | W_KEPT},
    {IR_CLASS_QKV_HEAD_EPILOGUE, W_HOST | W_KEPT},
    {IR_CLASS_CONV_BIAS_SILU, W_HOST | W_KEPT},
    {IR_CLASS_CONV_SILU_L2NORM, W_HOST | W_KEPT},
    {IR_CLASS_GDN_GATING, W_NAMED | W_HOST | W_KEPT},
    {IR_CLASS_GDN_GATE_PROJECTIONS, W_HOST | W_KEPT},
    {IR_CLASS_GDN_INPUT_EPILOGUE, W_NAMED},
    {IR_CLASS_GDN_POST_CONV_PREP, W_NAMED},
    {IR_CLASS_GDN_DECODE_WHOLE, W_NAMED},
    {IR_CLASS_GLU_ACT_MUL, W_HOST | W_KEPT},
    {IR_CLASS_ATTN_OUTPUT_GATE, 0},
    {IR_CLASS_GEMV_GATE_UP_GLU, W_HOST | W_KEPT},
    {IR_CLASS_RELU_SQR, W_HOST | W_KEPT},
    {IR_CLASS_ELEMENTWISE_REGIONS, W_READ | W_AFTER | W_HOST},
    {IR_CLASS_ELEMENTWISE_CHAINS, W_HOST},
    {IR_CLASS_SHARED_EXPERT_FUSION, W_HOST | W_KEPT},
    {IR_CLASS_MOE_TOKEN_SORT, 0},
    {IR_CLASS_MOE_DEFERRED_FINALIZE, W_HOST | W_KEPT},
    {IR_CLASS_EMBED_SCALE, W_HOST | W_KEPT},
    {IR_CLASS_EMBED_NORM, W_AFTER | W_HOST | W_KEPT},
    {IR_CLASS_MLA_UNABSORB_IN_FOLD, W_HOST | W_KEPT},
    {IR_CLASS_MLA_PROLOGUE, W_NAMED},
    {IR_CLASS_LAST_LAYER_ROWS, W_NAMED},
    {IR_CLASS_MLA, W_NAMED | W_HOST | W_KEPT},
};

unsigned ir_class_writes(enum ir_class c)
{
    for (size_t i = 0; i < sizeof class_writes / sizeof class_writes[0]; i++)
        if (class_writes[i].cls == c)
            return class_writes[i].writes;
    return IR_WRITES_ALL;
}

/* ── Spec field tables ───────────────────────────────────────────────────────────────────────────────────── */

#define F(member, field, type) {#field, type, offsetof(struct ir_spec, u.member.field)}
#define S(field, type) {#field, type, offsetof(struct ir_spec, u.rope.scaling.field)} /* a rope scaling's field */

static const struct ir_field f_matmul[] = {F(matmul, m, IR_F_INT), F(matmul, k, IR_F_INT), F(matmul, n, IR_F_INT)};
static const struct ir_field f_elementwise[] = {F(elementwise, op, IR_F_EWOP), F(elementwise, n, IR_F_INT),
                                                F(elementwise, row, IR_F_INT_OPT)};
static const struct ir_field f_rms_norm[] = {F(rms_norm, rows, IR_F_INT),       F(rms_norm, cols, IR_F_INT),
                                             F(rms_norm, kind, IR_F_NORMKIND),  F(rms_norm, eps, IR_F_FLOAT),
                                             F(rms_norm, weight, IR_F_FLAG),    F(rms_norm, offset, IR_F_FLOAT),
                                             F(rms_norm, residual, IR_F_FLAG),  F(rms_norm, bias, IR_F_FLAG)};
static const struct ir_field f_rope[] = {F(rope, h, IR_F_INT),           F(rope, hd, IR_F_INT),
                                         F(rope, half, IR_F_INT),        F(rope, rows, IR_F_INT),
                                         F(rope, pos, IR_F_ROWIDX_OPT),  F(rope, theta, IR_F_FLOAT_OPT),
                                         F(rope, adjacent, IR_F_FLAG),
                                         {"scaling", IR_F_ROPESCALE, offsetof(struct ir_spec, u.rope.scaling.kind)},
                                         S(factor, IR_F_FLOAT_OPT),      S(orig, IR_F_INT_OPT),
                                         S(low_freq, IR_F_FLOAT_OPT),    S(high_freq, IR_F_FLOAT_OPT),
                                         S(beta_fast, IR_F_FLOAT_OPT),   S(beta_slow, IR_F_FLOAT_OPT),
                                         S(truncate, IR_F_FLAG),         S(magnitude, IR_F_FLOAT_OPT)};
static const struct ir_field f_head_slice[] = {F(head_slice, n, IR_F_INT), F(head_slice, every, IR_F_INT),
                                               F(head_slice, from, IR_F_INT), F(head_slice, width, IR_F_INT)};
static const struct ir_field f_row_gather[] = {F(row_gather, rows, IR_F_INT), F(row_gather, cols, IR_F_INT),
                                               F(row_gather, index, IR_F_ROWIDX)};
static const struct ir_field f_rows_gather[] = {F(rows_gather, rows, IR_F_INT), F(rows_gather, cols, IR_F_INT),
                                                F(rows_gather, count, IR_F_INT)};
static const struct ir_field f_set_row[] = {F(set_row, rows, IR_F_INT), F(set_row, cols, IR_F_INT),
                                            F(set_row, count, IR_F_INT), F(set_row, index, IR_F_ROWIDX)};
static const struct ir_field f_attention[] = {
    F(attention, h, IR_F_INT),           F(attention, kv, IR_F_INT),         F(attention, hd, IR_F_INT),
    F(attention, vd, IR_F_INT),          F(attention, l, IR_F_INT),          F(attention, rows, IR_F_INT),
    F(attention, pos, IR_F_ROWIDX_OPT),  F(attention, scale, IR_F_FLOAT_OPT), F(attention, softcap, IR_F_FLOAT_OPT),
    F(attention, sinks, IR_F_FLAG),      F(attention, window, IR_F_INT_OPT)};
static const struct ir_field f_moe[] = {F(moe, d, IR_F_INT),          F(moe, k, IR_F_INT),
                                        F(moe, dff, IR_F_INT),        F(moe, experts, IR_F_INT),
                                        F(moe, act, IR_F_MOEACT),     F(moe, bias, IR_F_FLAG),
                                        F(moe, topk_softmax, IR_F_FLAG), F(moe, sigmoid, IR_F_FLAG),
                                        F(moe, no_renorm, IR_F_FLAG),  F(moe, correction, IR_F_FLAG),
                                        F(moe, groups, IR_F_INT_OPT),  F(moe, topk_groups, IR_F_INT_OPT),
                                        F(moe, scale, IR_F_FLOAT_OPT), F(moe, alpha, IR_F_FLOAT_OPT),
                                        F(moe, limit, IR_F_FLOAT_OPT)};
static const struct ir_field f_gated_delta[] = {F(gated_delta, h, IR_F_INT),   F(gated_delta, dk, IR_F_INT),
                                                F(gated_delta, dv, IR_F_INT),  F(gated_delta, rows, IR_F_INT),
                                                F(gated_delta, gate, IR_F_GATEACT), F(gated_delta, eps, IR_F_FLOAT),
                                                F(gated_delta, kh, IR_F_INT_OPT)};
static const struct ir_field f_causal_conv[] = {F(causal_conv, chan, IR_F_INT), F(causal_conv, taps, IR_F_INT),
                                                F(causal_conv, rows, IR_F_INT)};
static const struct ir_field f_unary[] = {F(unary, n, IR_F_INT)};
static const struct ir_field f_scale[] = {F(scale, n, IR_F_INT), F(scale, factor, IR_F_FLOAT)};
static const struct ir_field f_swiglu[] = {F(swiglu, total, IR_F_INT)};
static const struct ir_field f_head_matmul[] = {F(head_matmul, m, IR_F_INT), F(head_matmul, heads, IR_F_INT),
                                                F(head_matmul, a, IR_F_INT), F(head_matmul, b, IR_F_INT)};
static const struct ir_field f_join[] = {F(join, rows, IR_F_INT), F(join, heads, IR_F_INT), F(join, wa, IR_F_INT),
                                         F(join, wb, IR_F_INT)};
static const struct ir_field f_l2_norm[] = {F(l2_norm, rows, IR_F_INT), F(l2_norm, cols, IR_F_INT),
                                            F(l2_norm, eps, IR_F_FLOAT)};
static const struct ir_field f_argmax[] = {F(argmax, rows, IR_F_INT), F(argmax, cols, IR_F_INT)};
static const struct ir_field f_decay[] = {F(decay, n, IR_F_INT), F(decay, rows, IR_F_INT)};
static const struct ir_field f_softcap[] = {F(softcap, n, IR_F_INT), F(softcap, cap, IR_F_FLOAT)};
#undef F

#define ROW(k, member) [IR_KIND_##k] = {f_##member, (int)(sizeof f_##member / sizeof f_##member[0])}
static const struct {
    const struct ir_field *fields;
    int count;
} spec_fields[IR_KIND_COUNT] = {
#define X(e, s, m) ROW(e, m),
    IR_KINDS(X)
#undef X
};
#undef ROW

const struct ir_field *ir_spec_fields(enum ir_kind k, int *count)
{
    if ((int)k < 0 || k >= IR_KIND_COUNT) {
        *count = 0;
        return NULL;
    }
    *count = spec_fields[k].count;
    return spec_fields[k].fields;
}

/* ── Allocation helpers ──────────────────────────────────────────────────────────────────────────────────── */

/* malloc that never returns NULL for a non-zero size: fusecheck treats exhaustion as fatal. */
static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("fusecheck: out of memory\n", stderr);
        abort();
    }
    return p;
}

/* realloc with the same contract. */
static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("fusecheck: out of memory\n", stderr);
        abort();
    }
    return q;
}

/* A copy of n elements of size sz (NULL when n is 0). */
static void *dup_array(const void *src, size_t n, size_t sz)
{
    if (!n || !src)
        return NULL;
    void *p = xmalloc(n * sz);
    memcpy(p, src, n * sz);
    return p;
}

/* A copy of a NUL-terminated string (NULL stays NULL). */
static char *dup_str(const char *s)
{
    return s ? dup_array(s, strlen(s) + 1, 1) : NULL;
}

/* ── The name index: open addressing over tensor ids ─────────────────────────────────────────────────────── */

/* Tensor names are stored in blocks the graph owns, never freed one by one: one allocation holds many names. */
struct name_block {
    struct name_block *next;
    size_t used, cap;
    char text[];
};

struct ir_name_index {
    ir_tid *slots;            /* one allocation: the slots, then the hashes */
    uint32_t *hashes;         /* each slot's name hash, compared before the name */
    uint32_t cap;             /* a power of two */
    struct name_block *names; /* the newest block first */
};

/* A graph and its index, allocated together. */
struct graph_block {
    struct ir_graph g;
    struct ir_name_index index;
};

/* A copy of name in the index's name blocks (a new block, twice the last one's size up to 64 KiB, when full). */
static char *name_copy(struct ir_name_index *ix, const char *name)
{
    size_t n = strlen(name) + 1;
    struct name_block *b = ix->names;
    if (!b || b->cap - b->used < n) {
        size_t cap = b ? 2 * b->cap : 512;
        if (cap > 65536)
            cap = 65536;
        if (cap < n)
            cap = n;
        b = xmalloc(sizeof *b + cap);
        b->next = ix->names;
        b->used = 0;
        b->cap = cap;
        ix->names = b;
    }
    char *at = b->text + b->used;
    memcpy(at, name, n);
    b->used += n;
    return at;
}

/* FNV-1a of n bytes. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* Insert id into the index (its name is g's tensor's). */
static void index_insert(struct ir_name_index *ix, const struct ir_graph *g, ir_tid id)
{
    const char *name = g->tensors[id].name;
    uint32_t full = hash_bytes(name, strlen(name)), mask = ix->cap - 1, h = full & mask;
    while (ix->slots[h] != IR_NONE)
        h = (h + 1) & mask;
    ix->slots[h] = id;
    ix->hashes[h] = full;
}

/* Rebuild g's index over all its tensors with cap (a power of two) slots. */
static void index_rebuild(struct ir_graph *g, uint32_t cap)
{
    struct ir_name_index *ix = g->index;
    free(ix->slots);
    ix->slots = xmalloc((sizeof(ir_tid) + sizeof(uint32_t)) * cap);
    ix->hashes = (uint32_t *)(ix->slots + cap);
    for (uint32_t i = 0; i < cap; i++)
        ix->slots[i] = IR_NONE;
    ix->cap = cap;
    for (ir_tid t = 0; t < g->ntensors; t++)
        index_insert(ix, g, t);
}

/* The index's size for n tensors: a power of two from 64, kept over twice n. */
static uint32_t index_cap_for(int32_t n)
{
    uint32_t cap = 64;
    while ((uint32_t)n * 2 >= cap)
        cap *= 2;
    return cap;
}

/* Add tensor id to g's index, rebuilding it larger when its load would pass one half. */
static void index_add(struct ir_graph *g, ir_tid id)
{
    struct ir_name_index *ix = g->index;
    if (ix->cap && (uint32_t)g->ntensors * 2 < ix->cap)
        index_insert(ix, g, id);
    else
        index_rebuild(g, index_cap_for(g->ntensors));
}

ir_tid ir_tensor_find(const struct ir_graph *g, const char *name, size_t n)
{
    const struct ir_name_index *ix = g->index;
    if (!ix->cap)
        return IR_NONE;
    uint32_t full = hash_bytes(name, n), mask = ix->cap - 1, h = full & mask;
    for (;;) {
        ir_tid id = ix->slots[h];
        if (id == IR_NONE)
            return IR_NONE;
        const char *s = g->tensors[id].name;
        if (ix->hashes[h] == full && strncmp(s, name, n) == 0 && s[n] == '\0')
            return id;
        h = (h + 1) & mask;
    }
}

/* ── Graphs ──────────────────────────────────────────────────────────────────────────────────────────────── */

struct ir_graph *ir_graph_new(void)
{
    struct graph_block *b = xmalloc(sizeof *b);
    memset(b, 0, sizeof *b);
    b->g.index = &b->index;
    return &b->g;
}

void ir_graph_free(struct ir_graph *g)
{
    if (!g)
        return;
    for (int32_t i = 0; i < g->nops; i++)
        ir_op_free(&g->ops[i]);
    free(g->tensors);
    free(g->ops);
    free(g->index->slots);
    for (struct name_block *b = g->index->names, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(g->name);
    free(g->family);
    free(g->mode);
    free((struct graph_block *)g); /* g is its block's first member */
}

void ir_graph_set_meta(struct ir_graph *g, const char *name, const char *family, const char *mode)
{
    free(g->name);
    free(g->family);
    free(g->mode);
    g->name = dup_str(name);
    g->family = dup_str(family);
    g->mode = dup_str(mode);
}

struct ir_graph *ir_graph_clone_tensors(const struct ir_graph *g)
{
    struct ir_graph *c = ir_graph_new();
    ir_graph_set_meta(c, g->name, g->family, g->mode);
    if (g->ntensors == 0)
        return c;
    /* The table copied whole; the names into one block; the index built once. */
    c->tensors = xmalloc(sizeof *c->tensors * (size_t)g->ntensors);
    memcpy(c->tensors, g->tensors, sizeof *c->tensors * (size_t)g->ntensors);
    c->tensors_cap = g->ntensors;
    size_t bytes = 0;
    for (int32_t i = 0; i < g->ntensors; i++)
        bytes += strlen(g->tensors[i].name) + 1;
    struct name_block *b = xmalloc(sizeof *b + bytes);
    b->next = NULL;
    b->used = 0;
    b->cap = bytes;
    c->index->names = b;
    for (int32_t i = 0; i < g->ntensors; i++)
        c->tensors[i].name = name_copy(c->index, g->tensors[i].name);
    c->ntensors = g->ntensors;
    index_rebuild(c, index_cap_for(c->ntensors));
    return c;
}

struct ir_graph *ir_graph_clone(const struct ir_graph *g)
{
    struct ir_graph *c = ir_graph_clone_tensors(g);
    /* The ops copied as they are (ir_graph_push would give an op that covers nothing its own index). */
    c->ops = xmalloc(sizeof *c->ops * (size_t)(g->nops ? g->nops : 1));
    c->ops_cap = g->nops ? g->nops : 1;
    for (int32_t i = 0; i < g->nops; i++)
        c->ops[i] = ir_op_clone(&g->ops[i]);
    c->nops = g->nops;
    return c;
}

ir_tid ir_tensor_add(struct ir_graph *g, const char *name, enum ir_elem elem, int64_t rows, int64_t cols,
                     enum ir_role role)
{
    if (ir_tensor_find(g, name, strlen(name)) != IR_NONE)
        return IR_NONE;
    if (g->ntensors == g->tensors_cap) {
        g->tensors_cap = g->tensors_cap ? g->tensors_cap * 2 : 16;
        g->tensors = xrealloc(g->tensors, sizeof *g->tensors * (size_t)g->tensors_cap);
    }
    ir_tid id = g->ntensors++;
    struct ir_tensor *t = &g->tensors[id];
    memset(t, 0, sizeof *t);
    t->name = name_copy(g->index, name);
    t->elem = elem;
    t->rows = rows;
    t->cols = cols;
    t->role = role;
    index_add(g, id);
    return id;
}

int64_t ir_tensor_len(const struct ir_graph *g, ir_tid t)
{
    return t >= 0 && t < g->ntensors ? g->tensors[t].rows * g->tensors[t].cols : 0;
}

int32_t ir_graph_push(struct ir_graph *g, struct ir_op op)
{
    if (g->nops == g->ops_cap) {
        g->ops_cap = g->ops_cap ? g->ops_cap * 2 : 16;
        g->ops = xrealloc(g->ops, sizeof *g->ops * (size_t)g->ops_cap);
    }
    int32_t at = g->nops++;
    if (op.ncovers == 0) {
        op.covers = xmalloc(sizeof(int32_t));
        op.covers[0] = at;
        op.ncovers = 1;
    }
    g->ops[at] = op;
    return at;
}

/* ── Ops ─────────────────────────────────────────────────────────────────────────────────────────────────── */

struct ir_dst ir_dst_own(ir_tid out)
{
    struct ir_dst d;
    memset(&d, 0, sizeof d);
    d.buf = out;
    d.row = IR_ROWSEL_NONE;
    d.row_param = IR_NONE;
    return d;
}

bool ir_dst_is_own(const struct ir_dst *d)
{
    return d->row == IR_ROWSEL_NONE && !d->has_unit;
}

/* Free one of op's arrays unless it lives in op's block (`bit` of IR_PACK_*); it no longer does after. */
static void release(struct ir_op *op, unsigned bit, void *array)
{
    if (!(op->packed & bit))
        free(array);
    op->packed &= (uint8_t)~bit;
}

void ir_op_set_ins(struct ir_op *op, const ir_tid *ins, const struct ir_access *access, int32_t nins)
{
    release(op, IR_PACK_INS, op->ins);
    release(op, IR_PACK_ACCESS, op->access);
    op->nins = nins;
    size_t nacc = nins ? (size_t)nins : 1;
    if (!op->block) { /* an op without a block yet (a new one): the accesses and inputs become its block */
        unsigned char *at = xmalloc(sizeof *op->access * nacc + sizeof *op->ins * (size_t)nins);
        op->block = at;
        op->access = (struct ir_access *)(void *)at;
        at += sizeof *op->access * nacc;
        op->ins = nins ? (ir_tid *)(void *)at : NULL;
        if (nins)
            memcpy(op->ins, ins, sizeof *ins * (size_t)nins);
        op->packed |= (uint8_t)(IR_PACK_ACCESS | (nins ? IR_PACK_INS : 0));
    } else {
        op->ins = dup_array(ins, (size_t)nins, sizeof *ins);
        op->access = xmalloc(sizeof *op->access * nacc);
    }
    for (int32_t i = 0; i < nins; i++) {
        if (access)
            op->access[i] = access[i];
        else
            memset(&op->access[i], 0, sizeof op->access[i]);
    }
}

void ir_op_append_in(struct ir_op *op, ir_tid t)
{
    ir_tid *ins = xmalloc(sizeof *ins * (size_t)(op->nins + 1));
    struct ir_access *access = xmalloc(sizeof *access * (size_t)(op->nins + 1));
    if (op->nins) {
        memcpy(ins, op->ins, sizeof *ins * (size_t)op->nins);
        memcpy(access, op->access, sizeof *access * (size_t)op->nins);
    }
    ins[op->nins] = t;
    memset(&access[op->nins], 0, sizeof access[op->nins]);
    release(op, IR_PACK_INS, op->ins);
    release(op, IR_PACK_ACCESS, op->access);
    op->ins = ins;
    op->access = access;
    op->nins++;
}

void ir_op_set_keeps(struct ir_op *op, const ir_tid *keeps, int32_t n)
{
    release(op, IR_PACK_KEEPS, op->keeps);
    op->keeps = dup_array(keeps, (size_t)n, sizeof *keeps);
    op->nkeeps = n;
}

void ir_op_set_covers(struct ir_op *op, const int32_t *covers, int32_t n)
{
    release(op, IR_PACK_COVERS, op->covers);
    op->covers = dup_array(covers, (size_t)n, sizeof *covers);
    op->ncovers = n;
}

struct ir_op ir_op_prim(enum ir_kind kind, const ir_tid *ins, int32_t nins, ir_tid out)
{
    struct ir_op op;
    memset(&op, 0, sizeof op);
    op.sym = IR_SYM_PRIM;
    op.spec.kind = kind;
    ir_op_set_ins(&op, ins, NULL, nins);
    op.out = out;
    op.dst = ir_dst_own(out);
    return op;
}

struct ir_op ir_op_fused(enum ir_class cls, struct ir_op *parts, int32_t nparts, const ir_tid *ins,
                         const struct ir_access *access, int32_t nins, ir_tid out, struct ir_dst dst)
{
    struct ir_op op;
    memset(&op, 0, sizeof op);
    op.sym = IR_SYM_FUSED;
    op.cls = cls;
    op.parts = parts;
    op.nparts = nparts;
    ir_op_set_ins(&op, ins, access, nins);
    op.out = out;
    op.dst = dst;
    return op;
}

/* Copy n values of size sz from src to *at (advancing it) and return where they went; NULL for none. */
static void *place_array(unsigned char **at, const void *src, size_t n, size_t sz)
{
    if (!n || !src)
        return NULL;
    void *p = *at;
    memcpy(p, src, n * sz);
    *at += n * sz;
    return p;
}

bool ir_op_computes(const struct ir_op *op, ir_tid t)
{
    if (op->out == t)
        return true;
    for (int32_t i = 0; i < op->nparts; i++)
        if (ir_op_computes(&op->parts[i], t))
            return true;
    return false;
}

bool ir_access_same(const struct ir_access *a, const struct ir_access *b)
{
    if (a->strided != b->strided)
        return false;
    return !a->strided || (a->s.pitch == b->s.pitch && a->s.offset == b->s.offset && a->s.width == b->s.width);
}

bool ir_op_has_operand(const struct ir_op *op, ir_tid t)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (op->ins[k] == t)
            return true;
    return false;
}

struct ir_op ir_op_clone(const struct ir_op *op)
{
    struct ir_op c = *op;
    /* One allocation for the arrays: the accesses first (the widest alignment; always at least one), then the
     * inputs, keeps and covers. */
    size_t nacc = op->nins ? (size_t)op->nins : 1;
    size_t bytes = sizeof *c.access * nacc + sizeof *c.ins * (size_t)op->nins + sizeof *c.keeps * (size_t)op->nkeeps +
                   sizeof *c.covers * (size_t)op->ncovers;
    unsigned char *at = xmalloc(bytes);
    c.block = at;
    c.access = (struct ir_access *)(void *)at;
    if (op->nins)
        memcpy(c.access, op->access, sizeof *c.access * (size_t)op->nins);
    at += sizeof *c.access * nacc;
    c.ins = place_array(&at, op->ins, (size_t)op->nins, sizeof *op->ins);
    c.keeps = place_array(&at, op->keeps, (size_t)op->nkeeps, sizeof *op->keeps);
    c.covers = place_array(&at, op->covers, (size_t)op->ncovers, sizeof *op->covers);
    c.packed = (uint8_t)(IR_PACK_ACCESS | (c.ins ? IR_PACK_INS : 0) | (c.keeps ? IR_PACK_KEEPS : 0) |
                         (c.covers ? IR_PACK_COVERS : 0));
    c.parts = NULL;
    if (op->nparts) {
        c.parts = xmalloc(sizeof *c.parts * (size_t)op->nparts);
        for (int32_t i = 0; i < op->nparts; i++)
            c.parts[i] = ir_op_clone(&op->parts[i]);
    }
    return c;
}

void ir_op_free(struct ir_op *op)
{
    for (int32_t i = 0; i < op->nparts; i++)
        ir_op_free(&op->parts[i]);
    free(op->parts);
    release(op, IR_PACK_INS, op->ins);
    release(op, IR_PACK_ACCESS, op->access);
    release(op, IR_PACK_KEEPS, op->keeps);
    release(op, IR_PACK_COVERS, op->covers);
    free(op->block);
    memset(op, 0, sizeof *op);
}

/* Whether two destinations are the same. */
static bool dst_equal(const struct ir_dst *a, const struct ir_dst *b)
{
    if (a->buf != b->buf || a->row != b->row || a->has_unit != b->has_unit)
        return false;
    if (a->row == IR_ROWSEL_FIXED && a->row_fixed != b->row_fixed)
        return false;
    if (a->row == IR_ROWSEL_PARAM && a->row_param != b->row_param)
        return false;
    if (a->row != IR_ROWSEL_NONE && a->row_cols != b->row_cols)
        return false;
    return !a->has_unit || (a->unit.pitch == b->unit.pitch && a->unit.offset == b->unit.offset &&
                            a->unit.width == b->unit.width);
}

/* Whether field f holds the same value at a and at b (each the field's spec, or anything laid out from the same base). */
static bool field_equal(const struct ir_field *f, const void *a, const void *b)
{
    const char *pa = (const char *)a + f->offset, *pb = (const char *)b + f->offset;
    switch (f->type) {
    case IR_F_INT:
    case IR_F_INT_OPT: return *(const int64_t *)pa == *(const int64_t *)pb;
    case IR_F_FLOAT: return memcmp(pa, pb, sizeof(double)) == 0;
    case IR_F_FLOAT_OPT: {
        const struct ir_optf *x = (const void *)pa, *y = (const void *)pb;
        return x->has == y->has && (!x->has || memcmp(&x->v, &y->v, sizeof x->v) == 0);
    }
    case IR_F_FLAG: return *(const bool *)pa == *(const bool *)pb;
    case IR_F_EWOP:
    case IR_F_MOEACT:
    case IR_F_GATEACT:
    case IR_F_NORMKIND:
    case IR_F_ROPESCALE: return *(const int *)pa == *(const int *)pb;
    case IR_F_ROWIDX:
    case IR_F_ROWIDX_OPT: {
        const struct ir_rowidx *x = (const void *)pa, *y = (const void *)pb;
        return x->kind == y->kind && (x->kind != IR_RIDX_LITERAL || x->literal == y->literal);
    }
    }
    return true;
}

/* Whether two primitive specs have the same kind and every field equal (compared through the field table). */
static bool spec_equal(const struct ir_spec *a, const struct ir_spec *b)
{
    if (a->kind != b->kind)
        return false;
    int n;
    const struct ir_field *f = ir_spec_fields(a->kind, &n);
    for (int i = 0; i < n; i++)
        if (!field_equal(&f[i], a, b))
            return false;
    return true;
}

bool ir_spec_equal(const struct ir_spec *a, const struct ir_spec *b) { return spec_equal(a, b); }

bool ir_op_equal(const struct ir_op *a, const struct ir_op *b)
{
    if (a->sym != b->sym || a->nins != b->nins || a->out != b->out || a->nkeeps != b->nkeeps ||
        a->ncovers != b->ncovers || a->nparts != b->nparts)
        return false;
    switch (a->sym) {
    case IR_SYM_PRIM:
        if (!spec_equal(&a->spec, &b->spec))
            return false;
        break;
    case IR_SYM_FUSED:
        if (a->cls != b->cls)
            return false;
        break;
    case IR_SYM_VIEW:
        if (a->view_offset != b->view_offset)
            return false;
        break;
    case IR_SYM_QUANT:
        if (a->quant_words != b->quant_words)
            return false;
        break;
    }
    for (int32_t i = 0; i < a->nins; i++)
        if (a->ins[i] != b->ins[i] || !ir_access_same(&a->access[i], &b->access[i]))
            return false;
    for (int32_t i = 0; i < a->nkeeps; i++)
        if (a->keeps[i] != b->keeps[i])
            return false;
    for (int32_t i = 0; i < a->ncovers; i++)
        if (a->covers[i] != b->covers[i])
            return false;
    for (int32_t i = 0; i < a->nparts; i++)
        if (!ir_op_equal(&a->parts[i], &b->parts[i]))
            return false;
    return dst_equal(&a->dst, &b->dst);
}

/* Whether two tensors are equal in every field that means anything (the storage format and layout only for
 * checkpoint rows): every field the text format carries. */
static bool tensor_equal(const struct ir_tensor *a, const struct ir_tensor *b)
{
    return strcmp(a->name, b->name) == 0 && a->elem == b->elem && a->rows == b->rows && a->cols == b->cols &&
           a->role == b->role && a->checkpoint == b->checkpoint && (!a->checkpoint || a->format == b->format) &&
           (!a->checkpoint || a->transposed == b->transposed) && a->observed == b->observed &&
           a->carried == b->carried && a->next == b->next;
}

bool ir_graph_same_program(const struct ir_graph *a, const struct ir_graph *b)
{
    if (a->ntensors != b->ntensors || a->nops != b->nops)
        return false;
    for (ir_tid t = 0; t < a->ntensors; t++)
        if (!tensor_equal(&a->tensors[t], &b->tensors[t]))
            return false;
    for (int32_t i = 0; i < a->nops; i++)
        if (!ir_op_equal(&a->ops[i], &b->ops[i]))
            return false;
    return true;
}

int ir_op_state_inputs(const struct ir_op *op, int idx[4])
{
    if (op->sym != IR_SYM_PRIM)
        return 0;
    int n = 0;
    switch (op->spec.kind) {
    case IR_KIND_SET_ROW:
        idx[n++] = 0;
        break;
    case IR_KIND_CAUSAL_CONV:
        idx[n++] = 2;
        break;
    case IR_KIND_GATED_DELTA:
        idx[n++] = 6;
        break;
    default:
        break;
    }
    for (int i = 0; i < n; i++)
        if (idx[i] >= op->nins)
            return 0;
    return n;
}

void ir_op_leaves(const struct ir_op *op, void (*fn)(const struct ir_op *leaf, void *ctx), void *ctx)
{
    if (op->sym != IR_SYM_FUSED) {
        fn(op, ctx);
        return;
    }
    for (int32_t i = 0; i < op->nparts; i++)
        ir_op_leaves(&op->parts[i], fn, ctx);
}

double ir_rope_theta(const struct ir_rope *r)
{
    return r->theta.has ? r->theta.v : IR_ROPE_THETA_DEFAULT;
}

/* 2π, to double precision (C11 names no constant for it). */
#define TWO_PI 6.28318530717958647692528676655900577

/* An optional float's value, or def when absent. */
static double optf_or(struct ir_optf o, double def) { return o.has ? o.v : def; }

/* llama3's frequency for pair frequency w: long wavelengths divided by the factor, short ones kept, a blend of the
 * two between the band's edges orig/low_freq and orig/high_freq (Transformers' _compute_llama3_parameters). */
static double llama3_frequency(const struct ir_rope_scaling *s, double w)
{
    double factor = s->factor.v, low = s->low_freq.v, high = s->high_freq.v, orig = (double)s->orig;
    double wavelength = TWO_PI / w;
    if (wavelength < orig / high)
        return w;
    if (wavelength > orig / low)
        return w / factor;
    double smooth = (orig / wavelength - low) / (high - low);
    return (1.0 - smooth) * w / factor + smooth * w;
}

/* The pair index (of `dims` rotated values) at which `rotations` full turns fit in orig positions (YaRN). */
static double yarn_correction_dim(double rotations, double dims, double base, double orig)
{
    return dims * log(orig / (rotations * TWO_PI)) / (2.0 * log(base));
}

/* YaRN's frequency for pair i of frequency w: ω/factor past the correction range, ω before it, a linear ramp
 * across it (Transformers' _compute_yarn_parameters; llama.cpp's rope_yarn with its ramp, truncating always). */
static double yarn_frequency(const struct ir_rope *r, int64_t i, double w)
{
    const struct ir_rope_scaling *s = &r->scaling;
    double dims = 2.0 * (double)r->half, base = ir_rope_theta(r), orig = (double)s->orig;
    double low = yarn_correction_dim(optf_or(s->beta_fast, IR_YARN_BETA_FAST_DEFAULT), dims, base, orig);
    double high = yarn_correction_dim(optf_or(s->beta_slow, IR_YARN_BETA_SLOW_DEFAULT), dims, base, orig);
    if (s->truncate) {
        low = floor(low);
        high = ceil(high);
    }
    low = low > 0 ? low : 0;
    high = high < dims - 1 ? high : dims - 1;
    if (high == low)
        high += 0.001;
    double ramp = ((double)i - low) / (high - low);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    return w / s->factor.v * ramp + w * (1.0 - ramp);
}

double ir_rope_frequency(const struct ir_rope *r, int64_t i)
{
    double half = (double)(r->half > 0 ? r->half : 1);
    double w = pow(ir_rope_theta(r), -(double)i / half);
    switch (r->scaling.kind) {
    case IR_ROPESCALE_LINEAR: return w / r->scaling.factor.v;
    case IR_ROPESCALE_LLAMA3: return llama3_frequency(&r->scaling, w);
    case IR_ROPESCALE_YARN: return yarn_frequency(r, i, w);
    case IR_ROPESCALE_NONE:
    case IR_ROPESCALE_COUNT: break;
    }
    return w;
}

double ir_rope_magnitude(const struct ir_rope *r) { return optf_or(r->scaling.magnitude, 1.0); }

bool ir_rope_same_tables(const struct ir_rope *a, const struct ir_rope *b)
{
    double ta = ir_rope_theta(a), tb = ir_rope_theta(b);
    if (a->half != b->half || memcmp(&ta, &tb, sizeof ta) != 0)
        return false;
    /* every field of the rope's scaling, compared as spec_equal compares it, from the rope's own base */
    size_t base = offsetof(struct ir_spec, u.rope), lo = offsetof(struct ir_rope, scaling);
    int n;
    const struct ir_field *f = ir_spec_fields(IR_KIND_ROPE, &n);
    for (int i = 0; i < n; i++) {
        struct ir_field at = f[i];
        at.offset -= base;
        if (at.offset >= lo && at.offset < lo + sizeof a->scaling && !field_equal(&at, a, b))
            return false;
    }
    return true;
}

/* Which scaling fields each kind takes (the rest it must leave out): factor, orig, llama3's band, YaRN's betas. */
static const struct {
    bool factor, orig, band, betas;
} scaling_takes[IR_ROPESCALE_COUNT] = {
    [IR_ROPESCALE_NONE] = {false, false, false, false},
    [IR_ROPESCALE_LINEAR] = {true, false, false, false},
    [IR_ROPESCALE_LLAMA3] = {true, true, true, false},
    [IR_ROPESCALE_YARN] = {true, true, false, true},
};

/* Fail with the field's name: what is wrong, formatted. */
static const char *scaling_wrong(const char **field, const char *name, char *why, size_t n, const char *what)
{
    *field = name;
    snprintf(why, n, "%s", what);
    return why;
}

const char *ir_rope_scaling_check(const struct ir_rope *r, const char **field, char *why, size_t n)
{
    const struct ir_rope_scaling *s = &r->scaling;
    if ((int)s->kind < 0 || s->kind >= IR_ROPESCALE_COUNT)
        return scaling_wrong(field, "scaling", why, n, "unknown rotary scaling");
    bool f = scaling_takes[s->kind].factor, o = scaling_takes[s->kind].orig, band = scaling_takes[s->kind].band,
         betas = scaling_takes[s->kind].betas;
    const struct {
        const char *name;
        bool given, wanted, required, ok;
    } checks[] = {
        {"factor", s->factor.has, f, f, !s->factor.has || (s->factor.v > 0 && isfinite(s->factor.v))},
        {"orig", s->orig != 0, o, o, s->orig >= 0},
        {"low_freq", s->low_freq.has, band, band, !s->low_freq.has || s->low_freq.v > 0},
        {"high_freq", s->high_freq.has, band, band,
         !s->high_freq.has || !s->low_freq.has || s->high_freq.v > s->low_freq.v},
        {"beta_fast", s->beta_fast.has, betas, false, !s->beta_fast.has || s->beta_fast.v > 0},
        {"beta_slow", s->beta_slow.has, betas, false, !s->beta_slow.has || s->beta_slow.v > 0},
        {"truncate", s->truncate, betas, false, true},
        {"magnitude", s->magnitude.has, true, false, !s->magnitude.has || s->magnitude.v > 0},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (checks[i].given && !checks[i].wanted)
            return scaling_wrong(field, checks[i].name, why, n, s->kind == IR_ROPESCALE_NONE
                                                                    ? "given without a rotary scaling"
                                                                    : "not a field of this rotary scaling");
        if (!checks[i].given && checks[i].required)
            return scaling_wrong(field, checks[i].name, why, n, "required by this rotary scaling");
        if (!checks[i].ok)
            return scaling_wrong(field, checks[i].name, why, n,
                                 strcmp(checks[i].name, "high_freq") == 0 ? "must exceed low_freq"
                                                                         : "must be positive");
    }
    return NULL;
}

int64_t ir_spec_out_len(const struct ir_spec *s)
{
    const struct ir_spec *u = s;
    switch (s->kind) {
    case IR_KIND_MATMUL: return u->u.matmul.m * u->u.matmul.n;
    case IR_KIND_ELEMENTWISE: return u->u.elementwise.n;
    case IR_KIND_RMS_NORM: return u->u.rms_norm.rows * u->u.rms_norm.cols;
    case IR_KIND_ROPE: return u->u.rope.h * u->u.rope.hd;
    case IR_KIND_HEAD_SLICE:
        return u->u.head_slice.every > 0 ? u->u.head_slice.n / u->u.head_slice.every * u->u.head_slice.width : -1;
    case IR_KIND_ROW_GATHER: return u->u.row_gather.cols;
    case IR_KIND_ROWS_GATHER: return u->u.rows_gather.count * u->u.rows_gather.cols;
    case IR_KIND_SET_ROW: return u->u.set_row.rows * u->u.set_row.cols;
    case IR_KIND_ATTENTION: return u->u.attention.rows * u->u.attention.h * u->u.attention.vd;
    case IR_KIND_MOE: return u->u.moe.d;
    case IR_KIND_GATED_DELTA: return u->u.gated_delta.rows * u->u.gated_delta.h * u->u.gated_delta.dv;
    case IR_KIND_CAUSAL_CONV: return u->u.causal_conv.rows * u->u.causal_conv.chan;
    case IR_KIND_SILU:
    case IR_KIND_SIGMOID:
    case IR_KIND_GELU:
    case IR_KIND_RELU: return u->u.unary.n;
    case IR_KIND_SCALE: return u->u.scale.n;
    case IR_KIND_SWIGLU: return u->u.swiglu.total;
    case IR_KIND_HEAD_MATMUL: return u->u.head_matmul.m * u->u.head_matmul.heads * u->u.head_matmul.b;
    case IR_KIND_JOIN: return u->u.join.rows * (u->u.join.wa + u->u.join.wb);
    case IR_KIND_L2_NORM: return u->u.l2_norm.rows * u->u.l2_norm.cols;
    case IR_KIND_ARGMAX: return u->u.argmax.rows;
    case IR_KIND_DECAY: return u->u.decay.n;
    case IR_KIND_SOFTCAP: return u->u.softcap.n;
    case IR_KIND_COUNT: break;
    }
    return -1;
}
