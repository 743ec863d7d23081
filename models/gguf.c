/* models/gguf.c — a model as a GGUF file in llama.cpp's conventions, both ways.
 *
 * Writing: the architecture's metadata keys under llama.cpp's names and types (counts u32, reals f32, flags bool),
 * a minimal vocabulary of the model's size (llama.cpp will not load a file without one), and the lifted graph's
 * constants as llama.cpp's tensors: most under their own names and shapes; some renamed (an FFN norm llama.cpp calls
 * post_attention_norm), some joined from several constants (qwen3-next's attn_qkv, ssm_conv1d, ssm_ba and
 * its query interleaved with its gate), some laid out per head (deepseek's attn_k_b and attn_v_b), some in another
 * form (qwen3-next's ssm_a is −exp(A_log)), the experts three-dimensional, a tied model's LM head left out; the
 * rotary scaling as llama.cpp's rope.scaling.* keys, llama3's as its rope_freqs.weight table of divisors.
 *
 * Reading: general.architecture picks the family; the keys fill its configuration, with llama.cpp's defaults where it
 * has them; a key that changes the meaning in a way fusecheck's graph cannot follow is refused, naming it; the
 * rotary scaling is what llama.cpp computes from its keys (YaRN always truncated, its betas 32 and 1) and a
 * rope_freqs table fitted back to llama3's fields. Lifting
 * checks every constant against the file; a constant the file holds in another layout is derived from the file's
 * tensors into fusecheck's (ir_gguf_derive), so evaluation reads it by its own name. Every rule is a row of a table
 * below: a family's key, a renamed tensor, a joined tensor, a per-head layout, a value form. */
#include "models/models.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ── Families: architecture, LM head, extra keys ─────────────────────────────────────────────────────────── */

/* How an architecture's LM head is bound: output.weight when the file has it, else the embedding (optional); always
 * the embedding, an output.weight ignored (tied); always its own output.weight, required (own). */
enum head_rule { HEAD_OPTIONAL, HEAD_TIED, HEAD_OWN };

struct arch;

/* How a configuration field is stored: an int64_t or int32_t count (a u32 key), a double (an f32 key). */
enum kind { K_I64, K_I32, K_F64 };

/* One metadata key of the architecture (`<arch>.` + suffix) and the configuration field it fills: whether a file must
 * have it, and the families it belongs to (a space-separated list; NULL: every family; "!f": all but f). Written
 * when required or non-zero. */
#define AT(f) offsetof(struct models_config, f)
static const struct key {
    const char *suffix;
    size_t offset;
    enum kind kind;
    bool required;
    const char *only;
} keys[] = {
    {"block_count", AT(layers), K_I32, true, NULL},
    {"context_length", AT(ctx), K_I64, true, NULL},
    {"embedding_length", AT(hidden), K_I64, true, NULL},
    {"attention.head_count", AT(heads), K_I64, true, NULL},
    {"attention.head_count_kv", AT(kv_heads), K_I64, false, "!deepseek"},
    {"feed_forward_length", AT(ffn), K_I64, false, NULL},
    {"vocab_size", AT(vocab), K_I64, false, NULL},
    {"expert_count", AT(experts), K_I64, false, NULL},
    {"expert_used_count", AT(top_k), K_I64, false, NULL},
    {"expert_feed_forward_length", AT(expert_ffn), K_I64, false, NULL},
    {"attention.layer_norm_rms_epsilon", AT(eps), K_F64, true, "!nemotron"},
    {"attention.layer_norm_epsilon", AT(eps), K_F64, true, "nemotron"},
    {"rope.freq_base", AT(rope_base), K_F64, false, NULL},
    {"rope.dimension_count", AT(deepseek.rope_dim), K_I64, true, "deepseek"},
    {"attention.sliding_window", AT(window), K_I64, false, "gemma2 gpt-oss"},
    {"attn_logit_softcapping", AT(attn_softcap), K_F64, false, "gemma2"},
    {"final_logit_softcapping", AT(final_softcap), K_F64, false, "gemma2"},
    {"attention.scale", AT(query_scale), K_F64, false, "granite"},
    {"attention.q_lora_rank", AT(deepseek.q_lora), K_I64, false, "deepseek"},
    {"attention.kv_lora_rank", AT(deepseek.kv_lora), K_I64, true, "deepseek"},
    {"leading_dense_block_count", AT(deepseek.dense_layers), K_I32, false, "deepseek"},
    {"full_attention_interval", AT(full_every), K_I32, false, "qwen3-next"},
    {"ssm.group_count", AT(lin_k_heads), K_I64, true, "qwen3-next"},
    {"ssm.time_step_rank", AT(lin_v_heads), K_I64, true, "qwen3-next"},
    {"ssm.state_size", AT(lin_dk), K_I64, true, "qwen3-next"},
    {"ssm.conv_kernel", AT(conv_taps), K_I64, true, "qwen3-next"},
    {"expert_shared_feed_forward_length", AT(shared_ffn), K_I64, false, "qwen3-next"},
    {"embedding_scale", AT(embed_mult), K_F64, false, "granite minicpm"},
    {"residual_scale", AT(residual_mult), K_F64, false, "granite minicpm"},
    {"logit_scale", AT(logit_scale), K_F64, false, "granite"},
    {"logit_scale", AT(head_divisor), K_F64, false, "minicpm"},
};

/* A mixture's routing as llama.cpp's deepseek2 reads it from keys (the other families fix theirs in their graph
 * code: softmax, the top k renormalised). One row a key: its type, the routing field it carries and how, and what
 * llama.cpp takes when the key is absent. The correction row (exp_probs_b) is a tensor: it flows as a constant. */
enum rkind { R_GATING, R_RENORM, R_COUNT, R_REAL };
#define RT(f) offsetof(struct models_routing, f)
static const struct routing_key {
    const char *suffix;
    size_t offset;
    enum rkind kind;
} routing[] = {
    {"expert_gating_func", RT(sigmoid), R_GATING},     /* llama.cpp's numbering: 1 softmax, 2 sigmoid; absent 1 */
    {"expert_weights_norm", RT(no_renorm), R_RENORM},  /* true: the chosen weights renormalised; absent false */
    {"expert_weights_scale", RT(scale), R_REAL},       /* each weight times it; absent or 0 (or 1): none */
    {"expert_group_count", RT(groups), R_COUNT},       /* group-limited choice; absent 0 */
    {"expert_group_used_count", RT(topk_groups), R_COUNT},
};

