/* models/gguf.c — a model as a GGUF file: its configuration as the architecture's metadata keys (llama.cpp's names),
 * its weights as the lifted graph's constants under their GGUF names; and back: a file's metadata picks the family
 * and fills its configuration, and every constant the lift reads is checked against the file's tensors. */
#include "models/models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The family each GGUF architecture names: general.architecture, and the zoo's family. */
static const struct {
    const char *arch, *family;
} archs[] = {
    {"llama", "llama"},       {"qwen3", "qwen3"},         {"qwen3moe", "qwen3-moe"}, {"gemma2", "gemma2"},
    {"qwen3next", "qwen3-next"}, {"nemotron", "nemotron"}, {"qwen2", "qwen2.5"},     {"granite", "granite"},
    {"minicpm", "minicpm"},   {"deepseek2", "deepseek"}, {"gpt-oss", "gpt-oss"},   {"olmo2", "olmo2"},
};

/* How a configuration field is stored: an int64_t or int32_t count (u32 in the file), a double (f32 as llama.cpp
 * writes it, or f64 where no float reads back as the value). */
enum kind { K_I64, K_I32, K_F64 };

/* One metadata key of the architecture (`<arch>.` + suffix): the configuration field it fills, whether every file
 * must have it, and the one family it belongs to (NULL: every family). Fields are written when non-zero. */
#define AT(f) offsetof(struct models_config, f)
static const struct key {
    const char *suffix;
    size_t offset;
    enum kind kind;
    bool required;
    const char *only;
} keys[] = {
    {"block_count", AT(layers), K_I32, true, NULL},
    {"embedding_length", AT(hidden), K_I64, true, NULL},
    {"attention.head_count", AT(heads), K_I64, true, NULL},
    {"attention.head_count_kv", AT(kv_heads), K_I64, true, NULL},
    {"attention.key_length", AT(head_dim), K_I64, false, NULL},
    {"feed_forward_length", AT(ffn), K_I64, false, NULL},
    {"vocab_size", AT(vocab), K_I64, false, NULL},
    {"expert_count", AT(experts), K_I64, false, NULL},
    {"expert_used_count", AT(top_k), K_I64, false, NULL},
    {"expert_feed_forward_length", AT(expert_ffn), K_I64, false, NULL},
    {"context_length", AT(ctx), K_I64, true, NULL},
    {"attention.sliding_window", AT(window), K_I64, false, NULL},
    {"attention.layer_norm_rms_epsilon", AT(eps), K_F64, true, NULL},
    {"rope.freq_base", AT(rope_base), K_F64, false, NULL},
    {"attn_logit_softcapping", AT(attn_softcap), K_F64, false, NULL},
    {"final_logit_softcapping", AT(final_softcap), K_F64, false, NULL},
    {"attention.scale", AT(query_scale), K_F64, false, NULL},
    {"attention.q_lora_rank", AT(deepseek.q_lora), K_I64, false, "deepseek"},
    {"attention.kv_lora_rank", AT(deepseek.kv_lora), K_I64, false, "deepseek"},
    {"rope.dimension_count", AT(deepseek.rope_dim), K_I64, false, "deepseek"},
    {"attention.value_length", AT(deepseek.v_head_dim), K_I64, false, "deepseek"},
    {"expert_shared_feed_forward_length", AT(deepseek.shared_ffn), K_I64, false, "deepseek"},
    {"leading_dense_block_count", AT(deepseek.dense_layers), K_I32, false, "deepseek"},
    {"full_attention_interval", AT(full_every), K_I32, false, "qwen3-next"},
    {"ssm.group_count", AT(lin_k_heads), K_I64, false, "qwen3-next"},
    {"ssm.time_step_rank", AT(lin_v_heads), K_I64, false, "qwen3-next"},
    {"ssm.state_size", AT(lin_dk), K_I64, false, "qwen3-next"},
    {"ssm.value_head_dim", AT(lin_dv), K_I64, false, "qwen3-next"},
    {"ssm.conv_kernel", AT(conv_taps), K_I64, false, "qwen3-next"},
    {"rope.dimension_count", AT(rotary_dim), K_I64, false, "!deepseek"},
    {"expert_shared_feed_forward_length", AT(shared_ffn), K_I64, false, "!deepseek"},
    {"embedding_scale", AT(embed_mult), K_F64, false, NULL},
    {"residual_scale", AT(residual_mult), K_F64, false, NULL},
    {"logit_scale", AT(logit_scale), K_F64, false, NULL},
    {"head_divisor", AT(head_divisor), K_F64, false, NULL},
    {"swiglu_alpha", AT(swiglu_alpha), K_F64, false, "gpt-oss"},
    {"swiglu_limit", AT(swiglu_limit), K_F64, false, "gpt-oss"},
};

