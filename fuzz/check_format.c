/* fuzz/check_format.c — the format harness's checks: any bytes go to the parser; whatever parses prints, parses
 * back and prints identically (op for op equal), and the validating parser accepts exactly what parses and
 * validates. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

/* Whether two graphs have the same tensors and ops. */
static bool same_graph(const struct ir_graph *a, const struct ir_graph *b)
{
    if (a->ntensors != b->ntensors || a->nops != b->nops)
        return false;
    for (int32_t t = 0; t < a->ntensors; t++) {
        const struct ir_tensor *x = &a->tensors[t], *y = &b->tensors[t];
        if (strcmp(x->name, y->name) != 0 || x->elem != y->elem || x->rows != y->rows || x->cols != y->cols ||
            x->role != y->role || x->checkpoint != y->checkpoint || (x->checkpoint && x->format != y->format) ||
            x->transposed != y->transposed || x->observed != y->observed || x->carried != y->carried ||
            x->next != y->next || x->tied != y->tied)
            return false;
    }
    for (int32_t i = 0; i < a->nops; i++)
        if (!ir_op_equal(&a->ops[i], &b->ops[i]))
            return false;
    return true;
}

int fuzz_check_format(const uint8_t *data, size_t size, struct fuzz_finding *f)
{
    char err[IR_ERR_LEN], verr[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_unchecked((const char *)data, size, "input", err);
    struct ir_graph *checked = ir_parse((const char *)data, size, "input", verr);
    int bad = 0;
    if (!g) {
        if (checked)
            bad = fuzz_fail(f, "format", "checked-only", "the validating parser accepts what the plain one refuses");
        ir_graph_free(checked);
        return bad;
    }
    bool valid = ir_validate(g, verr) == 0;
    if (valid != (checked != NULL))
        bad = fuzz_fail(f, "format", "validate", "the validating parser %s a graph the validator %s",
                        checked ? "accepts" : "refuses", valid ? "accepts" : "refuses");
    size_t n1 = 0, n2 = 0;
    char *t1 = bad ? NULL : ir_print(g, &n1);
    struct ir_graph *back = t1 ? ir_parse_unchecked(t1, n1, "printed", err) : NULL;
    char *t2 = back ? ir_print(back, &n2) : NULL;
    if (!bad && !t1)
        bad = fuzz_fail(f, "format", "print", "a parsed graph does not print");
    else if (!bad && !back)
        bad = fuzz_fail(f, "format", "reparse", "a printed graph does not parse: %s", err);
    else if (!bad && (!t2 || n1 != n2 || memcmp(t1, t2, n1) != 0))
        bad = fuzz_fail(f, "format", "reprint", "print, parse, print is not the identity");
    else if (!bad && !same_graph(g, back))
        bad = fuzz_fail(f, "format", "equal", "the graph parsed back from its text differs from it");
    free(t1);
    free(t2);
    ir_graph_free(back);
    ir_graph_free(checked);
    ir_graph_free(g);
    return bad;
}
