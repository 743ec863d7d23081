/* cli/tokens.c — a chosen token sequence through the evaluator: every position's logits from a model's decode steps
 * (caches carried from step to step) or from one prefill chunk whose every row reaches the LM head; parsing the
 * sequence; writing the logits as raw f32 or .npy; the top-k of a position. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Parse one token id of s at *p (a decimal integer in 0..INT32_MAX); 0, or 1 when it is not one. */
static int parse_one_token(const char *s, size_t *p, int32_t *out)
{
    int64_t v = 0;
    size_t start = *p;
    while (s[*p] >= '0' && s[*p] <= '9') {
        v = v * 10 + (s[*p] - '0');
        if (v > INT32_MAX)
            return 1;
        (*p)++;
    }
    if (*p == start)
        return 1;
    *out = (int32_t)v;
    return 0;
}

int cli_parse_tokens(const char *s, int32_t **out, int32_t *n)
{
    *out = NULL;
    *n = 0;
    size_t count = 1;
    for (const char *c = s; *c; c++)
        count += *c == ',';
    if (count > MODELS_MAX_ROWS)
        return 1;
    int32_t *t = malloc(sizeof *t * count);
    if (!t)
        return 1;
    size_t p = 0;
    for (size_t i = 0; i < count; i++) {
        if (parse_one_token(s, &p, &t[i]) || (s[p] != (i + 1 < count ? ',' : '\0'))) {
            free(t);
            return 1;
        }
        p++;
    }
    *out = t;
    *n = (int32_t)count;
    return 0;
}

void cli_default_tokens(int64_t vocab, int32_t n, uint64_t seed, int32_t *out)
{
    uint64_t x = seed ^ 0x746f6b656e73ULL; /* "tokens" */
    for (int32_t i = 0; i < n; i++) {
        x += 0x9e3779b97f4a7c15ULL;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        out[i] = (int32_t)(z % (uint64_t)(vocab > 0 ? vocab : 1));
    }
}

/* The tensor of g named name, or IR_NONE. */
static ir_tid named(const struct ir_graph *g, const char *name)
{
    return ir_tensor_find(g, name, strlen(name));
}

/* The tensors a token run reads and writes: its token input, its position, its logits. 0, or -1 with err. */
static int run_tensors(const struct ir_graph *g, bool prefill, ir_tid *tok, ir_tid *pos, ir_tid *logits,
                       char err[IR_ERR_LEN])
{
    const char *tname = prefill ? "tokens" : "token";
    *tok = named(g, tname);
    *pos = named(g, "pos");
    *logits = named(g, "logits");
    const char *missing = *tok == IR_NONE ? tname : *pos == IR_NONE ? "pos" : *logits == IR_NONE ? "logits" : NULL;
    if (missing) {
        snprintf(err, IR_ERR_LEN, "the graph has no tensor '%s': a token run needs a model's decode step or prefill "
                 "chunk (token or tokens, pos, logits)", missing);
        return -1;
    }
    if (g->tensors[*tok].elem != IR_ELEM_I32 || g->tensors[*pos].elem != IR_ELEM_I32 ||
        g->tensors[*pos].rows * g->tensors[*pos].cols != 1) {
        snprintf(err, IR_ERR_LEN, "the graph's '%s' and 'pos' must be i32, 'pos' one value", tname);
        return -1;
    }
    return 0;
}

/* Zero every state tensor of g in v: a run starts with empty caches, rings and memories. */
static void zero_state(const struct ir_graph *g, struct ir_values *v)
{
    for (ir_tid t = 0; t < g->ntensors; t++) {
        const struct ir_tensor *x = &g->tensors[t];
        float *d = x->role == IR_ROLE_STATE ? ir_values_data(v, t) : NULL;
        if (d)
            memset(d, 0, sizeof(float) * (size_t)(x->rows * x->cols));
    }
}

/* Refuse a token outside the vocabulary (the logits' width) and a sequence past the caches' rows. */
static int check_tokens(const struct ir_graph *g, ir_tid logits, const int32_t *tokens, int32_t n, char err[IR_ERR_LEN])
{
    int64_t vocab = g->tensors[logits].cols;
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab) {
            snprintf(err, IR_ERR_LEN, "token %d (position %d) is outside the vocabulary of %lld", tokens[i], i,
                     (long long)vocab);
            return -1;
        }
    return 0;
}

/* The decode run: one evaluation a token at positions 0..n-1, state carried; row i of out the step's logits. */
static int run_steps(const struct ir_graph *g, struct ir_values *v, ir_tid tok, ir_tid pos, ir_tid logits,
                     const int32_t *tokens, struct cli_logits *out, char err[IR_ERR_LEN])
{
    for (int32_t i = 0; i < out->n; i++) {
        ir_values_data(v, tok)[0] = (float)tokens[i];
        ir_values_data(v, pos)[0] = (float)i;
        if (ir_eval(g, v, err) != 0)
            return -1;
        memcpy(out->v + (size_t)i * (size_t)out->vocab, ir_values_cdata(v, logits), sizeof(float) * (size_t)out->vocab);
    }
    return 0;
}

