/* tests/test_gguf.c — GGUF files (ir/gguf.c, models/gguf.c): the writer's metadata of every type (nested arrays
 * included) and tensors read back field for field; hostile files built here (every truncation, huge counts and
 * lengths, bad alignment, overlapping and unaligned offsets, unknown types, bad UTF-8, deep arrays, bad bools,
 * duplicates, random byte flips) refused with the byte offset and what was expected, never read past their bytes;
 * and every tiny zoo model exported, read back to the same graph and evaluated to the same bytes from the file's
 * weights, a missing or mis-shaped tensor refused by name; the keys a file may leave out taken as llama.cpp does;
 * olmo2's keys and tensor names as llama.cpp's; rotary scaling both ways in llama.cpp's conventions (its keys, YaRN's
 * fixed betas and truncation, deepseek2's log multiplier and logit scale, llama3's rope_freqs table fitted back to
 * its fields), each refusal naming its key, tensor and pair, or the configuration's field. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include "check.h"
#include "models/models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

/* A path in the scratch folder. */
static const char *scratch(const char *name)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* The whole of a file, malloc'd; its length in *len. */
static unsigned char *slurp(const char *path, size_t *len)
{
    return (unsigned char *)ir_read_file(path, len);
}

/* Parse len bytes (copied into a buffer of exactly that size, so ASan sees any read past them); whether it parsed,
 * the error in err. */
static bool parses(const unsigned char *bytes, size_t len, char err[IR_ERR_LEN])
{
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, bytes, len);
    err[0] = '\0';
    struct ir_gguf *f = ir_gguf_parse(copy, len, "t.gguf", err);
    bool ok = f != NULL;
    ir_gguf_close(f);
    free(copy);
    return ok;
}

#define ANY UINT64_MAX /* a refusal at any byte (of two alike, which is named first is not specified) */

/* Whether parsing fails with a message holding both "byte N:" (any N for ANY) and `what`. */
static bool refused(const unsigned char *bytes, size_t len, uint64_t at, const char *what)
{
    char err[IR_ERR_LEN], want[64];
    snprintf(want, sizeof want, at == ANY ? "t.gguf: byte " : "t.gguf: byte %llu: ", (unsigned long long)at);
    bool ok = !parses(bytes, len, err) && strstr(err, want) && strstr(err, what) && !strstr(err, "''");
    if (!ok) /* a quoted name's possessive written '' is no message: "tensor 'b''s" */
        fprintf(stderr, "  want '%s...%s' without a doubled quote, got '%s'\n", want, what, err);
    return ok;
}

/* A file with metadata of every type and three tensors, written to `name`; its bytes. */
static unsigned char *sample(size_t *len)
{
    struct ir_gguf_writer *w = ir_gguf_writer_new();
    ir_gguf_kv_str(w, "general.architecture", "llama");
    struct ir_gguf_value v = {0};
    static const enum ir_gguf_vtype scalars[] = {IR_GGUF_UINT8,  IR_GGUF_INT8,  IR_GGUF_UINT16,  IR_GGUF_INT16,
                                                 IR_GGUF_UINT32, IR_GGUF_INT32, IR_GGUF_FLOAT32, IR_GGUF_BOOL,
                                                 IR_GGUF_UINT64, IR_GGUF_INT64, IR_GGUF_FLOAT64};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "t.%s", ir_gguf_vtype_name(scalars[i]));
        v = (struct ir_gguf_value){.type = scalars[i], .u = 1, .i = -2, .f = 0.5};
        ir_gguf_key(w, key, scalars[i]);
        ir_gguf_put(w, &v);
    }
    /* An array of strings, and an array of arrays of i32. */
    ir_gguf_key(w, "t.strings", IR_GGUF_ARRAY);
    ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_STRING, .n = 3});
    static const char *words[] = {"a", "", "héllo"};
    for (int i = 0; i < 3; i++)
        ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_STRING, .str = words[i], .len = strlen(words[i])});
    ir_gguf_key(w, "t.nested", IR_GGUF_ARRAY);
    ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_ARRAY, .n = 2});
    for (int i = 0; i < 2; i++) {
        ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_INT32, .n = 2});
        for (int j = 0; j < 2; j++)
            ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_INT32, .i = 10 * i + j});
    }
    float f32[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    static unsigned char q8[2 * 34];
    memset(q8, 7, sizeof q8);
    char err[IR_ERR_LEN];
    CHECK(ir_gguf_add_tensor(w, "a", 1, (uint64_t[]){8}, IR_FMT_F32, f32, err) == 0);
    CHECK(ir_gguf_add_tensor(w, "b", 2, (uint64_t[]){32, 2}, IR_FMT_Q8_0, q8, err) == 0);
    CHECK(ir_gguf_add_tensor(w, "c", 2, (uint64_t[]){33, 1}, IR_FMT_Q8_0, NULL, err) == -1); /* not whole blocks */
    CHECK(ir_gguf_add_tensor(w, "c", 1, (uint64_t[]){8}, IR_FMT_F32, f32, err) == 0);
    CHECK(ir_gguf_write(w, scratch("s.gguf"), err) == 0);
    ir_gguf_writer_free(w);
    return slurp(scratch("s.gguf"), len);
}

/* The writer's file reads back: every key's type and value, nested arrays, tensor infos and data in place. */
static void test_round_trip(void)
{
    size_t len;
    unsigned char *b = sample(&len);
    char err[IR_ERR_LEN];
    struct ir_gguf *f = ir_gguf_open(scratch("s.gguf"), err);
    CHECKF(f != NULL, "%s", err);
    if (!f) {
        free(b);
        return;
    }
    CHECK(f->version == 3 && f->alignment == 32 && f->nkv == 14 && f->ntensors == 3);
    CHECK(f->data_offset % 32 == 0);
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, "t.i8");
    CHECK(kv && kv->value.type == IR_GGUF_INT8 && kv->value.i == -2);
    kv = ir_gguf_find_kv(f, "t.u64");
    CHECK(kv && kv->value.u == 1);
    kv = ir_gguf_find_kv(f, "t.i64");
    CHECK(kv && kv->value.i == -2);
    kv = ir_gguf_find_kv(f, "t.f32");
    CHECK(kv && kv->value.f == 0.5);
    kv = ir_gguf_find_kv(f, "t.f64");
    CHECK(kv && kv->value.f == 0.5);
    kv = ir_gguf_find_kv(f, "t.bool");
    CHECK(kv && kv->value.u == 1);
    kv = ir_gguf_find_kv(f, "t.strings");
    struct ir_gguf_value item, inner;
    CHECK(kv && kv->value.n == 3 && ir_gguf_array_item(&kv->value, 2, &item) == 0 && item.len == 6 &&
          memcmp(item.str, "héllo", 6) == 0);
    CHECK(kv && ir_gguf_array_item(&kv->value, 3, &item) == -1);
    kv = ir_gguf_find_kv(f, "t.nested");
    CHECK(kv && ir_gguf_array_item(&kv->value, 1, &item) == 0 && item.n == 2 &&
          ir_gguf_array_item(&item, 1, &inner) == 0 && inner.i == 11);
    const struct ir_gguf_tensor *t = ir_gguf_find_tensor(f, "b");
    CHECK(t && t->ndims == 2 && t->dims[0] == 32 && t->dims[1] == 2 && t->type == 8 && t->format == IR_FMT_Q8_0 &&
          t->bytes == 68 && t->offset == 32 && t->data[0] == 7);
    t = ir_gguf_find_tensor(f, "c");
    CHECK(t && t->offset == 128 && t->format == IR_FMT_F32 && t->bytes == 32);
    CHECK(!ir_gguf_find_tensor(f, "d") && !ir_gguf_find_kv(f, "t"));
    ir_gguf_close(f);
    free(b);
}

/* Every truncation of a valid file is refused with a byte offset, none read past its bytes. */
static void test_truncations(void)
{
    size_t len;
    unsigned char *b = sample(&len);
    int refusals = 0;
    char err[IR_ERR_LEN];
    for (size_t n = 0; n < len; n++)
        if (!parses(b, n, err) && strstr(err, ": byte "))
            refusals++;
    CHECKF(refusals == (int)len, "%d of %zu truncations refused", refusals, len);
    CHECK(parses(b, len, err));
    free(b);
}

/* A little-endian u32/u64 written at p. */
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

