/* ir/gguf.c — GGUF files: a reader over the file's mapped bytes, every read checked against them, and a writer.
 *
 * A file: "GGUF", a u32 version (2 or 3), u64 tensor and key counts, the keys (a string key, a u32 type, the
 * value), the tensor infos (a string name, u32 dimension count, u64 dimensions, u32 GGML type, u64 offset into the
 * data section), padding to the alignment (`general.alignment`, else 32), then the data section. Strings are a u64
 * length and UTF-8 bytes; an array is a u32 element type, a u64 count and the elements (without their types). All
 * little-endian. Counts and lengths are checked against the bytes left before anything is allocated for them. */
#define _GNU_SOURCE /* MAP_NORESERVE */
#include "ir/ir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ── Tables ──────────────────────────────────────────────────────────────────────────────────────────────── */

static const struct {
    const char *name;
    int bytes;
} vtypes[] = {
#define X(e, s, b) {s, b},
    IR_GGUF_VTYPES(X)
#undef X
};

const char *ir_gguf_vtype_name(enum ir_gguf_vtype t)
{
    return (unsigned)t < IR_GGUF_VTYPE_COUNT ? vtypes[t].name : "?";
}

/* GGML tensor types the reader knows the size of: number, name, values a block, bytes a block, the block format
 * fusecheck decodes it as (-1: none). */
static const struct ggml_type {
    uint32_t id;
    const char *name;
    int block, bytes, format;
} ggml_types[] = {
    {0, "f32", 1, 4, IR_FMT_F32},      {1, "f16", 1, 2, IR_FMT_F16},        {2, "q4_0", 32, 18, IR_FMT_Q4_0},
    {3, "q4_1", 32, 20, -1},           {6, "q5_0", 32, 22, -1},             {7, "q5_1", 32, 24, -1},
    {8, "q8_0", 32, 34, IR_FMT_Q8_0},  {9, "q8_1", 32, 36, -1},             {10, "q2_k", 256, 84, -1},
    {11, "q3_k", 256, 110, -1},        {12, "q4_k", 256, 144, IR_FMT_Q4_K}, {13, "q5_k", 256, 176, -1},
    {14, "q6_k", 256, 210, IR_FMT_Q6_K}, {15, "q8_k", 256, 292, -1},        {24, "i8", 1, 1, -1},
    {25, "i16", 1, 2, -1},             {26, "i32", 1, 4, -1},               {27, "i64", 1, 8, -1},
    {28, "f64", 1, 8, -1},             {30, "bf16", 1, 2, IR_FMT_BF16},
};

/* The row of GGML type id, or NULL. */
static const struct ggml_type *ggml_type_of(uint32_t id)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof ggml_types[0]; i++)
        if (ggml_types[i].id == id)
            return &ggml_types[i];
    return NULL;
}

uint32_t ir_gguf_ggml_type(enum ir_format f)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof ggml_types[0]; i++)
        if (ggml_types[i].format == (int)f)
            return ggml_types[i].id;
    return UINT32_MAX;
}

/* ── Reading ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* A cursor over the file's bytes: where it is, and where the first failure was written. */
struct cur {
    const unsigned char *b;
    uint64_t size, at;
    const char *label;
    char *err;
    bool failed;
};

