/* fuzz/gen.c — the byte-driven graph generator: any byte string decodes into the text of a graph the validator
 * accepts, built from motifs (the model zoo's shapes and every rule's pattern) with hazards between their ops (extra
 * readers, observed and carried results, in-place writes and reads of state) that the rules' guards must respect.
 *
 * Every choice reads one byte; past the input's end bytes read as zero, and zero always picks the plainest choice,
 * so short inputs give clean motifs the rules fire on and longer ones add variety. Sizes stay small (one input
 * evaluates in well under a millisecond or two) but cross the boundaries the shims' `fits` checks care about (odd
 * widths, whole 32-value blocks and one past them). */
#include "fuzz.h"

#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ── Bytes ───────────────────────────────────────────────────────────────────────────────────────────────── */

uint8_t fuzz_byte(struct fuzz_bytes *b)
{
    if (b->at >= b->n)
        return 0;
    return b->p[b->at++];
}

int fuzz_pick(struct fuzz_bytes *b, int n) { return n > 0 ? fuzz_byte(b) % n : 0; }

bool fuzz_bytes_done(const struct fuzz_bytes *b) { return b->at >= b->n; }

static const char *const motif_names[] = {
#define X(e, s) s,
    FUZZ_MOTIFS(X)
#undef X
};
static const char *const hazard_names[] = {
#define X(e, s) s,
    FUZZ_HAZARDS(X)
#undef X
};

const char *fuzz_motif_name(enum fuzz_motif m) { return m < FUZZ_MOTIF_COUNT ? motif_names[m] : "?"; }
const char *fuzz_hazard_name(enum fuzz_hazard h) { return h < FUZZ_HAZARD_COUNT ? hazard_names[h] : "?"; }

/* ── The builder ─────────────────────────────────────────────────────────────────────────────────────────── */

#define GEN_MAX_TENSORS 256
#define GEN_MOTIF_ROOM_TENSORS 96 /* the most tensors one motif (with its hazards) declares */
#define GEN_MOTIF_ROOM_OPS 24     /* the most ops one motif (with its hazards) emits: 17 + 4, the delta rule's */
#define GEN_HAZARDS_A_MOTIF 4

/* A tensor being declared: its line's fields, and whether its value exists yet (an activation once its op is
 * emitted; anything else from the start). */
struct gtensor {
    char name[40];
    bool i32;
    int64_t rows, cols;
    enum ir_role role;
    const char *format; /* checkpoint format, or NULL for plain values */
    bool transposed, observed, carried, next;
    bool made;
    int motif; /* the serial of the motif that declared it */
    int read;  /* the serial of the last motif that took it as an operand (-1: none) */
};

/* The generator's state: the bytes, the tensors, the op lines, the motif being built. */
struct gen {
    struct fuzz_bytes *b;
    int nt;
    char *ops;
    size_t olen, ocap;
    int nops;
    int serial;       /* the motif being built */
    int hazards_left; /* hazards the current motif may still take */
    int nhazard;      /* names of hazard tensors */
    int pos;          /* the current motif's position param, or -1 */
    bool oom;
    struct fuzz_gen_stats *stats;
    const char *route; /* the current mixture's routing fields ("" or NULL: softmax, renormalised) */
    struct gtensor t[GEN_MAX_TENSORS]; /* last: only the first nt are ever read, so only the fields above are zeroed */
};

/* Append printf output to the op text: written straight into the room left, and again after growing it when it did
 * not fit. */
static void vappend(struct gen *g, const char *fmt, va_list ap)
{
    if (g->oom)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    size_t room = g->ocap - g->olen;
    int n = vsnprintf(room ? g->ops + g->olen : NULL, room, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        g->oom = true;
        return;
    }
    if (g->olen + (size_t)n + 1 > g->ocap) {
        size_t cap = g->ocap ? g->ocap : 4096;
        while (cap < g->olen + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(g->ops, cap);
        if (!p) {
            g->oom = true;
            return;
        }
        g->ops = p;
        g->ocap = cap;
        vsnprintf(g->ops + g->olen, g->ocap - g->olen, fmt, ap);
    }
    g->olen += (size_t)n;
}

/* A tensor's full name. */
static const char *N(const struct gen *g, int i) { return g->t[i].name; }

/* Declare a tensor of the current motif named m<serial>.<local>; its index. */
static int decl(struct gen *g, const char *local, bool i32, int64_t rows, int64_t cols, enum ir_role role)
{
    if (g->nt >= GEN_MAX_TENSORS) { /* the room check before each motif makes this unreachable */
        g->oom = true;
        return g->nt - 1;
    }
    struct gtensor *t = &g->t[g->nt];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "m%d.%s", g->serial, local);
    t->i32 = i32;
    t->rows = rows;
    t->cols = cols;
    t->role = role;
    t->made = role != IR_ROLE_ACTIVATION;
    t->motif = g->serial;
    t->read = -1;
    return g->nt++;
}

/* A fresh f32 activation. */
static int act(struct gen *g, const char *local, int64_t rows, int64_t cols)
{
    return decl(g, local, false, rows, cols, IR_ROLE_ACTIVATION);
}

/* A plain f32 constant. */
static int konst(struct gen *g, const char *local, int64_t rows, int64_t cols)
{
    return decl(g, local, false, rows, cols, IR_ROLE_CONSTANT);
}

/* A state tensor (kept across steps when carried). */
static int state(struct gen *g, const char *local, int64_t rows, int64_t cols, bool carried)
{
    int i = decl(g, local, false, rows, cols, IR_ROLE_STATE);
    g->t[i].carried = carried;
    return i;
}

/* An i32 1×1 param (a position or a token). */
static int param(struct gen *g, const char *local) { return decl(g, local, true, 1, 1, IR_ROLE_PARAM); }

/* The current motif's position param, declared on first use. */
static int position(struct gen *g)
{
    if (g->pos < 0)
        g->pos = param(g, "pos");
    return g->pos;
}

/* A product's weights, k rows by n cols: plain f32 values, or checkpoint rows in a block format where the sizes
 * allow (transposed as GGML stores matrices: a stored row per output of k values). */
static int weight(struct gen *g, const char *local, int64_t k, int64_t n)
{
    int i = konst(g, local, k, n);
    struct gtensor *t = &g->t[i];
    switch (fuzz_pick(g->b, 8)) {
    case 1: t->format = "f16", t->transposed = true; break;
    case 2: t->format = "bf16"; break;
    case 3:
        if (k % 32 == 0)
            t->format = "q8_0", t->transposed = true;
        break;
    case 4:
        if (k % 32 == 0)
            t->format = "q4_0", t->transposed = true;
        break;
    case 5:
        if (n % 32 == 0)
            t->format = "q8_0";
        break;
    case 6: t->format = "f32", t->transposed = true; break;
    default: break;
    }
    return i;
}

/* Whether tensor t may stand for a fresh f32 input of rows×cols values. */
static bool reusable(const struct gtensor *t, int64_t rows, int64_t cols)
{
    return !t->i32 && t->made && t->rows == rows && t->cols == cols &&
           (t->role == IR_ROLE_INPUT || t->role == IR_ROLE_ACTIVATION || t->role == IR_ROLE_STATE);
}

/* An operand of rows×cols values: now and then a value the graph already has (an earlier motif's result, an input,
 * a state table read as it stands), now and then a fresh state tensor (which a hazard may write in place between
 * the ops that read it), else a fresh input. */
static int input(struct gen *g, const char *local, int64_t rows, int64_t cols)
{
    uint8_t x = fuzz_byte(g->b);
    int t = -1;
    if (x >= 192) {
        int cand[GEN_MAX_TENSORS], n = 0;
        for (int i = 0; i < g->nt; i++)
            if (reusable(&g->t[i], rows, cols))
                cand[n++] = i;
        if (n)
            t = cand[x % n];
    }
    if (t < 0)
        t = decl(g, local, false, rows, cols, x >= 160 && x < 192 ? IR_ROLE_STATE : IR_ROLE_INPUT);
    g->t[t].read = g->serial;
    return t;
}

static void gap(struct gen *g);

/* Append printf output to the op text. */
static void append(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(g, fmt, ap);
    va_end(ap);
}

/* Emit one op line (text after "op ") whose result is tensor out, without a hazard after it. */
static void emit_raw(struct gen *g, int out, const char *fmt, ...)
{
    append(g, "op ");
    va_list ap;
    va_start(ap, fmt);
    vappend(g, fmt, ap);
    va_end(ap);
    append(g, "\n");
    g->nops++;
    if (out >= 0)
        g->t[out].made = true;
}

/* Emit one op line, then maybe a hazard. */
#define EMIT(g, out, ...) (emit_raw((g), (out), __VA_ARGS__), gap(g))

/* Mark a motif's result observed (the host reads it, so the diff compares it). */
static void observe(struct gen *g, int t) { g->t[t].observed = true; }

/* ── Sizes ───────────────────────────────────────────────────────────────────────────────────────────────── */

/* A width: small, odd, and on either side of a 32-value block. */
static int64_t width(struct gen *g)
{
    static const int64_t w[] = {8, 4, 16, 2, 3, 32, 5, 1, 7, 33, 64, 31};
    return w[fuzz_pick(g->b, 12)];
}
/* An even width (rotated heads, pairs). */
static int64_t even(struct gen *g)
{
    static const int64_t w[] = {4, 2, 8, 6, 16, 32};
    return w[fuzz_pick(g->b, 6)];
}
/* Rows of a step: one (decode), or a small chunk. */
static int64_t rows(struct gen *g)
{
    static const int64_t r[] = {1, 2, 1, 3, 4};
    return r[fuzz_pick(g->b, 5)];
}
/* A head count. */
static int64_t heads(struct gen *g)
{
    static const int64_t h[] = {2, 1, 4, 3};
    return h[fuzz_pick(g->b, 4)];
}
/* An RMS norm's epsilon and weight offset, as text. */
static const char *eps(struct gen *g) { return fuzz_pick(g->b, 2) ? "1e-05" : "1e-06"; }
static const char *offset(struct gen *g) { return fuzz_pick(g->b, 3) == 2 ? "1" : "0"; }
/* The rotary scalings a rope's tables may carry, after base B: none, linear, llama3's band, YaRN truncated (as
 * llama.cpp computes it) or not, with and without an attention factor, default and given betas (published values:
 * tiny-gpt-oss's and gpt-oss-20b's YaRN, llama3's band over a context the generator's tables reach). */