/* The offset of the first occurrence of n bytes in the file's bytes (0 when none). */
static size_t find_n(const unsigned char *b, size_t len, const char *s, size_t n)
{
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(b + i, s, n) == 0)
            return i;
    return 0;
}

/* The same for a string. */
static size_t find(const unsigned char *b, size_t len, const char *s) { return find_n(b, len, s, strlen(s)); }

/* The offset of a one-letter tensor's info: the last place its name's u64 length 1 and the letter lie (the infos
 * follow every key). */
static size_t info_of(const unsigned char *b, size_t len, char name)
{
    const char pat[9] = {1, 0, 0, 0, 0, 0, 0, 0, name};
    for (size_t i = len - 9; i > 0; i--)
        if (memcmp(b + i, pat, 9) == 0)
            return i;
    return 0;
}

/* Edit a copy of the sample at `at` with fn and check the refusal. */
#define HOSTILE(edit, at, what)                                                                                  \
    do {                                                                                                         \
        unsigned char *x = malloc(len);                                                                          \
        memcpy(x, b, len);                                                                                       \
        edit;                                                                                                    \
        CHECK(refused(x, len, (at), (what)));                                                                    \
        free(x);                                                                                                 \
    } while (0)

/* Headers, counts, lengths, types, offsets and strings a hostile file may carry. */
static void test_hostile(void)
{
    size_t len;
    unsigned char *b = sample(&len);
    HOSTILE(x[0] = 'X', 0, "magic");
    HOSTILE(put32(x + 4, 1), 4, "version 2 or 3");
    HOSTILE(put64(x + 8, UINT64_MAX), 8, "tensor count");
    HOSTILE(put64(x + 8, (uint64_t)1 << 63), 8, "tensor count");
    HOSTILE(put64(x + 16, UINT64_MAX / 2), 16, "key count");
    /* The first key's length past the end, and past 2^63. */
    HOSTILE(put64(x + 24, len), 24, "a key of");
    HOSTILE(put64(x + 24, (uint64_t)1 << 63), 24, "a key of");
    /* A value type past 12. */
    size_t k = find(b, len, "general.architecture") + 20;
    HOSTILE(put32(x + k, 13), k, "value type 0..12");
    /* An array's element type, and a count past the bytes left. */
    size_t s = find(b, len, "t.strings") + 9 + 4;
    HOSTILE(put32(x + s, 99), s, "element type");
    HOSTILE(put64(x + s + 4, (uint64_t)1 << 62), s + 4, "array count");
    /* Bad UTF-8: a stray byte, an overlong form, a surrogate. */
    size_t h = find(b, len, "h\xc3\xa9llo");
    HOSTILE(x[h] = 0xff, h, "UTF-8");
    HOSTILE((x[h + 1] = 0xc0, x[h + 2] = 0x80), h + 1, "UTF-8");
    size_t a = find(b, len, "llama");
    HOSTILE((x[a] = 0xed, x[a + 1] = 0xa0, x[a + 2] = 0x80), a, "UTF-8");
    /* A bool that is neither 0 nor 1. */
    size_t bo = find(b, len, "t.bool") + 6 + 4;
    HOSTILE(x[bo] = 2, bo, "bool 0 or 1");
    /* A duplicate key. */
    size_t u = find(b, len, "t.u16");
    HOSTILE(memcpy(x + u, "t.i16", 5), ANY, "key not seen before");
    /* Tensor infos: dimension count, a zero and a 2^63-overflowing dimension, an unknown type, an unaligned offset,
     * an offset past the data, overlapping tensors, a duplicate name. */
    size_t tb = info_of(b, len, 'b') + 9;
    HOSTILE(put32(x + tb, 5), tb, "1..4 dimensions");
    HOSTILE(put64(x + tb + 4, 0), tb + 4, "dimension of 1 or more");
    HOSTILE(put64(x + tb + 12, (uint64_t)1 << 62), tb + 12, "2^63");
    HOSTILE(put32(x + tb + 20, 99), tb + 20, "known GGML tensor type");
    HOSTILE(put64(x + tb + 24, 40), tb + 24, "expected the offset of tensor 'b' to be a multiple of 32");
    HOSTILE(put64(x + tb + 24, (uint64_t)1 << 40), tb + 24, "inside the");
    HOSTILE(put64(x + tb + 24, UINT64_MAX - 31), tb + 24, "inside the");
    size_t tc = info_of(b, len, 'c') + 9;
    HOSTILE(put64(x + tc + 16, 96), tc - 9, "not to overlap the 68 bytes of 'b'");
    HOSTILE(x[tb - 1] = 'a', ANY, "tensor name not seen before");
    /* general.alignment: not a power of two, not a u32. */
    struct ir_gguf_writer *w = ir_gguf_writer_new();
    ir_gguf_kv_u32(w, "general.alignment", 48);
    char err[IR_ERR_LEN];
    ir_gguf_write(w, scratch("a.gguf"), err);
    ir_gguf_writer_free(w);
    size_t alen;
    unsigned char *ab = slurp(scratch("a.gguf"), &alen);
    CHECK(refused(ab, alen, 24, "power of two"));
    free(ab);
    w = ir_gguf_writer_new();
    ir_gguf_kv_i32(w, "general.alignment", 64);
    ir_gguf_write(w, scratch("a.gguf"), err);
    ir_gguf_writer_free(w);
    ab = slurp(scratch("a.gguf"), &alen);
    CHECK(refused(ab, alen, 24, "u32 power of two"));
    free(ab);
    free(b);
}

/* Arrays nested IR_GGUF_MAX_DEPTH deep are read; one deeper is refused. */
static void test_depth(void)
{
    for (int depth = IR_GGUF_MAX_DEPTH; depth <= IR_GGUF_MAX_DEPTH + 1; depth++) {
        struct ir_gguf_writer *w = ir_gguf_writer_new();
        ir_gguf_key(w, "deep", IR_GGUF_ARRAY);
        for (int d = 1; d < depth; d++)
            ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_ARRAY, .n = 1});
        ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_UINT8, .n = 1});
        ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_UINT8, .u = 5});
        char err[IR_ERR_LEN];
        CHECK(ir_gguf_write(w, scratch("d.gguf"), err) == 0);
        ir_gguf_writer_free(w);
        size_t len;
        unsigned char *b = slurp(scratch("d.gguf"), &len);
        bool ok = parses(b, len, err);
        CHECKF(ok == (depth <= IR_GGUF_MAX_DEPTH), "depth %d: %s", depth, err);
        if (!ok)
            CHECK(strstr(err, "nested at most 8 deep") != NULL);
        free(b);
    }
}

/* Random byte flips of the sample: each parses or is refused with a byte offset (ASan sees any stray read). */
static void test_flips(void)
{
    size_t len;
    unsigned char *b = sample(&len);
    uint64_t s = 12345;
    int refusals = 0;
    for (int i = 0; i < 4000; i++) {
        unsigned char *x = malloc(len);
        memcpy(x, b, len);
        for (int k = 0; k < 3; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[(s >> 33) % len] ^= (unsigned char)(1u << ((s >> 20) & 7));
        }
        char err[IR_ERR_LEN];
        if (!parses(x, len, err)) {
            refusals += strstr(err, ": byte ") != NULL;
            CHECKF(strstr(err, ": byte ") != NULL, "%s", err);
        }
        free(x);
    }
    CHECK(refusals > 100);
    free(b);
}

/* The sha256-free comparison of two graphs' texts. */
static bool same_text(const struct ir_graph *a, const struct ir_graph *b)
{
    size_t na, nb;
    char *ta = a ? ir_print(a, &na) : NULL, *tb = b ? ir_print(b, &nb) : NULL;
    bool same = ta && tb && na == nb && memcmp(ta, tb, na) == 0;
    free(ta);
    free(tb);
    return same;
}

/* The double nearest a float's shortest decimal form: what a key written f32 reads back as. */
static double f32_read(double x)
{
    char buf[32];
    float f = (float)x;
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)f);
        if ((float)strtod(buf, NULL) == f)
            return strtod(buf, NULL);
    }
    return (double)f;
}

/* The configuration a file of c reads back as: its reals through f32 (llama.cpp's keys are f32), but deepseek's query
 * scale, which no key holds: it is computed from the rotary scaling's keys, in double as the zoo computes it. */