/* Whether `fam` is in the key's family filter. */
static bool in_filter(const char *only, const char *fam)
{
    if (!only)
        return true;
    if (only[0] == '!')
        return strcmp(only + 1, fam) != 0;
    size_t n = strlen(fam);
    for (const char *p = only; (p = strstr(p, fam)) != NULL; p += n)
        if ((p == only || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
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

/* "<arch>.<suffix>" into buf. */
static const char *arch_key(char buf[160], const char *arch, const char *suffix)
{
    snprintf(buf, 160, "%s.%s", arch, suffix);
    return buf;
}

/* A failure: "what: why" into err; -1. */
static int refuse(char err[IR_ERR_LEN], const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(char err[IR_ERR_LEN], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, IR_ERR_LEN, fmt, ap);
    va_end(ap);
    return -1;
}

/* Whether a configured attention scale is what llama.cpp computes itself (1/√width, in f32), or unset. */
static bool default_scale(double scale, int64_t width)
{
    return scale == 0 || (float)scale == 1.0f / sqrtf((float)width);
}

/* ── Writing keys: the family hooks ──────────────────────────────────────────────────────────────────────── */

/* The common head widths: key and value length (the head's), the rotated width. */
static int put_heads(struct ir_gguf_writer *w, const struct models_config *c, const char *arch, char err[IR_ERR_LEN])
{
    char k[160];
    if (!default_scale(c->query_scale, c->head_dim) && strcmp(c->family, "granite") != 0 &&
        strcmp(c->family, "gemma2") != 0)
        return refuse(err, "model '%s': query_scale %g: llama.cpp's %s computes 1/sqrt(head_dim) and reads no scale",
                      c->name, c->query_scale, arch);
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.key_length"), (uint32_t)c->head_dim);
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.value_length"), (uint32_t)c->head_dim);
    ir_gguf_kv_u32(w, arch_key(k, arch, "rope.dimension_count"),
                   (uint32_t)(c->rotary_dim ? c->rotary_dim : c->head_dim));
    return 0;
}

/* The families whose routing llama.cpp fixes in its graph code (softmax, the top k renormalised, unscaled): a
 * configuration routing otherwise cannot be written. */
static int fixed_routing(const struct models_config *c, const char *arch, char err[IR_ERR_LEN])
{
    const struct models_routing *r = &c->routing;
    if (r->sigmoid || r->no_renorm || r->correction || r->groups > 1 || (r->scale != 0 && r->scale != 1))
        return refuse(err, "model '%s': its routing: llama.cpp's %s routes by a softmax, the top k renormalised, "
                      "unscaled, and reads no key to route otherwise", c->name, arch);
    return 0;
}

/* qwen3-moe: the common widths; llama.cpp's fixed routing. */
static int put_qwen3_moe(struct ir_gguf_writer *w, const struct models_config *c, const char *arch,
                         char err[IR_ERR_LEN])
{
    return fixed_routing(c, arch, err) != 0 ? -1 : put_heads(w, c, arch, err);
}

/* gemma2: what llama.cpp fixes (a window on every other layer, both soft caps, the head tied to the embedding, the
 * attention scale 1/√head_dim) must be what the configuration says. */
static int put_gemma2(struct ir_gguf_writer *w, const struct models_config *c, const char *arch, char err[IR_ERR_LEN])
{
    if (c->window < 1 || !(c->attn_softcap > 0) || !(c->final_softcap > 0) || !c->tied)
        return refuse(err, "model '%s': llama.cpp's gemma2 has a sliding window, both soft caps and a tied head",
                      c->name);
    float want = c->layers == 46 ? 1.0f / sqrtf((float)(c->hidden / c->heads)) : 1.0f / sqrtf((float)c->head_dim);
    if (c->query_scale != 0 && (float)c->query_scale != want)
        return refuse(err, "model '%s': query_scale %g: llama.cpp's gemma2 computes %g", c->name, c->query_scale,
                      (double)want);
    char k[160];
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.key_length"), (uint32_t)c->head_dim);
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.value_length"), (uint32_t)c->head_dim);
    ir_gguf_kv_u32(w, arch_key(k, arch, "rope.dimension_count"), (uint32_t)c->head_dim);
    return 0;
}

/* gpt-oss: llama.cpp's clamped SwiGLU has alpha 1.702 and limit 7 in its code, no key. */
static int put_gpt_oss(struct ir_gguf_writer *w, const struct models_config *c, const char *arch, char err[IR_ERR_LEN])
{
    if (fixed_routing(c, arch, err) != 0)
        return -1;
    if ((float)c->swiglu_alpha != 1.702f || (float)c->swiglu_limit != 7.0f)
        return refuse(err, "model '%s': swiglu_alpha %g and swiglu_limit %g: llama.cpp's gpt-oss fixes 1.702 and 7",
                      c->name, c->swiglu_alpha, c->swiglu_limit);
    return put_heads(w, c, arch, err);
}

/* qwen3-next: the DeltaNet's inner width (value heads × their width); llama.cpp takes key and value heads alike. */
static int put_qwen3_next(struct ir_gguf_writer *w, const struct models_config *c, const char *arch,
                          char err[IR_ERR_LEN])
{
    if (c->lin_dk != c->lin_dv)
        return refuse(err, "model '%s': lin_dk %lld and lin_dv %lld: llama.cpp's qwen3next has one state size",
                      c->name, (long long)c->lin_dk, (long long)c->lin_dv);
    if (fixed_routing(c, arch, err) != 0)
        return -1;
    char k[160];
    ir_gguf_kv_u32(w, arch_key(k, arch, "ssm.inner_size"), (uint32_t)(c->lin_dv * c->lin_v_heads));
    return put_heads(w, c, arch, err);
}

/* deepseek2: latent attention written as llama.cpp's absorbed form (one kv head of kv_lora + rope keys and kv_lora
 * values; the per-head widths as the _mla lengths), the shared experts as a count, the routing keys (its logit scale
 * goes with the rotary scaling's keys: put_rope_scaling). */
static int put_deepseek(struct ir_gguf_writer *w, const struct models_config *c, const char *arch,
                        char err[IR_ERR_LEN])
{
    const struct models_deepseek *d = &c->deepseek;
    if (c->expert_ffn < 1 || d->shared_ffn % c->expert_ffn)
        return refuse(err, "model '%s': shared_ffn %lld is no whole count of experts of %lld", c->name,
                      (long long)d->shared_ffn, (long long)c->expert_ffn);
    char k[160];
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.head_count_kv"), 1);
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.key_length"), (uint32_t)(d->kv_lora + d->rope_dim));
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.value_length"), (uint32_t)d->kv_lora);
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.key_length_mla"), (uint32_t)(c->head_dim + d->rope_dim));
    ir_gguf_kv_u32(w, arch_key(k, arch, "attention.value_length_mla"), (uint32_t)d->v_head_dim);
    ir_gguf_kv_u32(w, arch_key(k, arch, "expert_shared_count"), (uint32_t)(d->shared_ffn / c->expert_ffn));
    for (size_t i = 0; i < sizeof routing / sizeof routing[0]; i++) {
        const struct routing_key *r = &routing[i];
        const char *p = (const char *)&c->routing + r->offset;
        bool flag;
        int64_t n;
        double x;
        arch_key(k, arch, r->suffix);
        if (r->kind == R_GATING)
            memcpy(&flag, p, sizeof flag), ir_gguf_kv_u32(w, k, flag ? 2 : 1);
        else if (r->kind == R_RENORM)
            memcpy(&flag, p, sizeof flag), ir_gguf_kv_bool(w, k, !flag);
        else if (r->kind == R_COUNT && (memcpy(&n, p, sizeof n), n > 0))
            ir_gguf_kv_u32(w, k, (uint32_t)n);
        else if (r->kind == R_REAL && (memcpy(&x, p, sizeof x), x != 0))
            ir_gguf_kv_f32(w, k, (float)x);
    }
    return 0;
}

/* ── Reading keys: the family hooks ──────────────────────────────────────────────────────────────────────── */

/* The key's value as a double; false when absent. A count or a number; err set when it is another type. */
static bool get_number(const struct ir_gguf *f, const char *key, double *out, char err[IR_ERR_LEN], bool *bad)
{
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, key);
    if (!kv)
        return false;
    const struct ir_gguf_value *x = &kv->value;
    if (x->type == IR_GGUF_FLOAT32)
        *out = shortest((float)x->f);
    else if (x->type == IR_GGUF_FLOAT64)
        *out = x->f;
    else if (x->type == IR_GGUF_BOOL || x->type == IR_GGUF_UINT8 || x->type == IR_GGUF_UINT16 ||
             x->type == IR_GGUF_UINT32 || x->type == IR_GGUF_UINT64)
        *out = (double)x->u;
    else if (x->type == IR_GGUF_INT8 || x->type == IR_GGUF_INT16 || x->type == IR_GGUF_INT32 ||
             x->type == IR_GGUF_INT64)
        *out = (double)x->i;
    else {
        *bad = true;
        refuse(err, "%s: byte %llu: %s: expected a number, found a %s", f->label, (unsigned long long)kv->offset, key,
               ir_gguf_vtype_name(x->type));
        return false;
    }
    return true;
}

/* The common head widths read back: key length (else hidden/heads, as llama.cpp), a value length equal to it (the
 * attention's values are as wide as its keys), the rotated width (the whole head: 0). */
static int get_heads(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    double v;
    bool bad = false;
    c->head_dim = c->heads > 0 ? c->hidden / c->heads : 0;
    if (get_number(f, arch_key(k, arch, "attention.key_length"), &v, err, &bad))
        c->head_dim = (int64_t)v;
    if (get_number(f, arch_key(k, arch, "attention.value_length"), &v, err, &bad) && (int64_t)v != c->head_dim)
        return refuse(err, "%s: %s: expected the key length %lld (fusecheck's values are as wide as its keys), found "
                      "%g", f->label, k, (long long)c->head_dim, v);
    c->rotary_dim = c->head_dim;
    if (get_number(f, arch_key(k, arch, "rope.dimension_count"), &v, err, &bad))
        c->rotary_dim = (int64_t)v;
    if (c->rotary_dim == c->head_dim)
        c->rotary_dim = 0;
    return bad ? -1 : 0;
}

/* llama: llama.cpp refuses a rotated width other than the head's. */
static int get_llama(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    if (get_heads(f, arch, c, err) != 0)
        return -1;
    if (c->rotary_dim)
        return refuse(err, "%s: llama.rope.dimension_count: expected the head's width %lld, found %lld", f->label,
                      (long long)c->head_dim, (long long)c->rotary_dim);
    return 0;
}

/* gemma2: llama.cpp's defaults (a window of 4096 on every other layer, caps 50 and 30), its own attention scale, and
 * the head always the embedding. */
static int get_gemma2(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    double v;
    bool bad = false;
    if (get_heads(f, arch, c, err) != 0)
        return -1;
    if (get_number(f, arch_key(k, arch, "attention.sliding_window_pattern"), &v, err, &bad) && v != 2)
        return refuse(err, "%s: %s: expected 2 (a window on every other layer), found %g", f->label, k, v);
    c->window = c->window ? c->window : 4096;
    c->attn_softcap = ir_gguf_find_kv(f, arch_key(k, arch, "attn_logit_softcapping")) ? c->attn_softcap : 50;
    c->final_softcap = ir_gguf_find_kv(f, arch_key(k, arch, "final_logit_softcapping")) ? c->final_softcap : 30;
    if (!(c->attn_softcap > 0) || !(c->final_softcap > 0))
        return refuse(err, "%s: %s.*_logit_softcapping: expected caps above 0", f->label, arch);
    float s = c->layers == 46 ? 1.0f / sqrtf((float)(c->hidden / c->heads)) : 1.0f / sqrtf((float)c->head_dim);
    c->query_scale = shortest(s);
    c->tied = true;
    return bad ? -1 : 0;
}

/* gpt-oss: the clamped SwiGLU's constants as llama.cpp's code has them; a window period of 2. */
static int get_gpt_oss(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    double v;
    bool bad = false;
    if (get_number(f, arch_key(k, arch, "attention.sliding_window_pattern"), &v, err, &bad) && v != 2)
        return refuse(err, "%s: %s: expected 2 (a window on every other layer), found %g", f->label, k, v);
    if (!c->window)
        return refuse(err, "%s: %s: expected the key, found none", f->label,
                      arch_key(k, arch, "attention.sliding_window"));
    c->swiglu_alpha = 1.702;
    c->swiglu_limit = 7;
    return bad ? -1 : get_heads(f, arch, c, err);
}

/* olmo2: fusecheck's olmo2 has no windowed layers. */
static int get_olmo2(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    double v;
    bool bad = false;
    if (get_number(f, arch_key(k, arch, "attention.sliding_window"), &v, err, &bad) && v > 0)
        return refuse(err, "%s: %s: expected none (fusecheck's olmo2 has no sliding window), found %g", f->label, k,
                      v);
    return bad ? -1 : get_heads(f, arch, c, err);
}

/* granite: no scale where a key is absent (llama.cpp skips it: a factor of 1); logit_scale is required. */
static int get_granite(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    if (!ir_gguf_find_kv(f, arch_key(k, arch, "logit_scale")))
        return refuse(err, "%s: %s: expected the key, found none", f->label, k);
    c->embed_mult = c->embed_mult ? c->embed_mult : 1;
    c->residual_mult = c->residual_mult ? c->residual_mult : 1;
    return get_heads(f, arch, c, err);
}

/* minicpm: llama.cpp's defaults where a key is absent (embedding ×12, branches ×1.4/√layers, the head's input ÷
 * 256/hidden, as llama.cpp computes them in f32). */
static int get_minicpm(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    if (!ir_gguf_find_kv(f, arch_key(k, arch, "embedding_scale")))
        c->embed_mult = 12;
    if (!ir_gguf_find_kv(f, arch_key(k, arch, "residual_scale")))
        c->residual_mult = shortest(1.4f / sqrtf((float)c->layers));
    if (!ir_gguf_find_kv(f, arch_key(k, arch, "logit_scale")))
        c->head_divisor = c->hidden ? shortest(256.0f / (float)c->hidden) : 1;
    return get_heads(f, arch, c, err);
}

/* qwen3-next: the value heads' width from the inner width; llama.cpp lays every DeltaNet tensor out with one state
 * size, and marks recurrent layers by the interval (a per-layer list is not read). */
static int get_qwen3_next(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    double v;
    bool bad = false;
    if (!get_number(f, arch_key(k, arch, "ssm.inner_size"), &v, err, &bad))
        return bad ? -1 : refuse(err, "%s: %s: expected the key, found none", f->label, k);
    if (c->lin_v_heads < 1 || (int64_t)v != c->lin_dk * c->lin_v_heads)
        return refuse(err, "%s: %s: expected ssm.state_size x ssm.time_step_rank = %lld, found %g", f->label, k,
                      (long long)(c->lin_dk * c->lin_v_heads), v);
    c->lin_dv = c->lin_dk;
    if (ir_gguf_find_kv(f, arch_key(k, arch, "attention.recurrent_layers")))
        return refuse(err, "%s: %s: fusecheck reads the layers' kinds from full_attention_interval only", f->label, k);
    c->full_every = c->full_every ? c->full_every : 4;
    return get_heads(f, arch, c, err);
}

/* deepseek2: the absorbed form's widths back to the per-head ones (head_dim the unrotated query width), every query
 * head its own kv head, the shared experts' width, and the routing fusecheck's mixture computes. */
static int get_deepseek(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN])
{
    char k[160];
    double v;
    bool bad = false;
    struct models_deepseek *d = &c->deepseek;
    static const char *const need[] = {"attention.key_length_mla", "attention.value_length_mla", "expert_shared_count"};
    double got[3];
    for (int i = 0; i < 3; i++)
        if (!get_number(f, arch_key(k, arch, need[i]), &got[i], err, &bad))
            return bad ? -1 : refuse(err, "%s: %s: expected the key, found none", f->label, k);
    c->head_dim = (int64_t)got[0] - d->rope_dim;
    d->v_head_dim = (int64_t)got[1];
    d->shared_ffn = (int64_t)got[2] * c->expert_ffn;
    c->kv_heads = c->heads;
    if (c->layers == 26 || c->layers == 27) /* llama.cpp's lite variants read no query rank */
        d->q_lora = 0;
    for (size_t i = 0; i < sizeof routing / sizeof routing[0]; i++) {
        const struct routing_key *r = &routing[i];
        char *p = (char *)&c->routing + r->offset;
        bool present = get_number(f, arch_key(k, arch, r->suffix), &v, err, &bad);
        if (bad)
            return -1;
        if (r->kind == R_GATING && present && v != 1 && v != 2)
            return refuse(err, "%s: %s: expected 1 (softmax) or 2 (sigmoid), found %g", f->label, k, v);
        bool flag = r->kind == R_GATING ? present && v == 2 : !(present && v != 0);
        int64_t n = present ? (int64_t)v : 0;
        double x = present && v != 1 ? v : 0;
        if (r->kind == R_GATING || r->kind == R_RENORM)
            memcpy(p, &flag, sizeof flag);
        else if (r->kind == R_COUNT)
            memcpy(p, &n, sizeof n);
        else
            memcpy(p, &x, sizeof x);
    }
    if (c->routing.groups <= 1) /* one group is no grouping */
        c->routing.groups = c->routing.topk_groups = 0;
    for (int layer = d->dense_layers; layer < c->layers && !c->routing.correction; layer++) {
        snprintf(k, sizeof k, "blk.%d.exp_probs_b.bias", layer);
        c->routing.correction = ir_gguf_find_tensor(f, k) != NULL;
    }
    return 0;
}

/* What an architecture's llama.cpp code reads of a rotary scaling besides the common keys: a rope_freqs tensor
 * (its loader creates one: llama, granite, minicpm), deepseek2's yarn_log_multiplier and the logit scale it derives
 * from it, and whether its windowed layers take the trained factor even under type none (gemma2, gpt-oss). */
enum { ROPE_FREQS = 1, ROPE_LOG_MUL = 2, ROPE_WINDOW_FACTOR = 4 };

/* The architectures: general.architecture, the zoo's family, how the LM head binds, the family's extra keys written
 * and read, what its llama.cpp code reads of a rotary scaling (ROPE_* flags). */
static const struct arch {
    const char *arch, *family;
    enum head_rule head;
    int (*put)(struct ir_gguf_writer *w, const struct models_config *c, const char *arch, char err[IR_ERR_LEN]);
    int (*get)(const struct ir_gguf *f, const char *arch, struct models_config *c, char err[IR_ERR_LEN]);
    unsigned rope;
} archs[] = {
    {"llama", "llama", HEAD_OPTIONAL, put_heads, get_llama, ROPE_FREQS},
    {"qwen3", "qwen3", HEAD_OPTIONAL, put_heads, get_heads, 0},
    {"qwen3moe", "qwen3-moe", HEAD_OPTIONAL, put_qwen3_moe, get_heads, 0},
    {"gemma2", "gemma2", HEAD_TIED, put_gemma2, get_gemma2, ROPE_WINDOW_FACTOR},
    {"qwen3next", "qwen3-next", HEAD_OPTIONAL, put_qwen3_next, get_qwen3_next, 0},
    {"nemotron", "nemotron", HEAD_OWN, put_heads, get_heads, 0},
    {"qwen2", "qwen2.5", HEAD_OPTIONAL, put_heads, get_heads, 0},
    {"granite", "granite", HEAD_OPTIONAL, put_heads, get_granite, ROPE_FREQS},
    {"minicpm", "minicpm", HEAD_OPTIONAL, put_heads, get_minicpm, ROPE_FREQS},
    {"deepseek2", "deepseek", HEAD_OPTIONAL, put_deepseek, get_deepseek, ROPE_LOG_MUL},
    {"gpt-oss", "gpt-oss", HEAD_OWN, put_gpt_oss, get_gpt_oss, ROPE_WINDOW_FACTOR},
    {"olmo2", "olmo2", HEAD_OWN, put_heads, get_olmo2, 0},
};

/* The architecture row of a family, or NULL. */
static const struct arch *arch_of(const char *family)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strcmp(archs[i].family, family) == 0)
            return &archs[i];
    return NULL;
}