#define ROPE_SCALINGS(B)                                                                                          \
    B, B " scaling=linear factor=2", B " scaling=llama3 factor=8 orig=64 low_freq=1 high_freq=4",                  \
        B " scaling=yarn factor=4 orig=16 truncate magnitude=1.138629436111989",                                   \
        B " scaling=yarn factor=32 orig=4096 beta_fast=32 beta_slow=1 magnitude=1.3465735902799727",               \
        B " scaling=linear factor=4 magnitude=0.5", B " scaling=yarn factor=2 orig=8"
enum { ROPE_NSCALINGS = 7 };
/* A rope's table fields: its base, absent (the default) or one of the published bases, then its rotary scaling, none
 * or one of ROPE_SCALINGS; both from one byte (its remainder by 5 the base, as before scalings came, so a byte
 * string keeps its other choices), and every rope of one table takes the same. */
static const char *rope_theta(struct gen *g)
{
    static const char *const tables[] = {ROPE_SCALINGS(""), ROPE_SCALINGS(" theta=1e+04"),
                                         ROPE_SCALINGS(" theta=5e+05"), ROPE_SCALINGS(" theta=1e+06"),
                                         ROPE_SCALINGS(" theta=1e+07")};
    _Static_assert(sizeof tables / sizeof tables[0] == 5 * ROPE_NSCALINGS, "a scaling for every base");
    int byte = fuzz_byte(g->b);
    return tables[byte % 5 * ROPE_NSCALINGS + byte / 5 % ROPE_NSCALINGS];
}
/* A rope's pairing: (i, i+half), or adjacent (2i, 2i+1). */
static const char *rope_pairs(struct gen *g) { return fuzz_pick(g->b, 2) ? " adjacent" : ""; }

#define L(x) ((long long)(x))

/* ── Hazards ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* A made f32 activation of the current motif (-1 when none), picked by the next byte. */
static int pick_activation(struct gen *g)
{
    int cand[GEN_MAX_TENSORS], n = 0;
    for (int i = 0; i < g->nt; i++) {
        const struct gtensor *t = &g->t[i];
        if (t->motif == g->serial && t->role == IR_ROLE_ACTIVATION && t->made && !t->i32)
            cand[n++] = i;
    }
    return n ? cand[fuzz_pick(g->b, n)] : -1;
}

/* A state tensor, picked by the next byte: one the current motif reads or declared when there is one (a write
 * between the ops that read it), else any (-1 when none). */
static int pick_state(struct gen *g)
{
    int cand[GEN_MAX_TENSORS], n = 0;
    for (int pass = 0; pass < 2 && n == 0; pass++)
        for (int i = 0; i < g->nt; i++) {
            const struct gtensor *t = &g->t[i];
            if (t->role == IR_ROLE_STATE && !t->i32 && (pass == 1 || t->read == g->serial || t->motif == g->serial))
                cand[n++] = i;
        }
    return n ? cand[fuzz_pick(g->b, n)] : -1;
}

/* A new hazard tensor's local name. */
static void hazard_name(struct gen *g, char *buf, size_t n) { snprintf(buf, n, "hz%d", g->nhazard++); }

/* Another reader of an activation, its result observed. */
static bool hazard_reader(struct gen *g)
{
    int t = pick_activation(g);
    if (t < 0)
        return false;
    char name[24];
    hazard_name(g, name, sizeof name);
    int y = act(g, name, g->t[t].rows, g->t[t].cols);
    observe(g, y);
    emit_raw(g, y, "%s = scale(%s) n=%lld factor=2", N(g, y), N(g, t), L(g->t[t].rows * g->t[t].cols));
    return true;
}

/* The host reads (or keeps) an activation. */
static bool hazard_flag(struct gen *g, bool carried)
{
    int t = pick_activation(g);
    if (t < 0)
        return false;
    if (carried)
        g->t[t].carried = true;
    else
        g->t[t].observed = true;
    return true;
}

/* A row set into a state table, at a literal row or at the motif's position (rows overlapping what the motif reads
 * or writes there). */
static bool hazard_write(struct gen *g)
{
    int t = pick_state(g);
    if (t < 0)
        return false;
    int64_t r = g->t[t].rows, c = g->t[t].cols;
    int64_t count = 1 + fuzz_pick(g->b, (int)(r < 2 ? 1 : 2));
    char name[24];
    hazard_name(g, name, sizeof name);
    int src = decl(g, name, false, count, c, IR_ROLE_INPUT);
    if (fuzz_pick(g->b, 2)) {
        int p = position(g);
        emit_raw(g, t, "%s = set_row(%s, %s, %s) rows=%lld cols=%lld count=%lld index=named", N(g, t), N(g, t),
                 N(g, src), N(g, p), L(r), L(c), L(count));
    } else {
        int64_t at = 1 + fuzz_pick(g->b, (int)(r - count + 1));
        emit_raw(g, t, "%s = set_row(%s, %s) rows=%lld cols=%lld count=%lld index=%lld", N(g, t), N(g, t), N(g, src),
                 L(r), L(c), L(count), L(at));
    }
    return true;
}

/* A row of a state table read as it stands, the row observed. */
static bool hazard_read(struct gen *g)
{
    int t = pick_state(g);
    if (t < 0)
        return false;
    int64_t r = g->t[t].rows, c = g->t[t].cols;
    char name[24];
    hazard_name(g, name, sizeof name);
    int y = act(g, name, 1, c);
    observe(g, y);
    emit_raw(g, y, "%s = row_gather(%s) rows=%lld cols=%lld index=%lld", N(g, y), N(g, t), L(r), L(c),
             L(1 + fuzz_pick(g->b, (int)r)));
    return true;
}

/* Maybe a hazard between two ops of a motif: about one gap in eight while the bytes last. */
static void gap(struct gen *g)
{
    if (g->hazards_left <= 0)
        return;
    uint8_t x = fuzz_byte(g->b);
    if (x < 224)
        return;
    enum fuzz_hazard h = (enum fuzz_hazard)(x % FUZZ_HAZARD_COUNT);
    bool done = false;
    switch (h) {
    case FUZZ_HAZARD_EXTRA_READER: done = hazard_reader(g); break;
    case FUZZ_HAZARD_OBSERVED: done = hazard_flag(g, false); break;
    case FUZZ_HAZARD_CARRIED: done = hazard_flag(g, true); break;
    case FUZZ_HAZARD_STATE_WRITE: done = hazard_write(g); break;
    case FUZZ_HAZARD_STATE_READ: done = hazard_read(g); break;
    case FUZZ_HAZARD_COUNT: break;
    }
    if (done) {
        g->hazards_left--;
        if (g->stats)
            g->stats->hazards[h]++;
    }
}

/* ── Motifs ──────────────────────────────────────────────────────────────────────────────────────────────── */

/* A residual add then an RMS norm (the sum written on or not), the lifted residual form, or two norms of a sum. */
static void m_add_norm(struct gen *g)
{
    int64_t r = rows(g), c = width(g);
    int x = input(g, "x", r, c), res = input(g, "res", r, c), w = konst(g, "w", 1, c);
    int v = fuzz_pick(g->b, 5);
    int n = act(g, "n", r, c);
    observe(g, n);
    if (v == 4) { /* a LayerNorm (or a biased RMS norm): no norm class computes it, so no rule may fold it */
        int b = konst(g, "b", 1, c), s = act(g, "s", r, c);
        EMIT(g, s, "%s = elementwise(%s, %s) op=add n=%lld", N(g, s), N(g, x), N(g, res), L(r * c));
        EMIT(g, n, "%s = rms_norm(%s, %s, %s) rows=%lld cols=%lld%s eps=%s weight offset=%s bias", N(g, n), N(g, s),
             N(g, w), N(g, b), L(r), L(c), fuzz_pick(g->b, 3) ? " kind=layer" : "", eps(g), offset(g));
        return;
    }
    if (v == 1) {
        EMIT(g, n, "%s = rms_norm(%s, %s, %s) rows=%lld cols=%lld eps=%s weight offset=%s residual", N(g, n), N(g, x),
             N(g, w), N(g, res), L(r), L(c), eps(g), offset(g));
        return;
    }
    int s = act(g, "s", r, c);
    EMIT(g, s, "%s = elementwise(%s, %s) op=add n=%lld", N(g, s), N(g, x), N(g, res), L(r * c));
    if (v == 2)
        EMIT(g, n, "%s = rms_norm(%s) rows=%lld cols=%lld eps=%s offset=0", N(g, n), N(g, s), L(r), L(c), eps(g));
    else
        EMIT(g, n, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=%s weight offset=%s", N(g, n), N(g, s), N(g, w), L(r),
             L(c), eps(g), offset(g));
    if (v == 3) {
        int w2 = konst(g, "w2", 1, c), n2 = act(g, "n2", r, c);
        observe(g, n2);
        EMIT(g, n2, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, n2), N(g, s), N(g, w2),
             L(r), L(c));
    }
}