static struct models_config as_read(const struct models_config *c)
{
    struct models_config r = *c;
    double *reals[] = {&r.eps, &r.rope_base, &r.attn_softcap, &r.final_softcap, &r.query_scale, &r.embed_mult,
                       &r.residual_mult, &r.logit_scale, &r.head_divisor, &r.routing.scale};
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        *reals[i] = f32_read(*reals[i]);
    if (strcmp(c->family, "deepseek") == 0)
        r.query_scale = c->query_scale;
    return r;
}

/* A tied model's head bound to its embedding's bytes in v (as the file binds it). */
static void tie_head(const struct ir_graph *g, struct ir_values *v)
{
    ir_tid e = ir_tensor_find(g, "token_embd.weight", 17), o = ir_tensor_find(g, "output.weight", 13);
    struct ir_ckpt_rows re, ro;
    if (e != IR_NONE && o != IR_NONE && ir_values_checkpoint(v, e, &re) && ir_values_checkpoint(v, o, &ro) &&
        re.format == ro.format && re.srows * re.row_bytes == ro.srows * ro.row_bytes)
        memcpy((void *)ro.bytes, re.bytes, (size_t)(re.srows * re.row_bytes));
}

/* Model c exported in format fmt (layers of it: 0 all) and read back: the graph the file's configuration lifts is the
 * one c's does, and evaluating it from the file's weights gives the zoo's values (a tied head bound to the
 * embedding). Whether it held. */
static bool round_trip(const struct models_config *c, enum ir_format fmt, int32_t layers, bool same_text_expected)
{
    struct models_options o = models_default_options();
    o.weights = fmt;
    o.layers = layers;
    o.mode = (struct models_mode){MODELS_PREFILL, 3};
    char err[IR_ERR_LEN];
    struct ir_graph *g = models_lift(c, &o, err);
    struct ir_values *v = g ? ir_values_new(g, 7, err) : NULL;
    bool ok = v && models_gguf_export(c, g, v, scratch("m.gguf"), err) == 0;
    CHECKF(ok, "%s %s: %s", c->name, ir_format_name(fmt), err);
    struct ir_gguf *f = ok ? ir_gguf_open(scratch("m.gguf"), err) : NULL;
    struct models_options ro = o;
    ro.layers = 0; /* the file holds the layers exported */
    struct ir_graph *h = f ? models_gguf_lift(f, &ro, err) : NULL;
    CHECKF(h, "%s %s: %s", c->name, ir_format_name(fmt), err);
    struct models_config want = as_read(c);
    struct ir_graph *gw = h ? models_lift(&want, &o, err) : NULL;
    if (h && same_text_expected)
        CHECKF(same_text(gw, h), "%s %s: another graph", c->name, ir_format_name(fmt));
    struct models_config *rc = f ? models_gguf_config(f, err) : NULL;
    CHECKF(rc && rc->layers == (layers ? layers : c->layers) && rc->eps == want.eps &&
               rc->rope_base == want.rope_base && rc->ctx == c->ctx && strcmp(rc->name, c->name) == 0 &&
               strcmp(rc->family, c->family) == 0 && rc->tied == c->tied,
           "%s: configuration", c->name);
    models_config_free(rc);
    /* Evaluated with another seed, the file's weights (not that seed's) give the zoo's values. */
    if (c->tied && v)
        tie_head(g, v);
    ir_values_use_gguf(f);
    struct ir_values *w = h ? ir_values_new(h, 7, err) : NULL, *x = h ? ir_values_new(h, 8, err) : NULL;
    ir_values_use_gguf(NULL);
    struct ir_values *y = h ? ir_values_new(h, 8, err) : NULL;
    CHECKF(w && x && ir_eval(g, v, err) == 0 && ir_eval(h, w, err) == 0, "%s: %s", c->name, err);
    bool same = w && ir_values_compare(g, v, h, w).identical;
    CHECKF(same, "%s %s: other values", c->name, ir_format_name(fmt));
    CHECK(x && y && ir_values_bytes(x) == ir_values_bytes(y));
    ir_values_free(w);
    ir_values_free(x);
    ir_values_free(y);
    ir_graph_free(gw);
    ir_graph_free(h);
    ir_gguf_close(f);
    ir_values_free(v);
    ir_graph_free(g);
    return same;
}

/* Every tiny zoo model exported at f32, q8_0 and one other format, read back: the same graph, its values the file's;
 * exported with one layer, a file of one layer that reads back. */
static void test_models(void)
{
    static const enum ir_format fmts[] = {IR_FMT_Q4_K, IR_FMT_BF16, IR_FMT_Q6_K, IR_FMT_F16, IR_FMT_Q4_0};
    int n = 0, held = 0;
    for (int i = 0; i < models_count(); i++) {
        const struct models_config *c = models_get(i);
        if (!c->tiny)
            continue;
        enum ir_format other = fmts[n++ % 5];
        /* deepseek's per-head matrices cannot hold a 256-value block in a head's row: written f32 (same values) */
        bool per_head_f32 = strcmp(c->family, "deepseek") == 0 && ir_format_block_values(other) > c->head_dim;
        held += round_trip(c, IR_FMT_F32, 0, true);
        held += round_trip(c, IR_FMT_Q8_0, 0, true);
        held += round_trip(c, other, 0, !per_head_f32);
        held += round_trip(c, IR_FMT_Q8_0, 1, true);
    }
    CHECKF(n >= 12 && held == 4 * n, "%d tiny models, %d of %d round trips held", n, held, 4 * n);
}

/* A tensor the lift needs, missing or of another shape or an undecoded type, is refused by name. */
static void test_missing(void)
{
    const struct models_config *c = models_find("tiny-llama");
    struct models_options o = models_default_options();
    char err[IR_ERR_LEN];
    struct ir_graph *g = models_lift(c, &o, err);
    struct ir_values *v = ir_values_new(g, 1, err);
    CHECK(models_gguf_export(c, g, v, scratch("t.gguf"), err) == 0);
    size_t len;
    unsigned char *b = slurp(scratch("t.gguf"), &len);
    size_t at = find(b, len, "blk.1.ffn_down.weight");
    /* Renamed; its 512 x 256 dimensions swapped (the same bytes); its type q8_0 made q4_1 (fewer bytes). */
    static const struct {
        size_t off[2];
        unsigned char byte[2];
        const char *what;
    } edits[] = {{{8, 8}, {'X', 'X'}, "tensor blk.1.ffn_down.weight: expected it in the file"},
                 {{21 + 4 + 1, 21 + 4 + 9}, {1, 2}, "tensor blk.1.ffn_down.weight: expected 256 rows of 512 values"},
                 {{21 + 4 + 16, 21 + 4 + 16}, {3, 3}, "tensor blk.1.ffn_down.weight: expected a type fusecheck decodes"}};
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        unsigned char *x = malloc(len);
        memcpy(x, b, len);
        x[at + edits[e].off[0]] = edits[e].byte[0];
        x[at + edits[e].off[1]] = edits[e].byte[1];
        FILE *out = fopen(scratch("u.gguf"), "wb");
        fwrite(x, 1, len, out);
        fclose(out);
        free(x);
        struct ir_gguf *f = ir_gguf_open(scratch("u.gguf"), err);
        struct ir_graph *h = f ? models_gguf_lift(f, &o, err) : NULL;
        CHECKF(!h && strstr(err, edits[e].what), "%s", err);
        ir_graph_free(h);
        ir_gguf_close(f);
    }
    free(b);
    ir_values_free(v);
    ir_graph_free(g);
}

/* A file without the optional keys (key length, vocabulary) takes them as llama.cpp does: the width over the heads,
 * the embedding's rows; one without a required key is refused naming it. */
