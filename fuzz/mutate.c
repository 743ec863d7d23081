/* fuzz/mutate.c — the structure-aware mutator over the text format: swap, move, duplicate or drop an op, retarget
 * a reader to another value of its length, read a product's activation in a second role, add an observer or another
 * reader, carry a result, resize a dimension everywhere it appears, and splice two graphs. Every structural mutation keeps the graph valid or is not taken,
 * so the optimizer harness spends its time on graphs the optimizer accepts. Bytes that are not a graph (the
 * generator's bytes) are left to libFuzzer's byte mutations, and now and then turned into the graph they decode
 * to, so structural mutations can follow. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mutation_names[] = {
#define X(e, s) s,
    FUZZ_MUTATIONS(X)
#undef X
};

const char *fuzz_mutation_name(enum fuzz_mutation m) { return m < FUZZ_MUT_COUNT ? mutation_names[m] : "?"; }

uint64_t fuzz_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A value in [0, n) (0 when n ≤ 0). */
static int32_t below(uint64_t *st, int32_t n) { return n > 0 ? (int32_t)(fuzz_rand(st) % (uint64_t)n) : 0; }

/* ── Editing a graph's ops ───────────────────────────────────────────────────────────────────────────────── */

/* Insert op at position at (taking ownership), shifting the rest. */
static void insert_op(struct ir_graph *g, int32_t at, struct ir_op op)
{
    struct ir_op *ops = malloc(sizeof *ops * (size_t)(g->nops + 1));
    if (!ops)
        abort();
    for (int32_t i = 0, k = 0; i <= g->nops; i++)
        ops[i] = i == at ? op : g->ops[k++];
    free(g->ops);
    g->ops = ops;
    g->nops++;
    g->ops_cap = g->nops;
}

/* Remove the op at position at (freeing it). */
static void remove_op(struct ir_graph *g, int32_t at)
{
    ir_op_free(&g->ops[at]);
    memmove(&g->ops[at], &g->ops[at + 1], sizeof *g->ops * (size_t)(g->nops - at - 1));
    g->nops--;
}

/* Give every top-level op that is not fused its own index as its covers (it is a lifted op again). */
static void renumber(struct ir_graph *g)
{
    for (int32_t i = 0; i < g->nops; i++)
        if (g->ops[i].sym != IR_SYM_FUSED)
            ir_op_set_covers(&g->ops[i], &i, 1);
}

/* A tensor like src named base.<tag><k> (the first k free); its id. */
static ir_tid add_like(struct ir_graph *g, const struct ir_tensor *src, const char *tag)
{
    char name[IR_MAX_NAME + 1];
    struct ir_tensor copy = *src;
    for (int k = 0; k < 1000; k++) {
        snprintf(name, sizeof name, "%.200s.%s%d", src->name, tag, k);
        if (ir_tensor_find(g, name, strlen(name)) == IR_NONE)
            break;
    }
    ir_tid id = ir_tensor_add(g, name, copy.elem, copy.rows, copy.cols, copy.role);
    if (id == IR_NONE)
        return IR_NONE;
    char *own = g->tensors[id].name;
    g->tensors[id] = copy;
    g->tensors[id].name = own;
    return id;
}

/* The op index that first writes tensor t whole as its own result, or -1 (t not an activation's result). */
static int32_t producer_of(const struct ir_graph *g, ir_tid t)
{
    for (int32_t i = 0; i < g->nops; i++)
        if (g->ops[i].out == t)
            return i;
    return -1;
}

/* ── The mutations ───────────────────────────────────────────────────────────────────────────────────────── */

/* Swap two neighbouring ops. */
static bool mut_swap(struct ir_graph *g, uint64_t *st)
{
    if (g->nops < 2)
        return false;
    int32_t i = below(st, g->nops - 1);
    struct ir_op t = g->ops[i];
    g->ops[i] = g->ops[i + 1];
    g->ops[i + 1] = t;
    return true;
}

