/* shim/lane.c — the CUDA lane's shim: what the lane's kernels run whole, and why not.
 *
 * The shared optimizer decides a fusion by dataflow; this shim decides whether the lane has a launch for the result.
 * Every answer below is a fact about one of the lane's kernels, and every number comes from kernels/ (the launch
 * geometry the kernels must agree with):
 *
 *   - which classes the lane links (a table indexed by class: native, run as parts, or refused with a reason);
 *   - whether a candidate fits its kernel (`fits`: sizes, formats, placements, accumulators);
 *   - which operands a product reads quantized (`activation`: products by checkpoint rows and mixtures read their
 *     activation as one or two int8 words a value under the quantized numerics);
 *   - the lane's own rules: a wide chunk's latent attention taken whole (`latent_expanded`, before add_norm) and a
 *     step's products of one activation as one GEMV in parts (`gemv_parts`, before merged_projections), each with
 *     its guard atoms as data;
 *   - its numerics contract.
 *
 * The lane's knobs come from its name: cuda-lane:<chip>:<activations>[:<knob>...] (see shim_lane_what). */
#include "shim.h"

#include "kernels/kernels.h"
#include "rules/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NGUARDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The rotations one launch takes: a layer's query and its key. */
#define ROPE_SIDES 2
/* The convolutions one launch takes as parts. */
#define CONV_PARTS 4
/* The widest head a convolution's L2-norm epilogue takes: a block of 1024 threads, one value each. */
#define CONV_L2_COLS 1024
/* The most warps a mixture's down block has for its kept experts and a folded shared expert. */
#define MOE_WARPS 32

/* ── Knobs ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* The lane rules a name can hold back (`hold=`): enum suffix and name. rows_a_warp is a kernel fact (the GEMV's four
 * rows a warp), the other two are the lane's chip rules. */
#define LANE_HOLDS(X) \
    X(ROWS_A_WARP, "rows_a_warp") \
    X(GEMV_PARTS, "gemv_parts") \
    X(LATENT_EXPANDED, "latent_expanded")

enum lane_hold {
#define X(e, s) LANE_HOLD_##e,
    LANE_HOLDS(X)
#undef X
    LANE_HOLD_COUNT
};

static const char *const hold_names[] = {
#define X(e, s) s,
    LANE_HOLDS(X)
#undef X
};

/* The lane under its knobs. */
struct lane {
    const struct kernels_chip *chip;
    enum kernels_acts acts;
    enum shim_keep cache, state;
    bool fuse_quant;
    bool batch;                   /* the products are a batch's: each row its own sequence */
    bool held[LANE_HOLD_COUNT];
};

/* The knobs' defaults: an f16 cache, f32 state, quantizing epilogues on, no batch, nothing held. */
static const struct lane lane_defaults = {NULL, KERNELS_ACTS_DEQUANT, SHIM_KEEP_F16, SHIM_KEEP_F32, true, false, {0}};

const char shim_lane_what[] =
    "the CUDA lane: cuda-lane:<chip>:<activations>[:<knob>...]\n"
    "                                         chips: h100 (H100 SXM: 132 SMs, 227 KiB a block, 3350 GB/s), h200 (H200: "
    "132 SMs, 227 KiB, 4800 GB/s), a100 (A100: 108 SMs, 163 KiB, 2039 GB/s), l40s (L40S: 142 SMs, 99 KiB, 864 GB/s), "
    "rtx4090 (RTX 4090: 128 SMs, 99 KiB, 1008 GB/s)\n"
    "                                         activations: dequant (f32 activations, dequantized weights), int8 (one "
    "int8 word a value), int8x2 (two words)\n"
    "                                         knobs: cache=f16|f32 (default f16), state=f32|bf16 (default f32), "
    "fuse_quant=on|off (default on), batch[=on|off] (default off), hold=<rule>[+<rule>...] of rows_a_warp, "
    "gemv_parts, latent_expanded";

/* The names of the precisions a cache or a state is kept in, as the knobs spell them. */
static const char *const keep_names[] = {[SHIM_KEEP_F32] = "f32", [SHIM_KEEP_F16] = "f16", [SHIM_KEEP_BF16] = "bf16"};

/* How long a piece of a bad name an error quotes. */
#define QUOTE 64

/* A value spelled one of two ways: its two spellings and the values they mean. */
struct choice {
    const char *a, *b;
    int va, vb;
};

/* The value text[0..n) picks from c, or -1. */
static int pick(const struct choice *c, const char *text, size_t n)
{
    if (strlen(c->a) == n && strncmp(text, c->a, n) == 0)
        return c->va;
    if (strlen(c->b) == n && strncmp(text, c->b, n) == 0)
        return c->vb;
    return -1;
}

/* A two-way knob's value from its text (a bare knob has none), or 1 with why. */
static int two_way(const char *knob, const struct choice *c, const char *v, size_t n, bool bare, int *out,
                   char err[IR_ERR_LEN])
{
    if (bare) {
        snprintf(err, IR_ERR_LEN, "%s needs a value: %s=%s or %s=%s", knob, knob, c->a, knob, c->b);
        return 1;
    }
    int x = pick(c, v, n);
    if (x < 0) {
        snprintf(err, IR_ERR_LEN, "%s=%.*s: expected %s=%s or %s=%s", knob, (int)(n < QUOTE ? n : QUOTE), v, knob, c->a,
                 knob, c->b);
        return 1;
    }
    *out = x;
    return 0;
}

/* The cache knob: f32 or f16. */
static int knob_cache(struct lane *l, const char *v, size_t n, bool bare, char err[IR_ERR_LEN])
{
    static const struct choice c = {"f32", "f16", SHIM_KEEP_F32, SHIM_KEEP_F16};
    int x;
    if (two_way("cache", &c, v, n, bare, &x, err))
        return 1;
    l->cache = (enum shim_keep)x;
    return 0;
}

/* The recurrent-state knob: f32 or bf16. */
static int knob_state(struct lane *l, const char *v, size_t n, bool bare, char err[IR_ERR_LEN])
{
    static const struct choice c = {"f32", "bf16", SHIM_KEEP_F32, SHIM_KEEP_BF16};
    int x;
    if (two_way("state", &c, v, n, bare, &x, err))
        return 1;
    l->state = (enum shim_keep)x;
    return 0;
}

/* The quantizing-epilogue knob: on or off. */
static int knob_fuse_quant(struct lane *l, const char *v, size_t n, bool bare, char err[IR_ERR_LEN])
{
    static const struct choice c = {"on", "off", 1, 0};
    int x;
    if (two_way("fuse_quant", &c, v, n, bare, &x, err))
        return 1;
    l->fuse_quant = x != 0;
    return 0;
}

/* The batch knob: bare (on), or on/off. */
static int knob_batch(struct lane *l, const char *v, size_t n, bool bare, char err[IR_ERR_LEN])
{
    static const struct choice c = {"on", "off", 1, 0};
    int x = 1;
    if (!bare && two_way("batch", &c, v, n, false, &x, err))
        return 1;
    l->batch = x != 0;
    return 0;
}

/* The hold knob: lane rules joined by '+'. */
static int knob_hold(struct lane *l, const char *v, size_t n, bool bare, char err[IR_ERR_LEN])
{
    if (bare || n == 0) {
        snprintf(err, IR_ERR_LEN, "hold names no lane rule (hold=<rule>[+<rule>...] of rows_a_warp, gemv_parts, "
                                  "latent_expanded)");
        return 1;
    }
    for (size_t at = 0; at <= n;) {
        size_t len = 0;
        while (at + len < n && v[at + len] != '+')
            len++;
        int found = -1;
        for (int h = 0; h < LANE_HOLD_COUNT && found < 0; h++)
            if (strlen(hold_names[h]) == len && strncmp(v + at, hold_names[h], len) == 0)
                found = h;
        if (found < 0) {
            snprintf(err, IR_ERR_LEN, "hold: unknown lane rule '%.*s' (rows_a_warp, gemv_parts, latent_expanded)",
                     (int)(len < QUOTE ? len : QUOTE), v + at);
            return 1;
        }
        l->held[found] = true;
        at += len + 1;
    }
    return 0;
}

/* A knob a name may set: its name and how it reads its value (bare: written without '='). */
struct knob {
    const char *name;
    int (*set)(struct lane *l, const char *v, size_t n, bool bare, char err[IR_ERR_LEN]);
};

static const struct knob knobs[] = {
    {"cache", knob_cache}, {"state", knob_state}, {"fuse_quant", knob_fuse_quant},
    {"batch", knob_batch}, {"hold", knob_hold},
};
#define NKNOBS ((int)(sizeof knobs / sizeof knobs[0]))

/* Read one ':'-separated knob item; `seen` marks the knobs set so far. */
static int read_knob(struct lane *l, const char *item, size_t n, bool seen[NKNOBS], char err[IR_ERR_LEN])
{
    size_t key = 0;
    while (key < n && item[key] != '=')
        key++;
    for (int k = 0; k < NKNOBS; k++) {
        if (strlen(knobs[k].name) != key || strncmp(item, knobs[k].name, key) != 0)
            continue;
        if (seen[k]) {
            snprintf(err, IR_ERR_LEN, "knob '%s' given twice", knobs[k].name);
            return 1;
        }
        seen[k] = true;
        bool bare = key == n;
        return knobs[k].set(l, bare ? item + n : item + key + 1, bare ? 0 : n - key - 1, bare, err);
    }
    snprintf(err, IR_ERR_LEN, "unknown knob '%.*s' (cache, state, fuse_quant, batch, hold)",
             (int)(key < QUOTE ? key : QUOTE), item);
    return 1;
}

/* The chip named text[0..n), or NULL with err. */
static const struct kernels_chip *read_chip(const char *text, size_t n, char err[IR_ERR_LEN])
{
    for (int i = 0; i < kernels_chip_count(); i++) {
        const struct kernels_chip *c = kernels_chip_get(i);
        if (strlen(c->name) == n && strncmp(text, c->name, n) == 0)
            return c;
    }
    snprintf(err, IR_ERR_LEN, "unknown chip '%.*s' (h100, h200, a100, l40s, rtx4090)", (int)(n < QUOTE ? n : QUOTE),
             text);
    return NULL;
}

/* The activation mode named text[0..n), or -1 with err. */
static int read_acts(const char *text, size_t n, char err[IR_ERR_LEN])
{
    for (int a = 0; a < KERNELS_ACTS_COUNT; a++) {
        const char *name = kernels_acts_name((enum kernels_acts)a);
        if (strlen(name) == n && strncmp(text, name, n) == 0)
            return a;
    }
    snprintf(err, IR_ERR_LEN, "unknown activations '%.*s' (dequant, int8, int8x2)", (int)(n < QUOTE ? n : QUOTE),
             text);
    return -1;
}

