/* rules/helpers.c — the small helpers the rule files share: allocation that aborts on exhaustion, growing lists of
 * slots, the ascending order of slots, a size product that refuses overflow, a set role bound to a list, and the
 * reader of a tensor found by its shape, an operand's latest writer, and a tree of minima that finds the next value
 * within a bound. */
#include "rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* malloc that aborts on exhaustion. */
void *rules_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* Append x to l. */
void rules_list_push(struct rules_list *l, int32_t x)
{
    if (l->n == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 8;
        int32_t *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v)
            abort();
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

/* Whether l holds x. */
bool rules_list_has(const struct rules_list *l, int32_t x)
{
    for (int32_t i = 0; i < l->n; i++)
        if (l->v[i] == x)
            return true;
    return false;
}

/* Free what l holds and empty it. */
void rules_list_free(struct rules_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Ascending order of int32 values, for qsort. */
int rules_cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sort l ascending and drop repeats. */
void rules_list_sort_unique(struct rules_list *l) { l->n = (int32_t)ir_ids_sort_unique(l->v, (size_t)l->n); }

/* A copy of l, with x appended when x >= 0, sorted and unique. */
struct rules_list rules_list_with(const struct rules_list *l, int32_t x)
{
    struct rules_list c = {0};
    for (int32_t i = 0; i < l->n; i++)
        rules_list_push(&c, l->v[i]);
    if (x >= 0)
        rules_list_push(&c, x);
    rules_list_sort_unique(&c);
    return c;
}

/* a·b for sizes, or -1 when either is negative or the product would overflow. */
int64_t rules_size_mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a))
        return -1;
    return a * b;
}

/* Bind set role g to the slots of l (which must outlive the binding's use). */
void rules_bind_list(struct rules_binding *b, enum rules_role g, const struct rules_list *l)
{
    b->set[g] = l->v;
    b->nset[g] = l->n;
}

/* The first live slot reading t whose op fits, or -1: the consumer found by its shape among t's readers. */
int32_t rules_reader_such(const struct rules_rewriter *r, ir_tid t, rules_reader_fit fits, const void *ctx)
{
    int32_t n = rules_reader_count(r, t);
    int32_t *rd = rules_xmalloc(sizeof *rd * (size_t)(n ? n : 1));
    ir_facts_readers(r->s, t, rd, n);
    int32_t found = -1;
    for (int32_t k = 0; k < n && found < 0; k++)
        if (fits(rules_slot(r, rd[k]), t, ctx))
            found = rd[k];
    free(rd);
    return found;
}

/* The latest slot before j, other than those `but` marks, that writes an operand of the op at j, or -1. */
int32_t rules_last_writer_but(const struct rules_rewriter *r, int32_t j, const bool *but)
{
    const struct ir_op *op = rules_slot(r, j);
    int32_t last = -1;
    for (int32_t k = 0; op && k < op->nins; k++) {
        int32_t n = ir_facts_writers(r->s, op->ins[k], NULL, 0);
        int32_t *w = rules_xmalloc(sizeof *w * (size_t)(n + 1));
        ir_facts_writers(r->s, op->ins[k], w, n);
        int32_t x = n - 1;
        while (x >= 0 && (w[x] >= j || but[w[x]]))
            x--;
        if (x >= 0 && w[x] > last)
            last = w[x];
        free(w);
    }
    return last;
}

/* The tree over the n values v. */
struct rules_min_tree rules_min_tree_make(const int32_t *v, int32_t n)
{
    struct rules_min_tree t = {NULL, 1};
    while (t.size < n)
        t.size *= 2;
    t.min = rules_xmalloc(sizeof *t.min * (size_t)(2 * t.size));
    for (int32_t k = 0; k < t.size; k++)
        t.min[t.size + k] = k < n ? v[k] : INT32_MAX;
    for (int32_t k = t.size - 1; k >= 1; k--)
        t.min[k] = t.min[2 * k] < t.min[2 * k + 1] ? t.min[2 * k] : t.min[2 * k + 1];
    return t;
}

/* The first position at or after `from` whose value is at most `bound`, or -1. */
int32_t rules_min_tree_next(const struct rules_min_tree *t, int32_t from, int32_t bound)
{
    if (from < 0 || from >= t->size)
        return -1;
    int32_t k = t->size + from;
    if (t->min[k] <= bound)
        return from;
    /* Up until a right sibling's range holds a value within the bound, then down to its first such leaf. */
    for (;;) {
        while (k & 1) {
            k /= 2;
            if (k <= 1)
                return -1;
        }
        k++;
        if (t->min[k] <= bound)
            break;
    }
    while (k < t->size)
        k = t->min[2 * k] <= bound ? 2 * k : 2 * k + 1;
    return k - t->size;
}

/* Free what rules_min_tree_make made. */
void rules_min_tree_free(struct rules_min_tree *t)
{
    free(t->min);
    t->min = NULL;
}