/* Move one op elsewhere. */
static bool mut_move(struct ir_graph *g, uint64_t *st)
{
    if (g->nops < 2)
        return false;
    int32_t i = below(st, g->nops), j = below(st, g->nops);
    if (i == j)
        return false;
    struct ir_op t = g->ops[i];
    if (i < j)
        memmove(&g->ops[i], &g->ops[i + 1], sizeof t * (size_t)(j - i));
    else
        memmove(&g->ops[j + 1], &g->ops[j], sizeof t * (size_t)(i - j));
    g->ops[j] = t;
    return true;
}

/* Duplicate a primitive op right after itself (or later): a result of its own gets a new tensor; a table written in
 * place is written again. */
static bool mut_duplicate(struct ir_graph *g, uint64_t *st)
{
    if (g->nops < 1)
        return false;
    int32_t i = below(st, g->nops);
    if (g->ops[i].sym == IR_SYM_FUSED)
        return false;
    struct ir_op op = ir_op_clone(&g->ops[i]);
    const struct ir_tensor *out = &g->tensors[op.out];
    if (out->role == IR_ROLE_ACTIVATION && ir_dst_is_own(&op.dst)) {
        ir_tid t = add_like(g, &g->tensors[op.out], "dup");
        if (t == IR_NONE) {
            ir_op_free(&op);
            return false;
        }
        op.out = t;
        op.dst.buf = t;
    }
    insert_op(g, i + 1 + below(st, g->nops - i), op);
    return true;
}

/* Drop one op. */
static bool mut_drop(struct ir_graph *g, uint64_t *st)
{
    if (g->nops < 2)
        return false;
    remove_op(g, below(st, g->nops));
    return true;
}

/* Point one operand of a primitive op at another value of its length and type defined before it. */
static bool mut_retarget(struct ir_graph *g, uint64_t *st)
{
    if (g->nops < 1)
        return false;
    int32_t i = below(st, g->nops);
    struct ir_op *op = &g->ops[i];
    if (op->sym == IR_SYM_FUSED || op->nins < 1)
        return false;
    int32_t j = below(st, op->nins);
    const struct ir_tensor *cur = &g->tensors[op->ins[j]];
    ir_tid *cand = malloc(sizeof *cand * (size_t)(g->ntensors + 1));
    if (!cand)
        abort();
    int32_t n = 0;
    for (ir_tid t = 0; t < g->ntensors; t++) {
        const struct ir_tensor *x = &g->tensors[t];
        if (t == op->ins[j] || x->elem != cur->elem || x->rows * x->cols != cur->rows * cur->cols)
            continue;
        int32_t p = x->role == IR_ROLE_ACTIVATION ? producer_of(g, t) : -1;
        if (x->role != IR_ROLE_ACTIVATION || (p >= 0 && p < i))
            cand[n++] = t;
    }
    bool done = n > 0;
    if (done)
        op->ins[j] = cand[below(st, n)];
    free(cand);
    return done;
}

/* Whether op reads operand k as a product's activation (a matmul's or a mixture's first operand). */
static bool activation_read(const struct ir_op *op, int32_t k)
{
    return op->sym == IR_SYM_PRIM && k == 0 && (op->spec.kind == IR_KIND_MATMUL || op->spec.kind == IR_KIND_MOE);
}

/* Whether t has its value before op i runs: it is no activation, or an earlier op computes it. */
static bool defined_before(const struct ir_graph *g, ir_tid t, int32_t i)
{
    int32_t p = g->tensors[t].role == IR_ROLE_ACTIVATION ? producer_of(g, t) : -1;
    return g->tensors[t].role != IR_ROLE_ACTIVATION || (p >= 0 && p < i);
}

/* Visit the (activation read, other read) pairs of one length and type in op order: product op i reading x at its
 * operand 0, and op j reading another tensor of x's length and type at operand k (not a product's activation).
 * With want >= 0 stop at that pair, filling i, j, k. The number of pairs visited. */