/* The knobs a name spells: "cuda-lane", the chip, the activations, then knobs, ':'-separated. 0 on success. */
static int parse_name(const char *name, struct lane *l, char err[IR_ERR_LEN])
{
    static const char prefix[] = "cuda-lane";
    *l = lane_defaults;
    size_t np = strlen(prefix);
    if (strncmp(name, prefix, np) != 0 || (name[np] != ':' && name[np] != '\0')) {
        snprintf(err, IR_ERR_LEN, "not a lane name (expected cuda-lane:<chip>:<activations>[:<knob>...])");
        return 1;
    }
    bool seen[NKNOBS] = {false};
    int field = 0;
    for (const char *at = name + np; *at == ':'; field++) {
        const char *item = at + 1;
        size_t n = strcspn(item, ":");
        at = item + n;
        if (n == 0) {
            snprintf(err, IR_ERR_LEN, "an empty field (between two ':' or at the end)");
            return 1;
        }
        if (field == 0 && !(l->chip = read_chip(item, n, err)))
            return 1;
        if (field == 1) {
            int a = read_acts(item, n, err);
            if (a < 0)
                return 1;
            l->acts = (enum kernels_acts)a;
        }
        if (field >= 2 && read_knob(l, item, n, seen, err))
            return 1;
    }
    if (field < 2) {
        snprintf(err, IR_ERR_LEN, "missing the %s (expected cuda-lane:<chip>:<activations>[:<knob>...])",
                 field == 0 ? "chip" : "activations");
        return 1;
    }
    return 0;
}

/* The knobs' canonical name: chip and activations, then each knob that differs from its default, in table order. */
static void canonical_name(const struct lane *l, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "cuda-lane:%s:%s", l->chip->name, kernels_acts_name(l->acts));
    if (l->cache != lane_defaults.cache && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ":cache=%s", keep_names[l->cache]);
    if (l->state != lane_defaults.state && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ":state=%s", keep_names[l->state]);
    if (!l->fuse_quant && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ":fuse_quant=off");
    if (l->batch && n < cap)
        n += (size_t)snprintf(out + n, cap - n, ":batch");
    const char *sep = ":hold=";
    for (int h = 0; h < LANE_HOLD_COUNT && n < cap; h++)
        if (l->held[h]) {
            n += (size_t)snprintf(out + n, cap - n, "%s%s", sep, hold_names[h]);
            sep = "+";
        }
}

/* ── supports: a table indexed by class ──────────────────────────────────────────────────────────────────── */

/* How the lane links a class: unlisted (a gap the tests rule out), native, as its parts, natively only with the
 * quantizing epilogues on (fuse_quant), or refused. */
enum lane_link { LINK_UNLISTED, LINK_NATIVE, LINK_PARTS, LINK_EPILOGUE, LINK_REFUSED };

struct lane_support {
    enum lane_link link;
    const char *why;
};

#define NATIVE {LINK_NATIVE, NULL}
#define PARTS {LINK_PARTS, NULL}
#define EPILOGUE {LINK_EPILOGUE, NULL}
#define REFUSED(why) {LINK_REFUSED, why}

static const struct lane_support support_table[IR_CLASS_COUNT] = {
    [IR_CLASS_NORM_WEIGHT] = NATIVE,
    [IR_CLASS_ADD_NORM] = NATIVE,
    [IR_CLASS_NORM_THEN_ADD] = NATIVE,
    [IR_CLASS_GATED_NORM] = NATIVE,
    [IR_CLASS_EMBED_SCALE] = NATIVE,
    [IR_CLASS_QK_NORM_ROPE] = NATIVE,
    [IR_CLASS_QK_NORM_ROPE_KV_APPEND] = NATIVE,
    [IR_CLASS_ROPE_KV_APPEND] = NATIVE,
    [IR_CLASS_ROPE_QK_ONE_LAUNCH] = NATIVE,
    [IR_CLASS_MLA] = NATIVE,
    [IR_CLASS_FLASH_DECODE] = NATIVE,
    [IR_CLASS_FLASH_PREFILL] = NATIVE,
    [IR_CLASS_ATTENTION_VARIANTS_INLINE] = NATIVE,
    [IR_CLASS_ATTN_LSE_MERGE] = NATIVE,
    [IR_CLASS_GLU_ACT_MUL] = NATIVE,
    [IR_CLASS_GEMV_GATE_UP_GLU] = NATIVE,
    [IR_CLASS_GEMM_BIAS] = NATIVE,
    [IR_CLASS_MERGED_QKV] = NATIVE,
    [IR_CLASS_MERGED_GATE_UP] = NATIVE,
    [IR_CLASS_GEMM_DEQUANT_INKERNEL] = NATIVE,
    [IR_CLASS_ROUTER_TOPK] = NATIVE,
    [IR_CLASS_MOE_TOKEN_SORT] = NATIVE,
    [IR_CLASS_MOE_GATE_UP_ACT] = NATIVE,
    [IR_CLASS_MOE_DOWN_COMBINE] = NATIVE,
    [IR_CLASS_SHARED_EXPERT_FUSION] = NATIVE,
    [IR_CLASS_GDN_STEP] = NATIVE,
    [IR_CLASS_CONV_BIAS_SILU] = NATIVE,
    [IR_CLASS_CONV_PARTS] = NATIVE,
    [IR_CLASS_CONV_SILU_L2NORM] = NATIVE,
    [IR_CLASS_GDN_GATE_PROJECTIONS] = NATIVE,
    [IR_CLASS_GDN_GATING] = NATIVE,
    [IR_CLASS_FUSED_SAMPLING] = NATIVE,
    [IR_CLASS_STRIDED_READ] = NATIVE,
    [IR_CLASS_ROW_WRITE] = NATIVE,
    [IR_CLASS_JOIN_IN_PLACE] = NATIVE,
    [IR_CLASS_STRIDED_VALUES] = NATIVE,
    [IR_CLASS_CUDA_GRAPHS] = NATIVE,
    [IR_CLASS_NORM_QUANT] = EPILOGUE,
    [IR_CLASS_ADD_NORM_QUANT] = EPILOGUE,
    [IR_CLASS_GLU_ACT_MUL_QUANT] = EPILOGUE,
    [IR_CLASS_ELEMENTWISE_QUANT] = EPILOGUE,
    [IR_CLASS_GDN_OUTPUT_QUANT] = EPILOGUE,
    [IR_CLASS_GEMV_QUANT] = EPILOGUE,
    [IR_CLASS_GEMV_NORM_EPILOGUE] = NATIVE,
    [IR_CLASS_EMBED_NORM] = NATIVE,
    [IR_CLASS_NORM_SCALE] = PARTS,
    [IR_CLASS_NORM_WEIGHT_OFFSET] = PARTS,
    [IR_CLASS_DUAL_NORM] = PARTS,
    [IR_CLASS_PREFILL_NORM_EPILOGUES] = PARTS,
    [IR_CLASS_ATTN_RESIDUAL_NORM] = PARTS,
    [IR_CLASS_QKV_HEAD_EPILOGUE] = NATIVE,
    [IR_CLASS_RECOMPUTE_FANOUT] = PARTS,
    [IR_CLASS_QK_NORM_ROPE_GATE_SPLIT] = PARTS,
    [IR_CLASS_HORIZONTAL_NORM_ROPE_INSERT] = PARTS,
    [IR_CLASS_CROSS_LAYER_LAUNCH] = PARTS,
    [IR_CLASS_ATTN_OUTPUT_QUANT] = EPILOGUE,
    [IR_CLASS_ATTN_OUTPUT_GATE] = NATIVE,
    [IR_CLASS_ROW_WRITE_QUANT] = NATIVE,
    [IR_CLASS_MLA_PROLOGUE] = PARTS,
    [IR_CLASS_MLA_UNABSORB_IN_FOLD] = PARTS,
    [IR_CLASS_ELEMENTWISE_CHAINS] = PARTS,
    [IR_CLASS_ELEMENTWISE_REGIONS] = PARTS,
    [IR_CLASS_MASKED_EXPERT_ACTIVATION] = PARTS,
    [IR_CLASS_GEMM_SCALE] = PARTS,
    [IR_CLASS_AFFINE_INPUT_FOLD] = PARTS,
    [IR_CLASS_ROUTER_SHARED_GATE_MERGE] = PARTS,
    [IR_CLASS_MOE_GATHER_IN_OPERAND] = PARTS,
    [IR_CLASS_MOE_DEFERRED_FINALIZE] = NATIVE,
    [IR_CLASS_GDN_INPUT_EPILOGUE] = PARTS,
    [IR_CLASS_GDN_DECODE_WHOLE] = PARTS,
    [IR_CLASS_GDN_POST_CONV_PREP] = PARTS,
    [IR_CLASS_LAST_LAYER_ROWS] = PARTS,
    [IR_CLASS_RELU_SQR] = REFUSED("the lane has no ReLU kernel"),
    [IR_CLASS_SOFTCAP] = REFUSED("the lane's attention kernels put no soft cap on their logits"),
    [IR_CLASS_MIXED_BATCH_ATTENTION] =
        REFUSED("the lane attends each sequence of a batch at its own position, never one part-way through a prefill"),
    [IR_CLASS_SPARSE_ATTENTION] = REFUSED("the lane's attention reads every cached row within its span"),
    [IR_CLASS_GROUPED_TOPK] = REFUSED("the lane's router takes a single top-k across all experts"),
    [IR_CLASS_SAMPLING] = REFUSED("the lane chooses the next token by arg-max only"),
    [IR_CLASS_KV_CACHE_QUANT] = REFUSED("the lane keeps its caches as f32 or f16 values, never quantized"),
    [IR_CLASS_HADAMARD_ROTATION] = REFUSED("the lane applies no rotation to its caches"),
    [IR_CLASS_COMPENSATED_RESIDUAL] = REFUSED("the lane adds its residual stream in plain f32, with no compensation"),
    [IR_CLASS_HOST_RESIDENT_KV] =
        REFUSED("the lane's caches stay in device memory; only weight matrices may live in host memory"),
    [IR_CLASS_ATTN_GQA_ROW_PACKING] = REFUSED("the lane's decode attention takes each head's dot products on the "
                                              "CUDA cores"),
    [IR_CLASS_MOE_DIRECT_PAIRS] = REFUSED("the lane sorts a chunk's rows by expert before its expert products"),
    [IR_CLASS_PERSISTENT_LAYER_MEGAKERNEL] = REFUSED("the lane replays a CUDA graph of one launch per op"),
    [IR_CLASS_ALLREDUCE_NORM] = REFUSED("the lane runs on a single device"),
};

/* The lane's knobs behind a shim. */
static const struct lane *lane_of(const struct shim *s) { return s->self; }