static void test_defaults(void)
{
    for (int drop = 0; drop < 2; drop++) {
        struct ir_gguf_writer *w = ir_gguf_writer_new();
        ir_gguf_kv_str(w, "general.architecture", "llama");
        ir_gguf_kv_u32(w, "llama.block_count", 2);
        ir_gguf_kv_u32(w, "llama.embedding_length", 256);
        ir_gguf_kv_u32(w, "llama.attention.head_count", 4);
        ir_gguf_kv_u32(w, "llama.attention.head_count_kv", 2);
        ir_gguf_kv_u32(w, "llama.feed_forward_length", 512);
        if (!drop)
            ir_gguf_kv_u32(w, "llama.context_length", 131072);
        ir_gguf_kv_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
        char err[IR_ERR_LEN];
        CHECK(ir_gguf_add_tensor(w, "token_embd.weight", 2, (uint64_t[]){256, 1000}, IR_FMT_Q8_0, NULL, err) == 0);
        CHECK(ir_gguf_write(w, scratch("k.gguf"), err) == 0);
        ir_gguf_writer_free(w);
        struct ir_gguf *f = ir_gguf_open(scratch("k.gguf"), err);
        struct models_config *c = f ? models_gguf_config(f, err) : NULL;
        if (!drop)
            CHECK(c && c->head_dim == 64 && c->vocab == 1000 && c->ctx == 4096 && c->eps == 1e-5 && c->tied &&
                  strcmp(c->name, "k") == 0);
        else
            CHECKF(!c && strstr(err, "llama.context_length: expected the key"), "%s", err);
        models_config_free(c);
        ir_gguf_close(f);
    }
}

/* Whether the file's key `key` is the string `want`. */
static bool kv_is(const struct ir_gguf *f, const char *key, const char *want)
{
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, key);
    return kv && kv->value.type == IR_GGUF_STRING && kv->value.len == strlen(want) &&
           memcmp(kv->value.str, want, strlen(want)) == 0;
}

/* olmo2 as llama.cpp names it: general.architecture "olmo2", its keys under `olmo2.`, the q and k norms as wide as
 * their products, the two post-norms under llama.cpp's names and no pre-norm tensors; a file without a layer's k norm
 * is refused naming it, and an architecture fusecheck does not read ("olmo") lists olmo2 among those it does. */
static void test_olmo2(void)
{
    const struct models_config *c = models_find("tiny-olmo2");
    struct models_options o = models_default_options();
    char err[IR_ERR_LEN];
    struct ir_graph *g = c ? models_lift(c, &o, err) : NULL;
    struct ir_values *v = g ? ir_values_new(g, 3, err) : NULL;
    CHECKF(v && models_gguf_export(c, g, v, scratch("o.gguf"), err) == 0, "%s", err);
    struct ir_gguf *f = ir_gguf_open(scratch("o.gguf"), err);
    CHECKF(f != NULL, "%s", err);
    if (f) {
        CHECK(kv_is(f, "general.architecture", "olmo2"));
        const struct ir_gguf_kv *kvh = ir_gguf_find_kv(f, "olmo2.attention.head_count_kv");
        CHECK(kvh && kvh->value.u == 4 && ir_gguf_find_kv(f, "olmo2.rope.freq_base") &&
              ir_gguf_find_kv(f, "olmo2.attention.layer_norm_rms_epsilon"));
        static const char *const norms[] = {"attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm"};
        for (int layer = 0; layer < 2; layer++) {
            char n[64];
            for (int k = 0; k < 4; k++) {
                snprintf(n, sizeof n, "blk.%d.%s.weight", layer, norms[k]);
                const struct ir_gguf_tensor *t = ir_gguf_find_tensor(f, n);
                CHECKF(t && t->dims[0] == 256 && t->dims[1] == 1, "%s: a row of 256", n);
            }
            snprintf(n, sizeof n, "blk.%d.attn_norm.weight", layer);
            CHECK(ir_gguf_find_tensor(f, n) == NULL);
            snprintf(n, sizeof n, "blk.%d.ffn_norm.weight", layer);
            CHECK(ir_gguf_find_tensor(f, n) == NULL);
        }
        CHECK(ir_gguf_find_tensor(f, "output.weight") != NULL);
        struct models_config *rc = models_gguf_config(f, err);
        CHECK(rc && strcmp(rc->family, "olmo2") == 0 && rc->kv_heads == 4 && rc->head_dim == 64 && !rc->tied &&
              models_param_count(rc) == models_param_count(c));
        models_config_free(rc);
        ir_gguf_close(f);
    }
    size_t len;
    unsigned char *b = slurp(scratch("o.gguf"), &len);
    size_t kn = b ? find(b, len, "blk.1.attn_k_norm.weight") : 0, arch = b ? find(b, len, "olmo2") : 0;
    CHECK(kn > 0 && arch > 0);
    if (kn > 0 && arch > 0) {
        b[kn + 8] = 'X';
        FILE *out = fopen(scratch("u.gguf"), "wb");
        fwrite(b, 1, len, out);
        fclose(out);
        f = ir_gguf_open(scratch("u.gguf"), err);
        struct ir_graph *h = f ? models_gguf_lift(f, &o, err) : NULL;
        CHECKF(!h && strstr(err, "tensor blk.1.attn_k_norm.weight: expected it in the file"), "%s", err);
        ir_graph_free(h);
        ir_gguf_close(f);
        b[kn + 8] = 't';
        b[arch + 4] = ' '; /* "olmo " */
        out = fopen(scratch("u.gguf"), "wb");
        fwrite(b, 1, len, out);
        fclose(out);
        f = ir_gguf_open(scratch("u.gguf"), err);
        struct models_config *rc = f ? models_gguf_config(f, err) : NULL;
        CHECKF(!rc && strstr(err, "general.architecture: expected one of") && strstr(err, "gpt-oss olmo2, found"),
               "%s", err);
        models_config_free(rc);
        ir_gguf_close(f);
    }
    free(b);
    ir_values_free(v);
    ir_graph_free(g);
}

/* Export tiny model `name` (q8_0) to o.gguf and open it; NULL on failure. */
static struct ir_gguf *exported(const char *name, struct models_config *edit, char err[IR_ERR_LEN])
{
    const struct models_config *c = edit ? edit : models_find(name);
    struct models_options o = models_default_options();
    struct ir_graph *g = c ? models_lift(c, &o, err) : NULL;
    struct ir_values *v = g ? ir_values_new(g, 3, err) : NULL;
    int rc = v ? models_gguf_export(c, g, v, scratch("o.gguf"), err) : -1;
    ir_values_free(v);
    ir_graph_free(g);
    return rc == 0 ? ir_gguf_open(scratch("o.gguf"), err) : NULL;
}

/* Whether the file's key is a u32 of value want. */
static bool u32_is(const struct ir_gguf *f, const char *key, uint64_t want)
{
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, key);
    return kv && kv->value.type == IR_GGUF_UINT32 && kv->value.u == want;
}

/* Whether the file's key is an f32 of value want. */
static bool f32_is(const struct ir_gguf *f, const char *key, float want)
{
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, key);
    return kv && kv->value.type == IR_GGUF_FLOAT32 && (float)kv->value.f == want;
}

/* Whether the file's tensor has dims d0 x d1 x d2 (the rest 1). */
static bool dims_is(const struct ir_gguf *f, const char *name, uint64_t d0, uint64_t d1, uint64_t d2)
{
    const struct ir_gguf_tensor *t = ir_gguf_find_tensor(f, name);
    return t && t->dims[0] == d0 && t->dims[1] == d1 && t->dims[2] == d2 && t->dims[3] == 1;
}