static int64_t alias_pairs(const struct ir_graph *g, int64_t want, int32_t *pi, int32_t *qj, int32_t *qk)
{
    int64_t seen = 0;
    for (int32_t i = 0; i < g->nops; i++) {
        if (!activation_read(&g->ops[i], 0) || g->ops[i].nins < 1)
            continue;
        const struct ir_tensor *x = &g->tensors[g->ops[i].ins[0]];
        for (int32_t j = 0; j < g->nops; j++) {
            const struct ir_op *o = &g->ops[j];
            for (int32_t k = 0; o->sym == IR_SYM_PRIM && k < o->nins; k++) {
                const struct ir_tensor *y = &g->tensors[o->ins[k]];
                if (activation_read(o, k) || o->ins[k] == g->ops[i].ins[0] || y->elem != x->elem ||
                    y->rows * y->cols != x->rows * x->cols)
                    continue;
                if (seen++ == want) {
                    *pi = i, *qj = j, *qk = k;
                    return seen;
                }
            }
        }
    }
    return seen;
}

int64_t fuzz_alias_count(const struct ir_graph *g)
{
    int32_t i, j, k;
    return alias_pairs(g, -1, &i, &j, &k);
}

bool fuzz_alias_apply(struct ir_graph *g, int64_t n, bool to_activation)
{
    int32_t i = -1, j = -1, k = -1;
    alias_pairs(g, n, &i, &j, &k);
    if (i < 0)
        return false;
    ir_tid x = g->ops[i].ins[0], y = g->ops[j].ins[k];
    if (to_activation ? !defined_before(g, x, j) : !defined_before(g, y, i))
        return false;
    if (to_activation)
        g->ops[j].ins[k] = x;
    else
        g->ops[i].ins[0] = y;
    return true;
}

/* One value read in two roles (fuzz_alias_apply), the pair and its direction drawn uniformly; the other direction
 * where the drawn one would read a value before it is made. */
static bool mut_alias(struct ir_graph *g, uint64_t *st)
{
    int64_t n = fuzz_alias_count(g);
    if (n == 0)
        return false;
    int64_t at = (int64_t)(fuzz_rand(st) % (uint64_t)n);
    bool way = below(st, 2) == 0;
    return fuzz_alias_apply(g, at, way) || fuzz_alias_apply(g, at, !way);
}

/* A tensor the bytes pick that an op may compute (an activation or state), or NULL. */
static struct ir_tensor *pick_result(struct ir_graph *g, uint64_t *st)
{
    if (g->ntensors < 1)
        return NULL;
    struct ir_tensor *t = &g->tensors[below(st, g->ntensors)];
    return t->role == IR_ROLE_ACTIVATION || t->role == IR_ROLE_STATE ? t : NULL;
}

/* The host reads one more tensor (or one fewer). */
static bool mut_observe(struct ir_graph *g, uint64_t *st)
{
    struct ir_tensor *t = pick_result(g, st);
    if (t)
        t->observed = !t->observed;
    return t != NULL;
}

/* The host keeps one more result across steps (or one fewer). */
static bool mut_carry(struct ir_graph *g, uint64_t *st)
{
    struct ir_tensor *t = pick_result(g, st);
    if (t)
        t->carried = !t->carried;
    return t != NULL;
}