/* A plain norm whose result an add, or a norm of a sum, reads (the sandwich norm's shape). */
static void m_norm_add(struct gen *g)
{
    int64_t r = rows(g), c = width(g);
    int x = input(g, "x", r, c), w = konst(g, "w", 1, c), res = input(g, "res", r, c);
    int n1 = act(g, "n1", r, c);
    EMIT(g, n1, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=%s weight offset=%s", N(g, n1), N(g, x), N(g, w), L(r),
         L(c), eps(g), offset(g));
    int v = fuzz_pick(g->b, 4);
    int y = act(g, "y", r, c);
    observe(g, y);
    if (v <= 1) {
        EMIT(g, y, "%s = elementwise(%s, %s) op=add n=%lld", N(g, y), N(g, v ? res : n1), N(g, v ? n1 : res), L(r * c));
    } else if (v == 2) {
        int w2 = konst(g, "w2", 1, c);
        EMIT(g, y, "%s = rms_norm(%s, %s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0 residual", N(g, y),
             N(g, n1), N(g, w2), N(g, res), L(r), L(c));
    } else {
        int w2 = konst(g, "w2", 1, c), s = act(g, "s", r, c);
        EMIT(g, s, "%s = elementwise(%s, %s) op=add n=%lld", N(g, s), N(g, n1), N(g, res), L(r * c));
        EMIT(g, y, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, y), N(g, s), N(g, w2),
             L(r), L(c));
    }
}

/* A bias of n values added to a product's every row (broadcast), or to its one row. */
static void bias_add(struct gen *g, int p, int64_t m, int64_t n, bool bias_first)
{
    int b = konst(g, "b", 1, n), y = act(g, "y", m, n);
    observe(g, y);
    bool row = m > 1 || fuzz_pick(g->b, 2);
    bias_first = bias_first && !row; /* a broadcast row is the second operand */
    char rowf[32] = "";
    if (row)
        snprintf(rowf, sizeof rowf, " row=%lld", L(n));
    EMIT(g, y, "%s = elementwise(%s, %s) op=add n=%lld%s", N(g, y), N(g, bias_first ? b : p), N(g, bias_first ? p : b),
         L(m * n), rowf);
}

/* A product by constant weights, with a bias, a scale (and a bias after it), a scaled input, a residual add and
 * norm after it, siblings of the same activation, or another product after it. */
static void m_projection(struct gen *g)
{
    int64_t m = rows(g), k = width(g), n = width(g);
    int x = input(g, "x", m, k), w = weight(g, "w", k, n);
    int v = fuzz_pick(g->b, 6);
    int p = act(g, "p", m, n);
    if (v == 2) {
        int s = act(g, "s", m, k);
        EMIT(g, s, "%s = scale(%s) n=%lld factor=0.5", N(g, s), N(g, x), L(m * k));
        x = s;
    }
    EMIT(g, p, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, p), N(g, x), N(g, w), L(m), L(k), L(n));
    switch (v) {
    case 0: bias_add(g, p, m, n, fuzz_pick(g->b, 2)); break;
    case 1: {
        int s = act(g, "s", m, n);
        EMIT(g, s, "%s = scale(%s) n=%lld factor=0.125", N(g, s), N(g, p), L(m * n));
        if (fuzz_pick(g->b, 2))
            bias_add(g, s, m, n, true);
        else
            observe(g, s);
        break;
    }
    case 3: {
        int res = input(g, "res", m, n), nw = konst(g, "nw", 1, n), s = act(g, "s", m, n), nn = act(g, "nn", m, n);
        EMIT(g, s, "%s = elementwise(%s, %s) op=add n=%lld", N(g, s), N(g, p), N(g, res), L(m * n));
        EMIT(g, nn, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, nn), N(g, s), N(g, nw),
             L(m), L(n));
        observe(g, nn);
        if (fuzz_pick(g->b, 2))
            observe(g, s);
        break;
    }
    case 4: {
        observe(g, p);
        int more = 1 + fuzz_pick(g->b, 2);
        for (int i = 0; i < more; i++) {
            char wn[24], pn[24];
            snprintf(wn, sizeof wn, "w%d", i + 2);
            snprintf(pn, sizeof pn, "p%d", i + 2);
            int64_t n2 = width(g);
            int w2 = weight(g, wn, k, n2), p2 = act(g, pn, m, n2);
            observe(g, p2);
            EMIT(g, p2, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, p2), N(g, x), N(g, w2), L(m), L(k), L(n2));
        }
        break;
    }
    default: {
        int64_t n2 = width(g);
        int w2 = weight(g, "w2", n, n2), q = act(g, "q", m, n2);
        observe(g, q);
        EMIT(g, q, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, q), N(g, p), N(g, w2), L(m), L(n), L(n2));
        break;
    }
    }
}

/* Gated pairs: an activation gating a product, a gate and an up product of one activation with their SwiGLU (and
 * the down product after), a ReLU squared, a GELU gate. */
static void m_gated_pair(struct gen *g)
{
    static const char *const acts[] = {"silu", "sigmoid", "gelu", "relu"};
    int64_t m = rows(g), c = width(g);
    int v = fuzz_pick(g->b, 4);
    if (v == 0) {
        int a = input(g, "a", m, c), b = input(g, "b", m, c), s = act(g, "s", m, c), y = act(g, "y", m, c);
        EMIT(g, s, "%s = %s(%s) n=%lld", N(g, s), acts[fuzz_pick(g->b, 3)], N(g, a), L(m * c));
        bool first = fuzz_pick(g->b, 2);
        EMIT(g, y, "%s = elementwise(%s, %s) op=mul n=%lld", N(g, y), N(g, first ? s : b), N(g, first ? b : s),
             L(m * c));
        observe(g, y);
        return;
    }
    if (v == 1) {
        int x = input(g, "x", m, c), r = act(g, "r", m, c), y = act(g, "y", m, c);
        EMIT(g, r, "%s = relu(%s) n=%lld", N(g, r), N(g, x), L(m * c));
        EMIT(g, y, "%s = elementwise(%s, %s) op=mul n=%lld", N(g, y), N(g, r), N(g, r), L(m * c));
        observe(g, y);
        return;
    }
    int64_t f = width(g);
    int x = input(g, "x", m, c), wg = weight(g, "wg", c, f), wu = weight(g, "wu", c, f);
    int gt = act(g, "g", m, f), u = act(g, "u", m, f), y = act(g, "y", m, f);
    EMIT(g, gt, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, gt), N(g, x), N(g, wg), L(m), L(c), L(f));
    EMIT(g, u, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, u), N(g, x), N(g, wu), L(m), L(c), L(f));
    if (v == 2) {
        EMIT(g, y, "%s = swiglu(%s, %s) total=%lld", N(g, y), N(g, gt), N(g, u), L(m * f));
    } else {
        int a = act(g, "a", m, f);
        EMIT(g, a, "%s = gelu(%s) n=%lld", N(g, a), N(g, gt), L(m * f));
        EMIT(g, y, "%s = elementwise(%s, %s) op=mul n=%lld", N(g, y), N(g, a), N(g, u), L(m * f));
    }
    if (fuzz_pick(g->b, 2)) {
        int wd = weight(g, "wd", f, c), d = act(g, "d", m, c);
        EMIT(g, d, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, d), N(g, y), N(g, wd), L(m), L(f), L(c));
        observe(g, d);
    } else {
        observe(g, y);
    }
}

/* An embedding: a row gathered at a named token (or a chunk's rows, or a literal row), scaled, normed, or both. */
static void m_embed(struct gen *g)
{
    static const int64_t vocab[] = {16, 8, 32, 5};
    int64_t V = vocab[fuzz_pick(g->b, 4)], c = width(g);
    int emb = konst(g, "emb", V, c);
    switch (fuzz_pick(g->b, 4)) {
    case 1: g->t[emb].format = "f16"; break;
    case 2:
        if (c % 32 == 0)
            g->t[emb].format = "q8_0";
        break;
    case 3: g->t[emb].format = "bf16"; break;
    default: break;
    }
    int v = fuzz_pick(g->b, 3);
    int64_t r = 1;
    int x;
    if (v == 0) {
        int tok = param(g, "tok");
        x = act(g, "x", 1, c);
        EMIT(g, x, "%s = row_gather(%s, %s) rows=%lld cols=%lld index=named", N(g, x), N(g, emb), N(g, tok), L(V),
             L(c));
    } else if (v == 1) {
        r = 1 + fuzz_pick(g->b, 4);
        int toks = decl(g, "toks", true, r, 1, IR_ROLE_INPUT);
        x = act(g, "x", r, c);
        EMIT(g, x, "%s = rows_gather(%s, %s) rows=%lld cols=%lld count=%lld", N(g, x), N(g, emb), N(g, toks), L(V),
             L(c), L(r));
    } else {
        x = act(g, "x", 1, c);
        EMIT(g, x, "%s = row_gather(%s) rows=%lld cols=%lld index=%lld", N(g, x), N(g, emb), L(V), L(c),
             L(1 + fuzz_pick(g->b, (int)V)));
    }
    int tail = fuzz_pick(g->b, 4), y = x;
    if (tail != 1) {
        int s = act(g, "s", r, c);
        EMIT(g, s, "%s = scale(%s) n=%lld factor=2.828", N(g, s), N(g, y), L(r * c));
        y = s;
    }
    if (tail != 0) {
        int w = konst(g, "w", 1, c), n = act(g, "n", r, c);
        EMIT(g, n, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=%s", N(g, n), N(g, y), N(g, w),
             L(r), L(c), offset(g));
        y = n;
    }
    observe(g, y);
}

/* The tail of a rope op: the position field and operand for a table of P positions and `rows` rows. */
struct rope_pos {
    char operand[64]; /* ", <pos>" or "" */
    char field[32];   /* " pos=named", " pos=<k>" or "" */
};

/* A position for `rows` rows over P positions: named, absent, or literal. */
static struct rope_pos rope_position(struct gen *g, int64_t P, int64_t r)
{
    struct rope_pos rp = {"", ""};
    int v = fuzz_pick(g->b, 3);
    if (v == 0) {
        snprintf(rp.operand, sizeof rp.operand, ", %s", N(g, position(g)));
        snprintf(rp.field, sizeof rp.field, " pos=named");
    } else if (v == 2) {
        snprintf(rp.field, sizeof rp.field, " pos=%lld", L(1 + fuzz_pick(g->b, (int)(P - r + 1))));
    }
    return rp;
}

