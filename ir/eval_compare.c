/* ir/eval_compare.c — two evaluations compared bit for bit: every observed and carried tensor of one graph against
 * its namesake in the other (checkpoint constants by their bytes), the first difference named. */
#include "eval_values.h"

#include <string.h>

/* The bits of a float. */
static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Compare tensor ta of a with tensor tb of b bit for bit; false (with c filled) at the first difference. */
static bool same_tensor(const struct tval *x, const struct tval *y, ir_tid ta, struct ir_compare *c)
{
    c->tensor = ta;
    if (!x->f || !y->f) {
        bool same = !x->f && !y->f && !ir_eval_lazy_all(&x->q) && !ir_eval_lazy_all(&y->q) && x->q.format == y->q.format && x->q.srows == y->q.srows &&
                    x->q.row_bytes == y->q.row_bytes &&
                    memcmp(x->q.bytes, y->q.bytes, (size_t)(x->q.srows * x->q.row_bytes)) == 0;
        c->index = same ? 0 : -1;
        return same;
    }
    int64_t n = min64(x->len, y->len);
    for (int64_t i = 0; i < n; i++)
        if (bits_of(x->f[i]) != bits_of(y->f[i])) {
            c->index = i;
            c->a = x->f[i];
            c->b = y->f[i];
            return false;
        }
    c->index = n;
    return x->len == y->len;
}

struct ir_compare ir_values_compare(const struct ir_graph *ga, const struct ir_values *a, const struct ir_graph *gb,
                                    const struct ir_values *b)
{
    struct ir_compare c;
    memset(&c, 0, sizeof c);
    c.identical = true;
    c.tensor = IR_NONE;
    if (!a || !b || a->n != ga->ntensors || b->n != gb->ntensors) {
        c.identical = false;
        c.index = -1;
        return c;
    }
    for (ir_tid t = 0; t < ga->ntensors; t++) {
        const struct ir_tensor *ta = &ga->tensors[t];
        if (!ta->observed && !ta->carried)
            continue;
        ir_tid u = ir_tensor_find(gb, ta->name, strlen(ta->name));
        c.compared++;
        if (u == IR_NONE) {
            c.identical = false;
            c.tensor = t;
            c.index = -1;
            return c;
        }
        if (!same_tensor(&a->t[t], &b->t[u], t, &c)) {
            c.identical = false;
            return c;
        }
    }
    c.tensor = IR_NONE;
    c.index = 0;
    return c;
}