/* The keys and tensors llama.cpp's loader needs, family by family, as export writes them. */
static void test_llama_conventions(void)
{
    char err[IR_ERR_LEN];
    /* Every family: a vocabulary of the model's size, key and value lengths. */
    static const char *const tiny[] = {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe", "tiny-gemma2", "tiny-qwen3-next",
                                       "tiny-nemotron", "tiny-qwen2.5", "tiny-granite", "tiny-minicpm", "tiny-deepseek",
                                       "tiny-gpt-oss", "tiny-olmo2"};
    for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
        struct ir_gguf *f = exported(tiny[i], NULL, err);
        CHECKF(f, "%s: %s", tiny[i], err);
        if (!f)
            continue;
        const struct ir_gguf_kv *arch = ir_gguf_find_kv(f, "general.architecture"), *toks;
        char key[128];
        snprintf(key, sizeof key, "%.*s.attention.key_length", (int)arch->value.len, arch->value.str);
        CHECKF(ir_gguf_find_kv(f, key), "%s: %s", tiny[i], key);
        snprintf(key, sizeof key, "%.*s.attention.value_length", (int)arch->value.len, arch->value.str);
        CHECKF(ir_gguf_find_kv(f, key), "%s: %s", tiny[i], key);
        toks = ir_gguf_find_kv(f, "tokenizer.ggml.tokens");
        CHECK(kv_is(f, "tokenizer.ggml.model", "llama") && toks && toks->value.n == 512 &&
              ir_gguf_find_kv(f, "tokenizer.ggml.scores") && ir_gguf_find_kv(f, "tokenizer.ggml.token_type"));
        /* A tied model's file has no output.weight. */
        CHECKF((ir_gguf_find_tensor(f, "output.weight") == NULL) == models_find(tiny[i])->tied, "%s", tiny[i]);
        ir_gguf_close(f);
    }
    /* qwen3-moe: the experts three-dimensional, [n_embd, n_ff, n_expert] and [n_ff, n_embd, n_expert]. */
    struct models_config m = *models_find("tiny-qwen3-moe");
    m.expert_ffn = 512;
    struct ir_gguf *f = exported(NULL, &m, err);
    CHECK(f && dims_is(f, "blk.0.ffn_gate_exps.weight", 256, 512, 8) &&
          dims_is(f, "blk.1.ffn_up_exps.weight", 256, 512, 8) && dims_is(f, "blk.0.ffn_down_exps.weight", 512, 256, 8));
    ir_gguf_close(f);
    /* nemotron: its LayerNorm's epsilon key. minicpm: f32 scales, the head's divisor as logit_scale. */
    f = exported("tiny-nemotron", NULL, err);
    CHECK(f && ir_gguf_find_kv(f, "nemotron.attention.layer_norm_epsilon") &&
          !ir_gguf_find_kv(f, "nemotron.attention.layer_norm_rms_epsilon"));
    ir_gguf_close(f);
    f = exported("tiny-minicpm", NULL, err);
    CHECK(f && f32_is(f, "minicpm.residual_scale", 0.9899494936611664f) && f32_is(f, "minicpm.logit_scale", 4) &&
          f32_is(f, "minicpm.embedding_scale", 12) && !ir_gguf_find_kv(f, "minicpm.head_divisor"));
    ir_gguf_close(f);
    f = exported("tiny-granite", NULL, err);
    CHECK(f && f32_is(f, "granite.logit_scale", 8) && f32_is(f, "granite.residual_scale", 0.22f) &&
          f32_is(f, "granite.embedding_scale", 12) && f32_is(f, "granite.attention.scale", 0.015625f));
    ir_gguf_close(f);
    /* gemma2: window and caps. gpt-oss: the FFN norm as post_attention_norm, stacked expert biases, sinks. */
    f = exported("tiny-gemma2", NULL, err);
    CHECK(f && u32_is(f, "gemma2.attention.sliding_window", 16) && f32_is(f, "gemma2.attn_logit_softcapping", 50) &&
          f32_is(f, "gemma2.final_logit_softcapping", 30));
    ir_gguf_close(f);
    f = exported("tiny-gpt-oss", NULL, err);
    CHECK(f && dims_is(f, "blk.0.post_attention_norm.weight", 256, 1, 1) && !ir_gguf_find_tensor(f, "blk.0.ffn_norm.weight") &&
          dims_is(f, "blk.0.ffn_gate_exps.bias", 256, 8, 1) && dims_is(f, "blk.0.ffn_down_exps.bias", 256, 8, 1) &&
          dims_is(f, "blk.0.ffn_gate_inp.bias", 8, 1, 1) && dims_is(f, "blk.1.attn_sinks.weight", 8, 1, 1) &&
          u32_is(f, "gpt-oss.attention.key_length", 64) && u32_is(f, "gpt-oss.attention.sliding_window", 16));
    ir_gguf_close(f);
    /* deepseek2: the absorbed form's widths, the shared experts' count, the per-head matrices, the routing. */
    f = exported("tiny-deepseek", NULL, err);
    CHECK(f && u32_is(f, "deepseek2.attention.head_count_kv", 1) && u32_is(f, "deepseek2.attention.key_length", 320) &&
          u32_is(f, "deepseek2.attention.value_length", 256) &&
          u32_is(f, "deepseek2.attention.key_length_mla", 128) &&
          u32_is(f, "deepseek2.attention.value_length_mla", 64) && u32_is(f, "deepseek2.expert_shared_count", 1) &&
          u32_is(f, "deepseek2.leading_dense_block_count", 1) && u32_is(f, "deepseek2.attention.q_lora_rank", 256) &&
          u32_is(f, "deepseek2.attention.kv_lora_rank", 256) && u32_is(f, "deepseek2.rope.dimension_count", 64) &&
          u32_is(f, "deepseek2.expert_feed_forward_length", 256) && u32_is(f, "deepseek2.expert_gating_func", 2) &&
          dims_is(f, "blk.0.attn_k_b.weight", 64, 256, 4) && dims_is(f, "blk.0.attn_v_b.weight", 256, 64, 4));
    ir_gguf_close(f);
    /* qwen3-next: the DeltaNet's keys and llama.cpp's joined tensors; ssm_a is −exp(A_log). */
    f = exported("tiny-qwen3-next", NULL, err);
    CHECK(f && u32_is(f, "qwen3next.ssm.conv_kernel", 4) && u32_is(f, "qwen3next.ssm.state_size", 64) &&
          u32_is(f, "qwen3next.ssm.group_count", 2) && u32_is(f, "qwen3next.ssm.time_step_rank", 4) &&
          u32_is(f, "qwen3next.ssm.inner_size", 256) && u32_is(f, "qwen3next.full_attention_interval", 4) &&
          u32_is(f, "qwen3next.rope.dimension_count", 16) && dims_is(f, "blk.0.attn_qkv.weight", 256, 512, 1) &&
          dims_is(f, "blk.0.attn_gate.weight", 256, 256, 1) && dims_is(f, "blk.0.ssm_conv1d.weight", 4, 512, 1) &&
          dims_is(f, "blk.0.ssm_ba.weight", 256, 8, 1) && dims_is(f, "blk.0.ssm_a", 4, 1, 1) &&
          dims_is(f, "blk.3.attn_q.weight", 256, 512, 1) && !ir_gguf_find_tensor(f, "blk.3.attn_gate.weight") &&
          dims_is(f, "blk.0.post_attention_norm.weight", 256, 1, 1));
    if (f) {
        const struct ir_gguf_tensor *a = ir_gguf_find_tensor(f, "blk.0.ssm_a");
        for (int i = 0; a && i < 4; i++)
            CHECK(((const float *)a->data)[i] < 0);
        /* read back: A_log, whose −exp is the file's value exactly */
        struct models_options o = models_default_options();
        struct ir_graph *h = models_gguf_lift(f, &o, err);
        const struct ir_gguf_tensor *al = ir_gguf_find_tensor(f, "blk.0.ssm_a");
        for (int i = 0; h && al && i < 4; i++)
            CHECK(-expf(((const float *)al->data)[i]) == ((const float *)a->data)[i]);
        ir_graph_free(h);
    }
    ir_gguf_close(f);
    /* What llama.cpp cannot be told is refused: another clamp for gpt-oss, a routing qwen3-moe's code fixes. */
    m = *models_find("tiny-gpt-oss");
    m.swiglu_limit = 8;
    f = exported(NULL, &m, err);
    CHECKF(!f && strstr(err, "llama.cpp's gpt-oss fixes 1.702 and 7"), "%s", err);
    m = *models_find("tiny-qwen3-moe");
    m.routing.no_renorm = true;
    f = exported(NULL, &m, err);
    CHECKF(!f && strstr(err, "its routing"), "%s", err);
    m = *models_find("tiny-llama");
    m.query_scale = 0.5;
    f = exported(NULL, &m, err);
    CHECKF(!f && strstr(err, "query_scale"), "%s", err);
}

/* A file meaning what fusecheck's graph cannot compute is refused naming the key or tensor: a longrope scaling, a
 * routing key of another value, a bias llama.cpp would add. */