/* Per-head norms then rotations: a query (from a product or as it comes), a key beside it at the same table and
 * position, the key inserted into its cache, and a gated attention of the query. */
static void m_head_norm_rope(struct gen *g)
{
    static const int64_t positions[] = {8, 4, 16};
    int64_t H = heads(g), hd = even(g), P = positions[fuzz_pick(g->b, 3)];
    int64_t half = (hd % 4 == 0 && fuzz_pick(g->b, 3) == 2) ? hd / 4 : hd / 2;
    int64_t R = (H % 2 == 0 && fuzz_pick(g->b, 3) == 2) ? 2 : 1;
    int cs = konst(g, "cos", P, half), sn = konst(g, "sin", P, half);
    int v = fuzz_pick(g->b, 5);
    struct rope_pos rp = rope_position(g, P, R);
    if (v == 4 || v == 1) { /* named positions for attention and cache rows */
        snprintf(rp.operand, sizeof rp.operand, ", %s", N(g, position(g)));
        snprintf(rp.field, sizeof rp.field, " pos=named");
        R = 1;
    }
    const char *theta = rope_theta(g), *qpairs = rope_pairs(g);
    int q;
    int x = -1;
    if (v == 1 || v == 4) {
        int64_t k = width(g);
        x = input(g, "x", 1, k);
        int wq = weight(g, "wq", k, H * hd);
        q = act(g, "qp", 1, H * hd);
        EMIT(g, q, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, q), N(g, x), N(g, wq), L(k), L(H * hd));
    } else {
        q = input(g, "q", H, hd);
    }
    int qr = act(g, "qr", 1, H * hd), src = q;
    if (v != 1 || fuzz_pick(g->b, 2)) {
        int qw = konst(g, "qw", 1, hd), qn = act(g, "qn", H, hd);
        EMIT(g, qn, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=%s weight offset=0", N(g, qn), N(g, q), N(g, qw),
             L(H), L(hd), eps(g));
        src = qn;
    }
    EMIT(g, qr, "%s = rope(%s, %s, %s%s) h=%lld hd=%lld half=%lld rows=%lld%s%s%s", N(g, qr), N(g, src), N(g, cs),
         N(g, sn), rp.operand, L(H), L(hd), L(half), L(R), rp.field, theta, qpairs);
    if (v == 0 || v == 1) {
        observe(g, qr);
        return;
    }
    if (v == 4) { /* a gated attention: the gate a product of the query's activation */
        int64_t kvh = fuzz_pick(g->b, 2) ? H : 1;
        int kc = state(g, "kc", P, kvh * hd, true), vc = state(g, "vc", P, kvh * hd, true);
        int wg = weight(g, "wg", g->t[x].cols, H * hd), gate = act(g, "gate", 1, H * hd);
        EMIT(g, gate, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, gate), N(g, x), N(g, wg), L(g->t[x].cols),
             L(H * hd));
        int o = act(g, "o", 1, H * hd), sg = act(g, "sg", 1, H * hd), y = act(g, "y", 1, H * hd);
        EMIT(g, o, "%s = attention(%s, %s, %s, %s) h=%lld kv=%lld hd=%lld vd=%lld l=%lld rows=1 pos=named", N(g, o),
             N(g, qr), N(g, kc), N(g, vc), N(g, position(g)), L(H), L(kvh), L(hd), L(hd), L(P));
        EMIT(g, sg, "%s = silu(%s) n=%lld", N(g, sg), N(g, gate), L(H * hd));
        EMIT(g, y, "%s = elementwise(%s, %s) op=mul n=%lld", N(g, y), N(g, o), N(g, sg), L(H * hd));
        observe(g, y);
        return;
    }
    observe(g, qr);
    int64_t KH = fuzz_pick(g->b, 2) ? 1 : H;
    int k = input(g, "k", KH, hd), kw = konst(g, "kw", 1, hd), kn = act(g, "kn", KH, hd), kr = act(g, "kr", 1, KH * hd);
    /* The key turned by tables of its own, or at a position of its own: rotations alike in shape that a rule
     * grouping them must not take as one launch's. */
    int kcs = cs, ksn = sn;
    struct rope_pos kp = rp;
    const char *ktheta = theta, *kpairs = fuzz_pick(g->b, 3) ? qpairs : rope_pairs(g); /* mostly the query's turn */
    int apart = fuzz_pick(g->b, 3);
    if (apart == 1) {
        kcs = konst(g, "kcos", P, half);
        ksn = konst(g, "ksin", P, half);
        ktheta = rope_theta(g);
    } else if (apart == 2 && rp.operand[0]) {
        snprintf(kp.operand, sizeof kp.operand, ", %s", N(g, param(g, "kpos")));
    } else if (apart == 2 && rp.field[0]) {
        snprintf(kp.field, sizeof kp.field, " pos=%lld", L(1 + fuzz_pick(g->b, (int)P)));
    }
    EMIT(g, kn, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, kn), N(g, k), N(g, kw),
         L(KH), L(hd));
    EMIT(g, kr, "%s = rope(%s, %s, %s%s) h=%lld hd=%lld half=%lld rows=1%s%s%s", N(g, kr), N(g, kn), N(g, kcs),
         N(g, ksn), kp.operand, L(KH), L(hd), L(half), kp.field, ktheta, kpairs);
    if (v == 2) {
        observe(g, kr);
        return;
    }
    int kc = state(g, "kc", P, KH * hd, true), p = position(g);
    EMIT(g, kc, "%s = set_row(%s, %s, %s) rows=%lld cols=%lld count=1 index=named", N(g, kc), N(g, kc), N(g, kr),
         N(g, p), L(P), L(KH * hd));
}

/* A slice of every unit (a head's part) read by an op that reads unit by unit, or by one that does not. */
static void m_slice(struct gen *g)
{
    static const int64_t groups[] = {2, 1, 3, 4};
    static const int64_t everys[] = {4, 8, 6, 3, 32};
    int64_t G = groups[fuzz_pick(g->b, 4)], every = everys[fuzz_pick(g->b, 5)];
    int64_t wd = 1 + fuzz_pick(g->b, (int)every), from = fuzz_pick(g->b, (int)(every - wd + 1));
    if (fuzz_pick(g->b, 4) == 0)
        wd = every, from = 0;
    int x = input(g, "x", 1, G * every), y = act(g, "y", 1, G * wd);
    EMIT(g, y, "%s = head_slice(%s) n=%lld every=%lld from=%lld width=%lld", N(g, y), N(g, x), L(G * every), L(every),
         L(from), L(wd));
    int v = fuzz_pick(g->b, 4);
    if (v == 1 && wd % 2 != 0)
        v = 0;
    int z;
    if (v == 0) {
        int w = konst(g, "w", 1, wd);
        z = act(g, "z", G, wd);
        EMIT(g, z, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-05 weight offset=0", N(g, z), N(g, y), N(g, w),
             L(G), L(wd));
    } else if (v == 1) {
        int cs = konst(g, "cos", 4, wd / 2), sn = konst(g, "sin", 4, wd / 2);
        z = act(g, "z", 1, G * wd);
        EMIT(g, z, "%s = rope(%s, %s, %s) h=%lld hd=%lld half=%lld rows=1%s%s", N(g, z), N(g, y), N(g, cs), N(g, sn),
             L(G), L(wd), L(wd / 2), rope_theta(g), rope_pairs(g));
    } else if (v == 2) {
        int64_t b = 1 + fuzz_pick(g->b, 4);
        int w = weight(g, "w", G * wd, b);
        z = act(g, "z", 1, G * b);
        EMIT(g, z, "%s = head_matmul(%s, %s) m=1 heads=%lld a=%lld b=%lld", N(g, z), N(g, y), N(g, w), L(G), L(wd),
             L(b));
    } else {
        int r = input(g, "r", 1, G * wd);
        z = act(g, "z", 1, G * wd);
        EMIT(g, z, "%s = elementwise(%s, %s) op=add n=%lld", N(g, z), N(g, y), N(g, r), L(G * wd));
    }
    observe(g, z);
}

/* A value set into a table's rows at a named or a fixed row by the op that makes it (a product, a scale, a norm, or
 * none: an input), sometimes a second table at the same position (another layer's cache). */
