/* ir/eval_attention.c — causal attention: each query row's dots with the cache rows it attends (keys transposed once
 * an op, a kv head's query heads at once), its soft-max weights, and their weighted sum of the values; the dots and
 * the weighted sums are products in the documented order (ir/eval_matmul.c). */
#include "eval_values.h"

#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* One attention op's operands and the room its kv heads share: the key cache of the kv head being run transposed
 * (Kt[i][j - lo0] = K[j][kvh·hd + i], for the cache rows [lo0, lo0 + span) any query attends), and a query group's
 * logits (group × span). */
struct att_run {
    const struct ir_attention *s;
    const float *q, *k, *v, *sinks;
    float *y, *kt, *lg, *denom;
    int64_t p, group, lo0, span;
    float scale;
};

/* The cache rows query row r attends: [*lo, *hi] (empty when *lo > *hi). */
static void att_rows(const struct att_run *a, int64_t r, int64_t *lo, int64_t *hi)
{
    int64_t at_pos = a->p + r;
    *hi = min64(at_pos, a->s->l - 1);
    *lo = a->s->window > 0 ? max64(0, at_pos - a->s->window + 1) : 0;
}

/* Kv head kvh's keys over the attended rows, transposed into a->kt (a plain hd × span matrix). */
static void att_keys(const struct att_run *a, int64_t kvh)
{
    const struct ir_attention *s = a->s;
    for (int64_t j = 0; j < a->span; j++) {
        const float *kr = a->k + (a->lo0 + j) * s->kv * s->hd + kvh * s->hd;
        for (int64_t i = 0; i < s->hd; i++)
            a->kt[i * a->span + j] = kr[i];
    }
}

/* Head g's n logits lg (its dots already there): scaled, capped, then each turned into exp(l − max) (the sink
 * counted in the max); their sum (with the sink's term last), in order. */
static float att_weights(const struct att_run *a, int64_t g, float *lg, int64_t n)
{
    const struct ir_attention *s = a->s;
    for (int64_t j = 0; j < n; j++) {
        float l = lg[j] * a->scale;
        if (s->softcap.has) {
            float cap = (float)s->softcap.v, t = l / cap;
            l = cap * tanhf(t);
        }
        lg[j] = l;
    }
    float m = lg[0], sink = a->sinks ? a->sinks[g] : 0.0f;
    for (int64_t j = 1; j < n; j++)
        if (lg[j] > m)
            m = lg[j];
    if (s->sinks && sink > m)
        m = sink;
    float denom = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        lg[j] = expf(lg[j] - m);
        denom += lg[j];
    }
    if (s->sinks)
        denom += expf(sink - m);
    return denom;
}

/* Query row r's heads of kv head kvh: each head's dots with the attended keys (Σ_i q[i]·k[i], in increasing i), its
 * weights, and its output Σ_j w_j·v_j (in increasing j, from 0) over the sum of the weights. The dots and the
 * weighted sums are products (ir_eval_wts_matmul): every output's sum in the scalar loop's order, its bits. */
static void att_row(const struct att_run *a, int64_t r, int64_t kvh)
{
    const struct ir_attention *s = a->s;
    int64_t lo, hi, g0 = kvh * a->group;
    float *y = a->y + (r * s->h + g0) * s->vd;
    att_rows(a, r, &lo, &hi);
    if (lo > hi) {
        memset(y, 0, sizeof(float) * (size_t)(a->group * s->vd)); /* no cache row is attendable: zeros */
        return;
    }
    int64_t n = hi - lo + 1;
    struct wts kt = {a->kt, NULL, s->hd, a->span, NULL, NULL};
    ir_eval_wts_matmul(&kt, 0, s->hd, lo - a->lo0, n, a->q + (r * s->h + g0) * s->hd, a->group, s->hd, a->lg, n);
    for (int64_t g = 0; g < a->group; g++)
        a->denom[g] = att_weights(a, g0 + g, a->lg + g * n, n);
    struct wts v = {a->v, NULL, s->l, s->kv * s->vd, NULL, NULL};
    ir_eval_wts_matmul(&v, lo, n, kvh * s->vd, s->vd, a->lg, a->group, n, y, s->vd);
    for (int64_t g = 0; g < a->group; g++)
        for (int64_t t = 0; t < s->vd; t++)
            y[g * s->vd + t] = y[g * s->vd + t] / a->denom[g];
}

int ir_ev_attention(struct ev *e)
{
    const struct ir_attention *s = &e->op->spec.u.attention;
    if (ir_ev_sizes_ok(e, (const int64_t[]){s->h, s->kv, s->hd, s->vd, s->l, s->rows, s->window}, 7))
        return -1;
    if (s->kv <= 0 || s->h % s->kv != 0)
        return ir_ev_fail(e, "h %lld is not a multiple of kv %lld", (long long)s->h, (long long)s->kv);
    struct att_run a = {.s = s, .group = s->h / s->kv};
    a.scale = s->scale.has ? (float)s->scale.v : 1.0f / sqrtf((float)s->hd);
    int at = s->pos.kind == IR_RIDX_NAMED ? 4 : 3;
    a.q = ir_ev_arg(e, 0, mulc(s->rows, mulc(s->h, s->hd)));
    a.k = a.q ? ir_ev_arg(e, 1, mulc(s->l, mulc(s->kv, s->hd))) : NULL;
    a.v = a.k ? ir_ev_arg(e, 2, mulc(s->l, mulc(s->kv, s->vd))) : NULL;
    if (!a.v || ir_ev_position(e, &s->pos, 3, &a.p))
        return -1;
    a.sinks = s->sinks ? ir_ev_arg(e, at, s->h) : NULL;
    int64_t ny = mulc(s->rows, mulc(s->h, s->vd));
    a.y = (!s->sinks || a.sinks) ? ir_ev_result(e, ny) : NULL;
    if (!a.y)
        return -1;
    if (ny == 0)
        return 0; /* no output values: the heads and cache rows are not walked */
    int64_t lo, hi, last = -1;
    a.lo0 = s->l;
    for (int64_t r = 0; r < s->rows; r++) {
        att_rows(&a, r, &lo, &hi);
        a.lo0 = lo <= hi ? min64(a.lo0, lo) : a.lo0;
        last = lo <= hi ? max64(last, hi) : last;
    }
    a.span = last >= a.lo0 ? last - a.lo0 + 1 : 0;
    a.kt = ir_ev_scratch(e, mulc(s->hd, a.span));
    a.lg = a.kt ? ir_ev_scratch(e, mulc(a.group, a.span)) : NULL;
    a.denom = a.lg ? ir_ev_scratch(e, a.group) : NULL;
    if (!a.denom)
        return -1;
    for (int64_t kvh = 0; kvh < s->kv; kvh++) {
        att_keys(&a, kvh);
        for (int64_t r = 0; r < s->rows; r++)
            att_row(&a, r, kvh);
    }
    return 0;
}