/* Another reader of an op's result, somewhere after it, its own result observed. */
static bool mut_reader(struct ir_graph *g, uint64_t *st)
{
    if (g->nops < 1)
        return false;
    int32_t p = below(st, g->nops);
    ir_tid t = g->ops[p].out;
    const struct ir_tensor *x = &g->tensors[t];
    if (x->elem == IR_ELEM_I32 || !ir_dst_is_own(&g->ops[p].dst))
        return false;
    ir_tid y = add_like(g, &g->tensors[t], "rd");
    if (y == IR_NONE)
        return false;
    g->tensors[y].role = IR_ROLE_ACTIVATION;
    g->tensors[y].checkpoint = false;
    g->tensors[y].observed = true;
    g->tensors[y].carried = false;
    g->tensors[y].next = false;
    struct ir_op op = ir_op_prim(IR_KIND_SCALE, &t, 1, y);
    op.spec.u.scale.n = g->tensors[t].rows * g->tensors[t].cols;
    op.spec.u.scale.factor = 3.0;
    insert_op(g, p + 1 + below(st, g->nops - p), op);
    return true;
}

static bool (*const structural[])(struct ir_graph *g, uint64_t *st) = {
    [FUZZ_MUT_SWAP] = mut_swap,         [FUZZ_MUT_MOVE] = mut_move,       [FUZZ_MUT_DUPLICATE] = mut_duplicate,
    [FUZZ_MUT_RETARGET] = mut_retarget, [FUZZ_MUT_OBSERVE] = mut_observe, [FUZZ_MUT_READER] = mut_reader,
    [FUZZ_MUT_CARRY] = mut_carry,       [FUZZ_MUT_RESIZE] = NULL,         [FUZZ_MUT_DROP] = mut_drop,
    [FUZZ_MUT_ALIAS] = mut_alias,
};

/* ── Resizing: one integer replaced everywhere it stands alone ───────────────────────────────────────────── */

/* Whether the digit run text[s, e) is a standalone integer (a size, a field value, a shape's side). */
static bool standalone(const char *text, size_t len, size_t s, size_t e)
{
    char prev = s > 0 ? text[s - 1] : ' ', next = e < len ? text[e] : '\n';
    bool prev_ok =
        strchr(" =(,:[\t", prev) != NULL || (prev == 'x' && s >= 2 && text[s - 2] >= '0' && text[s - 2] <= '9');
    bool next_ok = strchr(" \n\r\t,)]:x", next) != NULL;
    return prev_ok && next_ok;
}

/* Make room for `need` bytes in *out (capacity *cap, doubled as needed); false, with *out freed, when memory runs
 * out. */
static bool room(char **out, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    while (*cap < need)
        *cap *= 2;
    char *p = realloc(*out, *cap);
    if (!p) {
        free(*out);
        *out = NULL;
        return false;
    }
    *out = p;
    return true;
}