/* Write "label: byte OFFSET: message" (the first failure only); returns -1. */
static int fail_at(struct cur *c, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(struct cur *c, uint64_t at, const char *fmt, ...)
{
    if (c->failed)
        return -1;
    c->failed = true;
    int n = snprintf(c->err, IR_ERR_LEN, "%s: byte %llu: ", c->label, (unsigned long long)at);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && n < IR_ERR_LEN)
        vsnprintf(c->err + n, IR_ERR_LEN - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Bytes left after the cursor. */
static uint64_t left(const struct cur *c) { return c->size - c->at; }

/* Take n bytes (what: what they were expected to be); their start, or NULL with the failure written. */
static const unsigned char *take(struct cur *c, uint64_t n, const char *what)
{
    if (n > left(c)) {
        fail_at(c, c->at, "expected %s (%llu bytes), found %llu bytes before the end of the file", what,
                (unsigned long long)n, (unsigned long long)left(c));
        return NULL;
    }
    const unsigned char *p = c->b + c->at;
    c->at += n;
    return p;
}

/* A little-endian unsigned integer of n bytes at p. */
static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Read a little-endian u32 / u64; 0, or -1 with the failure written. */
static int rd_u32(struct cur *c, uint32_t *out, const char *what)
{
    const unsigned char *p = take(c, 4, what);
    return p ? (*out = (uint32_t)le(p, 4), 0) : -1;
}
static int rd_u64(struct cur *c, uint64_t *out, const char *what)
{
    const unsigned char *p = take(c, 8, what);
    return p ? (*out = le(p, 8), 0) : -1;
}

/* Whether n bytes at s are well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF); the
 * offset of the first bad byte in *bad when not. */
static bool utf8_ok(const unsigned char *s, uint64_t n, uint64_t *bad)
{
    uint64_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        int more = b < 0x80 ? 0 : (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : (b & 0xf8) == 0xf0 ? 3 : -1;
        uint32_t cp = more == 0 ? b : more == 1 ? b & 0x1fu : more == 2 ? b & 0x0fu : b & 0x07u;
        if (more < 0 || (uint64_t)more >= n - i) {
            *bad = i;
            return false;
        }
        for (int k = 1; k <= more; k++) {
            if ((s[i + (uint64_t)k] & 0xc0) != 0x80) {
                *bad = i;
                return false;
            }
            cp = cp << 6 | (s[i + (uint64_t)k] & 0x3fu);
        }
        static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < least[more] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            *bad = i;
            return false;
        }
        i += (uint64_t)more + 1;
    }
    return true;
}

/* Read a string (u64 length, UTF-8 bytes) into out's str/len; 0, or -1 with the failure written. */
static int rd_string(struct cur *c, struct ir_gguf_value *out, const char *what)
{
    uint64_t at = c->at, n;
    if (rd_u64(c, &n, what) != 0)
        return -1;
    if (n > left(c))
        return fail_at(c, at, "expected %s of %llu bytes, but only %llu bytes follow", what, (unsigned long long)n,
                       (unsigned long long)left(c));
    const unsigned char *p = c->b + c->at;
    uint64_t bad;
    if (!utf8_ok(p, n, &bad))
        return fail_at(c, c->at + bad, "expected %s in UTF-8, found byte 0x%02x", what, p[bad]);
    c->at += n;
    out->str = (const char *)p;
    out->len = n;
    return 0;
}

static int rd_value(struct cur *c, enum ir_gguf_vtype type, int depth, struct ir_gguf_value *out);

/* Read an array's header and check (walk) its items; 0, or -1 with the failure written. */
static int rd_array(struct cur *c, int depth, struct ir_gguf_value *out)
{
    uint64_t at = c->at;
    uint32_t elem;
    if (depth >= IR_GGUF_MAX_DEPTH)
        return fail_at(c, at, "expected arrays nested at most %d deep", IR_GGUF_MAX_DEPTH);
    if (rd_u32(c, &elem, "an array's element type") != 0)
        return -1;
    if (elem >= IR_GGUF_VTYPE_COUNT)
        return fail_at(c, at, "expected an array's element type 0..12, found %u", elem);
    uint64_t n;
    if (rd_u64(c, &n, "an array's count") != 0)
        return -1;
    /* Every item takes at least its scalar bytes, a string 8, an array 12: a count the file cannot hold is refused
     * before anything walks it. */
    uint64_t least = vtypes[elem].bytes ? (uint64_t)vtypes[elem].bytes : elem == IR_GGUF_STRING ? 8 : 12;
    if (n > left(c) / least)
        return fail_at(c, at + 4, "expected an array count whose %llu items fit in the %llu bytes left, found %llu",
                       (unsigned long long)least, (unsigned long long)left(c), (unsigned long long)n);
    out->elem = (enum ir_gguf_vtype)elem;
    out->n = n;
    out->at = c->b + c->at;
    if (vtypes[elem].bytes) {
        c->at += n * least;
        if (elem == IR_GGUF_BOOL)
            for (uint64_t i = 0; i < n; i++)
                if (out->at[i] > 1)
                    return fail_at(c, (uint64_t)(out->at - c->b) + i, "expected a bool 0 or 1, found %u",
                                   out->at[i]);
        return 0;
    }
    struct ir_gguf_value item;
    for (uint64_t i = 0; i < n; i++)
        if (rd_value(c, (enum ir_gguf_vtype)elem, depth + 1, &item) != 0)
            return -1;
    return 0;
}

/* Read a value of the given type (its payload) at the cursor into out; 0, or -1 with the failure written. */
static int rd_value(struct cur *c, enum ir_gguf_vtype type, int depth, struct ir_gguf_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = type;
    if (type == IR_GGUF_STRING)
        return rd_string(c, out, "a string");
    if (type == IR_GGUF_ARRAY)
        return rd_array(c, depth, out);
    int n = vtypes[type].bytes;
    const unsigned char *p = take(c, (uint64_t)n, vtypes[type].name);
    if (!p)
        return -1;
    out->u = le(p, n);
    bool is_signed = type == IR_GGUF_INT8 || type == IR_GGUF_INT16 || type == IR_GGUF_INT32 || type == IR_GGUF_INT64;
    int shift = 64 - 8 * n;
    out->i = is_signed && shift ? (int64_t)(out->u << shift) >> shift : (int64_t)out->u;
    if (type == IR_GGUF_FLOAT32) {
        float x;
        uint32_t w = (uint32_t)out->u;
        memcpy(&x, &w, 4);
        out->f = x;
    } else if (type == IR_GGUF_FLOAT64) {
        memcpy(&out->f, &out->u, 8);
    } else {
        out->f = is_signed ? (double)out->i : (double)out->u;
    }
    if (type == IR_GGUF_BOOL && out->u > 1)
        return fail_at(c, c->at - 1, "expected a bool 0 or 1, found %llu", (unsigned long long)out->u);
    return 0;
}

int ir_gguf_array_item(const struct ir_gguf_value *arr, uint64_t i, struct ir_gguf_value *out)
{
    if (arr->type != IR_GGUF_ARRAY || i >= arr->n)
        return -1;
    /* The array's bytes were checked when read: walk from its first item with a cursor bounded generously. */
    char err[IR_ERR_LEN];
    struct cur c = {arr->at, UINT64_MAX, 0, "array", err, false};
    int n = vtypes[arr->elem].bytes;
    if (n) {
        c.at = i * (uint64_t)n;
        return rd_value(&c, arr->elem, 0, out);
    }
    for (uint64_t k = 0; k <= i; k++)
        if (rd_value(&c, arr->elem, 1, out) != 0)
            return -1;
    return 0;
}

/* Compare two tensors' offsets (qsort over pointers). */
static int by_offset(const void *a, const void *b)
{
    const struct ir_gguf_tensor *x = *(const struct ir_gguf_tensor *const *)a,
                                *y = *(const struct ir_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Compare two names of given lengths (bytes, then length). */
static int name_cmp(const char *a, uint64_t na, const char *b, uint64_t nb)
{
    int r = memcmp(a, b, na < nb ? na : nb);
    return r ? r : (na > nb) - (na < nb);
}

/* Compare two tensors' names (qsort over pointers). */
static int by_name(const void *a, const void *b)
{
    const struct ir_gguf_tensor *x = *(const struct ir_gguf_tensor *const *)a,
                                *y = *(const struct ir_gguf_tensor *const *)b;
    return name_cmp(x->name, x->name_len, y->name, y->name_len);
}

/* Compare two keys (qsort over pointers). */
static int by_key(const void *a, const void *b)
{
    const struct ir_gguf_kv *x = *(const struct ir_gguf_kv *const *)a, *y = *(const struct ir_gguf_kv *const *)b;
    return name_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* Read the keys; 0, or -1 with the failure written. */
static int rd_kvs(struct cur *c, struct ir_gguf *f)
{
    for (int64_t k = 0; k < f->nkv; k++) {
        struct ir_gguf_kv *kv = &f->kv[k];
        struct ir_gguf_value key;
        uint32_t type;
        kv->offset = c->at;
        if (rd_string(c, &key, "a key") != 0)
            return -1;
        kv->key = key.str;
        kv->key_len = key.len;
        uint64_t at = c->at;
        if (rd_u32(c, &type, "a value type") != 0)
            return -1;
        if (type >= IR_GGUF_VTYPE_COUNT)
            return fail_at(c, at, "expected a value type 0..12 for key '%.*s', found %u", (int)(key.len > 200 ? 200 : key.len),
                           key.str, type);
        if (rd_value(c, (enum ir_gguf_vtype)type, 0, &kv->value) != 0)
            return -1;
    }
    return 0;
}

/* Read one tensor info; 0, or -1 with the failure written. */
static int rd_tensor(struct cur *c, struct ir_gguf_tensor *t)
{
    struct ir_gguf_value name;
    uint64_t at = c->at;
    if (rd_string(c, &name, "a tensor name") != 0)
        return -1;
    t->name = name.str;
    t->name_len = name.len;
    at = c->at;
    if (rd_u32(c, &t->ndims, "a tensor's dimension count") != 0)
        return -1;
    if (t->ndims < 1 || t->ndims > IR_GGUF_MAX_DIMS)
        return fail_at(c, at, "expected 1..%d dimensions for tensor '%.*s', found %u", IR_GGUF_MAX_DIMS,
                       (int)(name.len > 200 ? 200 : name.len), name.str, t->ndims);
    uint64_t values = 1;
    for (uint32_t d = 0; d < t->ndims; d++) {
        at = c->at;
        if (rd_u64(c, &t->dims[d], "a tensor dimension") != 0)
            return -1;
        if (t->dims[d] == 0 || t->dims[d] > (uint64_t)INT64_MAX / values)
            return fail_at(c, at, "expected a dimension of 1 or more with at most 2^63 values in all, found %llu",
                           (unsigned long long)t->dims[d]);
        values *= t->dims[d];
    }
    for (uint32_t d = t->ndims; d < IR_GGUF_MAX_DIMS; d++)
        t->dims[d] = 1;
    at = c->at;
    if (rd_u32(c, &t->type, "a tensor type") != 0)
        return -1;
    const struct ggml_type *ty = ggml_type_of(t->type);
    if (!ty)
        return fail_at(c, at, "expected a known GGML tensor type, found %u", t->type);
    t->format = ty->format;
    if (t->dims[0] % (uint64_t)ty->block)
        return fail_at(c, at, "expected the first dimension (%llu) of a %s tensor to be whole blocks of %d",
                       (unsigned long long)t->dims[0], ty->name, ty->block);
    uint64_t blocks = values / (uint64_t)ty->block;
    if (blocks > (uint64_t)INT64_MAX / (uint64_t)ty->bytes)
        return fail_at(c, at, "expected a tensor of at most 2^63 bytes");
    t->bytes = blocks * (uint64_t)ty->bytes;
    return rd_u64(c, &t->offset, "a tensor's data offset");
}

/* Read the tensor infos, then place each tensor's bytes in the data section: aligned, inside it, none overlapping.
 * 0, or -1 with the failure written. */
static int rd_tensors(struct cur *c, struct ir_gguf *f)
{
    uint64_t *info_at = malloc(sizeof *info_at * (size_t)(f->ntensors ? f->ntensors : 1));
    struct ir_gguf_tensor **order = malloc(sizeof *order * (size_t)(f->ntensors ? f->ntensors : 1));
    if (!info_at || !order)
        abort();
    int rc = 0;
    for (int64_t k = 0; k < f->ntensors && rc == 0; k++) {
        info_at[k] = c->at;
        rc = rd_tensor(c, &f->tensors[k]);
    }
    /* The data section begins at the next multiple of the alignment. */
    uint64_t pad = (f->alignment - c->at % f->alignment) % f->alignment;
    if (rc == 0 && c->at + pad > c->size && f->ntensors > 0)
        rc = fail_at(c, c->at, "expected padding to a multiple of %llu before the data section",
                     (unsigned long long)f->alignment);
    f->data_offset = c->at + pad;
    uint64_t data = f->data_offset <= c->size ? c->size - f->data_offset : 0;
    for (int64_t k = 0; k < f->ntensors && rc == 0; k++) {
        struct ir_gguf_tensor *t = &f->tensors[k];
        uint64_t off_at = info_at[k] + 8 + t->name_len + 4 + 8 * (uint64_t)t->ndims + 4;
        if (t->offset % f->alignment)
            rc = fail_at(c, off_at, "expected the offset of tensor '%.*s' to be a multiple of %llu, found %llu",
                         (int)(t->name_len > 200 ? 200 : t->name_len), t->name, (unsigned long long)f->alignment,
                         (unsigned long long)t->offset);
        else if (t->offset > data || t->bytes > data - t->offset)
            rc = fail_at(c, off_at, "expected the %llu bytes of tensor '%.*s' at offset %llu inside the %llu-byte "
                         "data section", (unsigned long long)t->bytes, (int)(t->name_len > 200 ? 200 : t->name_len),
                         t->name, (unsigned long long)t->offset, (unsigned long long)data);
        else
            t->data = c->b + f->data_offset + t->offset;
        order[k] = t;
    }
    if (rc == 0 && f->ntensors > 1) {
        qsort(order, (size_t)f->ntensors, sizeof *order, by_offset);
        for (int64_t k = 1; k < f->ntensors && rc == 0; k++)
            if (order[k - 1]->offset + order[k - 1]->bytes > order[k]->offset)
                rc = fail_at(c, info_at[order[k] - f->tensors],
                             "expected tensor '%.*s' (offset %llu) not to overlap the %llu bytes of '%.*s' at %llu",
                             (int)(order[k]->name_len > 200 ? 200 : order[k]->name_len), order[k]->name,
                             (unsigned long long)order[k]->offset, (unsigned long long)order[k - 1]->bytes,
                             (int)(order[k - 1]->name_len > 200 ? 200 : order[k - 1]->name_len), order[k - 1]->name,
                             (unsigned long long)order[k - 1]->offset);
        qsort(order, (size_t)f->ntensors, sizeof *order, by_name);
        for (int64_t k = 1; k < f->ntensors && rc == 0; k++)
            if (by_name(&order[k - 1], &order[k]) == 0)
                rc = fail_at(c, info_at[order[k] - f->tensors], "expected a tensor name not seen before, found '%.*s' again",
                             (int)(order[k]->name_len > 200 ? 200 : order[k]->name_len), order[k]->name);
    }
    free(order);
    free(info_at);
    return rc;
}

/* Check the keys are unique and take general.alignment; 0, or -1 with the failure written. */
static int rd_alignment(struct cur *c, struct ir_gguf *f)
{
    f->alignment = IR_GGUF_ALIGNMENT;
    if (f->nkv > 1) {
        const struct ir_gguf_kv **order = malloc(sizeof *order * (size_t)f->nkv);
        if (!order)
            abort();
        for (int64_t k = 0; k < f->nkv; k++)
            order[k] = &f->kv[k];
        qsort(order, (size_t)f->nkv, sizeof *order, by_key);
        int rc = 0;
        for (int64_t k = 1; k < f->nkv && rc == 0; k++)
            if (by_key(&order[k - 1], &order[k]) == 0)
                rc = fail_at(c, order[k]->offset, "expected a key not seen before, found '%.*s' again",
                             (int)(order[k]->key_len > 200 ? 200 : order[k]->key_len), order[k]->key);
        free(order);
        if (rc)
            return rc;
    }
    const struct ir_gguf_kv *a = ir_gguf_find_kv(f, "general.alignment");
    if (!a)
        return 0;
    if (a->value.type != IR_GGUF_UINT32 || a->value.u == 0 || (a->value.u & (a->value.u - 1)))
        return fail_at(c, a->offset, "expected general.alignment to be a u32 power of two, found a %s of %llu",
                       ir_gguf_vtype_name(a->value.type), (unsigned long long)a->value.u);
    f->alignment = a->value.u;
    return 0;
}

/* Read the header: magic, version, counts (each checked against the bytes left); 0, or -1 with the failure. */
static int rd_header(struct cur *c, struct ir_gguf *f)
{
    const unsigned char *magic = take(c, 4, "the magic \"GGUF\"");
    if (!magic)
        return -1;
    if (memcmp(magic, "GGUF", 4) != 0)
        return fail_at(c, 0, "expected the magic \"GGUF\"");
    if (rd_u32(c, &f->version, "the version") != 0)
        return -1;
    if (f->version != 2 && f->version != 3)
        return fail_at(c, 4, "expected version 2 or 3, found %u", f->version);
    uint64_t nt, nk;
    if (rd_u64(c, &nt, "the tensor count") != 0 || rd_u64(c, &nk, "the key count") != 0)
        return -1;
    /* A tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes, a key 8 + 4 + 1. */
    if (nt > left(c) / 32)
        return fail_at(c, 8, "expected a tensor count whose infos fit in the %llu bytes left, found %llu",
                       (unsigned long long)left(c), (unsigned long long)nt);
    if (nk > left(c) / 13)
        return fail_at(c, 16, "expected a key count whose keys fit in the %llu bytes left, found %llu",
                       (unsigned long long)left(c), (unsigned long long)nk);
    f->ntensors = (int64_t)nt;
    f->nkv = (int64_t)nk;
    f->kv = calloc((size_t)(nk ? nk : 1), sizeof *f->kv);
    f->tensors = calloc((size_t)(nt ? nt : 1), sizeof *f->tensors);
    if (!f->kv || !f->tensors)
        abort();
    return 0;
}

struct ir_gguf *ir_gguf_parse(const void *bytes, size_t len, const char *label, char err[IR_ERR_LEN])
{
    struct ir_gguf *f = calloc(1, sizeof *f);
    if (!f || !(f->label = strdup(label)))
        abort();
    f->bytes = bytes;
    f->size = len;
    struct cur c = {bytes, len, 0, label, err, false};
    if (rd_header(&c, f) != 0 || rd_kvs(&c, f) != 0 || rd_alignment(&c, f) != 0 || rd_tensors(&c, f) != 0) {
        ir_gguf_close(f);
        return NULL;
    }
    return f;
}

struct ir_gguf *ir_gguf_open(const char *path, char err[IR_ERR_LEN])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        snprintf(err, IR_ERR_LEN, "%s: %s", path,
                 fd < 0 ? strerror(errno) : !S_ISREG(st.st_mode) ? "not a regular file" : "an empty file, not GGUF");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, IR_ERR_LEN, "%s: cannot map the file: %s", path, strerror(e));
        return NULL;
    }
    struct ir_gguf *f = ir_gguf_parse(map, (size_t)st.st_size, path, err);
    if (!f) {
        munmap(map, (size_t)st.st_size);
        return NULL;
    }
    f->mapped = true;
    return f;
}

/* The derived tensors of a file: a list of nodes, each a tensor info, its name and its bytes (stable addresses, so
 * a reader holding one stays valid while others are added). */
struct ir_gguf_derived {
    struct ir_gguf_derived *next;
    struct ir_gguf_tensor t;
    char *name;
    unsigned char *bytes;
};

/* The derived tensor named name (n bytes), or NULL. */
static struct ir_gguf_derived *derived_find(const struct ir_gguf *f, const char *name, size_t n)
{
    for (struct ir_gguf_derived *d = f->derived; d; d = d->next)
        if (d->t.name_len == n && memcmp(d->name, name, n) == 0)
            return d;
    return NULL;
}

void *ir_gguf_derive(const struct ir_gguf *f, const char *name, uint32_t ndims, const uint64_t *dims,
                     enum ir_format fmt, bool *fresh)
{
    uint64_t rows = 1;
    for (uint32_t d = 1; d < ndims && d < IR_GGUF_MAX_DIMS; d++)
        rows *= dims[d];
    int64_t row = ndims >= 1 && ndims <= IR_GGUF_MAX_DIMS && dims[0] <= (uint64_t)IR_MAX_ELEMS
                      ? ir_ggml_row_bytes(fmt, (int64_t)dims[0])
                      : -1;
    if (row < 0 || rows > (uint64_t)IR_MAX_ELEMS)
        return NULL;
    struct ir_gguf_derived *d = derived_find(f, name, strlen(name));
    if (d) { /* made before: the same tensor, or a clash */
        bool same = d->t.ndims == ndims && d->t.format == (int)fmt;
        for (uint32_t k = 0; same && k < ndims; k++)
            same = d->t.dims[k] == dims[k];
        *fresh = false;
        return same ? d->bytes : NULL;
    }
    d = calloc(1, sizeof *d);
    uint64_t bytes = (uint64_t)row * rows;
    if (!d || !(d->name = strdup(name)) || !(d->bytes = malloc(bytes ? bytes : 1)))
        abort();
    d->t.name = d->name;
    d->t.name_len = strlen(name);
    d->t.ndims = ndims;
    for (uint32_t k = 0; k < IR_GGUF_MAX_DIMS; k++)
        d->t.dims[k] = k < ndims ? dims[k] : 1;
    d->t.type = ir_gguf_ggml_type(fmt);
    d->t.format = (int)fmt;
    d->t.bytes = bytes;
    d->t.data = d->bytes;
    struct ir_gguf *mut = (struct ir_gguf *)f; /* the list is a cache of views; the file's own fields stay */
    d->next = mut->derived;
    mut->derived = d;
    *fresh = true;
    return d->bytes;
}

void ir_gguf_close(struct ir_gguf *f)
{
    if (!f)
        return;
    for (struct ir_gguf_derived *d = f->derived, *next; d; d = next) {
        next = d->next;
        free(d->name);
        free(d->bytes);
        free(d);
    }
    if (f->mapped)
        munmap((void *)f->bytes, f->size);
    free(f->label);
    free(f->kv);
    free(f->tensors);
    free(f);
}

const struct ir_gguf_kv *ir_gguf_find_kv(const struct ir_gguf *f, const char *key)
{
    size_t n = strlen(key);
    for (int64_t k = 0; k < f->nkv; k++)
        if (f->kv[k].key_len == n && memcmp(f->kv[k].key, key, n) == 0)
            return &f->kv[k];
    return NULL;
}

const struct ir_gguf_tensor *ir_gguf_find_tensor(const struct ir_gguf *f, const char *name)
{
    size_t n = strlen(name);
    const struct ir_gguf_derived *d = derived_find(f, name, n);
    if (d)
        return &d->t;
    for (int64_t k = 0; k < f->ntensors; k++)
        if (f->tensors[k].name_len == n && memcmp(f->tensors[k].name, name, n) == 0)
            return &f->tensors[k];
    return NULL;
}

/* ── Writing ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* A tensor to write: its info's bytes' fields and its data (NULL: a hole). */
struct wtensor {
    char *name;
    uint32_t ndims, type;
    uint64_t dims[IR_GGUF_MAX_DIMS], bytes, offset;
    const void *data;
};

struct ir_gguf_writer {
    struct ir_text meta; /* the keys' bytes (binary: n counts them, never NUL-terminated reads) */
    uint64_t nkv;
    struct wtensor *t;
    int64_t nt, cap;
    uint64_t data_size;
};

struct ir_gguf_writer *ir_gguf_writer_new(void)
{
    struct ir_gguf_writer *w = calloc(1, sizeof *w);
    if (!w)
        abort();
    return w;
}

void ir_gguf_writer_free(struct ir_gguf_writer *w)
{
    if (!w)
        return;
    for (int64_t k = 0; k < w->nt; k++)
        free(w->t[k].name);
    free(w->t);
    free(w->meta.s);
    free(w);
}

/* Append an unsigned integer of n bytes, little-endian. */
static void buf_le(struct ir_text *b, uint64_t v, int n)
{
    unsigned char p[8];
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    ir_text_put(b, p, (size_t)n);
}

/* Append a string: its u64 length and bytes. */
static void buf_str(struct ir_text *b, const char *s, uint64_t n)
{
    buf_le(b, n, 8);
    ir_text_put(b, s, (size_t)n);
}

void ir_gguf_key(struct ir_gguf_writer *w, const char *key, enum ir_gguf_vtype type)
{
    buf_str(&w->meta, key, strlen(key));
    buf_le(&w->meta, (uint64_t)type, 4);
    w->nkv++;
}

void ir_gguf_put(struct ir_gguf_writer *w, const struct ir_gguf_value *v)
{
    if (v->type == IR_GGUF_STRING) {
        buf_str(&w->meta, v->str, v->len);
    } else if (v->type == IR_GGUF_ARRAY) {
        buf_le(&w->meta, (uint64_t)v->elem, 4);
        buf_le(&w->meta, v->n, 8);
    } else if (v->type == IR_GGUF_FLOAT32) {
        float x = (float)v->f;
        uint32_t u;
        memcpy(&u, &x, 4);
        buf_le(&w->meta, u, 4);
    } else if (v->type == IR_GGUF_FLOAT64) {
        uint64_t u;
        memcpy(&u, &v->f, 8);
        buf_le(&w->meta, u, 8);
    } else {
        bool is_signed = v->type == IR_GGUF_INT8 || v->type == IR_GGUF_INT16 || v->type == IR_GGUF_INT32 ||
                         v->type == IR_GGUF_INT64;
        buf_le(&w->meta, is_signed ? (uint64_t)v->i : v->u, vtypes[v->type].bytes);
    }
}

/* Write one whole scalar key. */
static void kv_scalar(struct ir_gguf_writer *w, const char *key, struct ir_gguf_value v)
{
    ir_gguf_key(w, key, v.type);
    ir_gguf_put(w, &v);
}

void ir_gguf_kv_u32(struct ir_gguf_writer *w, const char *key, uint32_t v)
{
    kv_scalar(w, key, (struct ir_gguf_value){.type = IR_GGUF_UINT32, .u = v});
}

void ir_gguf_kv_i32(struct ir_gguf_writer *w, const char *key, int32_t v)
{
    kv_scalar(w, key, (struct ir_gguf_value){.type = IR_GGUF_INT32, .i = v});
}

void ir_gguf_kv_f32(struct ir_gguf_writer *w, const char *key, float v)
{
    kv_scalar(w, key, (struct ir_gguf_value){.type = IR_GGUF_FLOAT32, .f = v});
}

void ir_gguf_kv_f64(struct ir_gguf_writer *w, const char *key, double v)
{
    kv_scalar(w, key, (struct ir_gguf_value){.type = IR_GGUF_FLOAT64, .f = v});
}

void ir_gguf_kv_bool(struct ir_gguf_writer *w, const char *key, bool v)
{
    kv_scalar(w, key, (struct ir_gguf_value){.type = IR_GGUF_BOOL, .u = v});
}

void ir_gguf_kv_str(struct ir_gguf_writer *w, const char *key, const char *v)
{
    kv_scalar(w, key, (struct ir_gguf_value){.type = IR_GGUF_STRING, .str = v, .len = strlen(v)});
}

int ir_gguf_add_tensor(struct ir_gguf_writer *w, const char *name, uint32_t ndims, const uint64_t *dims,
                       enum ir_format f, const void *data, char err[IR_ERR_LEN])
{
    uint64_t values = 1;
    for (uint32_t d = 0; d < ndims; d++)
        values *= dims[d];
    int64_t bytes = ndims >= 1 && ndims <= IR_GGUF_MAX_DIMS && dims[0] <= (uint64_t)IR_MAX_ELEMS
                        ? ir_ggml_row_bytes(f, (int64_t)dims[0])
                        : -1;
    if (bytes < 0) {
        snprintf(err, IR_ERR_LEN, "tensor %s: %llu values a row are not whole blocks of %s", name,
                 (unsigned long long)dims[0], ir_format_name(f));
        return -1;
    }
    if (w->nt == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->t = realloc(w->t, sizeof *w->t * (size_t)w->cap);
        if (!w->t)
            abort();
    }
    struct wtensor *t = &w->t[w->nt++];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name)))
        abort();
    t->ndims = ndims;
    memcpy(t->dims, dims, sizeof *dims * ndims);
    t->type = ir_gguf_ggml_type(f);
    t->bytes = (uint64_t)bytes * (values / dims[0]);
    t->offset = w->data_size;
    t->data = data;
    w->data_size += (t->bytes + IR_GGUF_ALIGNMENT - 1) / IR_GGUF_ALIGNMENT * IR_GGUF_ALIGNMENT;
    return 0;
}