/* ── Rotary scaling: llama.cpp's keys and its rope_freqs tensor ──────────────────────────────────────────── */

/* The rope.scaling.type strings llama.cpp reads that fusecheck computes, and the scaling each names (an absent key
 * is "linear"; longrope and any other string are refused). */
static const struct scaling_type {
    const char *name;
    enum ir_ropescale kind;
} scaling_types[] = {{"none", IR_ROPESCALE_NONE}, {"linear", IR_ROPESCALE_LINEAR}, {"yarn", IR_ROPESCALE_YARN}};

/* Keys llama.cpp's loaders read for none of fusecheck's architectures, with the value its YaRN takes instead: a file
 * giving another claims a rotation llama.cpp does not compute, and is refused naming the key. */
static const struct yarn_fixed {
    const char *suffix;
    double value;
} yarn_fixed[] = {
    {"rope.scaling.yarn_beta_fast", IR_YARN_BETA_FAST_DEFAULT},
    {"rope.scaling.yarn_beta_slow", IR_YARN_BETA_SLOW_DEFAULT},
    {"rope.scaling.yarn_ext_factor", 1.0},
};

/* How far a recomputed rope_freqs divisor, magnitude or logit scale may be from the file's (relative): f32's
 * precision, with room for a converter's f32 arithmetic. */
#define SCALING_TOL 1e-6

/* A rotary scaling as llama.cpp's keys give it: the type's scaling (llama3 stands for a rope_freqs table), the
 * factor (1: none), the original context, rope.scaling.attn_factor, and deepseek2's mscale_all_dim (its
 * yarn_log_multiplier ÷ 0.1; 0 when absent). */
struct rope_keys {
    enum ir_ropescale kind;
    double factor, attn, mscale_all;
    float log_mul; /* the yarn_log_multiplier key's value */
    int64_t orig;
};

/* 2π, to double precision (as ir/ir.c's llama3 band measures wavelengths). */
#define TWO_PI 6.28318530717958647692528676655900577

static bool dims_are(const struct ir_gguf_tensor *ft, uint32_t nd, const uint64_t *dims);
static const char *dims_text(const struct ir_gguf_tensor *ft, char buf[96]);

/* Whether x is y to SCALING_TOL (relative). */
static bool near(double x, double y) { return fabs(x - y) <= SCALING_TOL * fabs(y); }

/* Whether x is a finite number an f32 key can hold (converting another to float is undefined). */
static bool f32_fits(double x) { return isfinite(x) && fabs(x) <= FLT_MAX; }

/* YaRN's get_mscale: 0.1 · s · ln f + 1, or 1 for a factor of at most 1 (as models/config.c computes it). */
static double yarn_mscale(double f, double s) { return f <= 1 ? 1.0 : 0.1 * s * log(f) + 1.0; }

/* The magnitude of llama.cpp's cos and sin tables: YaRN's get_mscale(f, 1) times rope.scaling.attn_factor (with a
 * yarn_log_multiplier, deepseek2's, the ratio get_mscale(f, mscale) / get_mscale(f, mscale_all_dim) instead, which its
 * loader makes 1 by taking mscale = mscale_all_dim); every other type the attention factor alone. */
static double llama_magnitude(const struct rope_keys *k)
{
    if (k->kind != IR_ROPESCALE_YARN)
        return k->attn;
    return k->mscale_all != 0 ? k->attn : k->attn * yarn_mscale(k->factor, 1);
}

/* The root of deepseek2's logit scale times √(nope + rope): llama.cpp's mscale, the tables' attention factor with
 * YaRN's 1/(1 + 0.1 ln f) undone, times 1 + 0.1 · mscale_all_dim · ln f. */
static double deepseek_mscale(const struct rope_keys *k)
{
    double base = k->kind == IR_ROPESCALE_YARN ? llama_magnitude(k) : k->attn * (0.1 * log(k->factor) + 1.0);
    return base * (0.1 * k->mscale_all * log(k->factor) + 1.0);
}

/* The rotated pairs of a configuration's ropes (the lift's: deepseek's rope part, the rotary width, else the head). */
static int64_t rotary_half(const struct models_config *c)
{
    return (c->deepseek.rope_dim ? c->deepseek.rope_dim : c->rotary_dim ? c->rotary_dim : c->head_dim) / 2;
}

/* A rope of `half` pairs at base theta with scaling s: what ir_rope_frequency and the scaling check read. */
static struct ir_rope rope_of(int64_t half, double theta, const struct ir_rope_scaling *s)
{
    return (struct ir_rope){.h = 1, .hd = 2 * half, .half = half, .rows = 1, .theta = {true, theta}, .scaling = *s};
}

/* The divisor of pair i's frequency under r's scaling (llama.cpp's rope_freqs value): unscaled over scaled. */
static double pair_divisor(const struct ir_rope *r, int64_t i)
{
    struct ir_rope plain = *r;
    plain.scaling = (struct ir_rope_scaling){.kind = IR_ROPESCALE_NONE};
    return ir_rope_frequency(&plain, i) / ir_rope_frequency(r, i);
}

/* The first pair whose divisor under scaling s is not d's (SCALING_TOL), half when every one is, -1 when s is no
 * valid scaling. */
static int64_t first_miss(const float *d, int64_t half, double theta, const struct ir_rope_scaling *s)
{
    struct ir_rope r = rope_of(half, theta, s);
    const char *field;
    char why[96];
    if (ir_rope_scaling_check(&r, &field, why, sizeof why))
        return -1;
    for (int64_t i = 0; i < half; i++)
        if (!near(pair_divisor(&r, i), d[i]))
            return i;
    return half;
}

/* Values near v, roundest first, v itself last: a whole number, quarters, hundredths. */
static void round_values(double v, double out[4])
{
    out[0] = round(v), out[1] = round(4 * v) / 4, out[2] = round(100 * v) / 100, out[3] = v;
}

/* A llama3 band: factor, original context, and the raw low and high frequency factors its edges give. */
struct band {
    double factor, low, high;
    int64_t orig;
};

/* The whole number nearest 1/x (a wavelength) when it is one an original context can be; 0 when none. */
static int64_t context_of(double x)
{
    double w = 1 / x;
    return isfinite(w) && w >= 0.5 && w < (double)((int64_t)1 << 40) ? (int64_t)llround(w) : 0;
}

/* The band of divisors d rising from 1 (the last pair lo, or -1) to the factor (from pair hi): s = (factor/d − 1) /
 * (factor − 1), llama3's blend, is linear in the inverse wavelength x, so two pairs inside fix the edges x0 (s = 0,
 * the wavelength orig/low_freq) and x1 (s = 1, orig/high_freq), orig the first edge rounded. With one pair inside
 * the line turns about it: half-way to the steepest that keeps pair hi at the factor and pair lo at 1, low_freq 1 at
 * the rounded edge; with none the edges go between pair lo and pair hi. False when they give no band. */
static bool fit_band(const float *d, const double *x, int64_t lo, int64_t hi, double factor, struct band *b)
{
    b->factor = factor;
    b->low = 1;
    int64_t inside = hi - lo - 1;
    double s_in = (factor / d[lo + 1] - 1) / (factor - 1);
    if (inside >= 2) {
        double s_last = (factor / d[hi - 1] - 1) / (factor - 1);
        double slope = (s_in - s_last) / (x[lo + 1] - x[hi - 1]);
        double x0 = x[lo + 1] - s_in / slope, x1 = x[lo + 1] + (1 - s_in) / slope;
        b->orig = slope > 0 && x0 > 0 ? context_of(x0) : 0;
        b->low = (double)b->orig * x0, b->high = (double)b->orig * x1;
    } else if (inside == 1) {
        double xm = x[lo + 1], t = (xm - x[hi]) / s_in; /* the band's width in x: t ≤ the room each side leaves */
        if (lo >= 0 && (x[lo] - xm) / (1 - s_in) < t)
            t = (x[lo] - xm) / (1 - s_in);
        b->orig = context_of(xm - t / 2 * s_in);
        double x0 = 1 / (double)b->orig;
        b->high = (double)b->orig * (x0 + (xm - x0) / s_in);
    } else if (lo >= 0) {
        b->orig = context_of(1 / floor(1 / x[hi]));
        b->high = (double)b->orig / ((1 / x[lo] + (double)b->orig) / 2);
    }
    return b->orig > 0 && isfinite(b->low) && isfinite(b->high);
}

/* The first llama3 scaling of band b's fields, each at its roundest value first, whose divisors are d's; false when
 * none is. */
static bool band_scaling(const float *d, int64_t half, double theta, const struct band *b, struct ir_rope_scaling *s)
{
    double lows[4], highs[4];
    round_values(b->low, lows);
    round_values(b->high, highs);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            *s = (struct ir_rope_scaling){.kind = IR_ROPESCALE_LLAMA3, .factor = {true, b->factor}, .orig = b->orig,
                                          .low_freq = {true, lows[i]}, .high_freq = {true, highs[j]}};
            if (first_miss(d, half, theta, s) == half)
                return true;
        }
    return false;
}

/* The scaling a rope_freqs table of `half` divisors gives at base theta: none (every divisor 1), linear (every one
 * the factor), else llama3's band fitted (fit_band). 0, or -1 with err naming `label`'s tensor and the first pair
 * that is not llama3's. */