/* The text with every standalone occurrence of the integer `from` written as `to` (malloc'd). */
static char *replace_int(const char *text, size_t len, long long from, long long to, size_t *out_len)
{
    size_t cap = len * 2 + 64, n = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        if (text[i] >= '0' && text[i] <= '9') {
            size_t e = i;
            while (e < len && text[e] >= '0' && text[e] <= '9')
                e++;
            bool hit = false;
            if (standalone(text, len, i, e) && e - i < 12) {
                char num[16];
                snprintf(num, sizeof num, "%.*s", (int)(e - i), text + i);
                hit = atoll(num) == from;
            }
            if (!room(&out, &cap, n + 32 + (e - i)))
                return NULL;
            n += hit ? (size_t)snprintf(out + n, cap - n, "%lld", to) : (memcpy(out + n, text + i, e - i), e - i);
            i = e;
            continue;
        }
        if (!room(&out, &cap, n + 2))
            return NULL;
        out[n++] = text[i++];
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

/* Pick one standalone integer of the text (≥ 1) and a new value for it; false when the text has none. */
static bool pick_resize(const char *text, size_t len, uint64_t *st, long long *from, long long *to)
{
    int count = 0;
    long long chosen = 0;
    for (size_t i = 0; i < len;) {
        if (text[i] < '0' || text[i] > '9') {
            i++;
            continue;
        }
        size_t e = i;
        while (e < len && text[e] >= '0' && text[e] <= '9')
            e++;
        if (standalone(text, len, i, e) && e - i < 7) {
            char num[16];
            snprintf(num, sizeof num, "%.*s", (int)(e - i), text + i);
            long long v = atoll(num);
            if (v >= 1 && below(st, ++count) == 0) /* reservoir sampling: each integer equally likely */
                chosen = v;
        }
        i = e;
    }
    if (!count || chosen < 1)
        return false;
    static const long long menu[] = {1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64};
    switch (below(st, 4)) {
    case 0: *to = chosen * 2; break;
    case 1: *to = chosen > 1 ? chosen / 2 : 2; break;
    case 2: *to = chosen + (below(st, 2) ? 1 : -1); break;
    default: *to = menu[below(st, 12)]; break;
    }
    if (*to < 1 || *to > 512 || *to == chosen)
        return false;
    *from = chosen;
    return true;
}

/* ── Driving the mutations ───────────────────────────────────────────────────────────────────────────────── */

/* The most ops a mutation of graphs with up to `had` ops may make: FUZZ_GROW_MAX_OPS, or `had` when larger (never
 * past what a case may be). */
static int32_t grow_limit(int32_t had)
{
    int32_t limit = had > FUZZ_GROW_MAX_OPS ? had : FUZZ_GROW_MAX_OPS;
    return limit < FUZZ_MAX_CASE_OPS ? limit : FUZZ_MAX_CASE_OPS;
}

/* The canonical text of g when it validates and has at most `limit` ops (malloc'd), else NULL. */
static char *valid_text(struct ir_graph *g, int32_t limit, size_t *out_len)
{
    char err[IR_ERR_LEN];
    renumber(g);
    if (g->nops > limit || ir_validate(g, err) != 0)
        return NULL;
    return ir_print(g, out_len);
}

char *fuzz_mutate_with(const char *text, size_t len, enum fuzz_mutation m, uint64_t seed, size_t *out_len)
{
    char err[IR_ERR_LEN];
    uint64_t st = seed;
    if (m == FUZZ_MUT_RESIZE) {
        long long from, to;
        if (!pick_resize(text, len, &st, &from, &to))
            return NULL;
        size_t n;
        char *t = replace_int(text, len, from, to, &n);
        struct ir_graph *g = t ? ir_parse(t, n, "resized", err) : NULL;
        free(t);
        char *out = g ? ir_print(g, out_len) : NULL;
        ir_graph_free(g);
        return out;
    }
    if (m >= FUZZ_MUT_COUNT || !structural[m])
        return NULL;
    struct ir_graph *g = ir_parse(text, len, "mutated", err);
    if (!g)
        return NULL;
    int32_t limit = grow_limit(g->nops);
    char *out = structural[m](g, &st) ? valid_text(g, limit, out_len) : NULL;
    ir_graph_free(g);
    return out;
}

char *fuzz_mutate_text(const char *text, size_t len, uint64_t seed, size_t *out_len, enum fuzz_mutation *which)
{
    uint64_t st = seed;
    for (int attempt = 0; attempt < 8; attempt++) {
        enum fuzz_mutation m = (enum fuzz_mutation)below(&st, FUZZ_MUT_COUNT);
        char *out = fuzz_mutate_with(text, len, m, fuzz_rand(&st), out_len);
        if (out) {
            if (which)
                *which = m;
            return out;
        }
    }
    return NULL;
}

/* ── Splicing two graphs ─────────────────────────────────────────────────────────────────────────────────── */

/* Rewrite every tensor id op (and its parts) names through map. */
static void remap(struct ir_op *op, const ir_tid *map)
{
    for (int32_t k = 0; k < op->nins; k++)
        op->ins[k] = map[op->ins[k]];
    op->out = map[op->out];
    op->dst.buf = map[op->dst.buf];
    if (op->dst.row == IR_ROWSEL_PARAM)
        op->dst.row_param = map[op->dst.row_param];
    for (int32_t k = 0; k < op->nkeeps; k++)
        op->keeps[k] = map[op->keeps[k]];
    for (int32_t p = 0; p < op->nparts; p++)
        remap(&op->parts[p], map);
}

/* A tensor of a whose values b's input x may read instead (same shape, f32, an input or a result); IR_NONE if none
 * or the dice say no. */
static ir_tid connect_to(const struct ir_graph *a, const struct ir_tensor *x, uint64_t *st)
{
    if (x->role != IR_ROLE_INPUT || x->elem != IR_ELEM_F32 || below(st, 2))
        return IR_NONE;
    int32_t n = 0;
    ir_tid pick = IR_NONE;
    for (ir_tid t = 0; t < a->ntensors; t++) {
        const struct ir_tensor *y = &a->tensors[t];
        if (y->elem == IR_ELEM_F32 && y->rows == x->rows && y->cols == x->cols &&
            (y->role == IR_ROLE_INPUT || y->role == IR_ROLE_ACTIVATION) && below(st, ++n) == 0)
            pick = t;
    }
    return pick;
}

/* a's graph with b's tensors (renamed apart, some inputs connected to a's values) and ops merged in: interleaved
 * when `interleave`, else after a's. */
static struct ir_graph *splice(const struct ir_graph *a, const struct ir_graph *b, uint64_t seed, bool connect,
                               bool interleave)
{
    uint64_t st = seed;
    struct ir_graph *c = ir_graph_clone(a);
    ir_tid *map = malloc(sizeof *map * (size_t)(b->ntensors + 1));
    if (!c || !map)
        abort();
    for (ir_tid t = 0; t < b->ntensors; t++) {
        ir_tid to = connect ? connect_to(a, &b->tensors[t], &st) : IR_NONE;
        map[t] = to != IR_NONE ? to : add_like(c, &b->tensors[t], "s");
        if (map[t] == IR_NONE) {
            free(map);
            ir_graph_free(c);
            return NULL;
        }
    }
    int32_t na = c->nops, total = a->nops + b->nops;
    struct ir_op *ops = malloc(sizeof *ops * (size_t)(total + 1));
    if (!ops)
        abort();
    int32_t ia = 0, ib = 0;
    for (int32_t k = 0; k < total; k++) {
        bool take_a = ia < na && (ib >= b->nops || (interleave ? below(&st, 2) == 0 : true));
        if (take_a) {
            ops[k] = c->ops[ia++];
        } else {
            ops[k] = ir_op_clone(&b->ops[ib++]);
            remap(&ops[k], map);
        }
    }
    free(c->ops);
    c->ops = ops;
    c->nops = c->ops_cap = total;
    free(map);
    return c;
}

char *fuzz_splice_text(const char *a, size_t na, const char *b, size_t nb, uint64_t seed, size_t *out_len)
{
    char err[IR_ERR_LEN];
    struct ir_graph *ga = ir_parse(a, na, "a", err), *gb = ga ? ir_parse(b, nb, "b", err) : NULL;
    char *out = NULL;
    uint64_t st = seed;
    for (int attempt = 0; attempt < 3 && gb && !out; attempt++) {
        struct ir_graph *c = splice(ga, gb, fuzz_rand(&st), attempt < 2, attempt == 0);
        if (c)
            out = valid_text(c, grow_limit(ga->nops > gb->nops ? ga->nops : gb->nops), out_len);
        ir_graph_free(c);
    }
    ir_graph_free(ga);
    ir_graph_free(gb);
    return out;
}

/* ── libFuzzer's side: optimizer cases and format inputs ─────────────────────────────────────────────────── */

/* Whether the bytes are the text of a valid graph with at least one op. */
static bool is_graph(const uint8_t *p, size_t n)
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = n ? ir_parse((const char *)p, n, "body", err) : NULL;
    bool yes = g && g->nops > 0;
    ir_graph_free(g);
    return yes;
}

