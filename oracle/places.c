/* oracle/places.c — the index-map obligations of the placements: a part read in place (a strided read, a view, an
 * attention's values read where they lie), a result written into a table's rows, the halves of a join written into
 * their parts of every unit. Each asks Z3, over symbolic sizes constrained as the shapes require (the row a param
 * names ranging over every value it may take), for an element whose placed index differs from the index the op it
 * replaces uses, falls outside the tensor, or is written by both halves. Unsatisfiable: proved. */
#include "oracle.h"

#include <string.h>

/* A small integer-arithmetic vocabulary over one context. */
struct ia {
    Z3_context z;
    Z3_sort s;
};

/* A fresh integer constant. */
static Z3_ast var(const struct ia *a, const char *name)
{
    return Z3_mk_const(a->z, Z3_mk_string_symbol(a->z, name), a->s);
}

static Z3_ast num(const struct ia *a, long long v) { return Z3_mk_int64(a->z, v, a->s); }

static Z3_ast add(const struct ia *a, Z3_ast x, Z3_ast y)
{
    Z3_ast v[2] = {x, y};
    return Z3_mk_add(a->z, 2, v);
}

static Z3_ast mul(const struct ia *a, Z3_ast x, Z3_ast y)
{
    Z3_ast v[2] = {x, y};
    return Z3_mk_mul(a->z, 2, v);
}

static Z3_ast sub(const struct ia *a, Z3_ast x, Z3_ast y)
{
    Z3_ast v[2] = {x, y};
    return Z3_mk_sub(a->z, 2, v);
}

static Z3_ast and2(const struct ia *a, Z3_ast x, Z3_ast y)
{
    Z3_ast v[2] = {x, y};
    return Z3_mk_and(a->z, 2, v);
}

/* lo <= x < hi. */
static Z3_ast within(const struct ia *a, Z3_ast x, Z3_ast lo, Z3_ast hi)
{
    return and2(a, Z3_mk_le(a->z, lo, x), Z3_mk_lt(a->z, x, hi));
}

/* x >= 1 (a size). */
static Z3_ast positive(const struct ia *a, Z3_ast x) { return Z3_mk_le(a->z, num(a, 1), x); }

/* A product of an index by a positive size, kept linear: a fresh constant standing for x·size, with the facts about
 * it the queries need (it is 0 at 0, grows by `size` per step of x). Keeping products as such atoms keeps every
 * bounds query in linear arithmetic, where Z3 decides and its timeout holds. */
struct prod {
    Z3_ast x, size, m;
};

/* A fresh product atom m = x·size. */
static struct prod product(const struct ia *a, Z3_ast x, Z3_ast size, const char *name)
{
    struct prod p = {x, size, var(a, name)};
    return p;
}

/* Monotonicity of products by one size: x < y → x·size + size ≤ y·size; x = y → equal; 0 ≤ x → 0 ≤ x·size. */
static Z3_ast monotone(const struct ia *a, struct prod p, struct prod q)
{
    Z3_ast lt = Z3_mk_implies(a->z, Z3_mk_lt(a->z, p.x, q.x), Z3_mk_le(a->z, add(a, p.m, p.size), q.m));
    Z3_ast eq = Z3_mk_implies(a->z, Z3_mk_eq(a->z, p.x, q.x), Z3_mk_eq(a->z, p.m, q.m));
    Z3_ast gt = Z3_mk_implies(a->z, Z3_mk_lt(a->z, q.x, p.x), Z3_mk_le(a->z, add(a, q.m, q.size), p.m));
    Z3_ast pos = and2(a, Z3_mk_implies(a->z, Z3_mk_le(a->z, num(a, 0), p.x), Z3_mk_le(a->z, num(a, 0), p.m)),
                      Z3_mk_implies(a->z, Z3_mk_le(a->z, num(a, 0), q.x), Z3_mk_le(a->z, num(a, 0), q.m)));
    return and2(a, and2(a, lt, eq), and2(a, gt, pos));
}

/* Whether two index expressions are the same polynomial (Z3's sum-of-monomials normal form). */
static bool same_polynomial(const struct ia *a, Z3_ast x, Z3_ast y)
{
    Z3_params p = Z3_mk_params(a->z);
    Z3_params_inc_ref(a->z, p);
    Z3_params_set_bool(a->z, p, Z3_mk_string_symbol(a->z, "som"), true);
    Z3_ast d = Z3_simplify_ex(a->z, Z3_mk_sub(a->z, 2, (Z3_ast[]){x, y}), p);
    Z3_params_dec_ref(a->z, p);
    int64_t v = 1;
    return Z3_is_numeral_ast(a->z, d) && Z3_get_numeral_int64(a->z, d, &v) && v == 0;
}

/* The query of an obligation whose identity part is x = y (by normal form) and whose bounds part is `bounds`
 * (satisfiable: an index falls outside): when the identity fails, any satisfying `shape` refutes it. */
static Z3_ast identity_and_bounds(const struct ia *a, Z3_ast shape, Z3_ast x, Z3_ast y, Z3_ast bounds)
{
    if (!same_polynomial(a, x, y))
        return and2(a, shape, Z3_mk_not(a->z, Z3_mk_eq(a->z, x, y)));
    return and2(a, shape, bounds);
}