static int fit_rope_freqs(const char *label, const float *d, int64_t half, double theta, struct ir_rope_scaling *s,
                          char err[IR_ERR_LEN])
{
    double factor = 0, least = INFINITY;
    for (int64_t i = 0; i < half; i++) {
        if (!(d[i] >= 1 - SCALING_TOL) || !isfinite(d[i]))
            return refuse(err, "%s: tensor rope_freqs.weight: pair %lld: expected a divisor of at least 1 (llama3's), "
                          "found %g", label, (long long)i, (double)d[i]);
        if (i > 0 && d[i] < d[i - 1] * (1 - SCALING_TOL))
            return refuse(err, "%s: tensor rope_freqs.weight: pair %lld: expected no less than pair %lld's %g "
                          "(llama3's divisors never fall), found %g", label, (long long)i, (long long)(i - 1),
                          (double)d[i - 1], (double)d[i]);
        factor = d[i] > factor ? d[i] : factor;
        least = d[i] < least ? d[i] : least;
    }
    *s = (struct ir_rope_scaling){.kind = IR_ROPESCALE_NONE};
    if (half < 1 || factor <= 1)
        return 0;
    if (least >= factor * (1 - SCALING_TOL)) { /* every pair divided alike: linear */
        *s = (struct ir_rope_scaling){.kind = IR_ROPESCALE_LINEAR, .factor = {true, factor}};
        return 0;
    }
    double *x = malloc(sizeof *x * (size_t)half);
    if (!x)
        abort();
    int64_t lo = -1, hi = half;
    struct ir_rope plain = rope_of(half, theta, s);
    for (int64_t i = 0; i < half; i++) {
        x[i] = ir_rope_frequency(&plain, i) / TWO_PI; /* the inverse wavelength */
        lo = d[i] <= 1 ? i : lo;
        hi = d[i] == factor && hi == half ? i : hi;
    }
    struct band b = {factor, 1, 1, 0};
    bool fit = hi > lo && fit_band(d, x, lo, hi, factor, &b) && band_scaling(d, half, theta, &b, s);
    free(x);
    if (fit)
        return 0;
    /* the pair the raw band misses first, or the first inside it when there is no band */
    struct ir_rope_scaling raw = {.kind = IR_ROPESCALE_LLAMA3, .factor = {true, factor}, .orig = b.orig,
                                  .low_freq = {true, b.low}, .high_freq = {true, b.high}};
    int64_t at = b.orig > 0 ? first_miss(d, half, theta, &raw) : -1;
    at = at >= 0 && at < half ? at : lo + 1 < half ? lo + 1 : 0;
    return refuse(err, "%s: tensor rope_freqs.weight: pair %lld: expected llama3's divisors (the factor %g, a blend "
                  "linear in the inverse wavelength between two edges), found %g, which no band gives", label,
                  (long long)at, factor, (double)d[at]);
}

/* A refusal of key `<arch>.<suffix>` at its byte: "file: byte N: key: " and the message. */
static int refuse_key(char err[IR_ERR_LEN], const struct ir_gguf *f, const char *arch, const char *suffix,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int refuse_key(char err[IR_ERR_LEN], const struct ir_gguf *f, const char *arch, const char *suffix,
                      const char *fmt, ...)
{
    char k[160], what[IR_ERR_LEN];
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, arch_key(k, arch, suffix));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return refuse(err, "%s: byte %llu: %s: %.300s", f->label, kv ? (unsigned long long)kv->offset : 0ull, k, what);
}

/* The number at `<arch>.<suffix>` into *v (left as it is when absent); whether the key is there. *bad with err when
 * it is no number. */
static bool scaling_number(const struct ir_gguf *f, const char *arch, const char *suffix, double *v, bool *bad,
                           char err[IR_ERR_LEN])
{
    char k[160];
    return !*bad && get_number(f, arch_key(k, arch, suffix), v, err, bad);
}

/* rope.scaling.type's scaling (absent: linear); -1 with err for another type or a value that is no string. */
static int read_scaling_type(const struct ir_gguf *f, const char *arch, enum ir_ropescale *kind, char err[IR_ERR_LEN])
{
    char k[160];
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, arch_key(k, arch, "rope.scaling.type"));
    *kind = IR_ROPESCALE_LINEAR;
    if (!kv)
        return 0;
    const struct ir_gguf_value *v = &kv->value;
    for (size_t i = 0; v->type == IR_GGUF_STRING && i < sizeof scaling_types / sizeof scaling_types[0]; i++)
        if (strlen(scaling_types[i].name) == v->len && memcmp(scaling_types[i].name, v->str, v->len) == 0) {
            *kind = scaling_types[i].kind;
            return 0;
        }
    if (v->type != IR_GGUF_STRING)
        return refuse_key(err, f, arch, "rope.scaling.type", "expected a string, found a %s",
                          ir_gguf_vtype_name(v->type));
    return refuse_key(err, f, arch, "rope.scaling.type", "expected none, linear or yarn (fusecheck computes no other "
                      "rotary scaling), found '%.*s'", (int)(v->len < 32 ? v->len : 32), v->str);
}

/* The file's scaling keys as llama.cpp's loader and context read them: the type, the factor (rope.scaling.factor,
 * else the old rope.scale_linear; absent or 0: 1; type none: 1), the original context (default: the trained one),
 * the attention factor (default 1), deepseek2's yarn_log_multiplier ÷ 0.1 in f32 as llama.cpp divides it. A key
 * that would mean what llama.cpp does not compute (another YaRN beta, a log multiplier another architecture
 * ignores, a factor gemma2's and gpt-oss's windowed layers would take under type none) is refused naming it. */
static int read_rope_keys(const struct ir_gguf *f, const struct arch *a, int64_t ctx_train, struct rope_keys *k,
                          char err[IR_ERR_LEN])
{
    const char *arch = a->arch;
    double factor = 0, orig = 0, log_mul = 0;
    bool bad = false;
    *k = (struct rope_keys){.kind = IR_ROPESCALE_NONE, .factor = 1, .attn = 1, .orig = ctx_train};
    if (read_scaling_type(f, arch, &k->kind, err) != 0)
        return -1;
    const char *fkey = "rope.scaling.factor";
    if (!scaling_number(f, arch, fkey, &factor, &bad, err) && !bad) { /* the old key's name */
        fkey = "rope.scale_linear";
        scaling_number(f, arch, fkey, &factor, &bad, err);
    }
    scaling_number(f, arch, "rope.scaling.original_context_length", &orig, &bad, err);
    scaling_number(f, arch, "rope.scaling.attn_factor", &k->attn, &bad, err);
    bool has_log = scaling_number(f, arch, "rope.scaling.yarn_log_multiplier", &log_mul, &bad, err);
    if (bad)
        return -1;
    if (!(factor >= 0) || !isfinite(factor))
        return refuse_key(err, f, arch, fkey, "expected a factor of at least 0, found %g", factor);
    if (!(k->attn > 0) || !isfinite(k->attn))
        return refuse_key(err, f, arch, "rope.scaling.attn_factor", "expected a positive number, found %g", k->attn);
    if (!(orig >= 0 && orig < (double)((int64_t)1 << 40)))
        return refuse_key(err, f, arch, "rope.scaling.original_context_length", "expected a count, found %g", orig);
    if (has_log && log_mul != 0 && !(a->rope & ROPE_LOG_MUL))
        return refuse_key(err, f, arch, "rope.scaling.yarn_log_multiplier", "expected none (llama.cpp's %s does not "
                          "read it), found %g", arch, log_mul);
    if (!f32_fits(log_mul))
        return refuse_key(err, f, arch, "rope.scaling.yarn_log_multiplier", "expected a finite f32, found %g",
                          log_mul);
    if (k->kind == IR_ROPESCALE_NONE && factor != 0 && factor != 1 && (a->rope & ROPE_WINDOW_FACTOR))
        return refuse_key(err, f, arch, fkey, "expected 1 with rope.scaling.type none (llama.cpp's %s would still "
                          "scale its windowed layers by it), found %g", arch, factor);
    k->factor = k->kind == IR_ROPESCALE_NONE || factor == 0 ? 1 : factor;
    k->orig = orig >= 1 ? (int64_t)orig : ctx_train;
    k->log_mul = (float)log_mul;
    k->mscale_all = (double)(k->log_mul / 0.1f);
    for (size_t i = 0; k->kind == IR_ROPESCALE_YARN && i < sizeof yarn_fixed / sizeof yarn_fixed[0]; i++) {
        double v = yarn_fixed[i].value;
        if (scaling_number(f, arch, yarn_fixed[i].suffix, &v, &bad, err) && v != yarn_fixed[i].value)
            return refuse_key(err, f, arch, yarn_fixed[i].suffix, "expected %g (llama.cpp's %s does not read the key "
                              "and takes %g), found %g", yarn_fixed[i].value, arch, yarn_fixed[i].value, v);
    }
    double m = llama_magnitude(k), said = m;
    if (k->kind == IR_ROPESCALE_YARN && scaling_number(f, arch, "rope.scaling.yarn_attn_factor", &said, &bad, err) &&
        !near(said, m))
        return refuse_key(err, f, arch, "rope.scaling.yarn_attn_factor", "expected the magnitude llama.cpp computes, "
                          "%g (it does not read the key; rope.scaling.attn_factor multiplies its own), found %g", m,
                          said);
    return bad ? -1 : 0;
}

/* The file's rotary scaling into c->rope_scaling, as llama.cpp computes it (read_rope_keys; a rope_freqs table where
 * the architecture reads one, fit_rope_freqs), and deepseek2's logit scale; 0, or -1 with err naming the key or
 * tensor. ctx_train: the file's context_length. */
static int get_rope_scaling(const struct ir_gguf *f, const struct arch *a, int64_t ctx_train, struct models_config *c,
                            char err[IR_ERR_LEN])
{
    struct rope_keys k;
    if (read_rope_keys(f, a, ctx_train, &k, err) != 0)
        return -1;
    struct ir_rope_scaling *s = &c->rope_scaling;
    double m = llama_magnitude(&k);
    if (a->rope & ROPE_LOG_MUL) {
        double ms = deepseek_mscale(&k), d = (double)(c->head_dim + c->deepseek.rope_dim);
        c->query_scale = ms != 1 && d > 0 ? ms * ms / sqrt(d) : 0; /* from the keys in double, as the magnitude */
    }
    enum ir_ropescale kind = k.factor == 1 ? IR_ROPESCALE_NONE : k.kind; /* a factor of 1 scales nothing */
    *s = (struct ir_rope_scaling){.kind = kind};
    if (kind != IR_ROPESCALE_NONE)
        s->factor = (struct ir_optf){true, k.factor};
    if (kind == IR_ROPESCALE_YARN) {
        s->orig = k.orig;
        s->beta_fast = (struct ir_optf){true, IR_YARN_BETA_FAST_DEFAULT};
        s->beta_slow = (struct ir_optf){true, IR_YARN_BETA_SLOW_DEFAULT};
        s->truncate = true; /* llama.cpp floors and ceils the correction range always */
    }
    int64_t half = rotary_half(c);
    const struct ir_gguf_tensor *ft = (a->rope & ROPE_FREQS) ? ir_gguf_find_tensor(f, "rope_freqs.weight") : NULL;
    if (ft && kind != IR_ROPESCALE_NONE)
        return refuse(err, "%s: tensor rope_freqs.weight: expected none with rope.scaling.type %s and a factor of %g "
                      "(llama.cpp divides by both; fusecheck's rope takes one scaling)", f->label,
                      ir_ropescale_name(kind), k.factor);
    if (ft) {
        char buf[96];
        if (ft->format < 0 || !dims_are(ft, 1, (uint64_t[]){(uint64_t)half}))
            return refuse(err, "%s: tensor rope_freqs.weight: expected %lld values of a type fusecheck decodes, found "
                          "dims %s of GGML type %u", f->label, (long long)half, dims_text(ft, buf), ft->type);
        float *d = malloc(sizeof *d * (size_t)(half > 0 ? half : 1));
        if (!d)
            abort();
        ir_ggml_dequantize((enum ir_format)ft->format, ft->data, half, d);
        int rc = fit_rope_freqs(f->label, d, half, c->rope_base, s, err);
        free(d);
        if (rc != 0)
            return -1;
    }
    s->magnitude = (struct ir_optf){m != 1, m != 1 ? m : 0};
    struct ir_rope r = rope_of(half, c->rope_base, s);
    const char *field;
    char why[96];
    if (ir_rope_scaling_check(&r, &field, why, sizeof why))
        return refuse(err, "%s: %s.rope.scaling.*: the rotary scaling's %s %s", f->label, a->arch, field, why);
    return 0;
}

/* The keys export writes for c's scaling, as llama.cpp reads them back (its f32 values): the attention factor that
 * gives c's magnitude, and for deepseek2 the mscale_all_dim (yarn_log_multiplier ÷ 0.1) that gives its logit scale,
 * tried without one first. -1 with err when no keys give both. */