/* The header, keys, tensor infos and padding: everything before the data section. */
static void header_bytes(const struct ir_gguf_writer *w, struct ir_text *b)
{
    ir_text_put(b, "GGUF", 4);
    buf_le(b, 3, 4);
    buf_le(b, (uint64_t)w->nt, 8);
    buf_le(b, w->nkv, 8);
    ir_text_put(b, w->meta.s ? w->meta.s : "", w->meta.n);
    for (int64_t k = 0; k < w->nt; k++) {
        const struct wtensor *t = &w->t[k];
        buf_str(b, t->name, strlen(t->name));
        buf_le(b, t->ndims, 4);
        for (uint32_t d = 0; d < t->ndims; d++)
            buf_le(b, t->dims[d], 8);
        buf_le(b, t->type, 4);
        buf_le(b, t->offset, 8);
    }
    static const unsigned char zeros[IR_GGUF_ALIGNMENT];
    ir_text_put(b, zeros, (IR_GGUF_ALIGNMENT - b->n % IR_GGUF_ALIGNMENT) % IR_GGUF_ALIGNMENT);
}

/* Write the file's bytes into fd: the header, then each tensor's data (a hole where it has none). 0, or -1. */
static int write_body(const struct ir_gguf_writer *w, int fd)
{
    struct ir_text b = {0};
    header_bytes(w, &b);
    int rc = ir_write_all(fd, b.s, b.n);
    uint64_t base = b.n;
    free(b.s);
    for (int64_t k = 0; k < w->nt && rc == 0; k++) {
        const struct wtensor *t = &w->t[k];
        if (!t->data)
            continue;
        rc = lseek(fd, (off_t)(base + t->offset), SEEK_SET) < 0 || ir_write_all(fd, t->data, t->bytes) ? -1 : 0;
    }
    return rc == 0 && ftruncate(fd, (off_t)(base + w->data_size)) == 0 ? 0 : -1;
}

/* write_body as ir_replace_file's body. */
static int gguf_body(int fd, void *w) { return write_body(w, fd); }

int ir_gguf_write(const struct ir_gguf_writer *w, const char *path, char err[IR_ERR_LEN])
{
    struct stat st;
    int mode = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (int)(st.st_mode & 07777) : -1;
    if (ir_replace_file(path, mode, gguf_body, (void *)w) != 0) {
        snprintf(err, IR_ERR_LEN, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