/* How the lane links class c: its row of the table, the epilogue classes native only with fuse_quant on. */
static struct shim_support lane_supports(const struct shim *s, enum ir_class c)
{
    static const enum shim_support_kind kinds[] = {
        [LINK_UNLISTED] = SHIM_REFUSE, [LINK_NATIVE] = SHIM_NATIVE, [LINK_PARTS] = SHIM_DECOMPOSE,
        [LINK_EPILOGUE] = SHIM_NATIVE, [LINK_REFUSED] = SHIM_REFUSE};
    if ((unsigned)c >= IR_CLASS_COUNT)
        return (struct shim_support){SHIM_REFUSE, "the lane knows no such class"};
    const struct lane_support *row = &support_table[c];
    if (row->link == LINK_EPILOGUE && !lane_of(s)->fuse_quant)
        return (struct shim_support){SHIM_DECOMPOSE, NULL};
    if (row->link == LINK_UNLISTED)
        return (struct shim_support){SHIM_REFUSE, "the lane's table has no row for this class"};
    return (struct shim_support){kinds[row->link], row->why};
}

/* ── Forms the lane reads ────────────────────────────────────────────────────────────────────────────────── */

/* A product by checkpoint rows (plain, or with its bias folded in). */
static bool rows_product(const struct ir_op *op, const struct ir_graph *g, struct rules_gemv_form *p)
{
    return rules_gemv(op, g, p) && p->weights.kind == RULES_W_ROWS;
}

/* The product a member of a GEMV in parts computes: a product by checkpoint rows, or one that turns its heads in its
 * epilogue (a qkv_head_epilogue, whose first part is the product). */
static bool part_product(const struct ir_op *op, const struct ir_graph *g, struct rules_gemv_form *p)
{
    if (rules_class(op) == IR_CLASS_QKV_HEAD_EPILOGUE)
        return op->nparts > 0 && rows_product(&op->parts[0], g, p);
    return rows_product(op, g, p);
}

/* Output rows a warp of the product's GEMV takes: kernels_rows_a_warp by checkpoint rows, one with rows_a_warp held
 * or over plain values. */
static int per_warp(const struct lane *l, const struct rules_gemv_form *p)
{
    if (p->weights.kind != RULES_W_ROWS || l->held[LANE_HOLD_ROWS_A_WARP])
        return 1;
    return kernels_rows_a_warp(p->weights.format, p->n, p->k, p->m);
}

/* Whether a product multiplies on the int8 tensor cores: past the GEMV's rows, not a batch's, under the quantized
 * numerics, by checkpoint rows. */
static bool on_tensor_cores(const struct lane *l, const struct rules_gemv_form *p)
{
    return p->m > KERNELS_GEMV_ROWS && !l->batch && l->acts != KERNELS_ACTS_DEQUANT &&
           p->weights.kind == RULES_W_ROWS;
}

/* Whether a product lands where a launch in parts can write it: its own buffer, or a table's rows its width wide. */
static bool lands_whole(const struct rules_gemv_form *p)
{
    return !p->dst.has_unit && (p->dst.row == IR_ROWSEL_NONE || p->dst.row_cols == p->n);
}

/* Whether the GEMV takes a product as a part: within its rows (or a batch's), landing whole, its outputs whole warps
 * of rows. */
static bool gemv_mergeable(const struct lane *l, const struct rules_gemv_form *p)
{
    return (p->m <= KERNELS_GEMV_ROWS || l->batch) && lands_whole(p) && p->n % per_warp(l, p) == 0;
}

/* Whether two rotations turn alike: one table pair at one position, one head width, half and pairing, both normed or
 * not. */
static bool same_turn(const struct rules_rope_form *a, const struct rules_rope_form *b)
{
    return a->cos == b->cos && a->sin == b->sin && a->pos == b->pos && a->hd == b->hd && a->half == b->half &&
           a->adjacent == b->adjacent && a->normed == b->normed;
}

/* Whether the members that turn their heads in their epilogue turn them as one launch of rotations would: at most a
 * query's and a key's, alike. */
static bool turned_alike(const struct ir_op *const *members, int32_t n)
{
    struct rules_rope_form first = {0}, ro;
    int sides = 0;
    for (int32_t i = 0; i < n; i++) {
        const struct ir_op *m = members[i];
        if (rules_class(m) != IR_CLASS_QKV_HEAD_EPILOGUE || m->nparts < 2 || !rules_rope(&m->parts[1], &ro))
            continue;
        if (sides++ == 0)
            first = ro;
        else if (!same_turn(&first, &ro))
            return false;
    }
    return sides <= ROPE_SIDES;
}

/* Whether two products read one activation alike: the same tensor, depth and rows, weights of one kind. */
static bool same_activation(const struct rules_gemv_form *a, const struct rules_gemv_form *b)
{
    return a->x == b->x && a->k == b->k && a->m == b->m && rules_weights_equal(a->weights, b->weights);
}

/* Whether the members are one GEMV in parts: at most four, each taken by the GEMV, one activation and format, one
 * number of rows a warp, those turning heads turning them alike. */
static bool gemv_in_parts(const struct lane *l, const struct ir_op *const *members, int32_t n,
                          const struct ir_graph *g)
{
    struct rules_gemv_form first = {0}, p;
    if (n < 1 || n > KERNELS_GEMM_PARTS || !turned_alike(members, n))
        return false;
    for (int32_t i = 0; i < n; i++) {
        if (!part_product(members[i], g, &p))
            return false;
        if (i == 0)
            first = p;
        if (!gemv_mergeable(l, &p) || !same_activation(&p, &first) || per_warp(l, &p) != per_warp(l, &first))
            return false;
    }
    return true;
}

/* Whether the members are one tensor-core GEMM in parts: at most four products by checkpoint rows, each on the tensor
 * cores, landing whole, whole 128-output tiles, one activation and format. */
static bool gemm_in_parts(const struct lane *l, const struct ir_op *const *members, int32_t n,
                          const struct ir_graph *g)
{
    struct rules_gemv_form first = {0}, p;
    if (n < 1 || n > KERNELS_GEMM_PARTS)
        return false;
    for (int32_t i = 0; i < n; i++) {
        if (!rows_product(members[i], g, &p))
            return false;
        if (i == 0)
            first = p;
        if (!on_tensor_cores(l, &p) || !lands_whole(&p) || p.n % KERNELS_GEMM_TILE_N != 0 ||
            !same_activation(&p, &first))
            return false;
    }
    return true;
}

/* A fused op's parts as pointers (at most cap), for the member tests; returns their count. */
static int32_t parts_of(const struct ir_op *op, const struct ir_op **out, int32_t cap)
{
    int32_t n = op->sym == IR_SYM_FUSED ? op->nparts : 0;
    for (int32_t i = 0; i < n && i < cap; i++)
        out[i] = &op->parts[i];
    return n;
}

/* The op's leaves, malloc'd (the caller frees); *n receives their count. */
static const struct ir_op **leaves_of(const struct ir_op *op, int32_t *n)
{
    *n = rules_leaves(op, NULL, 0);
    const struct ir_op **leaves = malloc(sizeof *leaves * (size_t)(*n ? *n : 1));
    if (!leaves)
        abort();
    rules_leaves(op, leaves, *n);
    return leaves;
}

/* ── activation ──────────────────────────────────────────────────────────────────────────────────────────── */

/* Classes whose op quantizes its own result in its epilogue: they read their operands as their first part does. */
static const bool quantizing[IR_CLASS_COUNT] = {
    [IR_CLASS_NORM_QUANT] = true,        [IR_CLASS_ADD_NORM_QUANT] = true, [IR_CLASS_GLU_ACT_MUL_QUANT] = true,
    [IR_CLASS_ELEMENTWISE_QUANT] = true, [IR_CLASS_GDN_OUTPUT_QUANT] = true, [IR_CLASS_GEMV_QUANT] = true,
    [IR_CLASS_ATTN_OUTPUT_QUANT] = true,
};

/* Classes of a product with its epilogue folded in: their first operands are the product's. */
static const bool epilogued[IR_CLASS_COUNT] = {
    [IR_CLASS_GEMV_NORM_EPILOGUE] = true,
    [IR_CLASS_QKV_HEAD_EPILOGUE] = true,
    [IR_CLASS_MOE_DEFERRED_FINALIZE] = true,
};

/* The width of the activation row a product reads at operand 0 — a product by checkpoint rows, a mixture, a gated
 * pair or a merged projection — or 0 when the op is none of these. */
static int64_t projected_width(const struct ir_op *op, const struct ir_graph *g)
{
    struct rules_gemv_form p;
    struct rules_moe_form m;
    if (rows_product(op, g, &p))
        return p.k;
    if (rules_moe(op, &m))
        return m.d;
    int c = rules_class(op);
    if (c == IR_CLASS_GEMV_GATE_UP_GLU || c == IR_CLASS_MERGED_QKV) {
        const struct ir_op *first = rules_first_leaf(op);
        return first && rules_gemv(first, g, &p) && p.weights.kind == RULES_W_ROWS ? p.k : 0;
    }
    return 0;
}

/* Whether the seed's `activation` counts op as a projection at operand 0: a product by checkpoint rows, a mixture, a
 * gated pair or merged projection whatever its first product's weights and width (F24). */
static bool seed_projected(const struct ir_op *op, const struct ir_graph *g)
{
    struct rules_gemv_form p;
    struct rules_moe_form m;
    int c = rules_class(op);
    return rows_product(op, g, &p) || rules_moe(op, &m) || c == IR_CLASS_GEMV_GATE_UP_GLU ||
           c == IR_CLASS_MERGED_QKV;
}

/* The int8 words in which `consumer` reads operand `operand`: a product's activation under the quantized numerics,
 * its rows whole 32-value blocks (the lane quantizes a row a block at a time); 0 otherwise. Under the seed's rules,
 * the seed's answer: any projection's activation, whatever its width and weights (F24). */
static int lane_activation(const struct shim *s, const struct ir_op *consumer, int operand, const struct ir_graph *g)
{
    int c = rules_class(consumer);
    if (c >= 0 && consumer->nparts > 0 && quantizing[c])
        return lane_activation(s, &consumer->parts[0], operand, g);
    if (c >= 0 && consumer->nparts > 0 && epilogued[c])
        return operand < consumer->parts[0].nins ? lane_activation(s, &consumer->parts[0], operand, g) : 0;
    int words = kernels_acts_words(lane_of(s)->acts);
    if (words == 0 || operand != 0)
        return 0;
    if (rules_seed_rules())
        return seed_projected(consumer, g) ? words : 0;
    int64_t width = projected_width(consumer, g);
    return width > 0 && width % KERNELS_QBLOCK == 0 ? words : 0;
}

/* ── fits: the conditions every op meets ─────────────────────────────────────────────────────────────────── */

/* Write a refusal's reason; returns 1 (does not fit). */
static int refuse(char *why, const char *text)
{
    snprintf(why, IR_ERR_LEN, "%s", text);
    return 1;
}

/* Every reason the lane gives, with its stable code `lane.<where>.<condition>`: `supports` a refused class (the
 * class's name), `fits` a condition every op meets, else the class whose own fit test refuses it and which of that
 * test's conditions. The texts are fusecheck's own wording (docs/findings.md, *What fusecheck does not follow*); the
 * codes name the seed's reasons (tests/test_lane.c maps each to its condition in lane_shim.rs). A reason's text here
 * is the text the code writes, byte for byte; the accumulator's is its fixed start. */