static int keys_for(const struct models_config *c, const struct arch *a, struct rope_keys *out, char err[IR_ERR_LEN])
{
    const struct ir_rope_scaling *s = &c->rope_scaling;
    bool factored = s->kind == IR_ROPESCALE_LINEAR || s->kind == IR_ROPESCALE_YARN;
    double m = ir_rope_magnitude(&(struct ir_rope){.scaling = *s}), d = (double)(c->head_dim + c->deepseek.rope_dim);
    double qs = c->query_scale != 0 ? c->query_scale : 1 / sqrt(d);
    struct rope_keys k = {.kind = s->kind, .factor = factored ? shortest((float)s->factor.v) : 1, .attn = 1,
                          .orig = s->orig};
    bool deepseek = (a->rope & ROPE_LOG_MUL) != 0;
    for (int with_log = 0; with_log < (deepseek ? 2 : 1); with_log++) {
        k.mscale_all = 0, k.attn = 1;
        if (with_log) { /* mscale_all_dim from the logit scale: its root over the base, less 1, over 0.1 ln f */
            double base = k.kind == IR_ROPESCALE_YARN ? 1 : 0.1 * log(k.factor) + 1.0;
            double all = (sqrt(qs * sqrt(d)) / (m * base) - 1) / (0.1 * log(k.factor));
            k.log_mul = f32_fits(0.1 * all) ? (float)(0.1 * all) : 0.0f;
            k.mscale_all = (double)(k.log_mul / 0.1f); /* as llama.cpp's loader divides it */
            if (k.mscale_all == 0 || !isfinite(k.mscale_all))
                continue;
        }
        double ratio = m / llama_magnitude(&k);
        if (!f32_fits(ratio))
            continue;
        float attn = (float)ratio;
        k.attn = attn == 1.0f ? 1 : shortest(attn);
        double ms = deepseek_mscale(&k);
        if (near(llama_magnitude(&k), m) && (!deepseek || near(ms * ms / sqrt(d), qs))) {
            *out = k;
            return 0;
        }
    }
    if (deepseek)
        return refuse(err, "model '%s': query_scale %g: llama.cpp's deepseek2 derives its logit scale from the rotary "
                      "scaling's keys (rope.scaling.yarn_log_multiplier, attn_factor), and none gives it", c->name,
                      qs);
    return refuse(err, "model '%s': rope_scaling.magnitude %g: no rope.scaling.attn_factor gives it in llama.cpp",
                  c->name, m);
}

/* Write c's rotary scaling as llama.cpp reads it: rope.scaling.type, factor and (YaRN) original_context_length; the
 * attention factor that gives the magnitude (YaRN's magnitude / get_mscale(factor, 1): llama.cpp's own YaRN magnitude
 * is get_mscale(factor, 1), and rope.scaling.attn_factor multiplies it, so another is written rather than refused);
 * deepseek2's yarn_log_multiplier (0.1 · mscale_all_dim, from the query scale); llama3 as rope_freqs alone (put with
 * the tensors). What llama.cpp cannot be told is refused naming the field: YaRN untruncated or with other betas,
 * llama3 where the loader has no rope_freqs tensor. */
static int put_rope_scaling(struct ir_gguf_writer *w, const struct models_config *c, const struct arch *a,
                            char err[IR_ERR_LEN])
{
    const struct ir_rope_scaling *s = &c->rope_scaling;
    struct ir_rope r = rope_of(rotary_half(c), c->rope_base, s);
    const char *field;
    char why[96], k[160];
    if (ir_rope_scaling_check(&r, &field, why, sizeof why))
        return refuse(err, "model '%s': rope_scaling.%s: %s", c->name, field, why);
    if (s->kind == IR_ROPESCALE_YARN && !s->truncate)
        return refuse(err, "model '%s': rope_scaling.truncate false: llama.cpp always floors and ceils YaRN's "
                      "correction range", c->name);
    if (s->kind == IR_ROPESCALE_YARN && ((s->beta_fast.has && s->beta_fast.v != IR_YARN_BETA_FAST_DEFAULT) ||
                                        (s->beta_slow.has && s->beta_slow.v != IR_YARN_BETA_SLOW_DEFAULT)))
        return refuse(err, "model '%s': rope_scaling.%s %g: llama.cpp's %s takes YaRN's betas 32 and 1 and reads no "
                      "key for them", c->name, s->beta_fast.v != IR_YARN_BETA_FAST_DEFAULT ? "beta_fast" : "beta_slow",
                      s->beta_fast.v != IR_YARN_BETA_FAST_DEFAULT ? s->beta_fast.v : s->beta_slow.v, a->arch);
    if (s->kind == IR_ROPESCALE_LLAMA3 && !(a->rope & ROPE_FREQS))
        return refuse(err, "model '%s': rope_scaling llama3: llama.cpp's %s has no rope_freqs tensor to carry it",
                      c->name, a->arch);
    if (s->factor.has && !f32_fits(s->factor.v))
        return refuse(err, "model '%s': rope_scaling.factor %g: no f32 key holds it", c->name, s->factor.v);
    if (s->orig > UINT32_MAX)
        return refuse(err, "model '%s': rope_scaling.orig %lld: no u32 key holds it", c->name, (long long)s->orig);
    struct rope_keys keys = {.kind = IR_ROPESCALE_NONE};
    if (keys_for(c, a, &keys, err) != 0)
        return -1;
    if (s->kind == IR_ROPESCALE_LINEAR || s->kind == IR_ROPESCALE_YARN) {
        ir_gguf_kv_str(w, arch_key(k, a->arch, "rope.scaling.type"), ir_ropescale_name(s->kind));
        ir_gguf_kv_f32(w, arch_key(k, a->arch, "rope.scaling.factor"), (float)keys.factor);
    }
    if (s->kind == IR_ROPESCALE_YARN)
        ir_gguf_kv_u32(w, arch_key(k, a->arch, "rope.scaling.original_context_length"), (uint32_t)s->orig);
    if (keys.attn != 1)
        ir_gguf_kv_f32(w, arch_key(k, a->arch, "rope.scaling.attn_factor"), (float)keys.attn);
    if (keys.mscale_all != 0)
        ir_gguf_kv_f32(w, arch_key(k, a->arch, "rope.scaling.yarn_log_multiplier"), keys.log_mul);
    return 0;
}

/* ── Tensors: how constants map to the file ──────────────────────────────────────────────────────────────── */

/* A constant stored under another name (a layer's suffix). */
static const struct rename {
    const char *only, *graph, *file;
} renames[] = {
    {"gpt-oss qwen3-next", "ffn_norm.weight", "post_attention_norm.weight"},
    {"qwen3-next", "ssm_z.weight", "attn_gate.weight"},
};

/* The groups a joined tensor interleaves its parts in. */
static int64_t one_group(const struct models_config *c) { return (void)c, 1; }
static int64_t per_query_head(const struct models_config *c) { return c->heads; }
static int64_t per_key_head(const struct models_config *c) { return c->lin_k_heads; }

/* A layer's tensor joined from constants: its stored rows are, group by group, each part's next run of stored rows
 * (a part's run: its rows over the groups). One group: the parts one after another. */
static const struct join {
    const char *only, *file;
    const char *parts[3];
    int nparts;
    int64_t (*groups)(const struct models_config *c);
} joins[] = {
    /* the DeltaNet's q, k and v projections, and their convolutions, channel after channel */
    {"qwen3-next", "attn_qkv.weight", {"ssm_q.weight", "ssm_k.weight", "ssm_v.weight"}, 3, one_group},
    {"qwen3-next", "ssm_conv1d.weight", {"ssm_conv1d_q.weight", "ssm_conv1d_k.weight", "ssm_conv1d_v.weight"}, 3,
     one_group},
    /* each key head's value heads' write strengths, then their forget gates */
    {"qwen3-next", "ssm_ba.weight", {"ssm_b.weight", "ssm_a_in.weight"}, 2, per_key_head},
    /* each query head's query, then its output gate */
    {"qwen3-next", "attn_q.weight", {"attn_q.weight", "attn_gate.weight"}, 2, per_query_head},
};

/* The heads and each head's contracted width of a per-head matrix (a head_matmul's weight). */
static int64_t heads_of(const struct models_config *c) { return c->heads; }
static int64_t nope_width(const struct models_config *c) { return c->head_dim; }
static int64_t lora_width(const struct models_config *c) { return c->deepseek.kv_lora; }

/* A per-head matrix: fusecheck stores one row an output, each the heads' contracted values one head after another;
 * llama.cpp one matrix a head, [width, outputs, heads]. */
static const struct per_head {
    const char *only, *name;
    int64_t (*heads)(const struct models_config *c);
    int64_t (*width)(const struct models_config *c);
} per_heads[] = {
    {"deepseek", "attn_k_b.weight", heads_of, nope_width},
    {"deepseek", "attn_v_b.weight", heads_of, lora_width},
};

/* qwen3-next: llama.cpp keeps the decay's rate as −exp(A_log), fusecheck's decay op reads A_log. */
static float neg_exp(float x) { return -expf(x); }

/* The A_log whose −exp gives s exactly (its nearest such float to log(−s)), else log(−s) itself. */
static float log_neg(float s)
{
    float a = logf(-s), best = a;
    bool found = false;
    float lo = a, hi = a;
    for (int i = 0; i < 16 && !found; i++) { /* outward from log(−s), one ulp at a time */
        if (neg_exp(lo) == s)
            best = lo, found = true;
        else if (neg_exp(hi) == s)
            best = hi, found = true;
        lo = nextafterf(lo, -INFINITY);
        hi = nextafterf(hi, INFINITY);
    }
    return best;
}

/* A constant stored in another form: file = to_file(value), value = from_file(file) for a file value `valid` accepts
 * (`domain` says which). */
static bool negative(float s) { return s < 0 && isfinite(s); }

static const struct form {
    const char *only, *name;
    float (*to_file)(float);
    float (*from_file)(float);
    bool (*valid)(float); /* whether a file value is one to_file gives */
    const char *domain;
} forms[] = {
    {"qwen3-next", "ssm_a", neg_exp, log_neg, negative, "a negative number (-exp(A_log))"},
};

/* Whether a constant's name is "blk.<layer>.<suffix>"; its layer and suffix. */
static bool layer_name(const char *name, int *layer, const char **suffix)
{
    if (strncmp(name, "blk.", 4) != 0)
        return false;
    char *end;
    long n = strtol(name + 4, &end, 10);
    if (end == name + 4 || *end != '.' || n < 0 || n > MODELS_MAX_LAYERS)
        return false;
    *layer = (int)n;
    *suffix = end + 1;
    return true;
}

/* The stored rows of a constant as a view: checkpoint rows (their format), or plain f32 values (a row per row). */
struct stored {
    const unsigned char *bytes; /* NULL: no values (a hole) */
    enum ir_format fmt;
    int64_t srows, slen, row_bytes;
};

/* The stored view of constant t (v NULL: its shape only). */
static struct stored stored_of(const struct ir_graph *g, const struct ir_values *v, ir_tid t)
{
    const struct ir_tensor *ts = &g->tensors[t];
    struct stored s = {NULL, ts->checkpoint ? ts->format : IR_FMT_F32, ts->rows, ts->cols, 0};
    if (ts->checkpoint && ts->transposed)
        s.srows = ts->cols, s.slen = ts->rows;
    struct ir_ckpt_rows rows;
    if (v && ir_values_checkpoint(v, t, &rows))
        s = (struct stored){rows.bytes, rows.format, rows.srows, rows.slen, 0};
    else if (v)
        s.bytes = (const unsigned char *)ir_values_cdata(v, t);
    s.row_bytes = ir_ggml_row_bytes(s.fmt, s.slen);
    return s;
}

/* Whether the trailing name of a mixture's stacked expert tensor: its outermost dimension splits by expert. */
static bool expert_stack(const char *suffix)
{
    static const char *const stacks[] = {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight",
                                         "ffn_gate_exps.bias", "ffn_up_exps.bias", "ffn_down_exps.bias"};
    for (size_t i = 0; i < sizeof stacks / sizeof stacks[0]; i++)
        if (strcmp(suffix, stacks[i]) == 0)
            return true;
    return false;
}