/* Whether key row k applies to family fam. */
static bool key_applies(const struct key *k, const char *fam)
{
    if (!k->only)
        return true;
    return k->only[0] == '!' ? strcmp(k->only + 1, fam) != 0 : strcmp(k->only, fam) == 0;
}

/* The architecture name of a family, or NULL. */
static const char *arch_of(const char *family)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strcmp(archs[i].family, family) == 0)
            return archs[i].arch;
    return NULL;
}

/* A field's value as a double (for writing and for the non-zero test). */
static double field_get(const struct models_config *c, const struct key *k)
{
    const char *p = (const char *)c + k->offset;
    int64_t i64;
    int32_t i32;
    double f;
    if (k->kind == K_I64)
        return memcpy(&i64, p, sizeof i64), (double)i64;
    if (k->kind == K_I32)
        return memcpy(&i32, p, sizeof i32), (double)i32;
    return memcpy(&f, p, sizeof f), f;
}

/* The double nearest a float's shortest decimal form (1e-6f reads as 1e-6, not 9.99999997e-07). */
static double shortest(float x)
{
    char buf[32];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)x);
        if ((float)strtod(buf, NULL) == x)
            return strtod(buf, NULL);
    }
    return (double)x;
}

/* ── Writing ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Write the configuration's metadata keys. */
static void put_config(struct ir_gguf_writer *w, const struct models_config *c, const char *arch)
{
    ir_gguf_kv_str(w, "general.architecture", arch);
    ir_gguf_kv_str(w, "general.name", c->name);
    ir_gguf_kv_u32(w, "general.alignment", IR_GGUF_ALIGNMENT);
    char key[160];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct key *k = &keys[i];
        double v = field_get(c, k);
        if (!key_applies(k, c->family) || (v == 0 && !k->required))
            continue;
        snprintf(key, sizeof key, "%s.%s", arch, k->suffix);
        if (k->kind == K_F64 && shortest((float)v) != v) /* a value no float holds: the file keeps it whole */
            ir_gguf_kv_f64(w, key, v);
        else if (k->kind == K_F64)
            ir_gguf_kv_f32(w, key, (float)v);
        else
            ir_gguf_kv_u32(w, key, (uint32_t)v);
    }
}

/* Add constant t's stored bytes (checkpoint rows, or its f32 values) as a tensor: dims[0] the stored row. */
static int put_tensor(struct ir_gguf_writer *w, const struct ir_graph *g, const struct ir_values *v, ir_tid t,
                      char err[IR_ERR_LEN])
{
    const struct ir_tensor *ts = &g->tensors[t];
    struct ir_ckpt_rows rows;
    if (!v && ts->checkpoint) { /* no values: a hole of the stored rows' size */
        uint64_t dims[2] = {(uint64_t)(ts->transposed ? ts->rows : ts->cols),
                            (uint64_t)(ts->transposed ? ts->cols : ts->rows)};
        return ir_gguf_add_tensor(w, ts->name, dims[1] > 1 ? 2 : 1, dims, ts->format, NULL, err);
    }
    if (v && ir_values_checkpoint(v, t, &rows)) {
        uint64_t dims[2] = {(uint64_t)rows.slen, (uint64_t)rows.srows};
        return ir_gguf_add_tensor(w, ts->name, rows.srows > 1 ? 2 : 1, dims, rows.format, rows.bytes, err);
    }
    uint64_t dims[2] = {(uint64_t)ts->cols, (uint64_t)ts->rows};
    return ir_gguf_add_tensor(w, ts->name, ts->rows > 1 ? 2 : 1, dims, IR_FMT_F32, v ? ir_values_cdata(v, t) : NULL,
                              err);
}

/* Whether a constant is one the lift computes rather than a file holds (the rotary tables). */
static bool derived(const char *name) { return strcmp(name, "rope.cos") == 0 || strcmp(name, "rope.sin") == 0; }

int models_gguf_export(const struct models_config *c, const struct ir_graph *g, const struct ir_values *v,
                       const char *path, char err[IR_ERR_LEN])
{
    const char *arch = arch_of(c->family);
    if (!arch) {
        snprintf(err, IR_ERR_LEN, "family %s has no GGUF architecture", c->family);
        return -1;
    }
    struct ir_gguf_writer *w = ir_gguf_writer_new();
    put_config(w, c, arch);
    int rc = 0;
    for (ir_tid t = 0; t < g->ntensors && rc == 0; t++)
        if (g->tensors[t].role == IR_ROLE_CONSTANT && !derived(g->tensors[t].name) &&
            g->tensors[t].elem == IR_ELEM_F32)
            rc = put_tensor(w, g, v, t, err);
    if (rc == 0)
        rc = ir_gguf_write(w, path, err);
    ir_gguf_writer_free(w);
    return rc;
}