static const struct shim_reason lane_reasons[] = {
    {"lane.supports.allreduce_norm",
     "the lane runs on a single device", true, false},
    {"lane.supports.attn_gqa_row_packing",
     "the lane's decode attention takes each head's dot products on the CUDA cores", true, false},
    {"lane.supports.compensated_residual",
     "the lane adds its residual stream in plain f32, with no compensation", true, false},
    {"lane.supports.grouped_topk",
     "the lane's router takes a single top-k across all experts", true, false},
    {"lane.supports.hadamard_rotation",
     "the lane applies no rotation to its caches", true, false},
    {"lane.supports.host_resident_kv",
     "the lane's caches stay in device memory; only weight matrices may live in host memory", true, false},
    {"lane.supports.kv_cache_quant",
     "the lane keeps its caches as f32 or f16 values, never quantized", true, false},
    {"lane.supports.mixed_batch_attention",
     "the lane attends each sequence of a batch at its own position, never one part-way through a "
     "prefill", true, false},
    {"lane.supports.moe_direct_pairs",
     "the lane sorts a chunk's rows by expert before its expert products", true, false},
    {"lane.supports.persistent_layer_megakernel",
     "the lane replays a CUDA graph of one launch per op", true, false},
    {"lane.supports.relu_sqr",
     "the lane has no ReLU kernel", true, false},
    {"lane.supports.sampling",
     "the lane chooses the next token by arg-max only", true, false},
    {"lane.supports.softcap",
     "the lane's attention kernels put no soft cap on their logits", true, false},
    {"lane.supports.sparse_attention",
     "the lane's attention reads every cached row within its span", true, false},
    {"lane.supports.unknown_class",
     "the lane knows no such class", true, false},
    {"lane.supports.unlisted",
     "the lane's table has no row for this class", true, false},
    {"lane.fits.accumulator",
     "an int8 product adds at most ", false, true},
    {"lane.fits.attention_part_pairs",
     "an attention reads its operands in place two values at a time: an even place, an even pitch", false, false},
    {"lane.fits.attention_softcap",
     "the lane's attention kernels put no soft cap on their logits", false, false},
    {"lane.fits.delta_sigmoid",
     "the lane's delta-rule kernel gates its output with SiLU, never a sigmoid", false, false},
    {"lane.fits.head_part_blocks",
     "a per-head product reads its input in place only at whole 32-value blocks", false, false},
    {"lane.fits.mixture_row_param",
     "a mixture writes its result at a fixed row of a table, never at a row a parameter names", false, false},
    {"lane.fits.softcap",
     "the lane has no kernel for a soft-capped tensor", false, false},
    {"lane.fits.unit_output",
     "the lane writes into a part of every unit of a wider tensor only from a norm, a rotation or a per-head "
     "product of that unit's width", false, false},
    {"lane.attn_output_gate.kernels",
     "an attention gates its output only in the decode step's, a short chunk's and a batch's kernels, its "
     "value heads whole pairs", false, false},
    {"lane.attn_output_quant.kernels",
     "an attention quantizes its output only in the decode step's and a short chunk's kernels, its value "
     "heads whole 32-value groups", false, false},
    {"lane.conv_parts.convolutions",
     "a launch of convolutions takes only convolutions", false, false},
    {"lane.conv_parts.one_launch",
     "one launch convolves a step's one row through the SiLU in at most four parts of one tap count, the "
     "normed ones over heads of one width", false, false},
    {"lane.conv_silu_l2norm.heads",
     "a convolution's epilogue norms heads of at most 1024 values, whole warps of them, that divide its "
     "channels", false, false},
    {"lane.embed_norm.gathered",
     "a gather norms in its own blocks the whole rows it gathers", false, false},
    {"lane.gdn_gate_projections.values",
     "the lane projects a delta rule's gates from its activation only by matrices it holds as plain "
     "values", false, false},
    {"lane.gemv_gate_up_glu.pair_tiles",
     "a gated pair on the tensor cores pairs tiles of one format, its hidden width whole 64-column pair "
     "tiles", false, false},
    {"lane.gemv_gate_up_glu.rows",
     "the lane pairs a gate product with an up product only over checkpoint rows", false, false},
    {"lane.gemv_gate_up_glu.two_products",
     "a gated pair is two products", false, false},
    {"lane.gemv_norm_epilogue.block_holds_norm",
     "a projection norms in its last block only a row that block holds in its registers", false, false},
    {"lane.gemv_norm_epilogue.forms",
     "a projection's epilogue norms the add of the projection's result", false, false},
    {"lane.gemv_norm_epilogue.one_row",
     "a projection norms in its last block only the one row it writes whole: a GEMV of a step's one row by "
     "q8_0 or block-format rows", false, false},
    {"lane.gemv_quant.four_rows",
     "a product quantizes its outputs only four rows a warp, in whole 32-value blocks, into its own "
     "buffer", false, false},
    {"lane.glu_act_mul_quant.attention_groups",
     "a gated attention quantizes its output in its store only where its heads, and a batch's rows, are whole "
     "32-value groups", false, false},
    {"lane.glu_act_mul_quant.hidden_blocks",
     "a gated pair quantizes its hidden values only in whole 32-value blocks", false, false},
    {"lane.merged_qkv.in_parts",
     "products of one activation are one launch in parts only at most four, one format: on the tensor cores "
     "whole 128-output tiles, in the GEMV one number of rows a warp", false, false},
    {"lane.moe_deferred_finalize.block_holds_norm",
     "a decode mixture norms in its last down block only a row that block holds in its registers", false, false},
    {"lane.moe_deferred_finalize.down_widths",
     "a decode mixture's down projection reads its experts' widths from its parts", false, false},
    {"lane.moe_deferred_finalize.forms",
     "a mixture's last step norms the add of the mixture's result", false, false},
    {"lane.moe_deferred_finalize.whole_rows",
     "a mixture, alone or summed with one other array, adds and norms in its last step only the whole rows it "
     "writes", false, false},
    {"lane.norm_quant.rms_norm",
     "the lane's norm quantizes its result only from an RMS norm", false, false},
    {"lane.norm_then_add.norm",
     "the lane's norm-then-add kernel norms the sum it writes", false, false},
    {"lane.qkv_head_epilogue.forms",
     "a projection's epilogue turns the heads of the projection's result", false, false},
    {"lane.qkv_head_epilogue.one_row",
     "a projection turns in its epilogue only the heads of the one row it writes whole, a GEMV of a step's "
     "one row, heads at most 256 wide", false, false},
    {"lane.rope_qk_one_launch.one_launch",
     "one launch rotates at most a query and a key of a step's one row, both normed or neither", false, false},
    {"lane.rope_qk_one_launch.rotations",
     "a launch of rotations takes only rotations", false, false},
    {"lane.row_write_quant.blocks",
     "a row set carries its rows' quantized form only for rows of whole 32-value blocks", false, false},
    {"lane.shared_expert_fusion.fold",
     "a mixture folds in only an unbiased SwiGLU shared expert, a step's one row by checkpoint rows, beside "
     "fewer than 32 kept experts", false, false},
};

const struct shim_reason *shim_lane_reasons(int *n)
{
    *n = (int)(sizeof lane_reasons / sizeof lane_reasons[0]);
    return lane_reasons;
}

/* The code of a reason the lane gave: a refused class's (supports) or an op's that does not fit, by its text. */
static const char *lane_reason_code(const struct shim *s, const char *why, bool supports)
{
    (void)s;
    for (size_t i = 0; why && i < sizeof lane_reasons / sizeof lane_reasons[0]; i++) {
        const struct shim_reason *x = &lane_reasons[i];
        bool same = x->prefix ? strncmp(why, x->text, strlen(x->text)) == 0 : strcmp(why, x->text) == 0;
        if (same && x->supports == supports)
            return x->code;
    }
    return NULL;
}

/* The int8 products a leaf adds in one accumulator when it reads a quantized activation (its depth; a mixture's
 * widest of its width and its experts'), or 0 when it reads none. */
static int64_t accumulated_terms(const struct shim *s, const struct ir_op *leaf, const struct ir_graph *g)
{
    if (leaf->sym != IR_SYM_PRIM || lane_activation(s, leaf, 0, g) == 0)
        return 0;
    if (leaf->spec.kind == IR_KIND_MATMUL)
        return leaf->spec.u.matmul.k;
    if (leaf->spec.kind == IR_KIND_MOE)
        return leaf->spec.u.moe.d > leaf->spec.u.moe.dff ? leaf->spec.u.moe.d : leaf->spec.u.moe.dff;
    return 0;
}

/* Whether every product that reads a quantized activation adds no more int8 products than its 32-bit accumulator
 * holds (the accumulator check). */
static int accumulators_fit(const struct shim *s, const struct ir_op *const *leaves, int32_t n,
                            const struct ir_graph *g, char *why)
{
    struct kernels_accumulator acc = kernels_accumulator(kernels_mode(lane_of(s)->acts));
    for (int32_t i = 0; i < n; i++) {
        int64_t terms = accumulated_terms(s, leaves[i], g);
        if (terms > acc.terms) {
            snprintf(why, IR_ERR_LEN,
                     "an int8 product adds at most %lld terms in its %d-bit accumulator; this one adds %lld",
                     (long long)acc.terms, acc.bits, (long long)terms);
            return 1;
        }
    }
    return 0;
}

/* An attention leaf with a soft cap on its logits. */
static bool capped_attention(const struct ir_op *leaf)
{
    return rules_is(leaf, IR_KIND_ATTENTION) && leaf->spec.u.attention.softcap.has;
}

/* A soft-capped tensor. */
static bool capped_tensor(const struct ir_op *leaf) { return rules_is(leaf, IR_KIND_SOFTCAP); }

/* A gated delta rule gating its output with a sigmoid. */
static bool sigmoid_delta(const struct ir_op *leaf)
{
    return rules_is(leaf, IR_KIND_GATED_DELTA) && leaf->spec.u.gated_delta.gate == IR_GATE_SIGMOID;
}

/* A leaf placing its result into a part of every unit of a wider tensor that is not a norm, a rotation or a per-head
 * product of that unit's width. */
static bool foreign_unit(const struct ir_op *leaf)
{
    int64_t units, width;
    return leaf->dst.has_unit && !(rules_unit_output(leaf, &units, &width) && width == leaf->dst.unit.width);
}

/* Whether leaf of kind k reads some operand in place at a pitch or offset not a multiple of `step`. */
static bool reads_part_off(const struct ir_op *leaf, enum ir_kind k, int64_t step)
{
    if (!rules_is(leaf, k))
        return false;
    for (int32_t i = 0; i < leaf->nins; i++)
        if (leaf->access[i].strided && (leaf->access[i].s.pitch % step != 0 || leaf->access[i].s.offset % step != 0))
            return true;
    return false;
}