/* The file's dimensions of constant t as stored under its own name: [stored row, stored rows], experts stacked
 * [row, rows an expert, experts], a single row one-dimensional. The number of dimensions. */
static uint32_t file_dims(const struct ir_graph *g, ir_tid t, const struct models_config *c, uint64_t dims[4])
{
    struct stored s = stored_of(g, NULL, t);
    int layer;
    const char *suffix;
    dims[0] = (uint64_t)s.slen, dims[1] = (uint64_t)s.srows, dims[2] = dims[3] = 1;
    bool stack = layer_name(g->tensors[t].name, &layer, &suffix) && expert_stack(suffix) && c->experts > 0;
    if (stack && s.srows > 1 && s.srows % c->experts == 0) {
        dims[1] = (uint64_t)(s.srows / c->experts), dims[2] = (uint64_t)c->experts;
        return 3;
    }
    if (stack && s.srows == 1 && s.slen % c->experts == 0) { /* a bias row of every expert's */
        dims[0] = (uint64_t)(s.slen / c->experts), dims[1] = (uint64_t)c->experts;
        return 2;
    }
    return s.srows > 1 ? 2 : 1;
}

/* ── Writing tensors ─────────────────────────────────────────────────────────────────────────────────────── */

/* What an export holds while the file is built: buffers it made, freed after the write. */
struct exporter {
    struct ir_gguf_writer *w;
    const struct models_config *c;
    const struct ir_graph *g;
    const struct ir_values *v;
    void **owned;
    int nowned, capowned;
    char *err;
};

/* A zeroed buffer of n bytes the export frees after writing. */
static void *own(struct exporter *x, size_t n)
{
    if (x->nowned == x->capowned) {
        x->capowned = x->capowned ? 2 * x->capowned : 16;
        x->owned = realloc(x->owned, sizeof *x->owned * (size_t)x->capowned);
        if (!x->owned)
            abort();
    }
    void *p = calloc(n ? n : 1, 1);
    if (!p)
        abort();
    return x->owned[x->nowned++] = p;
}

/* The constant named "blk.<layer>.<suffix>", or IR_NONE. */
static ir_tid layer_tensor(const struct ir_graph *g, int layer, const char *suffix)
{
    char name[IR_MAX_NAME];
    snprintf(name, sizeof name, "blk.%d.%s", layer, suffix);
    ir_tid t = ir_tensor_find(g, name, strlen(name));
    return t != IR_NONE && g->tensors[t].role == IR_ROLE_CONSTANT ? t : IR_NONE;
}

/* The join row and part index constant `suffix` of a layer is part of (all of its row's parts in g), or NULL. */
static const struct join *join_of(const struct ir_graph *g, const char *family, int layer, const char *suffix,
                                  int *part)
{
    for (size_t i = 0; i < sizeof joins / sizeof joins[0]; i++) {
        const struct join *j = &joins[i];
        if (!in_filter(j->only, family))
            continue;
        int at = -1;
        bool all = true;
        for (int p = 0; p < j->nparts; p++) {
            at = strcmp(j->parts[p], suffix) == 0 ? p : at;
            all = all && layer_tensor(g, layer, j->parts[p]) != IR_NONE;
        }
        if (at >= 0 && all) {
            *part = at;
            return j;
        }
    }
    return NULL;
}

/* The parts of join j in layer `layer`: their stored views, the groups and each part's run; 0, or -1 with err when
 * the parts do not share a row's width and format or do not divide into the groups. */
static int join_parts(const struct ir_graph *g, const struct ir_values *v, const struct models_config *c,
                      const struct join *j, int layer, struct stored s[3], int64_t *groups, char err[IR_ERR_LEN])
{
    *groups = j->groups(c);
    for (int p = 0; p < j->nparts; p++) {
        s[p] = stored_of(g, v, layer_tensor(g, layer, j->parts[p]));
        if (s[p].slen != s[0].slen || s[p].fmt != s[0].fmt || *groups < 1 || s[p].srows % *groups)
            return refuse(err, "tensor blk.%d.%s: its parts' rows do not join (widths %lld and %lld, %lld groups)",
                          layer, j->file, (long long)s[0].slen, (long long)s[p].slen, (long long)*groups);
    }
    return 0;
}

/* Write join j of layer `layer`: group by group, each part's run of stored rows. */
static int put_join(struct exporter *x, const struct join *j, int layer)
{
    struct stored s[3];
    int64_t groups, rows = 0;
    if (join_parts(x->g, x->v, x->c, j, layer, s, &groups, x->err) != 0)
        return -1;
    for (int p = 0; p < j->nparts; p++)
        rows += s[p].srows;
    char name[IR_MAX_NAME];
    snprintf(name, sizeof name, "blk.%d.%s", layer, j->file);
    uint64_t dims[2] = {(uint64_t)s[0].slen, (uint64_t)rows};
    unsigned char *out = x->v ? own(x, (size_t)(rows * s[0].row_bytes)) : NULL, *at = out;
    for (int64_t gr = 0; out && gr < groups; gr++)
        for (int p = 0; p < j->nparts; p++) {
            size_t run = (size_t)(s[p].srows / groups * s[p].row_bytes);
            memcpy(at, s[p].bytes + (size_t)gr * run, run);
            at += run;
        }
    return ir_gguf_add_tensor(x->w, name, 2, dims, s[0].fmt, out, x->err);
}

/* The per-head row of constant suffix for family fam, or NULL. */
static const struct per_head *per_head_of(const char *fam, const char *suffix)
{
    for (size_t i = 0; i < sizeof per_heads / sizeof per_heads[0]; i++)
        if (in_filter(per_heads[i].only, fam) && strcmp(per_heads[i].name, suffix) == 0)
            return &per_heads[i];
    return NULL;
}

/* Write per-head matrix t as [width, outputs, heads]: each head's run of every stored row moved to its own matrix.
 * A format whose block does not divide the width cannot hold a head's row: the values are written f32 (exactly). */
static int put_per_head(struct exporter *x, const struct per_head *ph, ir_tid t)
{
    struct stored s = stored_of(x->g, x->v, t);
    int64_t h = ph->heads(x->c), a = ph->width(x->c);
    if (h < 1 || a < 1 || s.slen != h * a)
        return refuse(x->err, "tensor %s: a stored row of %lld is not %lld heads of %lld", x->g->tensors[t].name,
                      (long long)s.slen, (long long)h, (long long)a);
    enum ir_format fmt = ir_ggml_row_bytes(s.fmt, a) >= 0 ? s.fmt : IR_FMT_F32;
    int64_t ub = ir_ggml_row_bytes(fmt, a);
    uint64_t dims[3] = {(uint64_t)a, (uint64_t)s.srows, (uint64_t)h};
    unsigned char *out = x->v ? own(x, (size_t)(h * s.srows * ub)) : NULL;
    float *row = out && fmt != s.fmt ? own(x, sizeof(float) * (size_t)s.slen) : NULL;
    for (int64_t j = 0; out && j < s.srows; j++) {
        const unsigned char *src = s.bytes + j * s.row_bytes;
        if (row) /* the stored row's values, re-laid as f32 */
            ir_ggml_dequantize(s.fmt, src, s.slen, row), src = (const unsigned char *)row;
        for (int64_t k = 0; k < h; k++)
            memcpy(out + (k * s.srows + j) * ub, src + k * ub, (size_t)ub);
    }
    return ir_gguf_add_tensor(x->w, x->g->tensors[t].name, 3, dims, fmt, out, x->err);
}

/* The form row of constant suffix for family fam, or NULL. */
static const struct form *form_of(const char *fam, const char *suffix)
{
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (in_filter(forms[i].only, fam) && strcmp(forms[i].name, suffix) == 0)
            return &forms[i];
    return NULL;
}

/* The file name of constant t: a renamed layer tensor's, else its own (into buf). */
static const char *file_name(const char *fam, const char *name, char buf[IR_MAX_NAME])
{
    int layer;
    const char *suffix;
    if (layer_name(name, &layer, &suffix))
        for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++)
            if (in_filter(renames[i].only, fam) && strcmp(renames[i].graph, suffix) == 0) {
                snprintf(buf, IR_MAX_NAME, "blk.%d.%s", layer, renames[i].file);
                return buf;
            }
    return name;
}

/* Write constant t under its file name and dimensions (its values in another form where a form row says so);
 * `as` names the tensor whose bytes to write instead (a tied head's embedding), or is t. */
static int put_plain(struct exporter *x, ir_tid t, ir_tid as)
{
    struct stored s = stored_of(x->g, x->v, as);
    uint64_t dims[4];
    uint32_t nd = file_dims(x->g, t, x->c, dims);
    char buf[IR_MAX_NAME];
    const char *name = file_name(x->c->family, x->g->tensors[t].name, buf);
    int layer;
    const char *suffix;
    const struct form *fm = layer_name(name, &layer, &suffix) ? form_of(x->c->family, suffix) : NULL;
    const void *data = s.bytes;
    if (fm && s.bytes && s.fmt == IR_FMT_F32) {
        int64_t n = s.srows * s.slen;
        float *out = own(x, sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            out[i] = fm->to_file(((const float *)s.bytes)[i]);
        data = out;
    }
    return ir_gguf_add_tensor(x->w, name, nd, dims, s.fmt, data, x->err);
}

/* Write constant t by its rule: skipped (a tied head, a join's later part, a rotary table), joined, per head, or
 * plain. */
static int put_constant(struct exporter *x, ir_tid t)
{
    const struct ir_tensor *ts = &x->g->tensors[t];
    const struct arch *a = arch_of(x->c->family);
    if (strcmp(ts->name, "rope.cos") == 0 || strcmp(ts->name, "rope.sin") == 0)
        return 0; /* computed from the keys */
    if (strcmp(ts->name, "output.weight") == 0 && x->c->tied) {
        ir_tid e = ir_tensor_find(x->g, "token_embd.weight", strlen("token_embd.weight"));
        return a->head == HEAD_OWN && e != IR_NONE ? put_plain(x, t, e) : 0;
    }
    int layer, part;
    const char *suffix;
    if (layer_name(ts->name, &layer, &suffix)) {
        const struct join *j = join_of(x->g, x->c->family, layer, suffix, &part);
        if (j)
            return part == 0 ? put_join(x, j, layer) : 0;
        const struct per_head *ph = per_head_of(x->c->family, suffix);
        if (ph)
            return put_per_head(x, ph, t);
    }
    return put_plain(x, t, t);
}

/* The layers a lifted graph holds: one past the highest "blk.<l>." constant (0 when none). */
static int32_t graph_layers(const struct ir_graph *g)
{
    int32_t n = 0;
    for (ir_tid t = 0; t < g->ntensors; t++) {
        int layer;
        const char *suffix;
        if (g->tensors[t].role == IR_ROLE_CONSTANT && layer_name(g->tensors[t].name, &layer, &suffix) && layer >= n)
            n = layer + 1;
    }
    return n;
}

/* Write the configuration's metadata keys: the table's, then the family's own. */
static int put_config(struct ir_gguf_writer *w, const struct models_config *c, const struct arch *a,
                      char err[IR_ERR_LEN])
{
    ir_gguf_kv_str(w, "general.architecture", a->arch);
    ir_gguf_kv_str(w, "general.name", c->name);
    ir_gguf_kv_u32(w, "general.alignment", IR_GGUF_ALIGNMENT);
    char key[160];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct key *k = &keys[i];
        double v = field_get(c, k);
        if (!in_filter(k->only, c->family) || (v == 0 && !k->required))
            continue;
        arch_key(key, a->arch, k->suffix);
        if (k->kind == K_F64)
            ir_gguf_kv_f32(w, key, (float)v);
        else
            ir_gguf_kv_u32(w, key, (uint32_t)v);
    }
    if (strcmp(c->family, "granite") == 0 && c->logit_scale == 0) /* llama.cpp requires it: no division is ÷1 */
        ir_gguf_kv_f32(w, arch_key(key, a->arch, "logit_scale"), 1.0f);
    return a->put(w, c, a->arch, err) != 0 ? -1 : put_rope_scaling(w, c, a, err);
}

