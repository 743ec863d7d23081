/* shim/shim.c — the shim table, and the two shims every chip is measured between: `reference` runs every class
 * whole with no limits, `none` runs every class as its parts. */
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every class native. */
static struct shim_support reference_supports(const struct shim *s, enum ir_class c)
{
    (void)s;
    (void)c;
    return (struct shim_support){SHIM_NATIVE, NULL};
}

/* Every class decomposed into its parts. */
static struct shim_support none_supports(const struct shim *s, enum ir_class c)
{
    (void)s;
    (void)c;
    return (struct shim_support){SHIM_DECOMPOSE, NULL};
}

/* Every op fits: no kernel limits. */
static int fits_always(const struct shim *s, const struct ir_op *op, const struct ir_graph *g, char *why)
{
    (void)s;
    (void)op;
    (void)g;
    (void)why;
    return 0;
}

/* Every operand read as it is. */
static int activation_plain(const struct shim *s, const struct ir_op *consumer, int operand, const struct ir_graph *g)
{
    (void)s;
    (void)consumer;
    (void)operand;
    (void)g;
    return 0;
}

/* The exact contract: f32 everywhere, fused results exact. */
static int numerics_exact(const struct shim *s, struct shim_contract *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->point, sizeof out->point, "%s: f32 activations, f32 cache, f32 state", s->name);
    snprintf(out->attention, sizeof out->attention, "f32 queries, keys, values and weights");
    out->cache = SHIM_KEEP_F32;
    out->state = SHIM_KEEP_F32;
    out->accumulator_bits = 32;
    return 1;
}

/* A shim with the given name and answers, no chip rules. */
static struct shim *make_shim(const char *name, struct shim_support (*supports)(const struct shim *, enum ir_class))
{
    struct shim *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->supports = supports;
    s->fits = fits_always;
    s->activation = activation_plain;
    s->numerics = numerics_exact;
    return s;
}

struct shim *shim_reference(void) { return make_shim("reference", reference_supports); }
struct shim *shim_none(void) { return make_shim("none", none_supports); }

/* A row of the shim table: a name (or a prefix ending in ':' that takes parameters), what it is, and its maker. */
struct shim_row {
    const char *name;
    const char *what;
    struct shim *(*make)(const char *full, char err[IR_ERR_LEN]);
};

/* Makers that ignore their parameters. */
static struct shim *make_reference(const char *full, char err[IR_ERR_LEN])
{
    (void)full;
    (void)err;
    return shim_reference();
}
static struct shim *make_none(const char *full, char err[IR_ERR_LEN])
{
    (void)full;
    (void)err;
    return shim_none();
}

static const struct shim_row shim_table[] = {
    {"reference", "every class native, no limits: the widest the shared rules can go", make_reference},
    {"none", "every class decomposed: the lifted graph, every decision refused", make_none},
    {"cuda-lane:", shim_lane_what, shim_lane},
};

struct shim *shim_lookup(const char *name, char err[IR_ERR_LEN])
{
    for (size_t i = 0; i < sizeof shim_table / sizeof shim_table[0]; i++) {
        const char *row = shim_table[i].name;
        size_t n = strlen(row);
        bool prefix = n && row[n - 1] == ':';
        if ((prefix && strncmp(name, row, n - 1) == 0 && (name[n - 1] == ':' || name[n - 1] == '\0')) ||
            (!prefix && strcmp(name, row) == 0)) {
            struct shim *s = shim_table[i].make(name, err);
            if (!s && !err[0])
                snprintf(err, IR_ERR_LEN, "could not make shim '%s'", name);
            return s;
        }
    }
    snprintf(err, IR_ERR_LEN, "unknown shim '%s' (fusecheck shims lists them)", name);
    return NULL;
}

void shim_free(struct shim *s)
{
    if (!s)
        return;
    if (s->free_self)
        s->free_self(s->self);
    free(s);
}

void shim_list(void (*line)(const char *name, const char *what, void *ctx), void *ctx)
{
    for (size_t i = 0; i < sizeof shim_table / sizeof shim_table[0]; i++)
        line(shim_table[i].name, shim_table[i].what, ctx);
}

int shim_activation_words(const struct shim *s)
{
    struct shim_contract contract;
    return s->numerics && s->numerics(s, &contract) ? contract.activation_words : 0;
}
