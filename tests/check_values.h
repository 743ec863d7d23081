/* tests/check_values.h — for the suites that rewrite graphs: whether two graphs evaluate bit for bit alike. */
#ifndef FUSECHECK_TESTS_CHECK_VALUES_H
#define FUSECHECK_TESTS_CHECK_VALUES_H

#include "ir/ir.h"

#include <stdio.h>

/* Whether evaluating a and b (b filled as a uses each tensor) from `seed` gives bit-identical observed and carried
 * tensors; the first difference is printed. */
static inline bool check_same_values(const struct ir_graph *a, const struct ir_graph *b, uint64_t seed)
{
    char err[IR_ERR_LEN];
    struct ir_values *va = ir_values_new(a, seed, err), *vb = ir_values_new_like(b, seed, a, err);
    bool ok = va && vb && ir_eval(a, va, err) == 0 && ir_eval(b, vb, err) == 0;
    struct ir_compare c = ok ? ir_values_compare(a, va, b, vb) : (struct ir_compare){0};
    if (ok && !c.identical)
        fprintf(stderr, "%s %s: %s[%lld] %.9g vs %.9g\n", a->name, a->mode, a->tensors[c.tensor].name,
                (long long)c.index, (double)c.a, (double)c.b);
    ir_values_free(va);
    ir_values_free(vb);
    return ok && c.identical && c.compared > 0;
}

#endif