/* A per-head product reading a part in place off whole 32-value blocks. */
static bool head_part_off_block(const struct ir_op *leaf)
{
    return reads_part_off(leaf, IR_KIND_HEAD_MATMUL, KERNELS_QBLOCK);
}

/* An attention reading an operand in place from an odd place or at an odd pitch. */
static bool attention_part_odd(const struct ir_op *leaf) { return reads_part_off(leaf, IR_KIND_ATTENTION, 2); }

/* A leaf the lane's kernels never take, and why. */
struct leaf_misfit {
    bool (*misfits)(const struct ir_op *leaf);
    const char *why;
};

static const struct leaf_misfit leaf_misfits[] = {
    {capped_attention, "the lane's attention kernels put no soft cap on their logits"},
    {capped_tensor, "the lane has no kernel for a soft-capped tensor"},
    {sigmoid_delta, "the lane's delta-rule kernel gates its output with SiLU, never a sigmoid"},
    {foreign_unit, "the lane writes into a part of every unit of a wider tensor only from a norm, a rotation or a "
                   "per-head product of that unit's width"},
    {head_part_off_block, "a per-head product reads its input in place only at whole 32-value blocks"},
    {attention_part_odd, "an attention reads its operands in place two values at a time: an even place, an even "
                         "pitch"},
};

/* Whether every leaf is one the lane's kernels take. */
static int leaves_fit(const struct ir_op *const *leaves, int32_t n, char *why)
{
    for (int32_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof leaf_misfits / sizeof leaf_misfits[0]; k++)
            if (leaf_misfits[k].misfits(leaves[i]))
                return refuse(why, leaf_misfits[k].why);
    return 0;
}

/* Whether a mixture writes its result where its kernel can: never at a row a parameter names. */
static int mixture_row_fits(const struct ir_op *op, char *why)
{
    struct rules_moe_form m;
    if (rules_moe(op, &m) && op->dst.row == IR_ROWSEL_PARAM)
        return refuse(why, "a mixture writes its result at a fixed row of a table, never at a row a parameter "
                           "names");
    return 0;
}

/* ── fits: per class ─────────────────────────────────────────────────────────────────────────────────────── */

/* A class's own fit test: 0 when op fits, else 1 with why. */
typedef int (*class_fit)(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why);

/* norm_then_add: the kernel norms the sum it writes. */
static int fit_norm_then_add(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    struct rules_norm_form n;
    (void)s;
    (void)g;
    return rules_norm(op, &n) ? 0 : refuse(why, "the lane's norm-then-add kernel norms the sum it writes");
}

/* gemv_norm_epilogue: a GEMV of a step's one row by checkpoint rows norms, in its last block, the add of the row it
 * writes whole — where that block holds the norm. */
static int fit_gemv_norm_epilogue(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    const struct lane *l = lane_of(s);
    struct rules_gemv_form p;
    struct rules_norm_form n;
    if (op->nparts < 2 || !rules_gemv(&op->parts[0], g, &p) || !rules_norm(&op->parts[1], &n))
        return refuse(why, "a projection's epilogue norms the add of the projection's result");
    bool rows = p.weights.kind == RULES_W_ROWS &&
                (p.weights.format == IR_FMT_Q8_0 || kernels_decodes(p.weights.format));
    bool one_gemv = rows && p.m == 1 && !l->batch && ir_dst_is_own(&p.dst);
    bool whole_row = !n.has_part && n.rows == p.m && n.cols == p.n && ir_dst_is_own(&op->parts[1].dst);
    if (!(one_gemv && whole_row))
        return refuse(why, "a projection norms in its last block only the one row it writes whole: a GEMV of a "
                           "step's one row by q8_0 or block-format rows");
    /* A q8_0 projection's block is the norm kernel's own; a block format's is eight warps or four. */
    int64_t threads = p.weights.format == IR_FMT_Q8_0 ? kernels_norm_threads(n.cols)
                                                      : kernels_gemv_blk_norm_threads(per_warp(l, &p));
    return kernels_block_holds_its_norm(threads, n.cols)
               ? 0
               : refuse(why, "a projection norms in its last block only a row that block holds in its registers");
}

/* The width of a folded shared expert into *sdff (0 for a mixture alone): the depth of the fold's third part, its
 * down projection where the fold's members ran mixture, gate-and-up, down. False when that part is no product: the
 * down launch cannot read the expert's width from its parts. */
static bool shared_dff(const struct ir_op *op, const struct ir_graph *g, int64_t *sdff)
{
    struct rules_gemv_form p;
    *sdff = 0;
    if (rules_class(op) != IR_CLASS_SHARED_EXPERT_FUSION)
        return true;
    if (op->nparts < 3 || !rules_gemv(&op->parts[2], g, &p))
        return false;
    *sdff = p.k;
    return true;
}

/* moe_deferred_finalize: a mixture, alone or summed with one array, adds and norms in its last step the whole rows
 * it writes; the decode step's down block must hold that norm. */
static int fit_moe_deferred_finalize(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    const struct lane *l = lane_of(s);
    struct rules_moe_form m;
    struct rules_norm_form n;
    if (op->nparts < 2 || !rules_moe(&op->parts[0], &m) || !rules_norm(&op->parts[op->nparts - 1], &n))
        return refuse(why, "a mixture's last step norms the add of the mixture's result");
    bool summed = op->nparts == 2 || (rules_is(&op->parts[1], IR_KIND_ELEMENTWISE) &&
                                      op->parts[1].spec.u.elementwise.op == IR_EW_ADD);
    bool whole_rows = !n.has_part && n.rows == m.rows && n.cols == m.d && n.own && ir_dst_is_own(&m.dst);
    if (!(summed && whole_rows))
        return refuse(why, "a mixture, alone or summed with one other array, adds and norms in its last step only "
                           "the whole rows it writes");
    if (m.rows != 1 || l->batch)
        return 0;
    int64_t sdff;
    if (!shared_dff(&op->parts[0], g, &sdff))
        return refuse(why, "a decode mixture's down projection reads its experts' widths from its parts");
    struct kernels_moe_down down = kernels_moe_down_launch(m.d, m.dff, m.k, sdff);
    return kernels_block_holds_its_norm(down.threads, m.d)
               ? 0
               : refuse(why, "a decode mixture norms in its last down block only a row that block holds in its "
                             "registers");
}

/* embed_norm: a gather norms, in its own blocks, the whole rows it gathers. */
static int fit_embed_norm(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    struct rules_norm_form n;
    (void)s;
    (void)g;
    if (op->nparts < 2)
        return refuse(why, "a gather norms in its own blocks the whole rows it gathers");
    const struct ir_op *first = &op->parts[0];
    bool gathered = rules_is(first, IR_KIND_ROWS_GATHER) || rules_is(first, IR_KIND_ROW_GATHER) ||
                    rules_class(first) == IR_CLASS_EMBED_SCALE;
    bool normed = rules_norm(&op->parts[op->nparts - 1], &n) && n.own;
    return gathered && normed ? 0 : refuse(why, "a gather norms in its own blocks the whole rows it gathers");
}

/* qkv_head_epilogue: a GEMV of a step's one row turns, in its epilogue, the heads of the row it writes whole. */
static int fit_qkv_head_epilogue(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    const struct lane *l = lane_of(s);
    struct rules_gemv_form p;
    struct rules_rope_form ro;
    if (op->nparts < 2 || !rows_product(&op->parts[0], g, &p) || !rules_rope(&op->parts[1], &ro))
        return refuse(why, "a projection's epilogue turns the heads of the projection's result");
    bool one_row = p.m == 1 && !l->batch && gemv_mergeable(l, &p) && ir_dst_is_own(&p.dst);
    bool its_heads = !ro.has_part && ro.heads == ro.per_row && p.n == ro.heads * ro.hd && ro.hd <= KERNELS_ROPE_HEAD;
    return one_row && its_heads ? 0
                                : refuse(why, "a projection turns in its epilogue only the heads of the one row it "
                                              "writes whole, a GEMV of a step's one row, heads at most 256 wide");
}

/* The size of the first leaf of kind k (via get), or -1. */
static int64_t first_leaf_size(const struct ir_op *op, enum ir_kind k, int64_t (*get)(const struct ir_op *leaf))
{
    int32_t n;
    const struct ir_op **leaves = leaves_of(op, &n);
    int64_t v = -1;
    for (int32_t i = 0; i < n && v < 0; i++)
        if (rules_is(leaves[i], k))
            v = get(leaves[i]);
    free(leaves);
    return v;
}

/* A convolution's channels; an L2 norm's width. */
static int64_t conv_chan(const struct ir_op *leaf) { return leaf->spec.u.causal_conv.chan; }
static int64_t l2_cols(const struct ir_op *leaf) { return leaf->spec.u.l2_norm.cols; }

/* conv_silu_l2norm: the epilogue norms heads of at most 1024 values, whole warps, that divide the channels. */
static int fit_conv_silu_l2norm(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    (void)s;
    (void)g;
    int64_t chan = first_leaf_size(op, IR_KIND_CAUSAL_CONV, conv_chan);
    int64_t cols = first_leaf_size(op, IR_KIND_L2_NORM, l2_cols);
    /* Both leaves found (-1: none); no channels at all divide, as the seed has it. cols > 0 is a guard of ours: the
     * seed takes the channels modulo a zero width there and would crash. */
    bool ok = chan >= 0 && cols > 0 && cols <= CONV_L2_COLS && cols % 32 == 0 && chan % cols == 0;
    return ok ? 0
              : refuse(why, "a convolution's epilogue norms heads of at most 1024 values, whole warps of them, that "
                            "divide its channels");
}

/* gemv_gate_up_glu: a gated pair is one launch as GEMVs (a step's rows, a batch's, or the dequantized numerics), or
 * one tensor-core GEMM of the gate's and up's tiles side by side where their formats agree and the hidden width is
 * whole pair tiles. */
static int fit_gemv_gate_up_glu(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    const struct lane *l = lane_of(s);
    struct rules_gemv_form pr[2], p;
    int found = 0;
    for (int32_t i = 0; i < op->nparts && found < 2; i++)
        if (rules_gemv(&op->parts[i], g, &p))
            pr[found++] = p;
    if (found < 2)
        return refuse(why, "a gated pair is two products");
    if (pr[0].weights.kind != RULES_W_ROWS || pr[1].weights.kind != RULES_W_ROWS)
        return refuse(why, "the lane pairs a gate product with an up product only over checkpoint rows");
    bool gemv_rows = pr[0].m <= KERNELS_GEMV_ROWS || l->acts == KERNELS_ACTS_DEQUANT || l->batch;
    bool paired = !gemv_rows && rules_weights_equal(pr[0].weights, pr[1].weights) &&
                  pr[0].n % (KERNELS_GEMM_TILE_N / 2) == 0;
    return gemv_rows || paired ? 0
                               : refuse(why, "a gated pair on the tensor cores pairs tiles of one format, its hidden "
                                             "width whole 64-column pair tiles");
}