/* The prefill run: the whole sequence (n tokens) as one chunk at position 0, every row's logits (or the last
 * row's, when the chunk's head takes only that one). */
static int run_chunk(const struct ir_graph *g, struct ir_values *v, ir_tid tok, ir_tid pos, ir_tid logits,
                     const int32_t *tokens, int32_t n, struct cli_logits *out, char err[IR_ERR_LEN])
{
    const struct ir_tensor *t = &g->tensors[tok], *l = &g->tensors[logits];
    if (t->rows * t->cols != n || l->rows != out->n) {
        snprintf(err, IR_ERR_LEN, "the chunk takes %lld tokens and gives %lld rows of logits, not the %d given",
                 (long long)(t->rows * t->cols), (long long)l->rows, n);
        return -1;
    }
    for (int32_t i = 0; i < n; i++)
        ir_values_data(v, tok)[i] = (float)tokens[i];
    ir_values_data(v, pos)[0] = 0.0f;
    if (ir_eval(g, v, err) != 0)
        return -1;
    memcpy(out->v, ir_values_cdata(v, logits), sizeof(float) * (size_t)out->n * (size_t)out->vocab);
    return 0;
}

int cli_eval_tokens(const struct ir_graph *g, uint64_t seed, bool prefill, bool q8_activations,
                    const int32_t *tokens, int32_t n, struct cli_logits *out, char err[IR_ERR_LEN])
{
    memset(out, 0, sizeof *out);
    ir_tid tok, pos, logits;
    if (run_tensors(g, prefill, &tok, &pos, &logits, err) || check_tokens(g, logits, tokens, n, err))
        return -1;
    out->vocab = g->tensors[logits].cols;
    out->n = prefill && g->tensors[logits].rows == 1 ? 1 : n; /* a head over the last row alone: its logits */
    out->v = malloc(sizeof(float) * (size_t)n * (size_t)out->vocab);
    struct ir_values *v = out->v ? ir_values_new(g, seed, err) : NULL;
    if (!out->v)
        snprintf(err, IR_ERR_LEN, "out of memory for %d rows of %lld logits", n, (long long)out->vocab);
    int rc = -1;
    if (v) {
        ir_values_quantize_activations(v, q8_activations);
        ir_values_free_dead(v, true); /* only the logits and the caches are read after a step */
        zero_state(g, v);
        rc = prefill ? run_chunk(g, v, tok, pos, logits, tokens, n, out, err)
                     : run_steps(g, v, tok, pos, logits, tokens, out, err);
    }
    ir_values_free(v);
    if (rc)
        cli_logits_free(out);
    return rc;
}

void cli_logits_free(struct cli_logits *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

void cli_logits_top(const float *row, int64_t vocab, int k, int32_t *ids)
{
    for (int j = 0; j < k; j++)
        ids[j] = -1;
    for (int64_t i = 0; i < vocab; i++) {
        int at = k;
        while (at > 0 && (ids[at - 1] < 0 || row[i] > row[ids[at - 1]]))
            at--;
        if (at == k)
            continue;
        memmove(ids + at + 1, ids + at, sizeof *ids * (size_t)(k - at - 1));
        ids[at] = (int32_t)i;
    }
}

/* Append v as 4 little-endian bytes at p. */
static void put_f32le(unsigned char *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    for (int b = 0; b < 4; b++)
        p[b] = (unsigned char)(u >> (8 * b));
}

/* Whether path ends in suffix. */
static bool ends_with(const char *path, const char *suffix)
{
    size_t a = strlen(path), b = strlen(suffix);
    return a >= b && strcmp(path + a - b, suffix) == 0;
}

/* The .npy header (format 1.0) of an n × vocab little-endian f32 array, padded to 64 bytes; its length. */
static size_t npy_header(char *h, size_t cap, int32_t n, int64_t vocab)
{
    char dict[128];
    int d = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %lld), }", n,
                     (long long)vocab);
    size_t total = 10 + (size_t)d + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap)
        return 0;
    memset(h, ' ', total);
    memcpy(h, "\x93NUMPY\x01\x00", 8);
    h[8] = (char)((total - 10) & 0xff);
    h[9] = (char)((total - 10) >> 8);
    memcpy(h + 10, dict, (size_t)d);
    h[total - 1] = '\n';
    return total;
}

int cli_logits_write(const char *path, const struct cli_logits *l)
{
    char head[256];
    size_t hlen = ends_with(path, ".npy") ? npy_header(head, sizeof head, l->n, l->vocab) : 0;
    size_t count = (size_t)l->n * (size_t)l->vocab;
    unsigned char *buf = malloc(hlen + 4 * count + 1);
    if (!buf) {
        fprintf(stderr, "fusecheck: %s: out of memory for %zu logits\n", path, count);
        return -1;
    }
    memcpy(buf, head, hlen);
    for (size_t i = 0; i < count; i++)
        put_f32le(buf + hlen + 4 * i, l->v[i]);
    int rc = cli_write(path, (const char *)buf, hlen + 4 * count);
    free(buf);
    return rc;
}