/* ── Reading ─────────────────────────────────────────────────────────────────────────────────────────────── */

/* Read key row k of arch into c; 0 (absent and optional: left 0), or -1 with err. */
static int read_key(const struct ir_gguf *f, const char *arch, const struct key *k, struct models_config *c,
                    char err[IR_ERR_LEN])
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, k->suffix);
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, key);
    if (!kv && k->required) {
        snprintf(err, IR_ERR_LEN, "%s: %s: expected the key, found none", f->label, key);
        return -1;
    }
    if (!kv)
        return 0;
    const struct ir_gguf_value *x = &kv->value;
    bool integer = x->type <= IR_GGUF_INT32 || x->type == IR_GGUF_UINT64 || x->type == IR_GGUF_INT64;
    bool real = x->type == IR_GGUF_FLOAT32 || x->type == IR_GGUF_FLOAT64;
    char *p = (char *)c + k->offset;
    if (k->kind != K_F64 && (!integer || x->type == IR_GGUF_FLOAT32 || x->i < 0 ||
                             x->i > (k->kind == K_I32 ? INT32_MAX : (int64_t)1 << 40))) {
        snprintf(err, IR_ERR_LEN, "%s: byte %llu: %s: expected a count, found a %s", f->label,
                 (unsigned long long)kv->offset, key, ir_gguf_vtype_name(x->type));
        return -1;
    }
    if (k->kind == K_F64 && !(real || integer)) {
        snprintf(err, IR_ERR_LEN, "%s: byte %llu: %s: expected a number, found a %s", f->label,
                 (unsigned long long)kv->offset, key, ir_gguf_vtype_name(x->type));
        return -1;
    }
    if (k->kind == K_I64)
        memcpy(p, &x->i, sizeof x->i);
    else if (k->kind == K_I32) {
        int32_t i = (int32_t)x->i;
        memcpy(p, &i, sizeof i);
    } else {
        double d = real ? (x->type == IR_GGUF_FLOAT32 ? shortest((float)x->f) : x->f) : (double)x->i;
        if (!isfinite(d)) { /* a scale, an epsilon or a base that is no number cannot be right: refused, not lifted */
            snprintf(err, IR_ERR_LEN, "%s: byte %llu: %s: expected a finite number, found %g", f->label,
                     (unsigned long long)kv->offset, key, d);
            return -1;
        }
        memcpy(p, &d, sizeof d);
    }
    return 0;
}

/* The zoo's family of the file's general.architecture; NULL with err. */
static const char *family_of(const struct ir_gguf *f, const char **arch, char err[IR_ERR_LEN])
{
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, "general.architecture");
    if (!kv || kv->value.type != IR_GGUF_STRING) {
        snprintf(err, IR_ERR_LEN, "%s: general.architecture: expected a string naming the architecture", f->label);
        return NULL;
    }
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].arch) == kv->value.len && memcmp(archs[i].arch, kv->value.str, kv->value.len) == 0) {
            *arch = archs[i].arch;
            return archs[i].family;
        }
    snprintf(err, IR_ERR_LEN, "%s: byte %llu: general.architecture: expected one of llama qwen3 qwen3moe gemma2 "
             "qwen3next nemotron qwen2 granite minicpm deepseek2 gpt-oss olmo2, found '%.*s'", f->label,
             (unsigned long long)kv->offset, (int)(kv->value.len > 64 ? 64 : kv->value.len), kv->value.str);
    return NULL;
}