static void m_row_write(struct gen *g)
{
    static const int64_t tabrows[] = {3, 4, 8, 2};
    int64_t R = tabrows[fuzz_pick(g->b, 4)], c = width(g);
    int64_t count = (R >= 2 && fuzz_pick(g->b, 4) == 3) ? 2 : 1;
    int tables = 1 + (fuzz_pick(g->b, 3) == 2);
    bool named = fuzz_pick(g->b, 3) != 1;
    int64_t at = 1 + fuzz_pick(g->b, (int)(R - count + 1));
    for (int i = 0; i < tables; i++) {
        char cn[24], vn[24], xn[24], wn[24];
        snprintf(cn, sizeof cn, "cache%d", i);
        snprintf(vn, sizeof vn, "v%d", i);
        snprintf(xn, sizeof xn, "x%d", i);
        snprintf(wn, sizeof wn, "w%d", i);
        int cache = state(g, cn, R, c, fuzz_pick(g->b, 4) != 3), v;
        switch (fuzz_pick(g->b, 4)) {
        case 0: {
            int64_t k = width(g);
            int x = input(g, xn, count, k), w = weight(g, wn, k, c);
            v = act(g, vn, count, c);
            EMIT(g, v, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, v), N(g, x), N(g, w), L(count), L(k), L(c));
            break;
        }
        case 1: {
            int x = input(g, xn, count, c);
            v = act(g, vn, count, c);
            EMIT(g, v, "%s = scale(%s) n=%lld factor=0.25", N(g, v), N(g, x), L(count * c));
            break;
        }
        case 2: {
            int x = input(g, xn, count, c), w = konst(g, wn, 1, c);
            v = act(g, vn, count, c);
            EMIT(g, v, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, v), N(g, x), N(g, w),
                 L(count), L(c));
            break;
        }
        default: v = input(g, vn, count, c); break;
        }
        /* The second table at a row of its own: row writes alike in shape that a rule grouping them by their row
         * must not take as one launch's. */
        bool apart = i > 0 && fuzz_pick(g->b, 2);
        if (named)
            EMIT(g, cache, "%s = set_row(%s, %s, %s) rows=%lld cols=%lld count=%lld index=named", N(g, cache),
                 N(g, cache), N(g, v), N(g, apart ? param(g, "pos2") : position(g)), L(R), L(c), L(count));
        else
            EMIT(g, cache, "%s = set_row(%s, %s) rows=%lld cols=%lld count=%lld index=%lld", N(g, cache), N(g, cache),
                 N(g, v), L(R), L(c), L(count), L(apart ? 1 + (at % (R - count + 1)) : at));
        if (fuzz_pick(g->b, 3) == 2) { /* the table read after the write */
            char rn[24];
            snprintf(rn, sizeof rn, "rd%d", i);
            int rd = act(g, rn, 1, c);
            EMIT(g, rd, "%s = row_gather(%s) rows=%lld cols=%lld index=%lld", N(g, rd), N(g, cache), L(R), L(c),
                 L(1 + fuzz_pick(g->b, (int)R)));
            observe(g, rd);
        }
    }
}

/* Two producers whose results a join interleaves unit by unit. */
static void m_join(struct gen *g)
{
    int64_t r = 1 + fuzz_pick(g->b, 2), h = heads(g);
    int64_t wa = h * (1 + fuzz_pick(g->b, 2)), wb = h * (1 + fuzz_pick(g->b, 3));
    int xa = input(g, "xa", r, wa), xb = input(g, "xb", r, wb);
    int a = act(g, "a", r, wa), b = act(g, "b", r, wb), y = act(g, "y", r, wa + wb);
    EMIT(g, a, "%s = scale(%s) n=%lld factor=2", N(g, a), N(g, xa), L(r * wa));
    EMIT(g, b, "%s = relu(%s) n=%lld", N(g, b), N(g, xb), L(r * wb));
    EMIT(g, y, "%s = join(%s, %s) rows=%lld heads=%lld wa=%lld wb=%lld", N(g, y), N(g, a), N(g, b), L(r), L(h), L(wa),
         L(wb));
    if (fuzz_pick(g->b, 2)) {
        int w = konst(g, "w", 1, wa + wb), n = act(g, "n", r, wa + wb);
        EMIT(g, n, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, n), N(g, y), N(g, w),
             L(r), L(wa + wb));
        observe(g, n);
    } else {
        observe(g, y);
    }
}

/* A causal convolution of one channel group: `x` rows×chan, its ring updated in place; out the result. */
static int conv(struct gen *g, const char *tag, int x, int64_t r, int64_t chan, int64_t taps, bool carried)
{
    char wn[24], rn[24], yn[24];
    snprintf(wn, sizeof wn, "cw%s", tag);
    snprintf(rn, sizeof rn, "ring%s", tag);
    snprintf(yn, sizeof yn, "c%s", tag);
    int w = konst(g, wn, chan, taps), ring = state(g, rn, taps - 1, chan, carried), y = act(g, yn, r, chan);
    EMIT(g, y, "%s = causal_conv(%s, %s, %s) chan=%lld taps=%lld rows=%lld", N(g, y), N(g, x), N(g, w), N(g, ring),
         L(chan), L(taps), L(r));
    return y;
}

/* Causal convolutions: with their SiLU, with a per-head L2 norm after it, or two side by side. */
static void m_conv(struct gen *g)
{
    static const int64_t chans[] = {8, 4, 16, 6, 64};
    static const int64_t tapss[] = {4, 2, 3};
    int64_t r = 1 + fuzz_pick(g->b, 2), chan = chans[fuzz_pick(g->b, 5)], taps = tapss[fuzz_pick(g->b, 3)];
    int x = input(g, "x", r, chan);
    int y = conv(g, "", x, r, chan, taps, fuzz_pick(g->b, 4) != 3);
    int v = fuzz_pick(g->b, 4);
    if (v == 3) {
        int x2 = input(g, "x2", r, chan);
        int y2 = conv(g, "2", x2, r, chan, taps, true);
        observe(g, y);
        observe(g, y2);
        return;
    }
    if (v == 0) {
        observe(g, y);
        return;
    }
    int s = act(g, "s", r, chan);
    EMIT(g, s, "%s = silu(%s) n=%lld", N(g, s), N(g, y), L(r * chan));
    if (v == 1) {
        observe(g, s);
        return;
    }
    int64_t cols = chan % 2 == 0 ? chan / 2 : chan;
    if (fuzz_pick(g->b, 2))
        cols = chan;
    int q = act(g, "q", r, chan);
    EMIT(g, q, "%s = l2_norm(%s) rows=%lld cols=%lld eps=1e-06", N(g, q), N(g, s), L(r * chan / cols), L(cols));
    observe(g, q);
}

/* A gated delta rule: its inputs as they come, from products of one activation, or through convolutions (with their
 * SiLU and L2 norms); its gates computed just before it or given. */
static void m_delta(struct gen *g)
{
    int64_t h = 1 + fuzz_pick(g->b, 2), dk = fuzz_pick(g->b, 2) ? 4 : 2, dv = fuzz_pick(g->b, 3) == 2 ? 4 : 2;
    int64_t r = fuzz_pick(g->b, 3) == 2 ? 2 : 1;
    bool proj = fuzz_pick(g->b, 2), convs = fuzz_pick(g->b, 3) != 1, gates = fuzz_pick(g->b, 4) != 3;
    int64_t d = 8;
    int x = proj ? input(g, "x", r, d) : -1;
    int iq, ik, iv, iz, ib, ia;
    static const char *const names[] = {"xq", "xk", "xv", "z", "bl", "al"};
    int64_t widths[6] = {h * dk, h * dk, h * dv, h * dv, h, h};
    int *ins[6] = {&iq, &ik, &iv, &iz, &ib, &ia};
    for (int i = 0; i < 6; i++) {
        if (!proj) {
            *ins[i] = input(g, names[i], r, widths[i]);
            continue;
        }
        char wn[24];
        snprintf(wn, sizeof wn, "w%s", names[i]);
        int w = weight(g, wn, d, widths[i]);
        *ins[i] = act(g, names[i], r, widths[i]);
        EMIT(g, *ins[i], "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, *ins[i]), N(g, x), N(g, w), L(r), L(d),
             L(widths[i]));
    }
    int q = iq, k = ik, v = iv;
    if (convs) {
        int *side[3] = {&q, &k, &v};
        static const char *const tags[] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++) {
            int64_t chan = widths[i];
            int c = conv(g, tags[i], *side[i], r, chan, 4, false);
            char sn[24];
            snprintf(sn, sizeof sn, "s%s", tags[i]);
            int s = act(g, sn, r, chan);
            EMIT(g, s, "%s = silu(%s) n=%lld", N(g, s), N(g, c), L(r * chan));
            *side[i] = s;
            if (i < 2) {
                char ln[24];
                snprintf(ln, sizeof ln, "l%s", tags[i]);
                int l2 = act(g, ln, r, chan);
                EMIT(g, l2, "%s = l2_norm(%s) rows=%lld cols=%lld eps=1e-06", N(g, l2), N(g, s), L(r * h), L(dk));
                *side[i] = l2;
            }
        }
    }
    int b = ib, a = ia;
    if (gates) {
        int alog = konst(g, "alog", 1, h), dtb = konst(g, "dtb", 1, h);
        b = act(g, "b", r, h);
        a = act(g, "a", r, h);
        EMIT(g, b, "%s = sigmoid(%s) n=%lld", N(g, b), N(g, ib), L(r * h));
        EMIT(g, a, "%s = decay(%s, %s, %s) n=%lld rows=%lld", N(g, a), N(g, ia), N(g, alog), N(g, dtb), L(r * h), L(r));
    }
    int st = state(g, "st", h * dk, dv, true), nw = konst(g, "nw", 1, dv), o = act(g, "o", r, h * dv);
    EMIT(g, o, "%s = gated_delta(%s, %s, %s, %s, %s, %s, %s, %s) h=%lld dk=%lld dv=%lld rows=%lld gate=%s eps=1e-06",
         N(g, o), N(g, q), N(g, k), N(g, v), N(g, iz), N(g, b), N(g, a), N(g, st), N(g, nw), L(h), L(dk), L(dv), L(r),
         fuzz_pick(g->b, 4) == 3 ? "sigmoid" : "silu");
    observe(g, o);
}

/* The optional fields of an attention, as text, and its extra operands. */
static void attention_options(struct gen *g, int64_t H, const char *sinks, char *fields, size_t nf, char *extra,
                              size_t ne)
{
    fields[0] = extra[0] = '\0';
    int v = fuzz_pick(g->b, 6);
    if (v == 1)
        snprintf(fields, nf, " scale=0.5");
    else if (v == 2)
        snprintf(fields, nf, " softcap=30");
    else if (v == 3)
        snprintf(fields, nf, " window=2");
    else if (v == 4) {
        int sk = konst(g, sinks, 1, H);
        snprintf(fields, nf, " sinks");
        snprintf(extra, ne, ", %s", N(g, sk));
    }
}

/* An attention over caches a step appends its rows to (written in place at the position between the query's
 * producer and the attention), with an output gate and projection after it; or a batch's attentions, each into a
 * row of a table the output projection reads whole. */