/* ── Strided reads ───────────────────────────────────────────────────────────────────────────────────────── */

/* A head slice (groups of `every` values, `width` at `from` in each) read in place by the access unit_part builds
 * (pitch every, offset from, width): unit u's value i is at u·every + from + i in both, inside x's groups·every. */
static Z3_ast strided_slice(const struct ia *a)
{
    Z3_ast groups = var(a, "groups"), every = var(a, "every"), from = var(a, "from"), width = var(a, "width");
    Z3_ast u = var(a, "u"), i = var(a, "i");
    Z3_ast pitch = every, offset = from;
    Z3_ast shape = and2(a, and2(a, positive(a, groups), positive(a, every)), positive(a, width));
    shape = and2(a, shape, and2(a, Z3_mk_le(a->z, num(a, 0), from), Z3_mk_le(a->z, add(a, from, width), every)));
    shape = and2(a, shape, and2(a, within(a, u, num(a, 0), groups), within(a, i, num(a, 0), width)));
    Z3_ast sliced = add(a, add(a, mul(a, u, every), from), i);
    Z3_ast in_place = add(a, add(a, mul(a, u, pitch), offset), i);
    struct prod mu = product(a, u, every, "u_every"), mg = product(a, groups, every, "groups_every");
    Z3_ast at = add(a, add(a, mu.m, offset), i);
    Z3_ast bounds = and2(a, monotone(a, mu, mg), Z3_mk_not(a->z, within(a, at, num(a, 0), mg.m)));
    return identity_and_bounds(a, shape, sliced, in_place, bounds);
}

/* A literal row r (1-based) of a rows × cols table as a slice (one group of rows·cols values, cols at (r-1)·cols),
 * read in place, or taken as a view at offset (r-1)·cols: value c is the table's (r-1)·cols + c, inside the table. */
static Z3_ast strided_row(const struct ia *a)
{
    Z3_ast rows = var(a, "rows"), cols = var(a, "cols"), r = var(a, "literal"), c = var(a, "c");
    Z3_ast shape = and2(a, and2(a, positive(a, rows), positive(a, cols)), within(a, r, num(a, 1), add(a, rows, num(a, 1))));
    shape = and2(a, shape, within(a, c, num(a, 0), cols));
    Z3_ast from = mul(a, sub(a, r, num(a, 1)), cols);
    Z3_ast gathered = add(a, mul(a, sub(a, r, num(a, 1)), cols), c);
    Z3_ast in_place = add(a, add(a, mul(a, num(a, 0), mul(a, rows, cols)), from), c);
    struct prod mr = product(a, sub(a, r, num(a, 1)), cols, "row_cols"), mt = product(a, rows, cols, "table");
    Z3_ast bounds = and2(a, monotone(a, mr, mt), Z3_mk_not(a->z, within(a, add(a, mr.m, c), num(a, 0), mt.m)));
    return identity_and_bounds(a, shape, gathered, in_place, bounds);
}

/* ── Row writes ──────────────────────────────────────────────────────────────────────────────────────────── */

/* A producer of count·cols values writing rows of a rows × cols table from row `start` (the literal less one, or
 * the value the param names, any in 0..rows-count), row_cols = cols: value r·cols + c lands at start·cols + r·cols +
 * c; the row set it replaces puts it at (start + r)·cols + c. Same index, inside the table. */
static Z3_ast row_write(const struct ia *a)
{
    Z3_ast rows = var(a, "rows"), cols = var(a, "cols"), count = var(a, "count"), start = var(a, "start");
    Z3_ast r = var(a, "r"), c = var(a, "c");
    Z3_ast shape = and2(a, and2(a, positive(a, rows), positive(a, cols)), positive(a, count));
    shape = and2(a, shape, within(a, start, num(a, 0), add(a, sub(a, rows, count), num(a, 1))));
    shape = and2(a, shape, and2(a, within(a, r, num(a, 0), count), within(a, c, num(a, 0), cols)));
    Z3_ast placed = add(a, mul(a, start, cols), add(a, mul(a, r, cols), c));
    Z3_ast set = add(a, mul(a, add(a, start, r), cols), c);
    struct prod mrow = product(a, add(a, start, r), cols, "row"), mt = product(a, rows, cols, "table");
    Z3_ast bounds = and2(a, monotone(a, mrow, mt), Z3_mk_not(a->z, within(a, add(a, mrow.m, c), num(a, 0), mt.m)));
    return identity_and_bounds(a, shape, placed, set, bounds);
}

/* ── Unit writes (a join's halves) ───────────────────────────────────────────────────────────────────────── */

/* The sizes of a join in place: units, the halves' widths ha and hb (P = ha + hb a unit), and where its destination
 * starts: base, a start row (a literal or any value the param may name that leaves room for every unit) times the
 * row width, held as a product atom like the unit offsets. */
struct join_sizes {
    Z3_ast units, ha, hb, p, base, table;
    struct prod all; /* units·P */
    Z3_ast shape;
};