static void test_refusals(void)
{
    char err[IR_ERR_LEN];
    struct ir_gguf *f = exported("tiny-deepseek", NULL, err);
    ir_gguf_close(f);
    size_t len;
    unsigned char *b = slurp(scratch("o.gguf"), &len);
    size_t at = b ? find(b, len, "deepseek2.expert_gating_func") : 0;
    CHECK(at > 0);
    if (at > 0) {
        b[at + 28 + 4] = 3; /* the u32 after the key's name and type */
        FILE *out = fopen(scratch("u.gguf"), "wb");
        fwrite(b, 1, len, out);
        fclose(out);
        f = ir_gguf_open(scratch("u.gguf"), err);
        struct models_config *c = f ? models_gguf_config(f, err) : NULL;
        CHECKF(!c && strstr(err, "deepseek2.expert_gating_func: expected 1 (softmax) or 2 (sigmoid), found 3"), "%s",
               err);
        models_config_free(c);
        ir_gguf_close(f);
    }
    free(b);
    /* A hand-made llama file with longrope scaling, and one with a q bias: refused by name. */
    for (int which = 0; which < 2; which++) {
        struct ir_gguf_writer *w = ir_gguf_writer_new();
        ir_gguf_kv_str(w, "general.architecture", "llama");
        ir_gguf_kv_u32(w, "llama.block_count", 1);
        ir_gguf_kv_u32(w, "llama.context_length", 64);
        ir_gguf_kv_u32(w, "llama.embedding_length", 256);
        ir_gguf_kv_u32(w, "llama.feed_forward_length", 256);
        ir_gguf_kv_u32(w, "llama.attention.head_count", 4);
        ir_gguf_kv_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
        if (which == 0)
            ir_gguf_kv_str(w, "llama.rope.scaling.type", "longrope");
        static const char *const names[] = {"token_embd.weight", "output.weight", "output_norm.weight",
                                            "blk.0.attn_norm.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight",
                                            "blk.0.attn_v.weight", "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
                                            "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight",
                                            "blk.0.attn_q.bias"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            bool vec = strstr(names[i], "norm") || strstr(names[i], "bias");
            uint64_t dims[2] = {256, i < 2 ? 512 : 256};
            CHECK(ir_gguf_add_tensor(w, names[i], vec ? 1 : 2, dims, IR_FMT_F32, NULL, err) == 0);
        }
        CHECK(ir_gguf_write(w, scratch("u.gguf"), err) == 0);
        ir_gguf_writer_free(w);
        f = ir_gguf_open(scratch("u.gguf"), err);
        struct models_options o = models_default_options();
        struct ir_graph *h = f ? models_gguf_lift(f, &o, err) : NULL;
        CHECKF(!h && strstr(err, which == 0 ? "llama.rope.scaling.type: expected none, linear or yarn" :
                                              "tensor blk.0.attn_q.bias: fusecheck's graph has no part"), "%s", err);
        ir_graph_free(h);
        ir_gguf_close(f);
    }
}

/* ── Rotary scaling in llama.cpp's conventions ───────────────────────────────────────────────────────────── */

/* What a hand-made scaled file holds besides its fixed keys: the architecture (NULL: llama), the scaling keys (a NULL
 * type and zero values left out), one more f32 key, a rope_freqs table of 32 values (NULL: none). */
struct scaled_file {
    const char *arch, *type;
    float factor;
    uint32_t orig;
    const char *key;
    float value;
    const float *freqs;
};

/* A hand-made file of s's architecture (one layer, 256 wide, 4 heads of 64, base 500000, weights as holes) with s's
 * scaling, written to u.gguf and opened (NULL with err). */
static struct ir_gguf *scaled(const struct scaled_file *s, char err[IR_ERR_LEN])
{
    const char *arch = s->arch ? s->arch : "llama";
    struct ir_gguf_writer *w = ir_gguf_writer_new();
    char k[160];
    ir_gguf_kv_str(w, "general.architecture", arch);
    static const struct {
        const char *suffix;
        uint32_t v;
    } counts[] = {{"block_count", 1}, {"context_length", 64}, {"embedding_length", 256}, {"feed_forward_length", 256},
                  {"attention.head_count", 4}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        snprintf(k, sizeof k, "%s.%s", arch, counts[i].suffix);
        ir_gguf_kv_u32(w, k, counts[i].v);
    }
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", arch);
    ir_gguf_kv_f32(w, k, 1e-5f);
    snprintf(k, sizeof k, "%s.rope.freq_base", arch);
    ir_gguf_kv_f32(w, k, 500000.0f);
    if (s->type) {
        snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
        ir_gguf_kv_str(w, k, s->type);
    }
    if (s->factor != 0) {
        snprintf(k, sizeof k, "%s.rope.scaling.factor", arch);
        ir_gguf_kv_f32(w, k, s->factor);
    }
    if (s->orig != 0) {
        snprintf(k, sizeof k, "%s.rope.scaling.original_context_length", arch);
        ir_gguf_kv_u32(w, k, s->orig);
    }
    if (s->key) {
        snprintf(k, sizeof k, "%s.%s", arch, s->key);
        ir_gguf_kv_f32(w, k, s->value);
    }
    static const char *const names[] = {"token_embd.weight", "output.weight", "output_norm.weight",
                                        "blk.0.attn_norm.weight", "blk.0.attn_q.weight", "blk.0.attn_k.weight",
                                        "blk.0.attn_v.weight", "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
                                        "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        bool vec = strstr(names[i], "norm") != NULL;
        uint64_t dims[2] = {256, i < 2 ? 512 : 256};
        CHECK(ir_gguf_add_tensor(w, names[i], vec ? 1 : 2, dims, IR_FMT_F32, NULL, err) == 0);
    }
    if (s->freqs)
        CHECK(ir_gguf_add_tensor(w, "rope_freqs.weight", 1, (uint64_t[]){32}, IR_FMT_F32, s->freqs, err) == 0);
    int rc = ir_gguf_write(w, scratch("u.gguf"), err);
    ir_gguf_writer_free(w);
    return rc == 0 ? ir_gguf_open(scratch("u.gguf"), err) : NULL;
}

/* The configuration of a hand-made file (NULL with err: refused). */
static struct models_config *scaled_config(const struct scaled_file *s, char err[IR_ERR_LEN])
{
    struct ir_gguf *f = scaled(s, err);
    struct models_config *c = f ? models_gguf_config(f, err) : NULL;
    ir_gguf_close(f);
    return c;
}

/* Whether a hand-made file is refused with a message holding `what` (and "byte " where at_byte). */
static bool scaled_refused(const struct scaled_file *s, bool at_byte, const char *what)
{
    char err[IR_ERR_LEN] = "";
    struct models_config *c = scaled_config(s, err);
    bool ok = !c && strstr(err, what) && (!at_byte || strstr(err, "u.gguf: byte "));
    if (!ok)
        fprintf(stderr, "  want '%s', got '%s'\n", what, c ? "(read)" : err);
    models_config_free(c);
    return ok;
}

/* The divisor of pair i of a rope of 32 pairs at base theta with scaling s: unscaled over scaled frequency. */
static double divisor(double theta, const struct ir_rope_scaling *s, int64_t i)
{
    struct ir_rope r = {.h = 1, .hd = 64, .half = 32, .rows = 1, .theta = {true, theta}, .scaling = *s};
    double scaled_w = ir_rope_frequency(&r, i);
    r.scaling = (struct ir_rope_scaling){.kind = IR_ROPESCALE_NONE};
    return ir_rope_frequency(&r, i) / scaled_w;
}

/* Whether every pair's divisor under s is table's (relative 1e-6); the first that is not reported. */
static bool divisors_are(double theta, const struct ir_rope_scaling *s, const float *table)
{
    for (int64_t i = 0; i < 32; i++)
        if (fabs(divisor(theta, s, i) - table[i]) > 1e-6 * table[i]) {
            fprintf(stderr, "  pair %lld: %.9g, wanted %.9g\n", (long long)i, divisor(theta, s, i), (double)table[i]);
            return false;
        }
    return true;
}

/* llama3's rope_freqs as llama.cpp's converter computes them (Llama's generate_extra_tensors): in f32 throughout,
 * frequencies base^(−2i/dim), each wavelength's divisor 1, factor, or 1/((1 − smooth)/factor + smooth). */
static void converter_freqs(float base, float factor, float orig, float low, float high, float out[32])
{
    float low_wavelen = orig / low, high_wavelen = orig / high;
    for (int i = 0; i < 32; i++) {
        float freq = 1.0f / powf(base, (float)(2 * i) / 64.0f);
        float wavelen = (float)(2 * 3.14159265358979323846) / freq;
        if (wavelen < high_wavelen) {
            out[i] = 1;
        } else if (wavelen > low_wavelen) {
            out[i] = factor;
        } else {
            float smooth = (orig / wavelen - low) / (high - low);
            out[i] = 1.0f / ((1.0f - smooth) / factor + smooth);
        }
    }
}