static void m_attention(struct gen *g)
{
    static const int64_t lens[] = {4, 8, 3, 16};
    int64_t H = heads(g), kvh = fuzz_pick(g->b, 2) ? 1 : H, hd = even(g), vd = fuzz_pick(g->b, 3) == 2 ? hd / 2 : hd;
    int64_t l = lens[fuzz_pick(g->b, 4)], r = l >= 2 && fuzz_pick(g->b, 3) == 2 ? 2 : 1;
    int v = fuzz_pick(g->b, 3);
    char fields[64], extra[64];
    if (v == 2) { /* a batch of two sequences, each its own caches, its attended row set into a table */
        int64_t B = 2;
        int qa = input(g, "qa", B, H * hd), tab = state(g, "rows", B, H * vd, false);
        for (int64_t s = 0; s < B; s++) {
            char kn[24], vn[24], qn[24], on[24];
            snprintf(kn, sizeof kn, "kc%lld", L(s));
            snprintf(vn, sizeof vn, "vc%lld", L(s));
            snprintf(qn, sizeof qn, "q%lld", L(s));
            snprintf(on, sizeof on, "o%lld", L(s));
            int kc = state(g, kn, l, kvh * hd, true), vc = state(g, vn, l, kvh * vd, true);
            int q = act(g, qn, 1, H * hd), o = act(g, on, 1, H * vd);
            EMIT(g, q, "%s = row_gather(%s) rows=%lld cols=%lld index=%lld", N(g, q), N(g, qa), L(B), L(H * hd),
                 L(s + 1));
            char skn[24];
            snprintf(skn, sizeof skn, "sinks%lld", L(s));
            attention_options(g, H, skn, fields, sizeof fields, extra, sizeof extra);
            EMIT(g, o, "%s = attention(%s, %s, %s%s) h=%lld kv=%lld hd=%lld vd=%lld l=%lld rows=1%s", N(g, o), N(g, q),
                 N(g, kc), N(g, vc), extra, L(H), L(kvh), L(hd), L(vd), L(l), fields);
            EMIT(g, tab, "%s = set_row(%s, %s) rows=%lld cols=%lld count=1 index=%lld", N(g, tab), N(g, tab), N(g, o),
                 L(B), L(H * vd), L(s + 1));
        }
        int64_t n = width(g);
        int wo = weight(g, "wo", H * vd, n), y = act(g, "y", B, n);
        EMIT(g, y, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, y), N(g, tab), N(g, wo), L(B), L(H * vd), L(n));
        observe(g, y);
        return;
    }
    int kc = state(g, "kc", l, kvh * hd, true), vc = state(g, "vc", l, kvh * vd, true), p = position(g);
    int q = input(g, "q", r, H * hd);
    if (fuzz_pick(g->b, 2)) { /* the step's key and value rows appended at the position */
        int kn = input(g, "knew", r, kvh * hd), vn = input(g, "vnew", r, kvh * vd);
        EMIT(g, kc, "%s = set_row(%s, %s, %s) rows=%lld cols=%lld count=%lld index=named", N(g, kc), N(g, kc), N(g, kn),
             N(g, p), L(l), L(kvh * hd), L(r));
        EMIT(g, vc, "%s = set_row(%s, %s, %s) rows=%lld cols=%lld count=%lld index=named", N(g, vc), N(g, vc), N(g, vn),
             N(g, p), L(l), L(kvh * vd), L(r));
    }
    attention_options(g, H, "sinks", fields, sizeof fields, extra, sizeof extra);
    int o = act(g, "o", r, H * vd);
    EMIT(g, o, "%s = attention(%s, %s, %s, %s%s) h=%lld kv=%lld hd=%lld vd=%lld l=%lld rows=%lld pos=named%s", N(g, o),
         N(g, q), N(g, kc), N(g, vc), N(g, p), extra, L(H), L(kvh), L(hd), L(vd), L(l), L(r), fields);
    int y = o;
    if (v == 1) {
        int gz = input(g, "gz", r, H * vd), sg = act(g, "sg", r, H * vd), gy = act(g, "gy", r, H * vd);
        EMIT(g, sg, "%s = sigmoid(%s) n=%lld", N(g, sg), N(g, gz), L(r * H * vd));
        EMIT(g, gy, "%s = elementwise(%s, %s) op=mul n=%lld", N(g, gy), N(g, o), N(g, sg), L(r * H * vd));
        y = gy;
    }
    if (fuzz_pick(g->b, 2)) {
        int64_t n = width(g);
        int wo = weight(g, "wo", H * vd, n), out = act(g, "out", r, n);
        EMIT(g, out, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, out), N(g, y), N(g, wo), L(r), L(H * vd), L(n));
        y = out;
    }
    observe(g, y);
}

/* The expert weights of a mixture over d values with E experts of width f, its bias rows and its routing's
 * correction row (-1 without). */
struct experts {
    int rt, eg, eu, ed;
    int rb, gb, ub, db;
    int cb;
};

/* Declare a mixture's router and experts, and with `biased` their bias rows; their names end in `tag`. */
static struct experts experts(struct gen *g, int64_t d, int64_t E, int64_t f, bool biased, const char *tag)
{
    static const char *const locals[] = {"rt", "eg", "eu", "ed", "rb", "gb", "ub", "db"};
    char nm[8][16];
    for (int i = 0; i < 8; i++)
        snprintf(nm[i], sizeof nm[i], "%s%s", locals[i], tag);
    struct experts e;
    e.rt = konst(g, nm[0], d, E);
    if (fuzz_pick(g->b, 2))
        g->t[e.rt].format = "f32";
    e.eg = konst(g, nm[1], d, E * f);
    e.eu = konst(g, nm[2], d, E * f);
    e.ed = konst(g, nm[3], f, E * d);
    e.rb = e.gb = e.ub = e.db = e.cb = -1;
    if (biased) {
        e.rb = konst(g, nm[4], 1, E);
        e.gb = konst(g, nm[5], 1, E * f);
        e.ub = konst(g, nm[6], 1, E * f);
        e.db = konst(g, nm[7], 1, E * d);
    }
    return e;
}

/* Emit one mixture of x with result out (how: its activation and further fields; tail: a destination elsewhere,
 * leaving out unwritten; or ""). */
static void moe_op(struct gen *g, int out, int x, const struct experts *e, int64_t d, int64_t k, int64_t f, int64_t E,
                   const char *how, const char *tail)
{
    char biases[200] = "";
    if (e->rb >= 0)
        snprintf(biases, sizeof biases, ", %s, %s, %s, %s", N(g, e->rb), N(g, e->gb), N(g, e->ub), N(g, e->db));
    if (e->cb >= 0)
        snprintf(biases + strlen(biases), sizeof biases - strlen(biases), ", %s", N(g, e->cb));
    EMIT(g, tail[0] ? -1 : out, "%s = moe(%s, %s, %s, %s, %s%s) d=%lld k=%lld dff=%lld experts=%lld act=%s%s%s%s",
         N(g, out), N(g, x), N(g, e->rt), N(g, e->eg), N(g, e->eu), N(g, e->ed), biases, L(d), L(k), L(f), L(E), how,
         e->rb >= 0 ? " bias" : "", g->route ? g->route : "", tail);
}

/* A mixture: alone, with a shared SwiGLU expert summed with it, its result added and normed next, or a chunk's
 * rows each through it into a table's rows (set after, or written there directly). */