/* Write a llama3 scaling as llama.cpp's rope_freqs.weight: each pair's divisor of its frequency (computed in double,
 * stored f32, as the converter writes it), checked to read back as the same band. */
static int put_rope_freqs(struct exporter *x)
{
    const struct models_config *c = x->c;
    int64_t half = rotary_half(c);
    float *d = own(x, sizeof(float) * (size_t)(half > 0 ? half : 1));
    struct ir_rope r = rope_of(half, c->rope_base, &c->rope_scaling);
    for (int64_t i = 0; i < half; i++)
        d[i] = (float)pair_divisor(&r, i);
    struct ir_rope_scaling back;
    char why[IR_ERR_LEN];
    if (fit_rope_freqs("rope_freqs", d, half, c->rope_base, &back, why) != 0 ||
        first_miss(d, half, c->rope_base, &back) != half)
        return refuse(x->err, "model '%s': rope_scaling llama3: its rope_freqs table reads back as no llama3 band "
                      "(%.300s)", c->name, why);
    return ir_gguf_add_tensor(x->w, "rope_freqs.weight", 1, (uint64_t[]){(uint64_t)half}, IR_FMT_F32, d, x->err);
}

/* A minimal vocabulary of n tokens llama.cpp loads: a SentencePiece-style list (unknown, begin, end, the 256 byte
 * tokens where n leaves room, then numbered fillers), every score 0, and the special tokens' ids. */
static void put_vocab(struct ir_gguf_writer *w, int64_t n)
{
    ir_gguf_kv_str(w, "tokenizer.ggml.model", "llama");
    bool bytes = n >= 259;
    ir_gguf_key(w, "tokenizer.ggml.tokens", IR_GGUF_ARRAY);
    ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_STRING, .n = (uint64_t)n});
    static const char *const special[3] = {"<unk>", "<s>", "</s>"};
    for (int64_t i = 0; i < n; i++) {
        char tok[32];
        if (i < 3)
            snprintf(tok, sizeof tok, "%s", special[i]);
        else if (bytes && i < 259)
            snprintf(tok, sizeof tok, "<0x%02X>", (unsigned)(i - 3));
        else
            snprintf(tok, sizeof tok, "tok%lld", (long long)i);
        ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_STRING, .str = tok, .len = strlen(tok)});
    }
    ir_gguf_key(w, "tokenizer.ggml.scores", IR_GGUF_ARRAY);
    ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_FLOAT32, .n = (uint64_t)n});
    for (int64_t i = 0; i < n; i++)
        ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_FLOAT32, .f = 0});
    ir_gguf_key(w, "tokenizer.ggml.token_type", IR_GGUF_ARRAY);
    ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_ARRAY, .elem = IR_GGUF_INT32, .n = (uint64_t)n});
    for (int64_t i = 0; i < n; i++) /* llama.cpp's token types: 1 normal, 3 control, 6 byte */
        ir_gguf_put(w, &(struct ir_gguf_value){.type = IR_GGUF_INT32, .i = i < 3 ? 3 : bytes && i < 259 ? 6 : 1});
    ir_gguf_kv_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    ir_gguf_kv_u32(w, "tokenizer.ggml.bos_token_id", n > 1 ? 1 : 0);
    ir_gguf_kv_u32(w, "tokenizer.ggml.eos_token_id", n > 2 ? 2 : 0);
}

int models_gguf_export(const struct models_config *c, const struct ir_graph *g, const struct ir_values *v,
                       const char *path, char err[IR_ERR_LEN])
{
    const struct arch *a = arch_of(c->family);
    if (!a)
        return refuse(err, "family %s has no GGUF architecture", c->family);
    struct models_config written = *c; /* the layers the graph holds (an export of --layers N) */
    int32_t layers = graph_layers(g);
    written.layers = layers > 0 && layers < c->layers ? layers : c->layers;
    struct exporter x = {ir_gguf_writer_new(), &written, g, v, NULL, 0, 0, err};
    int rc = put_config(x.w, &written, a, err);
    if (rc == 0)
        put_vocab(x.w, c->vocab);
    for (ir_tid t = 0; t < g->ntensors && rc == 0; t++)
        if (g->tensors[t].role == IR_ROLE_CONSTANT && g->tensors[t].elem == IR_ELEM_F32)
            rc = put_constant(&x, t);
    if (rc == 0 && c->rope_scaling.kind == IR_ROPESCALE_LLAMA3)
        rc = put_rope_freqs(&x);
    if (rc == 0)
        rc = ir_gguf_write(x.w, path, err);
    ir_gguf_writer_free(x.w);
    for (int i = 0; i < x.nowned; i++)
        free(x.owned[i]);
    free(x.owned);
    return rc;
}

/* ── Reading keys ────────────────────────────────────────────────────────────────────────────────────────── */

/* Read key row k of arch into c; 0 (absent and optional: left 0), or -1 with err. */
static int read_key(const struct ir_gguf *f, const char *arch, const struct key *k, struct models_config *c,
                    char err[IR_ERR_LEN])
{
    char key[160];
    arch_key(key, arch, k->suffix);
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, key);
    if (!kv && k->required)
        return refuse(err, "%s: %s: expected the key, found none", f->label, key);
    if (!kv)
        return 0;
    const struct ir_gguf_value *x = &kv->value;
    bool integer = x->type <= IR_GGUF_INT32 || x->type == IR_GGUF_UINT64 || x->type == IR_GGUF_INT64;
    bool real = x->type == IR_GGUF_FLOAT32 || x->type == IR_GGUF_FLOAT64;
    char *p = (char *)c + k->offset;
    if (k->kind != K_F64 && (!integer || x->type == IR_GGUF_FLOAT32 || x->i < 0 ||
                             x->i > (k->kind == K_I32 ? INT32_MAX : (int64_t)1 << 40)))
        return refuse(err, "%s: byte %llu: %s: expected a count, found a %s", f->label, (unsigned long long)kv->offset,
                      key, ir_gguf_vtype_name(x->type));
    if (k->kind == K_F64 && !(real || integer))
        return refuse(err, "%s: byte %llu: %s: expected a number, found a %s", f->label,
                      (unsigned long long)kv->offset, key, ir_gguf_vtype_name(x->type));
    if (k->kind == K_I64) {
        memcpy(p, &x->i, sizeof x->i);
    } else if (k->kind == K_I32) {
        int32_t i = (int32_t)x->i;
        memcpy(p, &i, sizeof i);
    } else {
        double d = real ? (x->type == IR_GGUF_FLOAT32 ? shortest((float)x->f) : x->f) : (double)x->i;
        if (!isfinite(d)) /* a scale, an epsilon or a base that is no number cannot be right: refused, not lifted */
            return refuse(err, "%s: byte %llu: %s: expected a finite number, found %g", f->label,
                          (unsigned long long)kv->offset, key, d);
        memcpy(p, &d, sizeof d);
    }
    return 0;
}

/* The architecture row of the file's general.architecture; NULL with err. */
static const struct arch *arch_in(const struct ir_gguf *f, char err[IR_ERR_LEN])
{
    const struct ir_gguf_kv *kv = ir_gguf_find_kv(f, "general.architecture");
    if (!kv || kv->value.type != IR_GGUF_STRING) {
        refuse(err, "%s: general.architecture: expected a string naming the architecture", f->label);
        return NULL;
    }
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].arch) == kv->value.len && memcmp(archs[i].arch, kv->value.str, kv->value.len) == 0)
            return &archs[i];
    refuse(err, "%s: byte %llu: general.architecture: expected one of llama qwen3 qwen3moe gemma2 qwen3next nemotron "
           "qwen2 granite minicpm deepseek2 gpt-oss olmo2, found '%.*s'", f->label, (unsigned long long)kv->offset,
           (int)(kv->value.len > 64 ? 64 : kv->value.len), kv->value.str);
    return NULL;
}

struct models_config *models_gguf_config(const struct ir_gguf *f, char err[IR_ERR_LEN])
{
    const struct arch *a = arch_in(f, err);
    if (!a)
        return NULL;
    struct models_config c;
    memset(&c, 0, sizeof c);
    c.family = a->family;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (in_filter(keys[i].only, a->family) && read_key(f, a->arch, &keys[i], &c, err) != 0)
            return NULL;
    c.rope_base = c.rope_base ? c.rope_base : 10000; /* llama.cpp's default base */
    c.kv_heads = c.kv_heads ? c.kv_heads : c.heads;  /* llama.cpp's default: as many as the query heads */
    /* The vocabulary: the key, else the embedding's rows. */
    const struct ir_gguf_tensor *embd = ir_gguf_find_tensor(f, "token_embd.weight");
    if (!c.vocab && embd && embd->ndims == 2)
        c.vocab = (int64_t)embd->dims[1];
    c.tied = a->head == HEAD_TIED || (a->head == HEAD_OPTIONAL && !ir_gguf_find_tensor(f, "output.weight"));
    if (a->get(f, a->arch, &c, err) != 0 || get_rope_scaling(f, a, c.ctx, &c, err) != 0)
        return NULL;
    /* The zoo's context, or two windows where a window is wider than half of it; never past the model's. */
    int64_t want = c.window > 2048 ? 2 * c.window : 4096;
    c.ctx = c.ctx < want ? c.ctx : want;
    int64_t params = models_param_count(&c);
    c.tiny = params >= 0 && params < ((int64_t)1 << 24);
    const struct ir_gguf_kv *name = ir_gguf_find_kv(f, "general.name");
    const char *base = strrchr(f->label, '/') ? strrchr(f->label, '/') + 1 : f->label;
    bool named = name && name->value.type == IR_GGUF_STRING && name->value.len < 256;
    size_t nlen = named ? name->value.len : strcspn(base, ".");
    struct models_config *out = malloc(sizeof *out + nlen + 1);
    if (!out)
        abort();
    *out = c;
    char *own_name = (char *)(out + 1);
    memcpy(own_name, named ? name->value.str : base, nlen);
    own_name[nlen] = '\0';
    out->name = own_name;
    return out;
}

/* ── Reading tensors: deriving fusecheck's layouts ───────────────────────────────────────────────────────── */

/* The file's own tensor named name (never a derived one), or NULL. */
static const struct ir_gguf_tensor *file_only(const struct ir_gguf *f, const char *name)
{
    size_t n = strlen(name);
    for (int64_t k = 0; k < f->ntensors; k++)
        if (f->tensors[k].name_len == n && memcmp(f->tensors[k].name, name, n) == 0)
            return &f->tensors[k];
    return NULL;
}

/* Whether file tensor ft has exactly the dims given (nd of them; the rest 1). */
static bool dims_are(const struct ir_gguf_tensor *ft, uint32_t nd, const uint64_t *dims)
{
    for (uint32_t k = 0; k < IR_GGUF_MAX_DIMS; k++)
        if (ft->dims[k] != (k < nd ? dims[k] : 1))
            return false;
    return true;
}

/* "d0 x d1 x d2 x d3" of a file tensor into buf. */
static const char *dims_text(const struct ir_gguf_tensor *ft, char buf[96])
{
    snprintf(buf, 96, "%llu x %llu x %llu x %llu", (unsigned long long)ft->dims[0], (unsigned long long)ft->dims[1],
             (unsigned long long)ft->dims[2], (unsigned long long)ft->dims[3]);
    return buf;
}

/* A file tensor a rule reads: present, of a type fusecheck decodes, of the dims given; NULL with err naming it. */
static const struct ir_gguf_tensor *source(const struct ir_gguf *f, const char *name, uint32_t nd,
                                           const uint64_t *dims, char err[IR_ERR_LEN])
{
    const struct ir_gguf_tensor *ft = file_only(f, name);
    char buf[96];
    if (!ft)
        refuse(err, "%s: tensor %s: expected it in the file, found none", f->label, name);
    else if (ft->format < 0)
        refuse(err, "%s: tensor %s: expected a type fusecheck decodes (f32 f16 bf16 q8_0 q4_0 q4_k q6_k), found GGML "
               "type %u", f->label, name, ft->type);
    else if (!dims_are(ft, nd, dims))
        refuse(err, "%s: tensor %s: expected dims %llu x %llu x %llu, found %s", f->label, name,
               (unsigned long long)dims[0], (unsigned long long)(nd > 1 ? dims[1] : 1),
               (unsigned long long)(nd > 2 ? dims[2] : 1), dims_text(ft, buf));
    else
        return ft;
    return NULL;
}