/* Put text (len bytes) at dst when it fits in room; its length, or 0 when it does not fit. */
static size_t place(uint8_t *dst, size_t room, char *text, size_t len)
{
    size_t n = text && len <= room ? len : 0;
    if (n)
        memcpy(dst, text, n);
    free(text);
    return n;
}

size_t fuzz_mutate_case(uint8_t *data, size_t size, size_t max, unsigned seed, fuzz_byte_mutator byte_mutate)
{
    uint64_t st = seed;
    if (max < FUZZ_CTL + 1)
        return byte_mutate(data, size, max);
    if (size < FUZZ_CTL) {
        memset(data + size, 0, FUZZ_CTL - size);
        size = FUZZ_CTL;
    }
    uint8_t *body = data + FUZZ_CTL;
    size_t blen = size - FUZZ_CTL, room = max - FUZZ_CTL;
    int dice = below(&st, 16);
    if (dice == 0) { /* another shim, hold, prefix or seed */
        data[below(&st, FUZZ_CTL)] = (uint8_t)fuzz_rand(&st);
        return size;
    }
    if (is_graph(body, blen)) {
        size_t n = 0;
        char *t = fuzz_mutate_text((const char *)body, blen, fuzz_rand(&st), &n, NULL);
        n = place(body, room, t, n);
        if (n)
            return FUZZ_CTL + n;
    } else if (dice == 1) { /* the graph these bytes decode to, as text */
        struct fuzz_bytes b = {body, blen, 0};
        size_t n = 0;
        char *t = fuzz_generate(&b, &n, NULL);
        n = place(body, room, t, n);
        if (n)
            return FUZZ_CTL + n;
    }
    return FUZZ_CTL + byte_mutate(body, blen, room);
}