static void m_mixture(struct gen *g)
{
    static const int64_t ds[] = {8, 4, 16};
    int64_t d = ds[fuzz_pick(g->b, 3)], E = fuzz_pick(g->b, 2) ? 2 : 4, k = 1 + fuzz_pick(g->b, 2),
            f = fuzz_pick(g->b, 2) ? 4 : 2;
    const char *how = fuzz_pick(g->b, 4) == 3 ? "geglu" : "swiglu";
    bool clamped = how[0] == 's' && fuzz_pick(g->b, 4) == 0; /* gpt-oss's: clamped, biased, top k then softmax */
    if (clamped)
        how = "clamped_swiglu topk_softmax alpha=1.702 limit=7";
    /* The routing: today's softmax renormalised, or one the published models use (qwen3-moe's and deepseek-v2's
     * unrenormalised softmax, deepseek-v3's corrected, grouped, scaled sigmoid), or a mix of their fields. */
    static const char *const routes[] = {"", " no_renorm", " sigmoid", " sigmoid correction scale=2.5",
                                         " sigmoid correction groups=2 topk_groups=1 scale=2.5",
                                         " no_renorm groups=2 topk_groups=1 scale=1.5"};
    int route = clamped ? 0 : fuzz_pick(g->b, 6);
    if (route >= 4 && E == 2) /* one group of two: groups must leave two experts a group */
        route = route == 4 ? 3 : 1;
    g->route = routes[route];
    struct experts e = experts(g, d, E, f, clamped, "");
    if (strstr(g->route, "correction"))
        e.cb = konst(g, "cb", 1, E);
    int v = fuzz_pick(g->b, 5);
    if (v >= 3) { /* a chunk's rows */
        int64_t R = 2 + fuzz_pick(g->b, 2);
        /* The odd rows through one router of their own, or experts of their own: rows alike in shape that a fold
         * grouping one-row mixtures must not take as one table's. */
        struct experts odd = e;
        int apart = fuzz_pick(g->b, 3);
        if (apart == 1) {
            odd.rt = konst(g, "rt2", d, E);
            g->t[odd.rt].format = g->t[e.rt].format;
        } else if (apart == 2) {
            odd = experts(g, d, E, f, clamped, "2");
            if (e.cb >= 0)
                odd.cb = konst(g, "cb2", 1, E);
        }
        int xs = input(g, "xs", R, d), xn = act(g, "xn", R, d);
        int tab = state(g, "tab", R, d, false);
        g->t[tab].observed = true;
        EMIT(g, xn, "%s = scale(%s) n=%lld factor=0.5", N(g, xn), N(g, xs), L(R * d));
        for (int i = 0; i < (int)R; i++) {
            char xr[24], yr[24], tail[64];
            snprintf(xr, sizeof xr, "x%d", i);
            snprintf(yr, sizeof yr, "y%d", i);
            int x = act(g, xr, 1, d), y = act(g, yr, 1, d);
            EMIT(g, x, "%s = row_gather(%s) rows=%lld cols=%lld index=%lld", N(g, x), N(g, xn), L(R), L(d), L(i + 1));
            const struct experts *ei = i % 2 ? &odd : &e;
            if (v == 4) { /* written into the table's row directly: y itself is never written */
                snprintf(tail, sizeof tail, " -> %s row(%lld, %lld)", N(g, tab), L(i + 1), L(d));
                moe_op(g, y, x, ei, d, k, f, E, how, tail);
            } else {
                moe_op(g, y, x, ei, d, k, f, E, how, "");
                EMIT(g, tab, "%s = set_row(%s, %s) rows=%lld cols=%lld count=1 index=%lld", N(g, tab), N(g, tab),
                     N(g, y), L(R), L(d), L(i + 1));
            }
        }
        return;
    }
    int x = input(g, "x", 1, d), ym = act(g, "ym", 1, d);
    moe_op(g, ym, x, &e, d, k, f, E, how, "");
    int y = ym;
    if (v == 1 || fuzz_pick(g->b, 4) == 3) { /* the shared expert */
        int64_t s = width(g);
        int wg = weight(g, "wg", d, s), wu = weight(g, "wu", d, s), wd = weight(g, "wd", s, d);
        int gt = act(g, "g", 1, s), u = act(g, "u", 1, s), hh = act(g, "h", 1, s), ys = act(g, "ys", 1, d);
        int sum = act(g, "sum", 1, d);
        EMIT(g, gt, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, gt), N(g, x), N(g, wg), L(d), L(s));
        EMIT(g, u, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, u), N(g, x), N(g, wu), L(d), L(s));
        EMIT(g, hh, "%s = swiglu(%s, %s) total=%lld", N(g, hh), N(g, gt), N(g, u), L(s));
        EMIT(g, ys, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, ys), N(g, hh), N(g, wd), L(s), L(d));
        EMIT(g, sum, "%s = elementwise(%s, %s) op=add n=%lld", N(g, sum), N(g, ym), N(g, ys), L(d));
        y = sum;
    }
    if (v == 2) { /* the next add and norm */
        int res = input(g, "res", 1, d), nw = konst(g, "nw", 1, d), s = act(g, "s", 1, d), n = act(g, "n", 1, d);
        EMIT(g, s, "%s = elementwise(%s, %s) op=add n=%lld", N(g, s), N(g, res), N(g, y), L(d));
        EMIT(g, n, "%s = rms_norm(%s, %s) rows=1 cols=%lld eps=1e-06 weight offset=0", N(g, n), N(g, s), N(g, nw),
             L(d));
        if (fuzz_pick(g->b, 2))
            observe(g, s);
        y = n;
    }
    observe(g, y);
}

/* A chunk's last layer: (an attention and) a projection, the residual add and norm, the last row (or another) taken
 * and the output product of it. */
static void m_last_row(struct gen *g)
{
    int64_t R = 2 + fuzz_pick(g->b, 3), c = even(g), V = 4 + fuzz_pick(g->b, 5);
    int h = input(g, "h", R, c), src = h;
    if (fuzz_pick(g->b, 2)) {
        int64_t l = R + fuzz_pick(g->b, 3);
        int wq = weight(g, "wq", c, c), kc = state(g, "kc", l, c, true), vc = state(g, "vc", l, c, true);
        int qq = act(g, "qq", R, c), att = act(g, "att", R, c);
        EMIT(g, qq, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, qq), N(g, h), N(g, wq), L(R), L(c), L(c));
        EMIT(g, att, "%s = attention(%s, %s, %s) h=2 kv=2 hd=%lld vd=%lld l=%lld rows=%lld", N(g, att), N(g, qq),
             N(g, kc), N(g, vc), L(c / 2), L(c / 2), L(l), L(R));
        src = att;
    }
    int wo = weight(g, "wo", c, c), nw = konst(g, "nw", 1, c), wout = weight(g, "wout", c, V);
    int o = act(g, "o", R, c), r = act(g, "r", R, c), n = act(g, "n", R, c), last = act(g, "last", 1, c);
    int logits = act(g, "logits", 1, V);
    EMIT(g, o, "%s = matmul(%s, %s) m=%lld k=%lld n=%lld", N(g, o), N(g, src), N(g, wo), L(R), L(c), L(c));
    EMIT(g, r, "%s = elementwise(%s, %s) op=add n=%lld", N(g, r), N(g, h), N(g, o), L(R * c));
    EMIT(g, n, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, n), N(g, r), N(g, nw), L(R),
         L(c));
    int64_t row = fuzz_pick(g->b, 3) == 2 ? 1 + fuzz_pick(g->b, (int)R) : R;
    EMIT(g, last, "%s = row_gather(%s) rows=%lld cols=%lld index=%lld", N(g, last), N(g, n), L(R), L(c), L(row));
    EMIT(g, logits, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, logits), N(g, last), N(g, wout), L(c), L(V));
    observe(g, logits);
}

/* Elementwise chains and regions with fan-out: a few ops over values of one length, each reading recent values
 * (some more than once), sometimes a broadcast row. */
static void m_pointwise(struct gen *g)
{
    static const char *const unary[] = {"silu", "sigmoid", "gelu", "relu"};
    static const char *const binary[] = {"add", "mul", "sub", "div"};
    int64_t r = rows(g), c = width(g), n = r * c;
    int vals[16], nv = 0;
    vals[nv++] = input(g, "a", r, c);
    vals[nv++] = input(g, "b", r, c);
    if (fuzz_pick(g->b, 2))
        vals[nv++] = input(g, "c", r, c);
    if (fuzz_pick(g->b, 4) == 3) { /* one cheap op read by two pointwise ops, each result the host's */
        int f = act(g, "f", r, c), y1 = act(g, "y1", r, c), y2 = act(g, "y2", r, c);
        EMIT(g, f, "%s = %s(%s) n=%lld", N(g, f), unary[fuzz_pick(g->b, 4)], N(g, vals[0]), L(n));
        EMIT(g, y1, "%s = elementwise(%s, %s) op=mul n=%lld", N(g, y1), N(g, f), N(g, vals[1]), L(n));
        EMIT(g, y2, "%s = elementwise(%s, %s) op=add n=%lld", N(g, y2), N(g, vals[nv - 1]), N(g, f), L(n));
        observe(g, y1);
        observe(g, y2);
        return;
    }
    int steps = 2 + fuzz_pick(g->b, 6), last = vals[0];
    for (int i = 0; i < steps && nv < 16; i++) {
        char name[24];
        snprintf(name, sizeof name, "t%d", i);
        int y = act(g, name, r, c);
        int a = vals[nv - 1 - fuzz_pick(g->b, nv < 4 ? nv : 4)];
        int kind = fuzz_pick(g->b, 8);
        if (kind < 4) {
            int b = vals[nv - 1 - fuzz_pick(g->b, nv < 4 ? nv : 4)];
            EMIT(g, y, "%s = elementwise(%s, %s) op=%s n=%lld", N(g, y), N(g, a), N(g, b), binary[fuzz_pick(g->b, 4)],
                 L(n));
        } else if (kind < 6) {
            EMIT(g, y, "%s = %s(%s) n=%lld", N(g, y), unary[kind - 4 + 2 * fuzz_pick(g->b, 2)], N(g, a), L(n));
        } else if (kind == 6) {
            EMIT(g, y, "%s = scale(%s) n=%lld factor=-1.5", N(g, y), N(g, a), L(n));
        } else {
            char bn[24];
            snprintf(bn, sizeof bn, "row%d", i);
            int b = konst(g, bn, 1, c);
            EMIT(g, y, "%s = elementwise(%s, %s) op=%s n=%lld row=%lld", N(g, y), N(g, a), N(g, b),
                 binary[fuzz_pick(g->b, 2)], L(n), L(c));
        }
        vals[nv++] = y;
        last = y;
    }
    observe(g, last);
}

/* Latent attention: the prologue that makes its query and its cache row in parts, the product expanding its result
 * into each head's values, or its values read from a latent cache a row was just appended to. */