/* Whether two epsilons are one value bit for bit (the seed compares their bits: a NaN is itself, -0 is not 0). */
static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* conv_parts: one launch convolves a step's one row through the SiLU in at most four parts of one tap count, the
 * normed ones over heads of one width. Every part must be a convolution first (the seed's first reason). */
static int fit_conv_parts(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    static const char *const text = "one launch convolves a step's one row through the SiLU in at most four parts of "
                                    "one tap count, the normed ones over heads of one width";
    struct rules_conv_form first = {0}, c, normed = {0};
    bool any_normed = false;
    (void)s;
    (void)g;
    for (int32_t i = 0; i < op->nparts; i++) /* the part types first, then the count, as the seed asks */
        if (!rules_conv(&op->parts[i], &c))
            return refuse(why, "a launch of convolutions takes only convolutions");
    if (op->nparts > CONV_PARTS)
        return refuse(why, text);
    for (int32_t i = 0; i < op->nparts; i++) {
        rules_conv(&op->parts[i], &c);
        if (i == 0)
            first = c;
        if (c.rows != 1 || !c.silu || c.taps != first.taps)
            return refuse(why, text);
        if (c.l2 && any_normed && (c.l2_cols != normed.l2_cols || !same_bits(c.l2_eps, normed.l2_eps)))
            return refuse(why, text);
        if (c.l2 && !any_normed) {
            normed = c;
            any_normed = true;
        }
    }
    return 0;
}

/* gdn_gate_projections: the delta rule's gates come from its activation only by matrices held as values. */
static int fit_gdn_gate_projections(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    struct rules_gemv_form p;
    (void)s;
    for (int32_t i = 0; i < op->nparts; i++)
        if (rules_gemv(&op->parts[i], g, &p) && p.weights.kind != RULES_W_VALUES)
            return refuse(why, "the lane projects a delta rule's gates from its activation only by matrices it holds "
                               "as plain values");
    return 0;
}

/* shared_expert_fusion: a mixture folds its unbiased SwiGLU shared expert — a step's one row by checkpoint rows —
 * into a block of fewer than 32 warps of kept experts. */
static int fit_shared_expert_fusion(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    struct rules_moe_form m;
    struct rules_gemv_form p;
    int32_t n;
    (void)s;
    const struct ir_op **leaves = leaves_of(op, &n);
    bool swiglu = false, biased = false, rows = true;
    for (int32_t i = 0; i < n; i++) {
        swiglu |= rules_is(leaves[i], IR_KIND_SWIGLU);
        biased |= rules_is(leaves[i], IR_KIND_ELEMENTWISE) && leaves[i]->spec.u.elementwise.op == IR_EW_ADD &&
                  leaves[i]->spec.u.elementwise.row > 0;
        if (rules_gemv(leaves[i], g, &p))
            rows &= p.weights.kind == RULES_W_ROWS && p.m == 1;
    }
    free(leaves);
    bool ok = rules_moe(op, &m) && m.k < MOE_WARPS && m.rows == 1 && m.act == IR_MOE_SWIGLU && swiglu && !biased &&
              rows;
    return ok ? 0
              : refuse(why, "a mixture folds in only an unbiased SwiGLU shared expert, a step's one row by checkpoint "
                            "rows, beside fewer than 32 kept experts");
}

/* rope_qk_one_launch: one launch rotates at most a query and a key of a step's one row, both normed or neither.
 * Every part must be a rotation first (the seed's first reason). */
static int fit_rope_qk_one_launch(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    struct rules_rope_form first = {0}, ro;
    (void)s;
    (void)g;
    for (int32_t i = 0; i < op->nparts; i++) /* the part types first, then the count, as the seed asks */
        if (!rules_rope(&op->parts[i], &ro))
            return refuse(why, "a launch of rotations takes only rotations");
    if (op->nparts > ROPE_SIDES)
        return refuse(why, "one launch rotates at most a query and a key of a step's one row, both normed or neither");
    for (int32_t i = 0; i < op->nparts; i++) {
        rules_rope(&op->parts[i], &ro);
        if (i == 0)
            first = ro;
        if (ro.heads != ro.per_row || ro.normed != first.normed)
            return refuse(why, "one launch rotates at most a query and a key of a step's one row, both normed or "
                               "neither");
    }
    return 0;
}

/* attn_output_gate: the gate rides the stores of the decode step's, a short chunk's and a batch's sequences'
 * attention kernels, a pair of values a thread; a chunk in tiles gates apart. */
static int fit_attn_output_gate(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    int attentions = 0;
    bool ok = true;
    (void)s;
    (void)g;
    for (int32_t i = 0; i < op->nparts; i++)
        if (rules_is(&op->parts[i], IR_KIND_ATTENTION)) {
            const struct ir_attention *a = &op->parts[i].spec.u.attention;
            attentions++;
            ok &= a->rows <= KERNELS_GEMV_ROWS && a->vd % 2 == 0;
        }
    return attentions > 0 && ok ? 0
                                : refuse(why, "an attention gates its output only in the decode step's, a short "
                                              "chunk's and a batch's kernels, its value heads whole pairs");
}

/* row_write_quant: a row set carries its rows' quantized form a block at a time: rows of whole 32-value blocks. */
static int fit_row_write_quant(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    (void)s;
    (void)g;
    bool ok = op->nparts > 0 && rules_is(&op->parts[0], IR_KIND_SET_ROW) &&
              op->parts[0].spec.u.set_row.cols % KERNELS_QBLOCK == 0;
    return ok ? 0 : refuse(why, "a row set carries its rows' quantized form only for rows of whole 32-value blocks");
}

/* glu_act_mul_quant over a gated attention: each sequence quantizes its gated row in its store, so its heads (and a
 * batch's rows) are whole 32-value groups. */
static int fit_gated_attention_quant(const struct ir_op *gated, char *why)
{
    for (int32_t i = 0; i < gated->nparts; i++) {
        const struct ir_op *p = &gated->parts[i];
        bool whole = !(rules_is(p, IR_KIND_ATTENTION) && p->spec.u.attention.vd % KERNELS_QBLOCK != 0) &&
                     !(rules_is(p, IR_KIND_SET_ROW) && p->spec.u.set_row.cols % KERNELS_QBLOCK != 0);
        if (!whole)
            return refuse(why, "a gated attention quantizes its output in its store only where its heads, and a "
                               "batch's rows, are whole 32-value groups");
    }
    return 0;
}

/* glu_act_mul_quant over a gated pair: its hidden values quantize in whole 32-value blocks. */
static int fit_gated_pair_quant(const struct ir_op *pair, const struct ir_graph *g, char *why)
{
    struct rules_gemv_form p;
    for (int32_t i = 0; i < pair->nparts; i++)
        if (rules_gemv(&pair->parts[i], g, &p))
            return p.n % KERNELS_QBLOCK == 0
                       ? 0
                       : refuse(why, "a gated pair quantizes its hidden values only in whole 32-value blocks");
    return refuse(why, "a gated pair quantizes its hidden values only in whole 32-value blocks");
}

/* glu_act_mul_quant: by what is gated (an attention's output, a pair of products, or a plain gated product). */
static int fit_glu_act_mul_quant(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    (void)s;
    if (op->nparts < 1)
        return 0;
    if (rules_class(&op->parts[0]) == IR_CLASS_ATTN_OUTPUT_GATE)
        return fit_gated_attention_quant(&op->parts[0], why);
    if (rules_class(&op->parts[0]) == IR_CLASS_GEMV_GATE_UP_GLU)
        return fit_gated_pair_quant(&op->parts[0], g, why);
    return 0;
}

/* attn_output_quant: the decode step's and a short chunk's attention kernels store their output a pair a thread,
 * each 32-value group in one half-warp; a chunk in tiles quantizes apart. */
static int fit_attn_output_quant(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    (void)s;
    (void)g;
    bool ok = op->nparts > 0 && rules_is(&op->parts[0], IR_KIND_ATTENTION) &&
              op->parts[0].spec.u.attention.rows <= KERNELS_GEMV_ROWS &&
              op->parts[0].spec.u.attention.vd % KERNELS_QBLOCK == 0;
    return ok ? 0
              : refuse(why, "an attention quantizes its output only in the decode step's and a short chunk's kernels, "
                            "its value heads whole 32-value groups");
}

/* norm_quant: only an RMS norm (alone, or closing an embedding's gather) quantizes its result. */
static int fit_norm_quant(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    struct rules_norm_form n;
    (void)s;
    (void)g;
    const struct ir_op *first = op->nparts > 0 ? &op->parts[0] : NULL;
    bool normed = first && (rules_norm(first, &n) ||
                            (rules_class(first) == IR_CLASS_EMBED_NORM && first->nparts > 0 &&
                             rules_norm(&first->parts[first->nparts - 1], &n)));
    return normed ? 0 : refuse(why, "the lane's norm quantizes its result only from an RMS norm");
}

/* gemv_quant: a product quantizes its outputs only four rows a warp, whole blocks of them, into its own buffer. */
static int fit_gemv_quant(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    struct rules_gemv_form p;
    bool ok = op->nparts > 0 && rules_gemv(&op->parts[0], g, &p) && per_warp(lane_of(s), &p) == 4 &&
              p.n % KERNELS_QBLOCK == 0 && ir_dst_is_own(&p.dst);
    return ok ? 0
              : refuse(why, "a product quantizes its outputs only four rows a warp, in whole 32-value blocks, into "
                            "its own buffer");
}

/* merged_qkv: products of one activation are one launch in parts — on the tensor cores, or as a GEMV in parts (the
 * lane's own rule, not counted on when gemv_parts is held). */
static int fit_merged_qkv(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    const struct lane *l = lane_of(s);
    const struct ir_op *members[KERNELS_GEMM_PARTS];
    int32_t n = parts_of(op, members, KERNELS_GEMM_PARTS);
    bool ok = n <= KERNELS_GEMM_PARTS &&
              (gemm_in_parts(l, members, n, g) || (!l->held[LANE_HOLD_GEMV_PARTS] && gemv_in_parts(l, members, n, g)));
    return ok ? 0
              : refuse(why, "products of one activation are one launch in parts only at most four, one format: on "
                            "the tensor cores whole 128-output tiles, in the GEMV one number of rows a warp");
}

/* Each class's own fit test, indexed by class (NULL: nothing beyond the common conditions). */
static const class_fit class_fits[IR_CLASS_COUNT] = {
    [IR_CLASS_NORM_THEN_ADD] = fit_norm_then_add,
    [IR_CLASS_GEMV_NORM_EPILOGUE] = fit_gemv_norm_epilogue,
    [IR_CLASS_MOE_DEFERRED_FINALIZE] = fit_moe_deferred_finalize,
    [IR_CLASS_EMBED_NORM] = fit_embed_norm,
    [IR_CLASS_QKV_HEAD_EPILOGUE] = fit_qkv_head_epilogue,
    [IR_CLASS_CONV_SILU_L2NORM] = fit_conv_silu_l2norm,
    [IR_CLASS_GEMV_GATE_UP_GLU] = fit_gemv_gate_up_glu,
    [IR_CLASS_CONV_PARTS] = fit_conv_parts,
    [IR_CLASS_GDN_GATE_PROJECTIONS] = fit_gdn_gate_projections,
    [IR_CLASS_SHARED_EXPERT_FUSION] = fit_shared_expert_fusion,
    [IR_CLASS_ROPE_QK_ONE_LAUNCH] = fit_rope_qk_one_launch,
    [IR_CLASS_ATTN_OUTPUT_GATE] = fit_attn_output_gate,
    [IR_CLASS_ROW_WRITE_QUANT] = fit_row_write_quant,
    [IR_CLASS_GLU_ACT_MUL_QUANT] = fit_glu_act_mul_quant,
    [IR_CLASS_ATTN_OUTPUT_QUANT] = fit_attn_output_quant,
    [IR_CLASS_NORM_QUANT] = fit_norm_quant,
    [IR_CLASS_GEMV_QUANT] = fit_gemv_quant,
    [IR_CLASS_MERGED_QKV] = fit_merged_qkv,
};

/* 0 when op fits the lane's kernels: the accumulator check, every leaf's conditions, a mixture's row, then its
 * class's own test. */
static int lane_fits(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    int32_t n;
    const struct ir_op **leaves = leaves_of(op, &n);
    int bad = accumulators_fit(s, leaves, n, g, why) || leaves_fit(leaves, n, why) || mixture_row_fits(op, why);
    free(leaves);
    if (bad)
        return 1;
    class_fit fit = op->sym == IR_SYM_FUSED && (unsigned)op->cls < IR_CLASS_COUNT ? class_fits[op->cls] : NULL;
    return fit ? fit(s, op, g, why) : 0;
}

/* ── numerics ────────────────────────────────────────────────────────────────────────────────────────────── */

/* How attention takes its operands under each activation mode. */
static const char *const attention_numerics[KERNELS_ACTS_COUNT] = {
    [KERNELS_ACTS_DEQUANT] = "f32 queries, keys, values and weights",
    [KERNELS_ACTS_INT8] = "a chunk past the GEMV's rows on the f16 tensor cores (operands and weights rounded to "
                          "f16); decode and short chunks in f32",
    [KERNELS_ACTS_INT8X2] = "a chunk past the GEMV's rows on the int8 tensor cores (rows in two words, weights in "
                            "three); decode and short chunks in f32",
};

/* The lane's contract: its activations, cache and state precision, its attention numerics, exact fused ops and 32-bit
 * accumulators. */
static int lane_numerics(const struct shim *s, struct shim_contract *out)
{
    static const char *const acts_words[KERNELS_ACTS_COUNT] = {
        [KERNELS_ACTS_DEQUANT] = "f32 activations (dequantized weights)",
        [KERNELS_ACTS_INT8] = "int8 activations (one word a value, blocks of 32)",
        [KERNELS_ACTS_INT8X2] = "int8x2 activations (two words a value, blocks of 32)",
    };
    const struct lane *l = lane_of(s);
    memset(out, 0, sizeof *out);
    snprintf(out->point, sizeof out->point, "%s: %s, %s cache, %s state", s->name, acts_words[l->acts],
             keep_names[l->cache], keep_names[l->state]);
    snprintf(out->attention, sizeof out->attention, "%s", attention_numerics[l->acts]);
    out->activation_words = kernels_acts_words(l->acts);
    out->cache = l->cache;
    out->state = l->state;
    out->fused_bound = 0.0;
    out->accumulator_bits = kernels_accumulator(kernels_mode(l->acts)).bits;
    return 1;
}

/* ── The lane's rules ────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_latent_expanded[] = {IR_CLASS_MLA};
static const enum ir_class builds_gemv_parts[] = {IR_CLASS_MERGED_QKV};

/* latent_expanded: every member moves to the attention's slot — the query's and the values' makers down, the value
 * half's product up — passing nothing that writes what it reads or touches what it writes; what the members before
 * the product compute is read only inside. */
static const struct rules_atom guards_latent_expanded[] = {
    {.name = "made_for", .kind = RULES_ATOM_READ_ONLY_WITHIN, .a = RULES_ROLE_EACH, .g = RULES_ROLE_WITHIN,
     .forall = RULES_ROLE_PRODUCERS, RULES_WIDENED_BY("F4")},
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_ADDED_BY("F14")},
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_ANCHOR, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_ADDED_BY("F18")},
};