struct models_config *models_gguf_config(const struct ir_gguf *f, char err[IR_ERR_LEN])
{
    const char *arch = NULL, *family = family_of(f, &arch, err);
    if (!family)
        return NULL;
    struct models_config c;
    memset(&c, 0, sizeof c);
    c.family = family;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (key_applies(&keys[i], family) && read_key(f, arch, &keys[i], &c, err) != 0)
            return NULL;
    /* gpt-oss's clamped SwiGLU: the keys, else the constants its model code takes (alpha 1.702, limit 7). */
    if (strcmp(family, "gpt-oss") == 0) {
        c.swiglu_alpha = c.swiglu_alpha ? c.swiglu_alpha : 1.702;
        c.swiglu_limit = c.swiglu_limit ? c.swiglu_limit : 7;
    }
    /* The head's width: the key, else (as llama.cpp reads a file without it) the width over the heads. */
    if (!c.head_dim && c.heads > 0)
        c.head_dim = c.hidden / c.heads;
    /* The vocabulary: the key, else the embedding's rows. */
    const struct ir_gguf_tensor *embd = ir_gguf_find_tensor(f, "token_embd.weight");
    if (!c.vocab && embd && embd->ndims == 2)
        c.vocab = (int64_t)embd->dims[1];
    c.tied = !ir_gguf_find_tensor(f, "output.weight");
    /* The zoo's context, or two windows where a window is wider than half of it; never past the model's. */
    int64_t want = c.window > 2048 ? 2 * c.window : 4096;
    c.ctx = c.ctx < want ? c.ctx : want;
    int64_t params = models_param_count(&c);
    c.tiny = params >= 0 && params < ((int64_t)1 << 24);
    const struct ir_gguf_kv *name = ir_gguf_find_kv(f, "general.name");
    const char *base = strrchr(f->label, '/') ? strrchr(f->label, '/') + 1 : f->label;
    size_t nlen = name && name->value.type == IR_GGUF_STRING && name->value.len < 256 ? name->value.len
                                                                                      : strcspn(base, ".");
    struct models_config *out = malloc(sizeof *out + nlen + 1);
    if (!out)
        abort();
    *out = c;
    char *own = (char *)(out + 1);
    memcpy(own, name && name->value.type == IR_GGUF_STRING && name->value.len < 256 ? name->value.str : base, nlen);
    own[nlen] = '\0';
    out->name = own;
    return out;
}

/* The file's tensor holding constant t's values (a tied model's LM head: its embedding), or NULL. */
static const struct ir_gguf_tensor *file_tensor(const struct ir_gguf *f, const char *name)
{
    const struct ir_gguf_tensor *ft = ir_gguf_find_tensor(f, name);
    return ft || strcmp(name, "output.weight") != 0 ? ft : ir_gguf_find_tensor(f, "token_embd.weight");
}

/* Check constant t against the file's tensor and take its format from it; 0, or -1 with err naming it. */
static int check_constant(const struct ir_gguf *f, struct ir_tensor *t, char err[IR_ERR_LEN])
{
    const struct ir_gguf_tensor *ft = file_tensor(f, t->name);
    if (!ft) {
        snprintf(err, IR_ERR_LEN, "%s: tensor %s: expected it in the file, found none", f->label, t->name);
        return -1;
    }
    int64_t slen = t->checkpoint && t->transposed ? t->rows : t->cols;
    uint64_t values = ft->dims[0] * ft->dims[1] * ft->dims[2] * ft->dims[3];
    if (ft->dims[0] != (uint64_t)slen || values != (uint64_t)t->rows * (uint64_t)t->cols) {
        snprintf(err, IR_ERR_LEN, "%s: tensor %s: expected %lld rows of %lld values, found dims %llu x %llu x %llu x %llu",
                 f->label, t->name, (long long)(t->rows * t->cols / (slen ? slen : 1)), (long long)slen,
                 (unsigned long long)ft->dims[0], (unsigned long long)ft->dims[1], (unsigned long long)ft->dims[2],
                 (unsigned long long)ft->dims[3]);
        return -1;
    }
    if (ft->format < 0 || (t->checkpoint && ir_ggml_row_bytes((enum ir_format)ft->format, slen) < 0)) {
        snprintf(err, IR_ERR_LEN, "%s: tensor %s: expected a type fusecheck decodes (f32 f16 bf16 q8_0 q4_0 q4_k q6_k), "
                 "found GGML type %u", f->label, t->name, ft->type);
        return -1;
    }
    if (t->checkpoint)
        t->format = (enum ir_format)ft->format;
    return 0;
}

struct ir_graph *models_gguf_lift(const struct ir_gguf *f, const struct models_options *o, char err[IR_ERR_LEN])
{
    struct models_config *c = models_gguf_config(f, err);
    if (!c)
        return NULL;
    /* Lifted with f32 matrices (every width is whole blocks of it), then each constant takes the file's format. */
    struct models_options lo = *o;
    lo.weights = IR_FMT_F32;
    char lerr[IR_ERR_LEN];
    struct ir_graph *g = models_lift(c, &lo, lerr);
    if (!g)
        snprintf(err, IR_ERR_LEN, "%.200s: %.300s", f->label, lerr);
    for (ir_tid t = 0; g && t < g->ntensors; t++) {
        struct ir_tensor *ts = &g->tensors[t];
        if (ts->role == IR_ROLE_CONSTANT && !derived(ts->name) && check_constant(f, ts, err) != 0) {
            ir_graph_free(g);
            g = NULL;
        }
    }
    models_config_free(c);
    return g;
}