static void m_latent(struct gen *g)
{
    int v = fuzz_pick(g->b, 3);
    int p = position(g);
    if (v == 0) {
        int64_t H = 2, nope = 4, rope = 2, lat = 4, d = 8, l = 4;
        int x = input(g, "x", 1, d);
        int wqn = weight(g, "wqn", d, H * nope), wuk = weight(g, "wuk", H * nope, lat),
            wqr = weight(g, "wqr", d, H * rope);
        int wlat = weight(g, "wlat", d, lat), wkr = weight(g, "wkr", d, rope), lnw = konst(g, "lnw", 1, lat);
        int cs = konst(g, "cos", l, rope / 2), sn = konst(g, "sin", l, rope / 2);
        int q = act(g, "q", 1, H * (lat + rope)), kc = state(g, "kc", l, lat + rope, true);
        int qn = act(g, "qn", 1, H * nope), qa = act(g, "qa", 1, H * lat), qr = act(g, "qr", 1, H * rope);
        int qp = act(g, "qp", 1, H * rope), lt = act(g, "lat", 1, lat), ln = act(g, "ln", 1, lat);
        int kr = act(g, "kr", 1, rope), kp = act(g, "kp", 1, rope), att = act(g, "att", 1, H * lat);
        int64_t pitch = lat + rope;
        EMIT(g, qn, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, qn), N(g, x), N(g, wqn), L(d), L(H * nope));
        EMIT(g, -1, "%s = head_matmul(%s, %s) m=1 heads=%lld a=%lld b=%lld -> %s unit(%lld:0:%lld)", N(g, qa), N(g, qn),
             N(g, wuk), L(H), L(nope), L(lat), N(g, q), L(pitch), L(lat));
        EMIT(g, qr, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, qr), N(g, x), N(g, wqr), L(d), L(H * rope));
        EMIT(g, -1, "%s = rope(%s, %s, %s, %s) h=%lld hd=%lld half=%lld rows=1 pos=named -> %s unit(%lld:%lld:%lld)",
             N(g, qp), N(g, qr), N(g, cs), N(g, sn), N(g, p), L(H), L(rope), L(rope / 2), N(g, q), L(pitch), L(lat),
             L(rope));
        g->t[q].made = true;
        EMIT(g, lt, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, lt), N(g, x), N(g, wlat), L(d), L(lat));
        EMIT(g, -1,
             "%s = rms_norm(%s, %s) rows=1 cols=%lld eps=1e-06 weight offset=0 -> %s row(%s, %lld) unit(%lld:0:%lld)",
             N(g, ln), N(g, lt), N(g, lnw), L(lat), N(g, kc), N(g, p), L(pitch), L(pitch), L(lat));
        EMIT(g, kr, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, kr), N(g, x), N(g, wkr), L(d), L(rope));
        EMIT(
            g, -1,
            "%s = rope(%s, %s, %s, %s) h=1 hd=%lld half=%lld rows=1 pos=named -> %s row(%s, %lld) unit(%lld:%lld:%lld)",
            N(g, kp), N(g, kr), N(g, cs), N(g, sn), N(g, p), L(rope), L(rope / 2), N(g, kc), N(g, p), L(pitch),
            L(pitch), L(lat), L(rope));
        EMIT(g, att, "%s = attention(%s, %s, %s[%lld:0:%lld], %s) h=%lld kv=1 hd=%lld vd=%lld l=%lld rows=1 pos=named",
             N(g, att), N(g, q), N(g, kc), N(g, kc), L(pitch), L(lat), N(g, p), L(H), L(pitch), L(lat), L(l));
        observe(g, att);
        return;
    }
    if (v == 1) {
        int64_t H = 2, hd = 6, vd = 4, l = 4, b = 1 + fuzz_pick(g->b, 3);
        int q = input(g, "q", 1, H * hd), kc = state(g, "kc", l, hd, true), vc = state(g, "vc", l, vd, true);
        int wuv = weight(g, "wuv", H * vd, b), o = act(g, "o", 1, H * vd), y = act(g, "y", 1, H * b);
        EMIT(g, o, "%s = attention(%s, %s, %s) h=%lld kv=1 hd=%lld vd=%lld l=%lld rows=1", N(g, o), N(g, q), N(g, kc),
             N(g, vc), L(H), L(hd), L(vd), L(l));
        EMIT(g, y, "%s = head_matmul(%s, %s) m=1 heads=%lld a=%lld b=%lld", N(g, y), N(g, o), N(g, wuv), L(H), L(vd),
             L(b));
        observe(g, y);
        return;
    }
    int64_t l = 4, hd = 2, every = 6, wv = 4 - 2 * fuzz_pick(g->b, 2), from = fuzz_pick(g->b, (int)(every - wv + 1));
    int q = input(g, "q", 1, hd), kc = state(g, "kc", l, hd, true), lat = state(g, "lat", l, every, true);
    int lrow = input(g, "lrow", 1, every), vc = act(g, "vc", l, wv), o = act(g, "o", 1, wv);
    EMIT(g, lat, "%s = set_row(%s, %s, %s) rows=%lld cols=%lld count=1 index=named", N(g, lat), N(g, lat), N(g, lrow),
         N(g, p), L(l), L(every));
    EMIT(g, vc, "%s = head_slice(%s) n=%lld every=%lld from=%lld width=%lld", N(g, vc), N(g, lat), L(l * every),
         L(every), L(from), L(wv));
    EMIT(g, o, "%s = attention(%s, %s, %s) h=1 kv=1 hd=%lld vd=%lld l=%lld rows=1 pos=%lld", N(g, o), N(g, q), N(g, kc),
         N(g, vc), L(hd), L(wv), L(l), L(1 + fuzz_pick(g->b, (int)l)));
    observe(g, o);
}

/* The step's logits (soft-capped or not) and the arg-max that picks the next token (and another arg-max beside). */
static void m_argmax(struct gen *g)
{
    int64_t c = width(g), V = 4 + fuzz_pick(g->b, 13);
    int h = input(g, "h", 1, c), w = weight(g, "w", c, V), logits = act(g, "logits", 1, V);
    EMIT(g, logits, "%s = matmul(%s, %s) m=1 k=%lld n=%lld", N(g, logits), N(g, h), N(g, w), L(c), L(V));
    int src = logits;
    if (fuzz_pick(g->b, 3) == 2) {
        int cap = act(g, "capped", 1, V);
        EMIT(g, cap, "%s = softcap(%s) n=%lld cap=30", N(g, cap), N(g, logits), L(V));
        src = cap;
    }
    if (fuzz_pick(g->b, 2))
        observe(g, src);
    int tok = decl(g, "tok", true, 1, 1, IR_ROLE_ACTIVATION);
    g->t[tok].observed = true;
    g->t[tok].next = true;
    EMIT(g, tok, "%s = argmax(%s) rows=1 cols=%lld", N(g, tok), N(g, src), L(V));
    if (fuzz_pick(g->b, 3) == 2) {
        int best = decl(g, "best", true, 1, 1, IR_ROLE_ACTIVATION);
        g->t[best].observed = true;
        EMIT(g, best, "%s = argmax(%s) rows=1 cols=%lld", N(g, best), N(g, src), L(V));
    }
}

/* Two plain norms of one row shape, independent or the second reading the first. */
static void m_dual_norm(struct gen *g)
{
    int64_t r = rows(g), c = width(g);
    int a = input(g, "a", r, c), b = input(g, "b", r, c), wa = konst(g, "wa", 1, c), wb = konst(g, "wb", 1, c);
    int na = act(g, "na", r, c), nb = act(g, "nb", r, c);
    EMIT(g, na, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-06 weight offset=0", N(g, na), N(g, a), N(g, wa),
         L(r), L(c));
    bool chained = fuzz_pick(g->b, 4) == 3;
    EMIT(g, nb, "%s = rms_norm(%s, %s) rows=%lld cols=%lld eps=1e-05 weight offset=%s", N(g, nb),
         N(g, chained ? na : b), N(g, wb), L(r), L(c), offset(g));
    observe(g, na);
    observe(g, nb);
}

/* Every motif's builder, in the motif table's order. */
static void (*const motifs[FUZZ_MOTIF_COUNT])(struct gen *g) = {
    m_add_norm, m_norm_add,  m_projection, m_gated_pair, m_embed,  m_head_norm_rope,
    m_slice,    m_row_write, m_join,       m_conv,       m_delta,  m_attention,
    m_mixture,  m_last_row,  m_pointwise,  m_latent,     m_argmax, m_dual_norm,
};

/* ── Assembly ────────────────────────────────────────────────────────────────────────────────────────────── */

/* Write one tensor's declaration line into buf (room for cap bytes); its length. */
static size_t tensor_line(const struct gtensor *t, char *buf, size_t cap)
{
    static const char *const roles[] = {
#define X(e, s) s,
        IR_ROLES(X)
#undef X
    };
    return (size_t)snprintf(buf, cap, "tensor %s %s %lldx%lld %s%s%s%s%s%s%s\n", t->name, t->i32 ? "i32" : "f32",
                            L(t->rows), L(t->cols), roles[t->role], t->format ? " " : "", t->format ? t->format : "",
                            t->format && t->transposed ? " transposed" : "", t->observed ? " observed" : "",
                            t->carried ? " carried" : "", t->next ? " next" : "");
}

/* The whole text: the tensors, then the ops. */
static char *assemble(const struct gen *g, size_t *len)
{
    size_t cap = g->olen + (size_t)g->nt * 128 + 1;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    size_t at = 0;
    for (int i = 0; i < g->nt; i++)
        at += tensor_line(&g->t[i], text + at, cap - at);
    if (g->olen)
        memcpy(text + at, g->ops, g->olen);
    at += g->olen;
    text[at] = '\0';
    *len = at;
    return text;
}

char *fuzz_generate(struct fuzz_bytes *b, size_t *len, struct fuzz_gen_stats *stats)
{
    struct gen *g = malloc(sizeof *g);
    if (!g)
        return NULL;
    memset(g, 0, offsetof(struct gen, t));
    g->b = b;
    g->stats = stats;
    if (stats)
        memset(stats, 0, sizeof *stats);
    int n = 1 + fuzz_pick(b, FUZZ_GEN_MAX_MOTIFS);
    for (int i = 0; i < n && !g->oom; i++) {
        if (g->nt + GEN_MOTIF_ROOM_TENSORS > GEN_MAX_TENSORS || g->nops + GEN_MOTIF_ROOM_OPS > FUZZ_GEN_MAX_OPS)
            break;
        enum fuzz_motif m = (enum fuzz_motif)fuzz_pick(b, FUZZ_MOTIF_COUNT);
        g->serial = i;
        g->pos = -1;
        g->nhazard = 0;
        g->hazards_left = GEN_HAZARDS_A_MOTIF;
        motifs[m](g);
        if (stats)
            stats->motifs[m]++;
    }
    char *text = g->oom ? NULL : assemble(g, len);
    free(g->ops);
    free(g);
    return text;
}

struct ir_graph *fuzz_generate_graph(struct fuzz_bytes *b, struct fuzz_gen_stats *stats, char err[IR_ERR_LEN])
{
    size_t len;
    char *text = fuzz_generate(b, &len, stats);
    if (!text) {
        snprintf(err, IR_ERR_LEN, "the generator ran out of memory");
        return NULL;
    }
    struct ir_graph *g = ir_parse(text, len, "generated", err);
    free(text);
    return g;
}