/* gemv_parts: each later product moves up to the first one's slot, crossing nothing outside the group that writes
 * what it reads or touches what it writes. */
static const struct rules_atom guards_gemv_parts[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

static const struct rules_rule rule_latent_expanded = {
    "latent_expanded", RULES_GROUP, builds_latent_expanded, 1, NULL, guards_latent_expanded,
    NGUARDS(guards_latent_expanded), RULES_MOTION_GROUP_AT_ANCHOR,
    "a wide chunk's absorbed latent attention — the query's slices, its absorbed and rotated parts joined, the cache's "
    "latent values, the attention and the value half's expansion — runs as one op the lane expands per cached row: "
    "each member made only for the others moves down past nothing that writes what it reads or touches what it writes"};

static const struct rules_rule rule_gemv_parts = {
    "gemv_parts", RULES_GROUP, builds_gemv_parts, 1, NULL, guards_gemv_parts, NGUARDS(guards_gemv_parts),
    RULES_MOTION_HOIST_TO_FIRST,
    "a step's products of one activation within the GEMV's rows run as one GEMV over their outputs side by side at "
    "the first one's place: each later product moves up past nothing that writes what it reads or touches what it "
    "writes"};

/* Whether op reads every operand whole. */
static bool all_whole(const struct ir_op *op)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (op->access[k].strided)
            return false;
    return true;
}

/* The live op at the producer slot of t when it is a whole-reading primitive of kind k into its own buffer, read by
 * slot `reader` alone; its slot goes to *at. */
static const struct ir_op *sole_feed(const struct rules_rewriter *r, ir_tid t, enum ir_kind k, int32_t reader,
                                     int32_t *at)
{
    *at = ir_facts_producer(r->s, t);
    const struct ir_op *op = *at >= 0 ? rules_slot(r, *at) : NULL;
    if (!op || !rules_is(op, k) || !ir_dst_is_own(&op->dst) || !all_whole(op) || !rules_sole_reader(r, t, reader))
        return NULL;
    return op;
}

/* The slice at the producer slot of t, read by slot `reader` alone (a head slice or a literal row taken). */
static bool sole_slice(const struct rules_rewriter *r, ir_tid t, int32_t reader, int32_t *at,
                       struct rules_slice_form *f)
{
    *at = ir_facts_producer(r->s, t);
    const struct ir_op *op = *at >= 0 ? rules_slot(r, *at) : NULL;
    return op && rules_slice(op, f) && rules_sole_reader(r, t, reader);
}

/* A wide chunk's absorbed latent attention: the slots of its members and its sizes. */
struct latent {
    int32_t qslice, absorb, join, values, attend, expand;
    int64_t heads, kw, lora, nope, len, rows, vd;
};

/* Whether the attention at slot i reads a query and values shaped as an absorbed latent attention does: values the
 * latent part of every cache row, the query each head's absorbed part joined with its rotated part. */
static bool latent_inputs(const struct rules_rewriter *r, int32_t i, struct latent *m)
{
    const struct ir_op *op = rules_slot(r, i);
    ir_tid q = op->ins[0], kc = op->ins[1], vc = op->ins[2];
    int64_t rope = m->kw - m->lora;
    struct rules_slice_form v, qs, rs;
    if (!sole_slice(r, vc, i, &m->values, &v) || v.x != kc || v.every != m->kw || v.from != 0 || v.width != m->lora)
        return false;
    const struct ir_op *join = sole_feed(r, q, IR_KIND_JOIN, i, &m->join);
    /* Each head's widths as the seed reads them, wa / heads and wb / heads (equal to comparing wa with heads·lora on
     * any graph the validator takes, which asks wa and wb be whole heads); heads > 0 is ours: the seed divides. */
    if (!join || join->spec.u.join.rows != m->rows || join->spec.u.join.heads != m->heads || m->heads <= 0 ||
        join->spec.u.join.wa / m->heads != m->lora || join->spec.u.join.wb / m->heads != rope)
        return false;
    ir_tid ql = join->ins[0], qpp = join->ins[1];
    const struct ir_op *absorb = sole_feed(r, ql, IR_KIND_HEAD_MATMUL, m->join, &m->absorb);
    if (!absorb || rules_weights_of(r->g, absorb->ins[1]).kind != RULES_W_ROWS)
        return false;
    const struct ir_head_matmul *hm = &absorb->spec.u.head_matmul;
    if (hm->m != m->rows || hm->heads != m->heads || hm->b != m->lora)
        return false;
    m->nope = hm->a;
    int64_t qk = m->nope + rope;
    if (!sole_slice(r, absorb->ins[0], m->absorb, &m->qslice, &qs) || qs.groups != m->rows * m->heads ||
        qs.every != qk || qs.from != 0 || qs.width != m->nope)
        return false;
    int32_t ri, ei;
    const struct ir_op *rot = sole_feed(r, qpp, IR_KIND_ROPE, m->join, &ri);
    ei = rot ? ir_facts_producer(r->s, rot->ins[0]) : -1;
    return ei >= 0 && rules_slice(rules_slot(r, ei), &rs) && rs.x == qs.x && rs.every == qk && rs.from == m->nope &&
           rs.width == rope;
}

/* Whether slot i holds a wide chunk's absorbed latent attention whose result only the value half's expansion (a
 * per-head product by transposed checkpoint rows) reads; fills m. */
static bool latent_shape(const struct rules_rewriter *r, int32_t i, struct latent *m)
{
    const struct ir_op *op = rules_slot(r, i);
    if (!op || !rules_is(op, IR_KIND_ATTENTION) || !all_whole(op) || op->nins < 3)
        return false;
    const struct ir_attention *a = &op->spec.u.attention;
    if (a->sinks || a->window > 0 || a->kv != 1 || a->rows <= KERNELS_GEMV_ROWS || a->vd >= a->hd ||
        a->pos.kind == IR_RIDX_LITERAL)
        return false;
    *m = (struct latent){.attend = i, .heads = a->h, .kw = a->hd, .lora = a->vd, .len = a->l, .rows = a->rows};
    int32_t ci;
    if (ir_facts_readers(r->s, op->out, &ci, 1) != 1)
        return false;
    const struct ir_op *expand = rules_slot(r, ci);
    if (!expand || !rules_is(expand, IR_KIND_HEAD_MATMUL) || !all_whole(expand) || !ir_dst_is_own(&expand->dst))
        return false;
    ir_tid wvb = expand->ins[1];
    if (rules_weights_of(r->g, wvb).kind != RULES_W_ROWS || !r->g->tensors[wvb].transposed)
        return false;
    const struct ir_head_matmul *c = &expand->spec.u.head_matmul;
    if (c->m != m->rows || c->heads != m->heads || c->a != m->lora)
        return false;
    m->expand = ci;
    m->vd = c->b;
    return latent_inputs(r, i, m);
}

