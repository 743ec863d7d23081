/* cli/compare.c — what `check`, `diff` and `tolerance` hold a rewritten graph to, whoever's optimizer made it:
 *
 *   valid        the validator accepts it (a fused op's operands are its parts' outside reads, every inner result a
 *                later op or the host reads is kept, ...);
 *   values       its observed and carried values equal, bit for bit, those of the reference: the lifted graph, or
 *                under a quantizing chip the lifted graph with the quantizations the chip's `activation` answers
 *                name (shim_quantized_reference, built without the optimizer);
 *   unquantized  under a quantizing chip, every value a quantize op makes is within the chip's mode's bound of the
 *                unquantized value it reads (a/254 a value for one word, a/254² for two, a the block's largest
 *                magnitude; docs/numerics.md): a fold quantizing in fewer words than the mode's fails here even
 *                when a reference built the same way would agree. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shim/shim.h"

/* Start a comparison of kind `kind`, passing until told otherwise. */
static struct cli_comparison *begin(struct cli_comparisons *c, const char *kind)
{
    struct cli_comparison *r = &c->rows[c->n++];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->pass = true;
    return r;
}

/* Mark r failed with a reason. */
static void failed(struct cli_comparison *r, const char *fmt, const char *what)
{
    r->pass = false;
    snprintf(r->reason, sizeof r->reason, fmt, what);
}

/* The rewritten graph validates. */
static void compare_valid(const struct ir_graph *rewritten, struct cli_comparisons *c)
{
    struct cli_comparison *r = begin(c, "valid");
    char err[IR_ERR_LEN];
    r->compared = rewritten->nops;
    if (ir_validate(rewritten, err))
        failed(r, "%s", err);
}

/* The rewritten graph's observed and carried values equal the reference's, bit for bit. */
static void compare_values(const struct ir_graph *ref, const struct ir_values *ref_values,
                           const struct ir_graph *rewritten, const struct ir_values *values, const char *eval_err,
                           struct cli_comparisons *c)
{
    struct cli_comparison *r = begin(c, "values");
    if (!values) {
        failed(r, "the rewritten graph: %.480s", eval_err);
        return;
    }
    struct ir_compare d = ir_values_compare(ref, ref_values, rewritten, values);
    r->compared = d.compared;
    if (d.identical)
        return;
    snprintf(r->tensor, sizeof r->tensor, "%s", ref->tensors[d.tensor].name);
    r->index = d.index;
    r->lifted = d.a;
    r->rewritten = d.b;
    failed(r, "%s", "a value differs bit for bit from the reference");
}

/* What the evaluation of the rewritten graph found of its quantized values: whether it ran, whether every value was
 * within the bound, the first excess, how many were compared. */
struct quantized {
    bool evaluated, within;
    struct shim_quant_excess excess;
    int64_t compared;
};

/* Every quantized value of the rewritten graph within the mode's bound of the unquantized value it read. */
static void compare_unquantized(const struct ir_graph *rewritten, const struct quantized *q, int words,
                                struct cli_comparisons *c)
{
    struct cli_comparison *r = begin(c, "unquantized");
    if (!q->evaluated) {
        failed(r, "%s", "the rewritten graph was not evaluated");
        return;
    }
    r->compared = q->compared;
    if (q->within)
        return;
    const struct shim_quant_excess *x = &q->excess;
    snprintf(r->tensor, sizeof r->tensor, "%s", rewritten->tensors[x->tensor].name);
    r->index = x->index;
    r->lifted = x->source;
    r->rewritten = x->quantized;
    char why[160];
    snprintf(why, sizeof why, "beyond %s of the unquantized value (bound %.3g, error %.3g)",
             words == 2 ? "a/254^2" : "a/254", x->bound, fabs(x->quantized - x->source));
    failed(r, "%s", why);
}

int cli_compare_rewritten(const struct ir_graph *lifted, const struct ir_values *lifted_values,
                          const struct ir_graph *rewritten, const struct shim *shim, uint64_t seed,
                          struct cli_comparisons *out, char err[IR_ERR_LEN])
{
    out->n = 0;
    compare_valid(rewritten, out);
    if (!lifted_values || !out->rows[0].pass)
        return 0; /* an invalid graph's values mean nothing: its validity is what failed */
    int words = shim_activation_words(shim);
    struct ir_graph *ref = words ? shim_quantized_reference(lifted, shim, err) : NULL;
    if (words && !ref)
        return -1;
    struct ir_values *ref_values = NULL;
    if (ref) {
        ref_values = ir_values_new_shared(ref, seed, lifted, lifted, lifted_values, err); /* weights borrowed */
        if (!ref_values || ir_eval(ref, ref_values, err)) {
            ir_values_free(ref_values);
            ir_graph_free(ref);
            return -1;
        }
    }
    char eval_err[IR_ERR_LEN];
    struct ir_values *values = ir_values_new_shared(rewritten, seed, lifted, lifted, lifted_values, eval_err);
    struct quantized q = {false, true, {0}, 0};
    if (values && shim_quantized_eval(rewritten, values, words, &q.within, &q.excess, &q.compared, eval_err)) {
        ir_values_free(values);
        values = NULL;
    }
    if (!values && strncmp(eval_err, IR_EVAL_STOPPED, strlen(IR_EVAL_STOPPED)) == 0) {
        snprintf(err, IR_ERR_LEN, "%s", eval_err); /* asked to stop: no comparison made, none failed */
        ir_values_free(ref_values);
        ir_graph_free(ref);
        return -1;
    }
    q.evaluated = values != NULL;
    compare_values(ref ? ref : lifted, ref ? ref_values : lifted_values, rewritten, values, eval_err, out);
    if (words)
        compare_unquantized(rewritten, &q, words, out);
    ir_values_free(values);
    ir_values_free(ref_values);
    ir_graph_free(ref);
    return 0;
}

bool cli_comparisons_pass(const struct cli_comparisons *c)
{
    for (int i = 0; i < c->n; i++)
        if (!c->rows[i].pass)
            return false;
    return true;
}