/* What rope.scaling.type llama.cpp reads: longrope and any unknown type refused at the key's byte; linear and YaRN
 * read, a factor of 1 (or type none) no scaling; YaRN's betas 32 and 1 (another value of a beta key, which llama.cpp
 * does not read, refused), truncated, its magnitude 0.1 ln f + 1 times rope.scaling.attn_factor; a log multiplier
 * where llama.cpp reads none, and gemma2's factor under type none, refused. */
static void test_scaling_keys(void)
{
    char err[IR_ERR_LEN];
    CHECK(scaled_refused(&(struct scaled_file){.type = "longrope", .factor = 4}, true,
                         "llama.rope.scaling.type: expected none, linear or yarn (fusecheck computes no other rotary "
                         "scaling), found 'longrope'"));
    CHECK(scaled_refused(&(struct scaled_file){.type = "dynamic", .factor = 4}, true,
                         "llama.rope.scaling.type: expected none, linear or yarn"));
    CHECK(scaled_refused(&(struct scaled_file){.type = "yarn", .factor = 4, .orig = 16,
                                               .key = "rope.scaling.yarn_beta_fast", .value = 16},
                         true, "llama.rope.scaling.yarn_beta_fast: expected 32 (llama.cpp's llama does not read the "
                               "key and takes 32), found 16"));
    CHECK(scaled_refused(&(struct scaled_file){.type = "yarn", .factor = 4, .orig = 16,
                                               .key = "rope.scaling.yarn_beta_slow", .value = 2},
                         true, "llama.rope.scaling.yarn_beta_slow: expected 1"));
    CHECK(scaled_refused(&(struct scaled_file){.type = "yarn", .factor = 4, .key = "rope.scaling.yarn_log_multiplier",
                                               .value = 0.1f},
                         true, "llama.rope.scaling.yarn_log_multiplier: expected none (llama.cpp's llama does not "
                               "read it)"));
    CHECK(scaled_refused(&(struct scaled_file){.arch = "gemma2", .type = "none", .factor = 2}, true,
                         "gemma2.rope.scaling.factor: expected 1 with rope.scaling.type none"));
    /* YaRN with its betas given as llama.cpp takes them: the zoo's fields, the magnitude bit for bit. */
    struct models_config *c = scaled_config(&(struct scaled_file){.type = "yarn", .factor = 4, .orig = 16,
                                                                  .key = "rope.scaling.yarn_beta_fast", .value = 32},
                                            err);
    const struct ir_rope_scaling *s = c ? &c->rope_scaling : NULL;
    CHECKF(s && s->kind == IR_ROPESCALE_YARN && s->factor.v == 4 && s->orig == 16 && s->beta_fast.v == 32 &&
               s->beta_slow.v == 1 && s->truncate && s->magnitude.has && s->magnitude.v == 0.1 * log(4.0) + 1,
           "%s", err);
    models_config_free(c);
    /* rope.scaling.attn_factor multiplies YaRN's magnitude; the original context defaults to the trained one. */
    c = scaled_config(&(struct scaled_file){.type = "yarn", .factor = 4, .key = "rope.scaling.attn_factor",
                                            .value = 2}, err);
    CHECKF(c && c->rope_scaling.orig == 64 && c->rope_scaling.magnitude.v == 2 * (0.1 * log(4.0) + 1), "%s", err);
    models_config_free(c);
    /* linear by 2; type none with a factor, on llama, scales nothing; an absent type with a factor is linear. */
    c = scaled_config(&(struct scaled_file){.type = "linear", .factor = 2}, err);
    CHECKF(c && c->rope_scaling.kind == IR_ROPESCALE_LINEAR && c->rope_scaling.factor.v == 2 &&
               !c->rope_scaling.magnitude.has, "%s", err);
    models_config_free(c);
    c = scaled_config(&(struct scaled_file){.type = "none", .factor = 2}, err);
    CHECKF(c && c->rope_scaling.kind == IR_ROPESCALE_NONE, "%s", err);
    models_config_free(c);
    c = scaled_config(&(struct scaled_file){.factor = 3}, err);
    CHECKF(c && c->rope_scaling.kind == IR_ROPESCALE_LINEAR && c->rope_scaling.factor.v == 3, "%s", err);
    models_config_free(c);
    c = scaled_config(&(struct scaled_file){.type = "linear", .factor = 1}, err);
    CHECKF(c && c->rope_scaling.kind == IR_ROPESCALE_NONE, "%s", err);
    models_config_free(c);
}

/* llama3 as llama.cpp carries it, a rope_freqs.weight table: tiny-llama's export writes its divisors and reads back
 * to its fields exactly; llama3.2-1b's table as the converter computes it (in f32) fits to factor 32 over 8192,
 * low 1, high 4, each divisor the converter's; bands with one pair inside and none fit to the same divisors; a table
 * that is not llama3's (falling, below 1, a pair off the band's line) is refused naming the tensor and the pair, and
 * one beside a YaRN type too. */
static void test_llama3_freqs(void)
{
    char err[IR_ERR_LEN];
    const struct models_config *z = models_find("tiny-llama");
    struct ir_gguf *f = exported("tiny-llama", NULL, err);
    const struct ir_gguf_tensor *t = f ? ir_gguf_find_tensor(f, "rope_freqs.weight") : NULL;
    CHECKF(t && t->format == IR_FMT_F32 && t->ndims == 1 && t->dims[0] == 32 &&
               divisors_are(z->rope_base, &z->rope_scaling, (const float *)t->data), "%s", err);
    CHECK(f && !ir_gguf_find_kv(f, "llama.rope.scaling.type") && !ir_gguf_find_kv(f, "llama.rope.scaling.factor"));
    struct models_config *c = f ? models_gguf_config(f, err) : NULL;
    const struct ir_rope_scaling *s = c ? &c->rope_scaling : NULL;
    CHECKF(s && s->kind == IR_ROPESCALE_LLAMA3 && s->factor.v == 8 && s->orig == 256 && s->low_freq.v == 1 &&
               s->high_freq.v == 4 && !s->magnitude.has && !s->beta_fast.has, "%s", err);
    float tiny[32] = {0};
    if (t)
        memcpy(tiny, t->data, sizeof tiny);
    models_config_free(c);
    ir_gguf_close(f);
    /* llama3.2-1b's: 3 pairs inside the band. */
    float table[32];
    converter_freqs(500000, 32, 8192, 1, 4, table);
    c = scaled_config(&(struct scaled_file){.freqs = table}, err);
    s = c ? &c->rope_scaling : NULL;
    CHECKF(s && s->kind == IR_ROPESCALE_LLAMA3 && s->factor.v == 32 && s->orig == 8192 && s->low_freq.v == 1 &&
               s->high_freq.v == 4 && divisors_are(500000, s, table), "%s", err);
    models_config_free(c);
    /* ... and it lifts: llama.cpp reads the table, so it is not an unread tensor. */
    f = scaled(&(struct scaled_file){.freqs = table}, err);
    struct models_options o = models_default_options();
    struct ir_graph *h = f ? models_gguf_lift(f, &o, err) : NULL;
    CHECKF(h, "%s", err);
    ir_graph_free(h);
    ir_gguf_close(f);
    /* One pair inside the band (high 1.5) and none (high 1.01: the band between two pairs): the same divisors. */
    static const float highs[] = {1.5f, 1.01f};
    for (int i = 0; i < 2; i++) {
        converter_freqs(500000, 8, 256, 1, highs[i], table);
        int inside = 0;
        for (int p = 0; p < 32; p++)
            inside += table[p] > 1 && table[p] < 8;
        c = scaled_config(&(struct scaled_file){.freqs = table}, err);
        CHECKF(inside == 1 - i && c && c->rope_scaling.kind == IR_ROPESCALE_LLAMA3 &&
                   divisors_are(500000, &c->rope_scaling, table), "high %g: %d inside: %s", (double)highs[i], inside,
               err);
        models_config_free(c);
    }
    /* Every divisor 1: no scaling; every one 4: linear by 4. */
    for (int p = 0; p < 32; p++)
        table[p] = 1;
    c = scaled_config(&(struct scaled_file){.freqs = table}, err);
    CHECKF(c && c->rope_scaling.kind == IR_ROPESCALE_NONE, "%s", err);
    models_config_free(c);
    for (int p = 0; p < 32; p++)
        table[p] = 4;
    c = scaled_config(&(struct scaled_file){.freqs = table}, err);
    CHECKF(c && c->rope_scaling.kind == IR_ROPESCALE_LINEAR && c->rope_scaling.factor.v == 4, "%s", err);
    models_config_free(c);
    /* Not llama3's: falling at pair 20, below 1 at pair 3, pair 7 off the band's line by 1%. */
    memcpy(table, tiny, sizeof table);
    table[20] = 2;
    CHECK(scaled_refused(&(struct scaled_file){.freqs = table}, false,
                         "u.gguf: tensor rope_freqs.weight: pair 20: expected no less than pair 19's 8"));
    memcpy(table, tiny, sizeof table);
    table[3] = 0.5f;
    CHECK(scaled_refused(&(struct scaled_file){.freqs = table}, false,
                         "u.gguf: tensor rope_freqs.weight: pair 3: expected a divisor of at least 1"));
    memcpy(table, tiny, sizeof table);
    CHECK(tiny[6] > 1 && tiny[7] > tiny[6] && tiny[8] > tiny[7] * 1.01f && tiny[9] < 8);
    table[7] *= 1.01f;
    CHECK(scaled_refused(&(struct scaled_file){.freqs = table}, false,
                         "u.gguf: tensor rope_freqs.weight: pair 7: expected llama3's divisors"));
    /* With YaRN as well: llama.cpp divides by both, fusecheck's rope takes one scaling. */
    CHECK(scaled_refused(&(struct scaled_file){.type = "yarn", .factor = 4, .orig = 16, .freqs = tiny}, false,
                         "u.gguf: tensor rope_freqs.weight: expected none with rope.scaling.type yarn"));
}