/* Sizes constrained as a join's shape requires. */
static struct join_sizes join_sizes(const struct ia *a)
{
    struct join_sizes j;
    j.units = var(a, "units");
    j.ha = var(a, "ha");
    j.hb = var(a, "hb");
    j.p = add(a, j.ha, j.hb);
    j.base = var(a, "base");
    j.table = var(a, "table_len");
    j.all = product(a, j.units, j.p, "units_p");
    Z3_ast s = and2(a, and2(a, positive(a, j.units), positive(a, j.ha)), positive(a, j.hb));
    s = and2(a, s, Z3_mk_le(a->z, num(a, 0), j.base));
    /* The rows the joined result needs fit below the start row: base + units·P ≤ the table's length. */
    s = and2(a, s, Z3_mk_le(a->z, add(a, j.base, j.all.m), j.table));
    j.shape = s;
    return j;
}

/* Each half placed into its part of every unit (pitch P, offsets 0 and ha) puts value i of unit u where the join
 * would: a's u·ha + i at base + u·P + i, b's u·hb + i at base + u·P + ha + i; inside the destination. */
static Z3_ast units_equal(const struct ia *a)
{
    struct join_sizes j = join_sizes(a);
    Z3_ast u = var(a, "u"), i = var(a, "i"), half = var(a, "which");
    Z3_ast width = Z3_mk_ite(a->z, Z3_mk_eq(a->z, half, num(a, 0)), j.ha, j.hb);
    Z3_ast offset = Z3_mk_ite(a->z, Z3_mk_eq(a->z, half, num(a, 0)), num(a, 0), j.ha);
    Z3_ast shape = and2(a, j.shape, and2(a, within(a, u, num(a, 0), j.units), within(a, i, num(a, 0), width)));
    shape = and2(a, shape, within(a, half, num(a, 0), num(a, 2)));
    Z3_ast placed = add(a, j.base, add(a, add(a, mul(a, u, j.p), offset), i));
    Z3_ast joined = add(a, j.base, add(a, mul(a, u, add(a, j.ha, j.hb)), add(a, offset, i)));
    struct prod mu = product(a, u, j.p, "u_p");
    Z3_ast at = add(a, j.base, add(a, add(a, mu.m, offset), i));
    Z3_ast bounds = and2(a, monotone(a, mu, j.all), Z3_mk_not(a->z, within(a, at, num(a, 0), j.table)));
    return identity_and_bounds(a, shape, placed, joined, bounds);
}

/* The halves' regions never meet: no value is written by both producers (so their order does not matter). */
static Z3_ast units_disjoint(const struct ia *a)
{
    struct join_sizes j = join_sizes(a);
    Z3_ast u1 = var(a, "u1"), i1 = var(a, "i1"), u2 = var(a, "u2"), i2 = var(a, "i2");
    Z3_ast at = and2(a, within(a, u1, num(a, 0), j.units), within(a, i1, num(a, 0), j.ha));
    at = and2(a, at, and2(a, within(a, u2, num(a, 0), j.units), within(a, i2, num(a, 0), j.hb)));
    struct prod m1 = product(a, u1, j.p, "u1_p"), m2 = product(a, u2, j.p, "u2_p");
    Z3_ast xa = add(a, j.base, add(a, m1.m, i1));
    Z3_ast xb = add(a, j.base, add(a, add(a, m2.m, j.ha), i2));
    return and2(a, and2(a, and2(a, j.shape, at), monotone(a, m1, m2)), Z3_mk_eq(a->z, xa, xb));
}

/* ── The table ───────────────────────────────────────────────────────────────────────────────────────────── */

/* One index obligation: its name and query. */
struct index_obligation {
    const char *name;
    Z3_ast (*query)(const struct ia *a);
};

static const struct index_obligation read_in_place[] = {
    {"strided read = head slice", strided_slice},
    {"strided read or view = literal row", strided_row},
};
static const struct index_obligation rows[] = {{"row write = set_row (any start row)", row_write}};
static const struct index_obligation units[] = {
    {"unit writes = join (any start row)", units_equal},
    {"halves disjoint", units_disjoint},
};

/* The obligations of a rule's motion, or none. */
static const struct index_obligation *obligations(const struct rules_rule *rule, int *n)
{
    switch (rule->motion) {
    case RULES_MOTION_READ_IN_PLACE: *n = 2; return read_in_place;
    case RULES_MOTION_PLACE_ROWS: *n = 1; return rows;
    case RULES_MOTION_PLACE_UNITS: *n = 2; return units;
    default: *n = 0; return NULL;
    }
}

int oracle_index_obligations(const struct rules_rule *rule, const char **names, int cap)
{
    int n;
    const struct index_obligation *list = obligations(rule, &n);
    for (int i = 0; i < n && i < cap; i++)
        names[i] = list[i].name;
    return n;
}

Z3_ast oracle_index_query(Z3_context z, const struct rules_rule *rule, int k)
{
    int n;
    const struct index_obligation *list = obligations(rule, &n);
    if (k < 0 || k >= n)
        return Z3_mk_false(z);
    struct ia a = {z, Z3_mk_int_sort(z)};
    return list[k].query(&a);
}