/* Whether the lane runs the latent attention expanded in tiles on this chip: both halves of the expansion over the
 * cached rows and the attention of each head's own keys and values, one block's shared memory holding a head. */
static bool latent_in_tiles(const struct lane *l, const struct latent *m)
{
    enum kernels_mode mode = kernels_mode(l->acts);
    int64_t qk = m->nope + (m->kw - m->lora);
    int64_t span = kernels_attended_span(m->len, 0);
    int64_t smem = (int64_t)l->chip->smem_kib * 1024;
    return kernels_head_gemm_in_tiles(mode, m->len, m->lora, m->nope) &&
           kernels_head_gemm_in_tiles(mode, m->len, m->lora, m->vd) &&
           kernels_attention_in_tiles(mode, m->rows, qk, m->vd) &&
           kernels_attn_heads_per_block(1, qk, m->vd, span, smem, kernels_accumulator(mode).stage_bytes) > 0;
}

/* Fold a latent attention's members into one op at the attention's slot, its result and place the value half's, when
 * the guards hold. The lane's admission is asked (F19: the seed asks none, and fuses attentions the lane cannot run
 * expanded); under the seed's rules it is not. */
static void fold_latent(struct rules_rewriter *r, const struct latent *m)
{
    int32_t members[6] = {m->qslice, m->absorb, m->join, m->values, m->attend, m->expand};
    int32_t made[5] = {m->qslice, m->absorb, m->join, m->values, m->attend};
    qsort(members, 6, sizeof *members, rules_cmp_i32);
    struct rules_binding b = rules_binding_empty();
    b.set[RULES_ROLE_PRODUCERS] = made;
    b.nset[RULES_ROLE_PRODUCERS] = 5;
    b.set[RULES_ROLE_WITHIN] = members;
    b.nset[RULES_ROLE_WITHIN] = 6;
    b.set[RULES_ROLE_MEMBERS] = members;
    b.nset[RULES_ROLE_MEMBERS] = 6;
    b.slot[RULES_ROLE_ANCHOR] = m->attend;
    if (!rules_guards_hold(r, r->rule, &b, NULL))
        return;
    const struct ir_op *expand = rules_slot(r, m->expand);
    rules_fold_asking(r, IR_CLASS_MLA, members, 6, m->attend, expand->out, expand->dst, !rules_seed_rules());
}

/* Whether every member slot of m still holds its op (a fold found earlier took none of them: ours, where the seed
 * would take a slot already taken and panic). */
static bool latent_live(const struct rules_rewriter *r, const struct latent *m)
{
    const int32_t members[6] = {m->qslice, m->absorb, m->join, m->values, m->attend, m->expand};
    bool live = true;
    for (int k = 0; k < 6 && live; k++)
        live = rules_slot(r, members[k]) != NULL;
    return live;
}

/* A wide chunk's latent attention whole (`mla`), where the lane runs it expanded: under the quantized numerics (not a
 * batch's), a chunk of more rows than the GEMV takes attending its cache absorbed. The op means its parts; the lane
 * runs each cached latent row through both halves of the expansion once, and each head's query attends its own
 * expanded keys and values, instead of absorbing every query row a head's whole latent wide. */
static void apply_latent_expanded(struct rules_rewriter *r, const struct shim *s)
{
    const struct lane *l = lane_of(s);
    r->rule = &rule_latent_expanded;
    if (l->acts == KERNELS_ACTS_DEQUANT || l->batch)
        return;
    /* Every latent attention found first, on the slots as they stand, then each folded, as the seed does (its sole
     * readers make the members of two attentions disjoint; each fold's guards are asked as it fires). */
    int32_t n = ir_slots_len(r->s), found = 0;
    struct latent *all = rules_xmalloc(sizeof *all * (size_t)(n > 0 ? n : 1));
    for (int32_t i = 0; i < n; i++)
        if (latent_shape(r, i, &all[found]) && latent_in_tiles(l, &all[found]))
            found++;
    for (int32_t k = 0; k < found; k++)
        if (latent_live(r, &all[k]))
            fold_latent(r, &all[k]);
    free(all);
}

/* Whether the ops at group[0..n) are one GEMV in parts whose later members may move up to the first one's slot. */
static bool gemv_group_holds(struct rules_rewriter *r, const struct lane *l, const int32_t *group, int32_t n)
{
    const struct ir_op *members[KERNELS_GEMM_PARTS];
    for (int32_t k = 0; k < n; k++)
        members[k] = rules_slot(r, group[k]);
    if (!gemv_in_parts(l, members, n, r->g))
        return false;
    struct rules_binding b = rules_binding_empty();
    b.slot[RULES_ROLE_FIRST] = group[0];
    b.set[RULES_ROLE_MEMBERS] = group;
    b.nset[RULES_ROLE_MEMBERS] = n;
    return rules_guards_hold(r, r->rule, &b, NULL);
}

/* The merged op's operands, as the seed lists them: the activation with the first member's access, then every
 * member's other operands in turn, whole, a shared one as often as it is read. Their count. */
static int32_t gemv_parts_operands(const struct rules_rewriter *r, const int32_t *group, int32_t n, ir_tid x,
                                   ir_tid *ins, struct ir_access *access)
{
    int32_t nins = 0;
    ins[nins] = x;
    access[nins++] = rules_slot(r, group[0])->access[0];
    for (int32_t k = 0; k < n; k++) {
        const struct ir_op *m = rules_slot(r, group[k]);
        for (int32_t q = 1; q < m->nins; q++) {
            ins[nins] = m->ins[q];
            access[nins++] = (struct ir_access){0};
        }
    }
    return nins;
}

/* Fold the group into one merged op at the first one's slot (the lane's own rule: no shim is asked), result and
 * place the first one's. */
static void fold_gemv_parts(struct rules_rewriter *r, const int32_t *group, int32_t n, ir_tid x)
{
    int32_t room = 1;
    for (int32_t k = 0; k < n; k++)
        room += rules_slot(r, group[k])->nins;
    ir_tid *ins = malloc(sizeof *ins * (size_t)room);
    struct ir_access *access = malloc(sizeof *access * (size_t)room);
    if (!ins || !access)
        abort();
    const struct ir_op *first = rules_slot(r, group[0]);
    int32_t nins = gemv_parts_operands(r, group, n, x, ins, access);
    rules_fuse(r, IR_CLASS_MERGED_QKV, group[0], group + 1, n - 1, ins, access, nins, first->out, first->dst);
    free(ins);
    free(access);
}

/* A step's products of one activation within the GEMV's rows — one format, one number of rows a warp, each landing in
 * its own buffer or a table's rows its width wide, those turning their heads in the epilogue turning them alike — as
 * one GEMV over their outputs side by side at the first one's place: the narrow ones ride with the wide. Only the
 * activation's readers are candidates; a later one joins when it passes nothing that writes what it reads (the
 * activation among it) or touches what it writes. */
static void apply_gemv_parts(struct rules_rewriter *r, const struct shim *s)
{
    const struct lane *l = lane_of(s);
    r->rule = &rule_gemv_parts;
    int32_t len = ir_slots_len(r->s);
    int32_t *readers = malloc(sizeof *readers * (size_t)(len + 1));
    if (!readers)
        abort();
    for (int32_t i = 0; i < len; i++) {
        struct rules_gemv_form first;
        const struct ir_op *op = rules_slot(r, i);
        if (!op || !part_product(op, r->g, &first) || !gemv_mergeable(l, &first))
            continue;
        int32_t group[KERNELS_GEMM_PARTS] = {i};
        int32_t n = 1;
        /* Only a reader of the activation can be a member: visit those after i, in slot order. */
        int32_t nreaders = ir_facts_readers(r->s, first.x, readers, len + 1);
        for (int32_t q = 0; q < nreaders && n < KERNELS_GEMM_PARTS; q++) {
            if (readers[q] <= i)
                continue;
            group[n] = readers[q];
            if (gemv_group_holds(r, l, group, n + 1))
                n++;
        }
        if (n >= 2)
            fold_gemv_parts(r, group, n, first.x);
    }
    free(readers);
}

/* The index of the lane hold named `name`, or -1. */
static int hold_index(const char *name)
{
    for (int h = 0; h < LANE_HOLD_COUNT; h++)
        if (strcmp(hold_names[h], name) == 0)
            return h;
    return -1;
}

/* Whether the lane holds `name` back (a step held so runs dry, reporting held). */
static bool lane_holds(const struct shim *s, const char *name)
{
    int h = hold_index(name);
    return h >= 0 && lane_of(s)->held[h];
}

/* Hold `name` back, as the knob would: the canonical name says so. */
static bool lane_hold(struct shim *s, const char *name)
{
    int h = hold_index(name);
    if (h < 0)
        return false;
    struct lane *l = s->self;
    l->held[h] = true;
    canonical_name(l, s->name, sizeof s->name);
    return true;
}

/* The lane's rules and where they link into the shared table. */
static const struct shim_chip_rule lane_rules[] = {
    {"latent_expanded", builds_latent_expanded, 1, SHIM_BEFORE, "add_norm", apply_latent_expanded,
     &rule_latent_expanded},
    {"gemv_parts", builds_gemv_parts, 1, SHIM_BEFORE, "merged_projections", apply_gemv_parts, &rule_gemv_parts},
};

/* ── The shim ────────────────────────────────────────────────────────────────────────────────────────────── */

struct shim *shim_lane(const char *name, char err[IR_ERR_LEN])
{
    struct lane knobs;
    char why[IR_ERR_LEN];
    err[0] = '\0';
    if (parse_name(name ? name : "", &knobs, why)) {
        snprintf(err, IR_ERR_LEN, "bad lane shim name '%.*s': %.400s", QUOTE, name ? name : "", why);
        return NULL;
    }
    struct shim *s = calloc(1, sizeof *s);
    struct lane *l = malloc(sizeof *l);
    if (!s || !l) {
        free(s);
        free(l);
        snprintf(err, IR_ERR_LEN, "out of memory making the lane shim");
        return NULL;
    }
    *l = knobs;
    canonical_name(l, s->name, sizeof s->name);
    s->supports = lane_supports;
    s->fits = lane_fits;
    s->activation = lane_activation;
    s->numerics = lane_numerics;
    s->rules = lane_rules;
    s->nrules = (int)(sizeof lane_rules / sizeof lane_rules[0]);
    s->holdable = hold_names;
    s->nholdable = LANE_HOLD_COUNT;
    s->holds = lane_holds;
    s->hold = lane_hold;
    s->reason_code = lane_reason_code;
    s->self = l;
    s->free_self = free;
    return s;
}