/* Export writes YaRN as llama.cpp reads it (type, factor, original context; deepseek2's yarn_log_multiplier 0.1 ·
 * mscale_all_dim, derived from its query scale) and the read gives the zoo's scaling and query scale; a log
 * multiplier of 0.2 reads as mscale_all_dim 2. What llama.cpp cannot compute is refused naming the field: YaRN not
 * truncated (gpt-oss-20b's), other betas, llama3 on an architecture without rope_freqs, a deepseek query scale no
 * key gives. */
static void test_scaling_export(void)
{
    char err[IR_ERR_LEN];
    const struct models_config *z = models_find("tiny-gpt-oss");
    struct ir_gguf *f = exported("tiny-gpt-oss", NULL, err);
    CHECKF(f && kv_is(f, "gpt-oss.rope.scaling.type", "yarn") && f32_is(f, "gpt-oss.rope.scaling.factor", 4) &&
               u32_is(f, "gpt-oss.rope.scaling.original_context_length", 16) &&
               !ir_gguf_find_kv(f, "gpt-oss.rope.scaling.attn_factor") &&
               !ir_gguf_find_kv(f, "gpt-oss.rope.scaling.yarn_log_multiplier"), "%s", err);
    struct models_config *c = f ? models_gguf_config(f, err) : NULL;
    CHECKF(c && c->rope_scaling.magnitude.has && c->rope_scaling.magnitude.v == z->rope_scaling.magnitude.v &&
               c->rope_scaling.truncate && c->rope_scaling.beta_fast.v == 32, "%s", err);
    models_config_free(c);
    ir_gguf_close(f);
    const struct models_config *zd = models_find("tiny-deepseek");
    f = exported("tiny-deepseek", NULL, err);
    CHECKF(f && kv_is(f, "deepseek2.rope.scaling.type", "yarn") && f32_is(f, "deepseek2.rope.scaling.factor", 4) &&
               u32_is(f, "deepseek2.rope.scaling.original_context_length", 16) &&
               f32_is(f, "deepseek2.rope.scaling.yarn_log_multiplier", 0.1f) &&
               !ir_gguf_find_kv(f, "deepseek2.rope.scaling.attn_factor"), "%s", err);
    c = f ? models_gguf_config(f, err) : NULL;
    CHECKF(c && c->query_scale == zd->query_scale && !c->rope_scaling.magnitude.has, "%s", err);
    models_config_free(c);
    ir_gguf_close(f);
    size_t len;
    unsigned char *b = slurp(scratch("o.gguf"), &len);
    const char *key = "deepseek2.rope.scaling.yarn_log_multiplier";
    size_t at = b ? find(b, len, key) : 0;
    CHECK(at > 0);
    if (at > 0) {
        float lm = 0.2f; /* the f32 after the key's name and its type */
        memcpy(b + at + strlen(key) + 4, &lm, sizeof lm);
        FILE *out = fopen(scratch("u.gguf"), "wb");
        fwrite(b, 1, len, out);
        fclose(out);
        f = ir_gguf_open(scratch("u.gguf"), err);
        c = f ? models_gguf_config(f, err) : NULL;
        double m = 0.1 * 2 * log(4.0) + 1;
        CHECKF(c && (float)c->query_scale == (float)(m * m / sqrt(128.0)), "%s", err);
        models_config_free(c);
        ir_gguf_close(f);
    }
    free(b);
    /* deepseek-v2-lite's query scale (mscale_all_dim 0.707) goes through the key and back. */
    struct models_config m = *zd;
    double ms = 0.1 * 0.707 * log(4.0) + 1;
    m.query_scale = ms * ms / sqrt(128.0);
    f = exported(NULL, &m, err);
    c = f ? models_gguf_config(f, err) : NULL;
    CHECKF(c && f32_is(f, "deepseek2.rope.scaling.yarn_log_multiplier", 0.0707f) &&
               fabs(c->query_scale - m.query_scale) <= 1e-6 * m.query_scale, "%s", err);
    models_config_free(c);
    ir_gguf_close(f);
    /* Refused: YaRN not truncated, another beta, llama3 on qwen3, a deepseek query scale without a scaling. */
    m = *z;
    m.rope_scaling.truncate = false;
    f = exported(NULL, &m, err);
    CHECKF(!f && strstr(err, "model 'tiny-gpt-oss': rope_scaling.truncate false: llama.cpp always floors and ceils"),
           "%s", err);
    m = *z;
    m.rope_scaling.beta_fast.v = 16;
    f = exported(NULL, &m, err);
    CHECKF(!f && strstr(err, "rope_scaling.beta_fast 16: llama.cpp's gpt-oss takes YaRN's betas 32 and 1"), "%s",
           err);
    m = *models_find("tiny-qwen3");
    m.rope_scaling = models_find("tiny-llama")->rope_scaling;
    f = exported(NULL, &m, err);
    CHECKF(!f && strstr(err, "rope_scaling llama3: llama.cpp's qwen3 has no rope_freqs tensor"), "%s", err);
    m = *zd;
    m.rope_scaling = (struct ir_rope_scaling){.kind = IR_ROPESCALE_NONE};
    f = exported(NULL, &m, err);
    CHECKF(!f && strstr(err, "query_scale 0.114593: llama.cpp's deepseek2 derives its logit scale"), "%s", err);
    /* A magnitude llama.cpp's YaRN does not derive is written as rope.scaling.attn_factor. */
    m = *z;
    m.rope_scaling.magnitude.v = 1.5;
    f = exported(NULL, &m, err);
    c = f ? models_gguf_config(f, err) : NULL;
    CHECKF(c && f32_is(f, "gpt-oss.rope.scaling.attn_factor", (float)(1.5 / (0.1 * log(4.0) + 1))) &&
               fabs(c->rope_scaling.magnitude.v - 1.5) <= 1e-6, "%s", err);
    models_config_free(c);
    ir_gguf_close(f);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_gguf.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    test_round_trip();
    test_truncations();
    test_hostile();
    test_depth();
    test_flips();
    test_models();
    test_missing();
    test_defaults();
    test_olmo2();
    test_llama_conventions();
    test_refusals();
    test_scaling_keys();
    test_llama3_freqs();
    test_scaling_export();
    const char *names[] = {"s.gguf", "a.gguf", "d.gguf", "m.gguf", "t.gguf", "u.gguf", "k.gguf", "o.gguf"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(scratch(names[i]));
    rmdir(dir);
    return check_done("test_gguf");
}