size_t fuzz_cross_case(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out, size_t max,
                       unsigned seed)
{
    uint64_t st = seed;
    if (max < FUZZ_CTL + 1 || na < FUZZ_CTL || nb < FUZZ_CTL) {
        size_t n = na < max ? na : max;
        memcpy(out, a, n);
        return n;
    }
    memcpy(out, below(&st, 2) ? a : b, FUZZ_CTL);
    const uint8_t *ba = a + FUZZ_CTL, *bb = b + FUZZ_CTL;
    size_t la = na - FUZZ_CTL, lb = nb - FUZZ_CTL, room = max - FUZZ_CTL;
    if (is_graph(ba, la) && is_graph(bb, lb)) {
        size_t n = 0;
        char *t = fuzz_splice_text((const char *)ba, la, (const char *)bb, lb, fuzz_rand(&st), &n);
        n = place(out + FUZZ_CTL, room, t, n);
        if (n)
            return FUZZ_CTL + n;
    }
    /* Bytes: a's head and b's tail. */
    size_t ha = la ? (size_t)below(&st, (int32_t)(la > 1 << 20 ? 1 << 20 : la) + 1) : 0;
    size_t tb = lb ? (size_t)below(&st, (int32_t)(lb > 1 << 20 ? 1 << 20 : lb) + 1) : 0;
    if (ha > room)
        ha = room;
    if (tb > room - ha)
        tb = room - ha;
    memcpy(out + FUZZ_CTL, ba, ha);
    memcpy(out + FUZZ_CTL + ha, bb + lb - tb, tb);
    return FUZZ_CTL + ha + tb;
}

size_t fuzz_mutate_format(uint8_t *data, size_t size, size_t max, unsigned seed, fuzz_byte_mutator byte_mutate)
{
    uint64_t st = seed;
    if (below(&st, 2) == 0 && is_graph(data, size)) {
        size_t n = 0;
        char *t = fuzz_mutate_text((const char *)data, size, fuzz_rand(&st), &n, NULL);
        n = place(data, max, t, n);
        if (n)
            return n;
    }
    return byte_mutate(data, size, max);
}