/* Derive a join's parts of one layer: each part's runs of the file tensor's stored rows, in the file's format. */
static int derive_join(const struct ir_gguf *f, const struct ir_graph *g, const struct models_config *c,
                       const struct join *j, int layer, char err[IR_ERR_LEN])
{
    struct stored s[3];
    int64_t groups, rows = 0;
    if (join_parts(g, NULL, c, j, layer, s, &groups, err) != 0)
        return -1;
    for (int p = 0; p < j->nparts; p++)
        rows += s[p].srows;
    char name[IR_MAX_NAME];
    snprintf(name, sizeof name, "blk.%d.%s", layer, j->file);
    const struct ir_gguf_tensor *ft = source(f, name, 2, (uint64_t[]){(uint64_t)s[0].slen, (uint64_t)rows}, err);
    if (!ft)
        return -1;
    enum ir_format fmt = (enum ir_format)ft->format;
    int64_t rb = ir_ggml_row_bytes(fmt, s[0].slen);
    unsigned char *out[3];
    for (int p = 0; p < j->nparts; p++) {
        char part[IR_MAX_NAME];
        snprintf(part, sizeof part, "blk.%d.%s", layer, j->parts[p]);
        bool fresh;
        out[p] = ir_gguf_derive(f, part, s[p].srows > 1 ? 2 : 1,
                                (uint64_t[]){(uint64_t)s[p].slen, (uint64_t)s[p].srows}, fmt, &fresh);
        if (!out[p] || !fresh)
            return out[p] ? 0 : refuse(err, "%s: tensor %s: cannot lay it out as %s", f->label, part, name);
    }
    const unsigned char *at = ft->data;
    for (int64_t gr = 0; gr < groups; gr++)
        for (int p = 0; p < j->nparts; p++) {
            size_t run = (size_t)(s[p].srows / groups * rb);
            memcpy(out[p] + (size_t)gr * run, at, run);
            at += run;
        }
    return 0;
}

/* Derive a per-head matrix: each head's matrix [width, outputs] back into its run of every stored row. */
static int derive_per_head(const struct ir_gguf *f, const struct ir_graph *g, const struct models_config *c,
                           const struct per_head *ph, ir_tid t, char err[IR_ERR_LEN])
{
    struct stored s = stored_of(g, NULL, t);
    int64_t h = ph->heads(c), a = ph->width(c);
    const char *name = g->tensors[t].name;
    const struct ir_gguf_tensor *ft =
        source(f, name, 3, (uint64_t[]){(uint64_t)a, (uint64_t)s.srows, (uint64_t)h}, err);
    if (!ft)
        return -1;
    enum ir_format fmt = (enum ir_format)ft->format;
    int64_t ub = ir_ggml_row_bytes(fmt, a);
    bool fresh;
    unsigned char *out = ir_gguf_derive(f, name, 2, (uint64_t[]){(uint64_t)s.slen, (uint64_t)s.srows}, fmt, &fresh);
    if (!out || ub < 0)
        return refuse(err, "%s: tensor %s: cannot lay it out per head", f->label, name);
    for (int64_t j = 0; fresh && j < s.srows; j++)
        for (int64_t k = 0; k < h; k++)
            memcpy(out + j * h * ub + k * ub, ft->data + (k * s.srows + j) * ub, (size_t)ub);
    return 0;
}

/* Derive a constant kept in another form: each file value through the form's inverse (f32). */
static int derive_form(const struct ir_gguf *f, const struct ir_graph *g, const struct models_config *c,
                       const struct form *fm, ir_tid t, char err[IR_ERR_LEN])
{
    uint64_t dims[4];
    uint32_t nd = file_dims(g, t, c, dims);
    const char *name = g->tensors[t].name;
    const struct ir_gguf_tensor *ft = source(f, name, nd, dims, err);
    if (!ft)
        return -1;
    int64_t n = g->tensors[t].rows * g->tensors[t].cols;
    bool fresh;
    float *out = ir_gguf_derive(f, name, nd, dims, IR_FMT_F32, &fresh);
    if (!out || !fresh)
        return out ? 0 : refuse(err, "%s: tensor %s: cannot derive its values", f->label, name);
    ir_ggml_dequantize((enum ir_format)ft->format, ft->data, n, out);
    for (int64_t i = 0; i < n; i++) {
        if (!fm->valid(out[i]))
            return refuse(err, "%s: tensor %s: value %lld: expected %s, found %g", f->label, name, (long long)i,
                          fm->domain, (double)out[i]);
        out[i] = fm->from_file(out[i]);
    }
    return 0;
}

/* Bind a graph constant to a file tensor of another name (no copy): the file's bytes under the constant's name. */
static int derive_alias(const struct ir_gguf *f, const char *graph, const char *file, char err[IR_ERR_LEN])
{
    const struct ir_gguf_tensor *ft = file_only(f, file);
    if (!ft)
        return refuse(err, "%s: tensor %s: expected it in the file, found none", f->label, file);
    if (ft->format < 0)
        return 0; /* the constant's check names the type */
    bool fresh;
    void *out = ir_gguf_derive(f, graph, ft->ndims, ft->dims, (enum ir_format)ft->format, &fresh);
    if (!out)
        return refuse(err, "%s: tensor %s: cannot bind it to %s", f->label, graph, file);
    if (fresh)
        memcpy(out, ft->data, (size_t)ft->bytes);
    return 0;
}

/* Derive every constant of g the file holds in another layout or under another name; 0, or -1 with err. */
static int derive_all(const struct ir_gguf *f, const struct ir_graph *g, const struct models_config *c,
                      enum head_rule head, char err[IR_ERR_LEN])
{
    for (ir_tid t = 0; t < g->ntensors; t++) {
        const struct ir_tensor *ts = &g->tensors[t];
        int layer, part, rc = 0;
        const char *suffix;
        if (ts->role != IR_ROLE_CONSTANT)
            continue;
        if (strcmp(ts->name, "output.weight") == 0 && head == HEAD_TIED)
            rc = derive_alias(f, ts->name, "token_embd.weight", err);
        if (!layer_name(ts->name, &layer, &suffix)) {
            if (rc)
                return rc;
            continue;
        }
        const struct join *j = join_of(g, c->family, layer, suffix, &part);
        const struct per_head *ph = per_head_of(c->family, suffix);
        const struct form *fm = form_of(c->family, suffix);
        char buf[IR_MAX_NAME];
        const char *fname = file_name(c->family, ts->name, buf);
        if (j && part == 0)
            rc = derive_join(f, g, c, j, layer, err);
        else if (!j && ph)
            rc = derive_per_head(f, g, c, ph, t, err);
        else if (!j && fm)
            rc = derive_form(f, g, c, fm, t, err);
        else if (!j && fname != ts->name)
            rc = derive_alias(f, ts->name, fname, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* The file's tensor holding constant t's values (a tied model's LM head: its embedding), or NULL. */
static const struct ir_gguf_tensor *file_tensor(const struct ir_gguf *f, const char *name, enum head_rule head)
{
    const struct ir_gguf_tensor *ft = ir_gguf_find_tensor(f, name);
    if (ft || strcmp(name, "output.weight") != 0 || head == HEAD_OWN)
        return ft;
    return ir_gguf_find_tensor(f, "token_embd.weight");
}

/* Check constant t against the file's tensor (its dims as export writes them, a type fusecheck decodes) and take its
 * format from it; 0, or -1 with err naming it. */
static int check_constant(const struct ir_gguf *f, const struct ir_graph *g, ir_tid t, const struct models_config *c,
                          enum head_rule head, char err[IR_ERR_LEN])
{
    struct ir_tensor *ts = &g->tensors[t];
    const struct ir_gguf_tensor *ft = file_tensor(f, ts->name, head);
    if (!ft)
        return refuse(err, "%s: tensor %s: expected it in the file, found none", f->label, ts->name);
    uint64_t dims[4];
    uint32_t nd = file_dims(g, t, c, dims);
    int64_t slen = ts->checkpoint && ts->transposed ? ts->rows : ts->cols;
    char buf[96];
    if (!dims_are(ft, nd, dims))
        return refuse(err, "%s: tensor %s: expected %lld rows of %lld values (dims %llu x %llu x %llu), found dims %s",
                      f->label, ts->name, (long long)(ts->rows * ts->cols / (slen ? slen : 1)), (long long)slen,
                      (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)dims[2],
                      dims_text(ft, buf));
    if (ft->format < 0 || (ts->checkpoint && ir_ggml_row_bytes((enum ir_format)ft->format, slen) < 0))
        return refuse(err, "%s: tensor %s: expected a type fusecheck decodes (f32 f16 bf16 q8_0 q4_0 q4_k q6_k), found "
                      "GGML type %u", f->label, ts->name, ft->type);
    if (ts->checkpoint)
        ts->format = (enum ir_format)ft->format;
    return 0;
}

/* Tensors llama.cpp reads where a file has them (biases, a correction bias, rotary factors): one in the file that the
 * lifted graph has no constant for changes the meaning, and is refused by name; rope_freqs.weight is read into the
 * rotary scaling where the architecture's loader has it (freqs_read). */
static int check_unread(const struct ir_gguf *f, const struct ir_graph *g, bool freqs_read, char err[IR_ERR_LEN])
{
    static const char *const optional[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias",
                                           "attn_qkv.bias", "ffn_up.bias", "ffn_down.bias", "ffn_gate.bias",
                                           "attn_norm.bias", "ffn_norm.bias", "exp_probs_b.bias",
                                           "ffn_exp_probs_b.bias", "rope_freqs.weight"};
    static const char *const outer[] = {"output.bias", "output_norm.bias", "rope_freqs.weight"};
    int32_t layers = graph_layers(g);
    for (int64_t k = 0; k < f->ntensors; k++) {
        const struct ir_gguf_tensor *ft = &f->tensors[k];
        char name[IR_MAX_NAME];
        snprintf(name, sizeof name, "%.*s", (int)(ft->name_len < 200 ? ft->name_len : 200), ft->name);
        int layer = -1;
        const char *suffix = NULL;
        bool in_layer = layer_name(name, &layer, &suffix);
        if (in_layer && layer >= layers)
            continue; /* a layer the step does not lift */
        const char *const *list = in_layer ? optional : outer;
        size_t n = in_layer ? sizeof optional / sizeof optional[0] : sizeof outer / sizeof outer[0];
        for (size_t i = 0; i < n; i++)
            if (strcmp(in_layer ? suffix : name, list[i]) == 0 && ir_tensor_find(g, name, strlen(name)) == IR_NONE &&
                !(freqs_read && strcmp(name, "rope_freqs.weight") == 0))
                return refuse(err, "%s: tensor %s: fusecheck's graph has no part that reads it", f->label, name);
    }
    return 0;
}

struct ir_graph *models_gguf_lift(const struct ir_gguf *f, const struct models_options *o, char err[IR_ERR_LEN])
{
    struct models_config *c = models_gguf_config(f, err);
    if (!c)
        return NULL;
    const struct arch *a = arch_of(c->family);
    /* Lifted with f32 matrices (every width is whole blocks of it), then each constant takes the file's format. */
    struct models_options lo = *o;
    lo.weights = IR_FMT_F32;
    char lerr[IR_ERR_LEN];
    struct ir_graph *g = models_lift(c, &lo, lerr);
    if (!g)
        snprintf(err, IR_ERR_LEN, "%.200s: %.300s", f->label, lerr);
    if (g && (check_unread(f, g, (a->rope & ROPE_FREQS) != 0, err) != 0 || derive_all(f, g, c, a->head, err) != 0)) {
        ir_graph_free(g);
        g = NULL;
    }
    for (ir_tid t = 0; g && t < g->ntensors; t++) {
        const struct ir_tensor *ts = &g->tensors[t];
        bool rotary = strcmp(ts->name, "rope.cos") == 0 || strcmp(ts->name, "rope.sin") == 0;
        if (ts->role == IR_ROLE_CONSTANT && !rotary && check_constant(f, g, t, c, a->head, err) != 0) {
            ir_graph_free(g);
            g = NULL;
        }
    }
    models_config_free(c);
    return g;
}
