/* rules/rules_place.c — the placement rules (a part of a wider tensor read where it lies, a result written straight
 * into a table's rows or into its part of every unit of a joined tensor) and the rules that group a step's launches:
 * cache inserts across layers, rotations by one table, normed rotations with a cache insert, a gated query's gate
 * projection, elementwise regions and chains, and a cheap pointwise op recomputed inside each of its readers.
 *
 * Each rule's matcher finds a shape and binds roles; its guard atoms (the arrays beside it) decide legality. */
#include "rules.h"

#include <stdlib.h>
#include <string.h>

/* ── Small helpers ───────────────────────────────────────────────────────────────────────────────────────── */

/* The live slots that read t, ascending, malloc'd; *n receives their count. */
static int32_t *readers_of(const struct rules_rewriter *r, ir_tid t, int32_t *n)
{
    int32_t cap = rules_reader_count(r, t);
    int32_t *buf = rules_xmalloc(sizeof *buf * (size_t)(cap + 1));
    *n = ir_facts_readers(r->s, t, buf, cap);
    if (*n > cap)
        *n = cap;
    return buf;
}

/* The leaves of op as pointers into it, malloc'd; *n receives their count. */
static const struct ir_op **leaves_of(const struct ir_op *op, int32_t *n)
{
    int32_t count = rules_leaves(op, NULL, 0);
    const struct ir_op **out = rules_xmalloc(sizeof *out * (size_t)(count ? count : 1));
    *n = rules_leaves(op, out, count);
    return out;
}

/* Whether op reads every operand whole. */
static bool all_whole(const struct ir_op *op)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (op->access[k].strided)
            return false;
    return true;
}

/* Whether op, and every part of it, reads t only whole (so t's reads can move to a part of another tensor). */
static bool reads_whole(const struct ir_op *op, ir_tid t)
{
    for (int32_t k = 0; k < op->nins; k++)
        if (op->ins[k] == t && op->access[k].strided)
            return false;
    for (int32_t i = 0; i < op->nparts; i++)
        if (!reads_whole(&op->parts[i], t))
            return false;
    return true;
}

/* Whether a read moved in place, or a result placed, must be whole or own first: always under fusecheck's rules.
 * The seed's rules ask neither (F25): its rewrite overwrites the access or the destination, dropping the part an
 * access read or the placement a producer made. */
static bool whole_asked(void) { return !rules_seed_rules(); }

/* The access that reads `width` values at `from` of every `every` values: a part of every unit, in place. */
static struct ir_access unit_part(int64_t every, int64_t from, int64_t width)
{
    struct ir_access a;
    memset(&a, 0, sizeof a);
    a.strided = true;
    a.s.pitch = every;
    a.s.offset = from;
    a.s.width = width;
    return a;
}

/* The element count of a lifted pointwise op computing its whole result in its own buffer from whole operands — an
 * elementwise op without a broadcast row, an activation or a scale — or -1. */
static int64_t pointwise(const struct ir_op *op)
{
    if (op->sym != IR_SYM_PRIM || !ir_dst_is_own(&op->dst) || !all_whole(op))
        return -1;
    const struct ir_spec *s = &op->spec;
    switch (s->kind) {
    case IR_KIND_ELEMENTWISE: return s->u.elementwise.row == 0 ? s->u.elementwise.n : -1;
    case IR_KIND_SILU:
    case IR_KIND_SIGMOID:
    case IR_KIND_GELU:
    case IR_KIND_RELU: return s->u.unary.n;
    case IR_KIND_SCALE: return s->u.scale.n;
    default: return -1;
    }
}

/* Whether op is a lifted activation or scale: an op cheap enough to recompute wherever its result is read. */
static bool cheap(const struct ir_op *op)
{
    static const enum ir_kind kinds[] = {IR_KIND_SILU, IR_KIND_SIGMOID, IR_KIND_GELU, IR_KIND_RELU, IR_KIND_SCALE};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (rules_is(op, kinds[i]))
            return true;
    return false;
}

/* The operands of the ops at `slots`, malloc'd into *ins and *access: every member's in turn (all), or those no
 * member computes, each once (external). Returns their count. */
static int32_t group_operands(const struct rules_rewriter *r, const int32_t *slots, int32_t n, bool all, ir_tid **ins,
                              struct ir_access **access)
{
    int32_t room = 1;
    for (int32_t i = 0; i < n; i++)
        room += rules_slot(r, slots[i])->nins;
    *ins = rules_xmalloc(sizeof **ins * (size_t)room);
    *access = rules_xmalloc(sizeof **access * (size_t)room);
    if (!all)
        return rules_external(r, slots, n, *ins, *access, room);
    int32_t count = 0;
    for (int32_t i = 0; i < n; i++) {
        const struct ir_op *m = rules_slot(r, slots[i]);
        for (int32_t k = 0; k < m->nins; k++) {
            (*ins)[count] = m->ins[k];
            (*access)[count++] = m->access[k];
        }
    }
    return count;
}

/* Whether the chip runs an op of cls over the ops at `slots` whole, its operands per `all`, its result and
 * destination the first member's (a refusal is reported). */
static bool group_admitted(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t n, bool all)
{
    ir_tid *ins;
    struct ir_access *access;
    int32_t nins = group_operands(r, slots, n, all, &ins, &access);
    const struct ir_op *first = rules_slot(r, slots[0]);
    bool ok = rules_admits_slots(r, cls, slots, n, ins, nins, first->out, first->dst);
    free(ins);
    free(access);
    return ok;
}

/* Fold the ops at `slots` (ascending) into one op of cls at the first one's slot, its operands per `all`, its result
 * and destination the first member's. The guards are asked once more of the group as it fires, so the last binding
 * they were asked of is the one that moves (not a later candidate's trial the chip refused). */
static void fuse_at_first(struct rules_rewriter *r, enum ir_class cls, const int32_t *slots, int32_t n, bool all)
{
    struct rules_binding bind = rules_group_binding(slots[0], slots, n);
    if (!rules_guards_hold(r, r->rule, &bind, NULL))
        return;
    ir_tid *ins;
    struct ir_access *access;
    int32_t nins = group_operands(r, slots, n, all, &ins, &access);
    const struct ir_op *first = rules_slot(r, slots[0]);
    ir_tid out = first->out;
    struct ir_dst dst = first->dst;
    rules_fuse(r, cls, slots[0], slots + 1, n - 1, ins, access, nins, out, dst);
    free(ins);
    free(access);
}

/* Whether slot j, added to the group (room for one more) hoisted to its first slot, keeps the rule's guards and the
 * chip runs the grown group whole as cls. */
static bool joins_group(struct rules_rewriter *r, enum ir_class cls, int32_t *group, int32_t n, int32_t j, bool all)
{
    group[n] = j;
    struct rules_binding bind = rules_group_binding(group[0], group, n + 1);
    return rules_guards_hold(r, r->rule, &bind, NULL) && group_admitted(r, cls, group, n + 1, all);
}

/* Which later slots may join slot i's group: a shape only (legality is the guards'). */
typedef bool (*alike_fn)(const struct rules_rewriter *r, int32_t i, int32_t j);

/* Whether some operand of slot j is written by a slot strictly between i and j outside the group: then j cannot move
 * up to i (its no_cross atom fails), and the matcher skips it before asking anything dearer. */
static bool reads_written_between(const struct rules_rewriter *r, int32_t i, int32_t j, const int32_t *group,
                                  int32_t n)
{
    /* The op's own operands are enough to tell (a part's further reads are the guard's to weigh). */
    const struct ir_op *op = rules_slot(r, j);
    for (int32_t k = 0; k < op->nins; k++)
        if (!ir_facts_untouched(r->s, op->ins[k], i, j, false, group, n))
            return true;
    return false;
}

/* Grow a group from slot i: each later slot of `cands` (ascending; every slot that can be alike to i is among them)
 * alike to it that joins_group admits, in slot order. group has room for every slot; returns the group's size. */
static int32_t grow_group(struct rules_rewriter *r, enum ir_class cls, int32_t i, alike_fn alike, bool all,
                          int32_t *group, const int32_t *cands, int32_t ncands)
{
    int32_t n = 1;
    group[0] = i;
    bool early = rules_atom_active(r->rule, "no_cross");
    for (int32_t q = 0; q < ncands; q++) {
        int32_t j = cands[q];
        if (j <= i || !rules_slot(r, j) || !alike(r, i, j))
            continue;
        if (early && reads_written_between(r, i, j, group, all ? 0 : n))
            continue;
        if (joins_group(r, cls, group, n, j, all))
            n++;
    }
    return n;
}

/* What a slot's alike test reads, as numbers: two slots are alike exactly when both have a key and the keys are
 * equal. Returns whether the op at slot i has one. */
#define KEY_LEN 5
typedef bool (*key_fn)(const struct rules_rewriter *r, int32_t i, int64_t key[KEY_LEN]);

/* Whether slots i and j both have a key and the keys are equal. */
static bool same_key(const struct rules_rewriter *r, key_fn key, int32_t i, int32_t j)
{
    int64_t a[KEY_LEN] = {0}, b[KEY_LEN] = {0};
    return key(r, i, a) && key(r, j, b) && memcmp(a, b, sizeof a) == 0;
}

/* A keyed slot. */
struct keyed {
    int64_t key[KEY_LEN];
    int32_t slot;
};

/* The slots that had a key when a rule began, ordered by key and then slot: each group's candidates are the later
 * slots of its first one's key (as a rule runs, a later slot is only ever removed, so its key stands). While the
 * rule's no_cross atom is in force, each also carries the latest slot before it, not a keyed one, that writes one of
 * its operands: a candidate whose writer lies after the group's first slot would cross it (grow_group passes it
 * over), so a tree of those writers finds the candidates without passing the others. A keyed slot only ever leaves
 * as the rule runs and the others stay, so the writers stand too. */
struct keyed_slots {
    struct keyed *v;
    int32_t *slots;  /* v's slots in the same order */
    int32_t *cands;  /* room for one group's candidates */
    struct rules_min_tree writers;
    int32_t n;
};

/* Order by key, then slot. */
static int cmp_keyed(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    for (int x = 0; x < KEY_LEN; x++)
        if (a->key[x] != b->key[x])
            return (a->key[x] > b->key[x]) - (a->key[x] < b->key[x]);
    return (a->slot > b->slot) - (a->slot < b->slot);
}

/* Every live slot with a key, ordered, with its latest other writer while the rule's no_cross atom is in force. */
static struct keyed_slots keyed_make(const struct rules_rewriter *r, key_fn key)
{
    int32_t len = ir_slots_len(r->s);
    struct keyed_slots ks = {rules_xmalloc(sizeof *ks.v * (size_t)(len + 1)), NULL, NULL, {NULL, 0}, 0};
    bool *keyed = rules_xmalloc(sizeof *keyed * (size_t)(len + 1));
    for (int32_t i = 0; i < len; i++) {
        struct keyed k = {{0}, i};
        keyed[i] = rules_slot(r, i) && key(r, i, k.key);
        if (keyed[i])
            ks.v[ks.n++] = k;
    }
    qsort(ks.v, (size_t)ks.n, sizeof *ks.v, cmp_keyed);
    ks.slots = rules_xmalloc(sizeof *ks.slots * (size_t)(ks.n + 1));
    ks.cands = rules_xmalloc(sizeof *ks.cands * (size_t)(ks.n + 1));
    bool early = rules_atom_active(r->rule, "no_cross");
    int32_t *writer = rules_xmalloc(sizeof *writer * (size_t)(ks.n + 1));
    for (int32_t x = 0; x < ks.n; x++) {
        ks.slots[x] = ks.v[x].slot;
        writer[x] = early ? rules_last_writer_but(r, ks.slots[x], keyed) : -1;
    }
    ks.writers = rules_min_tree_make(writer, ks.n);
    free(writer);
    free(keyed);
    return ks;
}

/* Free what keyed_make made. */
static void keyed_free(struct keyed_slots *ks)
{
    free(ks->v);
    free(ks->slots);
    free(ks->cands);
    rules_min_tree_free(&ks->writers);
}

/* Grow a group from slot i (which has a key) among the later slots of its key. */
static int32_t grow_by_key(struct rules_rewriter *r, enum ir_class cls, int32_t i, alike_fn alike, bool all,
                           int32_t *group, const struct keyed_slots *ks, key_fn key)
{
    struct keyed k = {{0}, i};
    key(r, i, k.key);
    int32_t lo = 0, hi = ks->n;
    while (lo < hi) { /* the first entry after (key, i) */
        int32_t mid = lo + (hi - lo) / 2;
        if (cmp_keyed(&ks->v[mid], &k) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t n = 0;
    for (int32_t x = rules_min_tree_next(&ks->writers, lo, i);
         x >= 0 && memcmp(ks->v[x].key, k.key, sizeof k.key) == 0; x = rules_min_tree_next(&ks->writers, x + 1, i))
        ks->cands[n++] = ks->slots[x];
    return grow_group(r, cls, i, alike, all, group, ks->cands, n);
}

/* The op at j reads the slice's source in place of the slice at i (its part of every unit), when the chip runs that
 * whole; the slice goes, recorded as cls. */
static void read_slice_in_place(struct rules_rewriter *r, int32_t i, int32_t j, const struct rules_slice_form *sl,
                                enum ir_class cls)
{
    struct ir_op cand = ir_op_clone(rules_slot(r, j));
    rules_read_in_place(&cand, sl->y, sl->x, unit_part(sl->every, sl->from, sl->width));
    if (!rules_admits(r, &cand)) {
        ir_op_free(&cand);
        return;
    }
    ir_slots_replace(rules_slots(r), j, cand);
    rules_absorb(r, cls, j, &i, 1);
}

/* ── slice_read ──────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_slice_read[] = {IR_CLASS_STRIDED_READ};

/* The consumer reads the slice's source in place of the slice's result: legal when it is the result's one reader,
 * the host does not read the result (no op writes it any more), and nothing between the slice and the consumer
 * writes the source. */
static const struct rules_atom guards_slice_read[] = {
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "not_observed", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_RESULT, RULES_ADDED_BY("F8")},
    {.name = "untouched_source", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_SOURCE, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_FROM_SEED},
    {.name = "untouched_result", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F1")},
};

/* The first slot after i reading the slice's result whole, unit by unit: its `groups` units of `width` values; or
 * -1. Whether it is the only reader is a guard. The seed's rules take a reader before i too (F17). */
static int32_t unit_reader(const struct rules_rewriter *r, int32_t i, const struct rules_slice_form *sl)
{
    int32_t n;
    int32_t *readers = readers_of(r, sl->y, &n);
    int32_t found = -1;
    for (int32_t k = 0; k < n && found < 0; k++) {
        const struct ir_op *op = rules_slot(r, readers[k]);
        ir_tid x;
        int64_t units, width;
        if ((readers[k] > i || rules_seed_rules()) && rules_unit_input(op, &x, &units, &width) && x == sl->y &&
            units == sl->groups &&
            width == sl->width && (!whole_asked() || reads_whole(op, sl->y)))
            found = readers[k];
    }
    free(readers);
    return found;
}

/* A part of every unit of a tensor (a head slice, a row copied out of a table) read only by an op that reads its
 * input unit by unit is read where it lies; the slice goes. Legal: the source is unchanged up to the reader, and
 * the slice's result had no other reader. */
static void apply_slice_read(struct rules_rewriter *r)
{
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        struct rules_slice_form sl;
        if (!op || !rules_slice(op, &sl) || (op->access[0].strided && whole_asked()))
            continue;
        int32_t j = unit_reader(r, i, &sl);
        if (j < 0)
            continue;
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_PRODUCER] = i;
        bind.slot[RULES_ROLE_CONSUMER] = j;
        bind.tensor[RULES_ROLE_RESULT] = sl.y;
        bind.tensor[RULES_ROLE_SOURCE] = sl.x;
        if (!rules_guards_hold(r, r->rule, &bind, NULL))
            continue;
        read_slice_in_place(r, i, j, &sl, IR_CLASS_STRIDED_READ);
    }
}

const struct rules_rule rules_rule_slice_read = {
    "slice_read", RULES_PLACE, builds_slice_read, 1, apply_slice_read, guards_slice_read, RULES_NGUARDS(guards_slice_read),
    RULES_MOTION_READ_IN_PLACE,
    "a slice read only by an op that reads it unit by unit is read where it lies: the source is unwritten up to the "
    "reader and no one else sees the slice"};

/* ── row_write ───────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_row_write[] = {IR_CLASS_ROW_WRITE};

/* The table's rows are written at the producer's slot instead of the row set's: legal when the row set is the value's
 * one reader, the host does not read the value (no op writes it any more), nothing between reads or writes the
 * table, and nothing between writes the index the rows are named by (the producer reads it now). */
static const struct rules_atom guards_row_write[] = {
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "not_observed", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_RESULT, RULES_ADDED_BY("F3")},
    {.name = "table_untouched", .kind = RULES_ATOM_UNREAD_UNWRITTEN, .t = RULES_ROLE_TABLE,
     .a = RULES_ROLE_PRODUCER, .b = RULES_ROLE_CONSUMER, RULES_FROM_SEED},
    {.name = "index_untouched", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_PARAM, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F9")},
    {.name = "untouched_result", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F1")},
};

/* Where a lifted row set puts its rows: the table's rows from its literal or named index, its cols wide. */
static struct ir_dst rows_of(const struct ir_op *set)
{
    const struct ir_set_row *sr = &set->spec.u.set_row;
    struct ir_dst d = ir_dst_own(set->ins[0]);
    if (sr->index.kind == IR_RIDX_NAMED) {
        d.row = IR_ROWSEL_PARAM;
        d.row_param = set->ins[2];
    } else {
        d.row = IR_ROWSEL_FIXED;
        d.row_fixed = sr->index.literal;
    }
    d.row_cols = sr->cols;
    return d;
}

/* The slot before j of the op computing the set's value into its own buffer, count rows of cols values, or -1. */
static int32_t row_producer(const struct rules_rewriter *r, int32_t j, const struct ir_op *set)
{
    const struct ir_set_row *sr = &set->spec.u.set_row;
    int32_t i = ir_facts_producer(r->s, set->ins[1]);
    const struct ir_op *op = i >= 0 && (i < j || rules_seed_rules()) ? rules_slot(r, i) : NULL; /* seed: any, F17 */
    int64_t elems = 0, row = 0;
    if (!op || (whole_asked() && !ir_dst_is_own(&op->dst)) || !rules_written(op, r->g, &elems, &row))
        return -1;
    return elems == sr->count * sr->cols && row == sr->cols ? i : -1;
}

/* A value read only by the row set that puts it in a table is written straight into the table's rows by the op that
 * computes it; the row set goes. Legal: the table's rows are written earlier, with nothing between touching the
 * table or the index, and nothing else reads the value. */
static void apply_row_write(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *set = rules_slot(r, j);
        if (!set || !rules_is(set, IR_KIND_SET_ROW) || (whole_asked() && !all_whole(set)))
            continue;
        int32_t i = row_producer(r, j, set);
        if (i < 0)
            continue;
        struct ir_dst dst = rows_of(set);
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_PRODUCER] = i;
        bind.slot[RULES_ROLE_CONSUMER] = j;
        bind.tensor[RULES_ROLE_RESULT] = set->ins[1];
        bind.tensor[RULES_ROLE_TABLE] = set->ins[0];
        bind.tensor[RULES_ROLE_PARAM] = dst.row == IR_ROWSEL_PARAM ? dst.row_param : IR_NONE;
        if (!rules_guards_hold(r, r->rule, &bind, NULL))
            continue;
        struct ir_op cand = ir_op_clone(rules_slot(r, i));
        rules_set_dst(&cand, dst);
        if (!rules_admits(r, &cand)) {
            ir_op_free(&cand);
            continue;
        }
        ir_slots_replace(rules_slots(r), i, cand);
        rules_absorb(r, IR_CLASS_ROW_WRITE, i, &j, 1);
    }
}

const struct rules_rule rules_rule_row_write = {
    "row_write", RULES_PLACE, builds_row_write, 1, apply_row_write, guards_row_write, RULES_NGUARDS(guards_row_write), RULES_MOTION_PLACE_ROWS,
    "a value read only by the row set that puts it in a table is written into the table's rows by its producer: "
    "nothing between touches the table or writes the index, and no one else sees the value"};

/* ── join_in_place ───────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_join_in_place[] = {IR_CLASS_JOIN_IN_PLACE};

/* Each half's producer writes its part of every unit of the join's destination at its own slot: legal when the join
 * is each half's one reader, the host reads neither half (no op writes them any more), nothing after the first
 * producer up to the join reads or writes the destination (the later producer included: the seed lets it write
 * there, F22, and under its rules seed_clear asks the seed's part in the atom's place), and nothing there writes the
 * index of the rows it lands in. */
static const struct rules_atom guards_join_in_place[] = {
    {.name = "only_reader_a", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_INPUT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "only_reader_b", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "not_observed_a", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_INPUT, RULES_ADDED_BY("F3")},
    {.name = "not_observed_b", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_OTHER, RULES_ADDED_BY("F3")},
    {.name = "dst_untouched", .kind = RULES_ATOM_UNREAD_UNWRITTEN, .t = RULES_ROLE_TABLE, .a = RULES_ROLE_FIRST,
     .b = RULES_ROLE_CONSUMER, RULES_WIDENED_APART_BY("F22")},
    {.name = "index_untouched", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_PARAM, .a = RULES_ROLE_FIRST,
     .b = RULES_ROLE_CONSUMER, RULES_FROM_SEED},
    {.name = "untouched_a", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_INPUT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F1")},
    {.name = "untouched_b", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_MOVER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F1")},
};

/* The slot before j of the op computing t into its own buffer, or -1. The seed's rules take the producer wherever
 * it is (F22: one after the join writes the state half the join read the old value of) and whatever its
 * destination (F25). */
static int32_t own_producer(const struct rules_rewriter *r, ir_tid t, int32_t j)
{
    int32_t i = ir_facts_producer(r->s, t);
    const struct ir_op *op = i >= 0 && (i < j || rules_seed_rules()) ? rules_slot(r, i) : NULL;
    return op && (!whole_asked() || ir_dst_is_own(&op->dst)) ? i : -1;
}

/* The destination d, narrowed to the part of every unit `pitch` values wide at offset, width values. */
static struct ir_dst in_units(struct ir_dst d, int64_t pitch, int64_t offset, int64_t width)
{
    d.has_unit = true;
    d.unit.pitch = pitch;
    d.unit.offset = offset;
    d.unit.width = width;
    return d;
}

/* Place both halves of the join at j (producers pa and pb) into their parts of its destination's units, when the chip
 * runs both placements whole; the join goes. */
static void place_halves(struct rules_rewriter *r, int32_t j, int32_t pa, int32_t pb)
{
    const struct ir_op *join = rules_slot(r, j);
    const struct ir_join *jn = &join->spec.u.join;
    int64_t ha = jn->wa / jn->heads, hb = jn->wb / jn->heads;
    struct ir_op ca = ir_op_clone(rules_slot(r, pa)), cb = ir_op_clone(rules_slot(r, pb));
    rules_set_dst(&ca, in_units(join->dst, ha + hb, 0, ha));
    rules_set_dst(&cb, in_units(join->dst, ha + hb, ha, hb));
    if (!rules_admits(r, &ca) || !rules_admits(r, &cb)) {
        ir_op_free(&ca);
        ir_op_free(&cb);
        return;
    }
    ir_slots_replace(rules_slots(r), pa, ca);
    ir_slots_replace(rules_slots(r), pb, cb);
    rules_absorb(r, IR_CLASS_JOIN_IN_PLACE, pa > pb ? pa : pb, &j, 1);
}

/* Whether op reads (or, with `write`, writes) t. */
static bool op_touches(const struct ir_op *op, ir_tid t, bool write)
{
    int n = write ? ir_op_writes(op, NULL, 0) : ir_op_reads(op, NULL, 0);
    ir_tid *ts = malloc(sizeof *ts * (size_t)(n > 0 ? n : 1));
    if (!ts)
        abort();
    n = write ? ir_op_writes(op, ts, n) : ir_op_reads(op, ts, n);
    bool found = false;
    for (int k = 0; k < n && !found; k++)
        found = ts[k] == t;
    free(ts);
    return found;
}

/* Whether the first producer leaves the join's destination unread and its row index unwritten, as the seed asks
 * of every slot from the first producer on (the atoms ask it of the slots after it). */
static bool first_clear(const struct rules_rewriter *r, int32_t first, ir_tid table, ir_tid param)
{
    const struct ir_op *op = rules_slot(r, first);
    return !op_touches(op, table, false) && (param == IR_NONE || !op_touches(op, param, true));
}

/* The seed's own test of the slots from the first producer up to the join (dst_untouched's seed part, asked in its
 * place under the seed's rules): none reads the destination or writes its row index, and none but the producers pa
 * and pb writes the destination. */
static bool seed_clear(const struct rules_rewriter *r, int32_t first, int32_t j, int32_t pa, int32_t pb, ir_tid table,
                       ir_tid param)
{
    bool ok = true;
    for (int32_t k = first; k < j && ok; k++) {
        const struct ir_op *op = rules_slot(r, k);
        if (op)
            ok = first_clear(r, k, table, param) && (k == pa || k == pb || !op_touches(op, table, true));
    }
    return ok;
}

/* The two halves of a join, each read only by it, are written by their producers straight into their parts of every
 * unit of the joined tensor (of a table's rows, when the join lands in one); the join goes. Legal: nothing between
 * the first producer and the join touches the destination or writes its row index, and no one else sees a half. */
static void apply_join_in_place(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        if (!op || !rules_is(op, IR_KIND_JOIN) || op->dst.has_unit || (whole_asked() && !all_whole(op)))
            continue;
        const struct ir_join *jn = &op->spec.u.join;
        ir_tid a = op->ins[0], b = op->ins[1];
        int32_t pa = own_producer(r, a, j), pb = own_producer(r, b, j);
        int64_t units = jn->rows * jn->heads;
        if (pa < 0 || pb < 0 || pa == pb || ir_tensor_len(r->g, a) != units * (jn->wa / jn->heads) ||
            ir_tensor_len(r->g, b) != units * (jn->wb / jn->heads))
            continue;
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_FIRST] = pa < pb ? pa : pb;
        bind.slot[RULES_ROLE_PRODUCER] = pa;
        bind.slot[RULES_ROLE_MOVER] = pb;
        bind.slot[RULES_ROLE_CONSUMER] = j;
        bind.tensor[RULES_ROLE_INPUT] = a;
        bind.tensor[RULES_ROLE_OTHER] = b;
        bind.tensor[RULES_ROLE_TABLE] = op->dst.buf;
        bind.tensor[RULES_ROLE_PARAM] = op->dst.row == IR_ROWSEL_PARAM ? op->dst.row_param : IR_NONE;
        int32_t first = pa < pb ? pa : pb; /* after the join only under the seed's rules: its range is then empty */
        bool clear = rules_seed_rules() ? seed_clear(r, first, j, pa, pb, op->dst.buf, bind.tensor[RULES_ROLE_PARAM])
                                        : first_clear(r, first, op->dst.buf, bind.tensor[RULES_ROLE_PARAM]);
        if (clear &&
            rules_guards_hold(r, r->rule, &bind, NULL))
            place_halves(r, j, pa, pb);
    }
}

const struct rules_rule rules_rule_join_in_place = {
    "join_in_place", RULES_PLACE, builds_join_in_place, 1, apply_join_in_place, guards_join_in_place, RULES_NGUARDS(guards_join_in_place),
    RULES_MOTION_PLACE_UNITS,
    "each half of a join, read only by it, is written into its part of every unit of the join's destination: nothing "
    "from the first producer to the join touches the destination or writes its row index, and no one sees a half"};

/* ── strided_values ──────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_strided_values[] = {IR_CLASS_STRIDED_VALUES};

/* The attention reads its values' source in place of the slice: legal when it is the slice's one reader, the host
 * does not read the slice (no op writes it any more), and nothing between writes the source. */
static const struct rules_atom guards_strided_values[] = {
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "not_observed", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_RESULT, RULES_ADDED_BY("F8")},
    {.name = "untouched_source", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_SOURCE, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_FROM_SEED},
    {.name = "untouched_result", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER, RULES_ADDED_BY("F1")},
};

/* The slot before j of a slice (read whole) computing the attention's values, as wide as its kv heads' values, or
 * -1; its form in *sl. */
static int32_t values_slice(const struct rules_rewriter *r, int32_t j, struct rules_slice_form *sl)
{
    const struct ir_op *att = rules_slot(r, j);
    const struct ir_attention *a = &att->spec.u.attention;
    ir_tid vc = att->ins[2];
    int32_t i = ir_facts_producer(r->s, vc);
    const struct ir_op *op = i >= 0 && (i < j || rules_seed_rules()) ? rules_slot(r, i) : NULL; /* seed: any, F17 */
    if (!op || !rules_slice(op, sl) || (whole_asked() && (op->access[0].strided || !reads_whole(att, vc))))
        return -1;
    int64_t group = a->h / (a->kv > 0 ? a->kv : 1);
    return group > 0 && sl->width == a->h / group * a->vd ? i : -1;
}

/* An attention whose values are a part of every row of a table (a latent cache's latent) reads them where they lie;
 * the slice goes. Legal: the table is unwritten up to the attention, and no one else sees the slice. */
static void apply_strided_values(struct rules_rewriter *r)
{
    for (int32_t j = 0; j < ir_slots_len(r->s); j++) {
        const struct ir_op *op = rules_slot(r, j);
        if (!op || !rules_is(op, IR_KIND_ATTENTION))
            continue;
        struct rules_slice_form sl;
        int32_t i = values_slice(r, j, &sl);
        if (i < 0)
            continue;
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_PRODUCER] = i;
        bind.slot[RULES_ROLE_CONSUMER] = j;
        bind.tensor[RULES_ROLE_RESULT] = sl.y;
        bind.tensor[RULES_ROLE_SOURCE] = sl.x;
        if (!rules_guards_hold(r, r->rule, &bind, NULL))
            continue;
        read_slice_in_place(r, i, j, &sl, IR_CLASS_STRIDED_VALUES);
    }
}

const struct rules_rule rules_rule_strided_values = {
    "strided_values", RULES_PLACE, builds_strided_values, 1, apply_strided_values, guards_strided_values, RULES_NGUARDS(guards_strided_values),
    RULES_MOTION_READ_IN_PLACE,
    "an attention's values sliced out of every row of a table are read where they lie: the table is unwritten up to "
    "the attention and no one else sees the slice"};

/* ── cross_layer_launch ──────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_cross_layer_launch[] = {IR_CLASS_CROSS_LAYER_LAUNCH};

/* Each later row set moves up to the first one's slot: legal when it passes no other slot that writes what it reads
 * or reads or writes what it writes. */
static const struct rules_atom guards_cross_layer_launch[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* The row a lifted row set (reading its operands whole) writes at: a named index tensor, or a literal. */
struct row_key {
    ir_tid named;    /* IR_NONE for a literal */
    int64_t literal;
};

/* Whether op is a lifted row set reading its operands whole; its row in *k. */
static bool row_key_of(const struct ir_op *op, struct row_key *k)
{
    if (!op || !rules_is(op, IR_KIND_SET_ROW) || !all_whole(op))
        return false;
    const struct ir_rowidx *ix = &op->spec.u.set_row.index;
    k->named = ix->kind == IR_RIDX_NAMED && op->nins > 2 ? op->ins[2] : IR_NONE;
    k->literal = ix->kind == IR_RIDX_NAMED ? 0 : ix->literal;
    return true;
}

/* The key of a lifted row set: its row (a named index, or a literal). */
static bool row_set_key(const struct rules_rewriter *r, int32_t i, int64_t key[KEY_LEN])
{
    struct row_key k;
    if (!row_key_of(rules_slot(r, i), &k))
        return false;
    key[0] = k.named;
    key[1] = k.literal;
    return true;
}

/* Whether slots i and j are row sets at one row. */
static bool same_row(const struct rules_rewriter *r, int32_t i, int32_t j)
{
    return same_key(r, row_set_key, i, j);
}

/* Rows written into tables at one row (every layer's cache insert of a step) as one op at the first one's slot.
 * Legal: each later write moves up past nothing that touches what it reads or writes. */
static void apply_cross_layer_launch(struct rules_rewriter *r)
{
    int32_t *group = rules_xmalloc(sizeof *group * (size_t)(ir_slots_len(r->s) + 1));
    /* The row sets, once, by row: only they can join a group, and only at their own row. */
    struct keyed_slots sets = keyed_make(r, row_set_key);
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        if (!rules_slot(r, i) || !row_set_key(r, i, (int64_t[KEY_LEN]){0}))
            continue;
        int32_t n = grow_by_key(r, IR_CLASS_CROSS_LAYER_LAUNCH, i, same_row, false, group, &sets, row_set_key);
        if (n >= 2)
            fuse_at_first(r, IR_CLASS_CROSS_LAYER_LAUNCH, group, n, false);
    }
    keyed_free(&sets);
    free(group);
}

const struct rules_rule rules_rule_cross_layer_launch = {
    "cross_layer_launch", RULES_GROUP, builds_cross_layer_launch, 1, apply_cross_layer_launch,
    guards_cross_layer_launch, RULES_NGUARDS(guards_cross_layer_launch), RULES_MOTION_HOIST_TO_FIRST,
    "row sets at one row, across layers, run as one launch at the first one's slot: each later set moves up past "
    "nothing that writes what it reads or touches what it writes"};

/* ── rope_parts ──────────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_rope_parts[] = {IR_CLASS_ROPE_QK_ONE_LAUNCH};

/* Each later rotation moves up to the first one's slot: legal when it passes no slot (another rotation of the group
 * included) that writes what it reads or reads or writes what it writes. */
static const struct rules_atom guards_rope_parts[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* The key of a rotation: its tables (and so its base: the validator holds a table to one), its position, its head
 * width, and its rotated half with its pairing in the low bit (one launch turns one kind of pair). */
static bool rotation_key(const struct rules_rewriter *r, int32_t i, int64_t key[KEY_LEN])
{
    struct rules_rope_form f;
    if (!rules_rope(rules_slot(r, i), &f))
        return false;
    int64_t k[KEY_LEN] = {f.cos, f.sin, f.pos, f.hd, 2 * f.half + (f.adjacent ? 1 : 0)};
    memcpy(key, k, sizeof k);
    return true;
}

/* Whether slots i and j are rotations by one table at one position, of one head width, rotated half and pairing. */
static bool same_rotation(const struct rules_rewriter *r, int32_t i, int32_t j)
{
    return same_key(r, rotation_key, i, j);
}

/* A step's rotations of one row by one table at one position (normed alike or not at all) as one op over their
 * heads at the first one's slot. Legal: each later rotation moves up past nothing that writes what it reads or
 * touches what it writes. */
static void apply_rope_parts(struct rules_rewriter *r)
{
    int32_t *group = rules_xmalloc(sizeof *group * (size_t)(ir_slots_len(r->s) + 1));
    struct keyed_slots ropes = keyed_make(r, rotation_key);
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        if (!rules_slot(r, i) || !rotation_key(r, i, (int64_t[KEY_LEN]){0}))
            continue;
        int32_t n = grow_by_key(r, IR_CLASS_ROPE_QK_ONE_LAUNCH, i, same_rotation, true, group, &ropes, rotation_key);
        if (n >= 2 && group_admitted(r, IR_CLASS_ROPE_QK_ONE_LAUNCH, group, n, true))
            fuse_at_first(r, IR_CLASS_ROPE_QK_ONE_LAUNCH, group, n, true);
    }
    keyed_free(&ropes);
    free(group);
}

const struct rules_rule rules_rule_rope_parts = {
    "rope_parts", RULES_GROUP, builds_rope_parts, 1, apply_rope_parts, guards_rope_parts, RULES_NGUARDS(guards_rope_parts),
    RULES_MOTION_HOIST_TO_FIRST,
    "rotations by one table at one position run as one launch at the first one's slot: each later rotation moves up "
    "past nothing that writes what it reads or touches what it writes"};

/* ── horizontal_norm_rope_insert ─────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_horizontal_norm_rope_insert[] = {IR_CLASS_HORIZONTAL_NORM_ROPE_INSERT};

/* Each later normed rotation moves up to the first one's slot: legal when it passes no other slot that writes what it
 * reads or reads or writes what it writes. */
static const struct rules_atom guards_horizontal_norm_rope_insert[] = {
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
};

/* The tables a normed rotation rotates by: its rotation leaf's cos, sin and named position. */
struct rotation_tables {
    ir_tid cos, sin, pos;
};

/* Whether op has a per-head norm leaf and a rotation leaf; the first rotation's tables in *t. */
static bool normed_rotation(const struct ir_op *op, struct rotation_tables *t)
{
    int32_t n;
    const struct ir_op **leaves = leaves_of(op, &n);
    bool normed = false, found = false;
    for (int32_t k = 0; k < n; k++) {
        normed |= rules_plain_rms(leaves[k]);
        if (!found && rules_is(leaves[k], IR_KIND_ROPE) && leaves[k]->nins >= 3) {
            found = true;
            t->cos = leaves[k]->ins[1];
            t->sin = leaves[k]->ins[2];
            t->pos = leaves[k]->nins > 3 ? leaves[k]->ins[3] : IR_NONE;
        }
    }
    free(leaves);
    return normed && found;
}

/* The key of a normed rotation: its first rotation's tables and position. */
static bool normed_rotation_key(const struct rules_rewriter *r, int32_t i, int64_t key[KEY_LEN])
{
    struct rotation_tables tb;
    if (!normed_rotation(rules_slot(r, i), &tb))
        return false;
    int64_t k[KEY_LEN] = {tb.cos, tb.sin, tb.pos, 0, 0};
    memcpy(key, k, sizeof k);
    return true;
}

/* Whether slots i and j are normed rotations by one table at one position. */
static bool same_normed_rotation(const struct rules_rewriter *r, int32_t i, int32_t j)
{
    return same_key(r, normed_rotation_key, i, j);
}

/* Whether any leaf of any op at slots writes into a table's rows (a cache insert). */
static bool inserts_rows(const struct rules_rewriter *r, const int32_t *slots, int32_t n)
{
    bool any = false;
    for (int32_t i = 0; i < n && !any; i++) {
        int32_t nl;
        const struct ir_op **leaves = leaves_of(rules_slot(r, slots[i]), &nl);
        for (int32_t k = 0; k < nl && !any; k++)
            any = leaves[k]->dst.row != IR_ROWSEL_NONE;
        free(leaves);
    }
    return any;
}

/* A layer's normed rotations by one table at one position (its query and key branches, one inserting its row into
 * the cache) as one op at the first one's slot. Legal: each later one moves up past nothing that writes what it
 * reads or touches what it writes. */
static void apply_horizontal_norm_rope_insert(struct rules_rewriter *r)
{
    int32_t *group = rules_xmalloc(sizeof *group * (size_t)(ir_slots_len(r->s) + 1));
    struct keyed_slots rotations = keyed_make(r, normed_rotation_key);
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        if (!rules_slot(r, i) || !normed_rotation_key(r, i, (int64_t[KEY_LEN]){0}))
            continue;
        int32_t n = grow_by_key(r, IR_CLASS_HORIZONTAL_NORM_ROPE_INSERT, i, same_normed_rotation, false, group,
                                &rotations, normed_rotation_key);
        if (n >= 2 && inserts_rows(r, group, n))
            fuse_at_first(r, IR_CLASS_HORIZONTAL_NORM_ROPE_INSERT, group, n, false);
    }
    keyed_free(&rotations);
    free(group);
}

const struct rules_rule rules_rule_horizontal_norm_rope_insert = {
    "horizontal_norm_rope_insert", RULES_GROUP, builds_horizontal_norm_rope_insert, 1,
    apply_horizontal_norm_rope_insert, guards_horizontal_norm_rope_insert, RULES_NGUARDS(guards_horizontal_norm_rope_insert), RULES_MOTION_HOIST_TO_FIRST,
    "a layer's normed rotations by one table, one inserting into the cache, run as one op at the first one's slot: "
    "each later one moves up past nothing that writes what it reads or touches what it writes"};

/* ── qk_norm_rope_gate_split ─────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_qk_norm_rope_gate_split[] = {IR_CLASS_QK_NORM_ROPE_GATE_SPLIT};

/* The gate's projection moves down to the query's op: legal when it passes no slot that writes what it reads or
 * reads or writes what it writes. */
static const struct rules_atom guards_qk_norm_rope_gate_split[] = {
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_PRODUCER, .b = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
};

/* The first leaf of op that is a primitive of kind k, or NULL. */
static const struct ir_op *first_leaf_of(const struct ir_op *op, enum ir_kind k)
{
    int32_t n;
    const struct ir_op **leaves = leaves_of(op, &n);
    const struct ir_op *found = NULL;
    for (int32_t i = 0; i < n && !found; i++)
        if (rules_is(leaves[i], k))
            found = leaves[i];
    free(leaves);
    return found;
}

/* The gate a gated attention's result is multiplied by — the activation's input of the gated product — for op, the
 * attention: the product folded into the attention's store, or the gated product that is its result's one reader;
 * or IR_NONE. */
static ir_tid output_gate(const struct rules_rewriter *r, const struct ir_op *op)
{
    struct rules_binary_form b;
    if (rules_class(op) == IR_CLASS_ATTN_OUTPUT_GATE && op->nparts > 0)
        return rules_binary(&op->parts[op->nparts - 1], &b) && b.gated ? b.b : IR_NONE;
    int32_t n;
    int32_t *readers = readers_of(r, op->out, &n);
    ir_tid gate = IR_NONE;
    if (n == 1 && rules_binary(rules_slot(r, readers[0]), &b) && b.gated && (b.a == op->out || b.b == op->out))
        gate = b.a == op->out ? b.b : b.a;
    free(readers);
    return gate;
}

/* The gate's projection slot p and the query's normed rotation slot qk (p before qk, the projection of the
 * activation the query's product reads) for the gated attention at slot at; false when the shape is not there. */
static bool gate_and_query(const struct rules_rewriter *r, int32_t at, int32_t *p, int32_t *qk)
{
    const struct ir_op *op = rules_slot(r, at);
    const struct ir_op *attn = first_leaf_of(op, IR_KIND_ATTENTION);
    ir_tid gate = attn ? output_gate(r, op) : IR_NONE;
    if (gate == IR_NONE)
        return false;
    *p = ir_facts_maker(r->s, gate);
    *qk = ir_facts_maker(r->s, attn->ins[0]);
    struct rules_gemv_form gp;
    struct rotation_tables t;
    if (*p < 0 || *qk < 0 || *p >= *qk || !rules_gemv(rules_slot(r, *p), r->g, &gp) ||
        !normed_rotation(rules_slot(r, *qk), &t))
        return false;
    const struct ir_op *mm = first_leaf_of(rules_slot(r, *qk), IR_KIND_MATMUL);
    return mm && mm->ins[0] == gp.x;
}

/* A gated attention's gate — a product of the activation its query is projected from — folded into the op that
 * projects, norms and rotates the query: split, norms, rotation and gate as one op at the query's slot. Legal: the
 * gate's projection moves down past nothing that writes what it reads or touches what it writes. */
static void apply_qk_norm_rope_gate_split(struct rules_rewriter *r)
{
    for (int32_t at = 0; at < ir_slots_len(r->s); at++) {
        int32_t p, qk;
        if (!rules_slot(r, at) || !gate_and_query(r, at, &p, &qk))
            continue;
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_PRODUCER] = p;
        bind.slot[RULES_ROLE_CONSUMER] = qk;
        if (rules_guards_hold(r, r->rule, &bind, NULL))
            rules_pair(r, IR_CLASS_QK_NORM_ROPE_GATE_SPLIT, p, qk, qk);
    }
}

const struct rules_rule rules_rule_qk_norm_rope_gate_split = {
    "qk_norm_rope_gate_split", RULES_GROUP, builds_qk_norm_rope_gate_split, 1, apply_qk_norm_rope_gate_split,
    guards_qk_norm_rope_gate_split, RULES_NGUARDS(guards_qk_norm_rope_gate_split), RULES_MOTION_SINK_TO_CONSUMER,
    "a gated attention's gate projection joins the op projecting, norming and rotating its query: the projection "
    "moves down past nothing that writes what it reads or touches what it writes"};

/* ── elementwise_regions ─────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_elementwise_regions[] = {IR_CLASS_ELEMENTWISE_REGIONS};

/* Every member moves down to the region's last op: legal when each passes no slot outside the region that writes what
 * it reads or reads or writes what it writes. A member's result must not be state the host keeps (checked as each
 * joins). */
static const struct rules_atom guards_elementwise_regions[] = {
    {.name = "no_sink_past", .kind = RULES_ATOM_NO_SINK_PAST, .a = RULES_ROLE_EACH, .b = RULES_ROLE_ANCHOR,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
    {.name = "not_carried", .kind = RULES_ATOM_NOT_CARRIED, .t = RULES_ROLE_RESULT, RULES_FROM_SEED},
};

/* What a region member computes: its length and element type — a lifted pointwise op, or a lifted elementwise op
 * (a broadcast row allowed), its result in its own buffer from whole operands. */
struct region_form {
    int64_t n;
    enum ir_elem elem;
};

/* Whether op may be a region member; its form in *f. */
static bool region_member(const struct ir_op *op, const struct ir_graph *g, struct region_form *f)
{
    if (op->sym != IR_SYM_PRIM || !ir_dst_is_own(&op->dst) || !all_whole(op))
        return false;
    f->n = rules_is(op, IR_KIND_ELEMENTWISE) ? op->spec.u.elementwise.n : pointwise(op);
    f->elem = g->tensors[op->out].elem;
    return f->n >= 0;
}

/* Whether slot k is among the first n of members. */
static bool has_slot(const int32_t *members, int32_t n, int32_t k)
{
    for (int32_t i = 0; i < n; i++)
        if (members[i] == k)
            return true;
    return false;
}

/* A region growing towards its last op y: its members (room for every slot) and how many. */
struct region {
    int32_t y;
    struct region_form form;
    int32_t *members;
    int32_t n;
};

/* Whether p, computing t, joins the region: a member's form, and the guards hold with it. */
static bool region_takes(const struct rules_rewriter *r, struct region *rg, int32_t p, ir_tid t)
{
    struct region_form f;
    if (!region_member(rules_slot(r, p), r->g, &f) || f.n != rg->form.n || f.elem != rg->form.elem)
        return false;
    rg->members[rg->n] = p;
    struct rules_binding bind = rules_binding_empty();
    bind.slot[RULES_ROLE_ANCHOR] = rg->y;
    bind.set[RULES_ROLE_MEMBERS] = rg->members;
    bind.nset[RULES_ROLE_MEMBERS] = rg->n + 1;
    bind.tensor[RULES_ROLE_RESULT] = t;
    return rules_guards_hold(r, r->rule, &bind, NULL);
}

/* Add to the region the producers (before m) of member m's operands that may join; how many of m's operands the
 * region now feeds. *grew says whether any joined. */
static int region_feed(const struct rules_rewriter *r, struct region *rg, int32_t m, bool *grew)
{
    const struct ir_op *op = rules_slot(r, m);
    int fed = 0;
    for (int32_t k = 0; k < op->nins; k++) {
        ir_tid t = op->ins[k];
        int32_t p = ir_facts_producer(r->s, t);
        if (p < 0 || p >= m)
            continue;
        if (has_slot(rg->members, rg->n, p)) {
            fed++;
        } else if (region_takes(r, rg, p, t)) {
            rg->n++;
            fed++;
            *grew = true;
        }
    }
    return fed;
}

/* Grow the region ending at y to its fixed point; whether some member joins two of the region's results. */
static bool grow_region(const struct rules_rewriter *r, struct region *rg)
{
    bool joins = false, grew = true;
    int32_t *snapshot = rules_xmalloc(sizeof *snapshot * (size_t)(ir_slots_len(r->s) + 1));
    while (grew) {
        grew = false;
        int32_t n = rg->n;
        memcpy(snapshot, rg->members, sizeof *snapshot * (size_t)n);
        for (int32_t i = 0; i < n; i++)
            joins |= region_feed(r, rg, snapshot[i], &grew) >= 2;
    }
    free(snapshot);
    return joins;
}

/* A region of pointwise ops of one length and element type feeding one op (some member joining two of the region's
 * results) as one op at the last one's slot, a member's result read after the region written out beside it. Legal:
 * each member moves down past nothing outside the region that writes what it reads or touches what it writes. */
static void apply_elementwise_regions(struct rules_rewriter *r)
{
    struct region rg;
    rg.members = rules_xmalloc(sizeof *rg.members * (size_t)(ir_slots_len(r->s) + 1));
    for (int32_t y = ir_slots_len(r->s) - 1; y >= 0; y--) {
        const struct ir_op *sink = rules_slot(r, y);
        if (!sink || !region_member(sink, r->g, &rg.form))
            continue;
        rg.y = y;
        rg.members[0] = y;
        rg.n = 1;
        if (!grow_region(r, &rg) || rg.n < 3)
            continue;
        qsort(rg.members, (size_t)rg.n, sizeof *rg.members, rules_cmp_i32);
        ir_tid *ins;
        struct ir_access *access;
        int32_t nins = group_operands(r, rg.members, rg.n, false, &ins, &access);
        ir_tid out = sink->out;
        struct ir_dst dst = sink->dst;
        struct ir_op cand = rules_candidate_slots(r, IR_CLASS_ELEMENTWISE_REGIONS, rg.members, rg.n, ins, nins, out,
                                                  dst);
        bool ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        /* Every member precedes y, so the sorted members but the last are the ones that go. */
        if (ok)
            rules_fuse(r, IR_CLASS_ELEMENTWISE_REGIONS, y, rg.members, rg.n - 1, ins, access, nins, out, dst);
        free(ins);
        free(access);
    }
    free(rg.members);
}

const struct rules_rule rules_rule_elementwise_regions = {
    "elementwise_regions", RULES_GROUP, builds_elementwise_regions, 1, apply_elementwise_regions,
    guards_elementwise_regions, RULES_NGUARDS(guards_elementwise_regions), RULES_MOTION_GROUP_AT_LAST,
    "a region of pointwise ops of one length feeding one op runs as one op at its last slot: each member moves down "
    "past nothing outside the region that writes what it reads or touches what it writes"};

/* ── elementwise_chains ──────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_elementwise_chains[] = {IR_CLASS_ELEMENTWISE_CHAINS};

/* Each link's op moves up to the chain's first slot: legal when it passes no slot outside the chain that writes what
 * it reads or reads or writes what it writes. The carried result is read by nothing but the next link and is not
 * state the host keeps (its value is never stored). */
static const struct rules_atom guards_elementwise_chains[] = {
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER,
     RULES_FROM_SEED},
    {.name = "not_carried", .kind = RULES_ATOM_NOT_CARRIED, .t = RULES_ROLE_RESULT, RULES_FROM_SEED},
    {.name = "no_cross", .kind = RULES_ATOM_NO_CROSS, .a = RULES_ROLE_FIRST, .b = RULES_ROLE_EACH,
     .g = RULES_ROLE_MEMBERS, .forall = RULES_ROLE_MEMBERS, RULES_ADDED_BY("F15")},
};

/* Whether op carries cur on: a lifted pointwise elementwise op of n values with cur as exactly one operand, or a
 * lifted SiLU of cur. */
static bool carries(const struct ir_op *op, ir_tid cur, int64_t n)
{
    if (rules_is(op, IR_KIND_ELEMENTWISE))
        return op->spec.u.elementwise.n == n && pointwise(op) >= 0 && ((op->ins[0] == cur) != (op->ins[1] == cur));
    return rules_is(op, IR_KIND_SILU) && pointwise(op) >= 0 && op->ins[0] == cur;
}

/* The next live slot after k, or -1. */
static int32_t next_live(const struct rules_rewriter *r, int32_t k)
{
    for (int32_t i = k + 1; i < ir_slots_len(r->s); i++)
        if (rules_slot(r, i))
            return i;
    return -1;
}

/* The first slot after k that carries cur on (n values), or -1. Whether it is cur's one reader is a guard. Under
 * the seed's rules the link is the next live slot only (finding F15: fusecheck reaches past others, guarded). */
static int32_t chain_reader(const struct rules_rewriter *r, ir_tid cur, int64_t n, int32_t k)
{
    if (rules_seed_rules()) {
        int32_t next = next_live(r, k);
        return next >= 0 && carries(rules_slot(r, next), cur, n) ? next : -1;
    }
    int32_t count;
    int32_t *readers = readers_of(r, cur, &count);
    int32_t found = -1;
    for (int32_t i = 0; i < count && found < 0; i++)
        if (readers[i] > k && carries(rules_slot(r, readers[i]), cur, n))
            found = readers[i];
    free(readers);
    return found;
}

/* Grow the chain from its first slot (room for every slot); returns its length. */
static int32_t grow_chain(const struct rules_rewriter *r, int32_t *chain, int64_t n)
{
    int32_t len = 1;
    ir_tid cur = rules_slot(r, chain[0])->out;
    for (;;) {
        int32_t next = chain_reader(r, cur, n, chain[len - 1]);
        if (next < 0)
            break;
        chain[len] = next;
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_FIRST] = chain[0];
        bind.slot[RULES_ROLE_PRODUCER] = chain[len - 1];
        bind.slot[RULES_ROLE_CONSUMER] = next;
        bind.tensor[RULES_ROLE_RESULT] = cur;
        bind.set[RULES_ROLE_MEMBERS] = chain;
        bind.nset[RULES_ROLE_MEMBERS] = len + 1;
        if (!rules_guards_hold(r, r->rule, &bind, NULL))
            break;
        len++;
        cur = rules_slot(r, next)->out;
    }
    return len;
}

/* A run of elementwise ops of one length, each carrying the one before's result as exactly one operand (or a SiLU of
 * it), as one op at the first one's slot; the links' results are never stored. Legal: each link moves up past
 * nothing that writes what it reads or touches what it writes, and only the next link reads what a link carries. */
static void apply_elementwise_chains(struct rules_rewriter *r)
{
    int32_t *chain = rules_xmalloc(sizeof *chain * (size_t)(ir_slots_len(r->s) + 1));
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *first = rules_slot(r, i);
        if (!first || !rules_is(first, IR_KIND_ELEMENTWISE) || pointwise(first) < 0)
            continue;
        chain[0] = i;
        int32_t n = grow_chain(r, chain, first->spec.u.elementwise.n);
        if (n < 2)
            continue;
        ir_tid *ins;
        struct ir_access *access;
        int32_t nins = group_operands(r, chain, n, false, &ins, &access);
        const struct ir_op *last = rules_slot(r, chain[n - 1]);
        ir_tid out = last->out;
        struct ir_dst dst = last->dst;
        struct ir_op cand = rules_candidate_slots(r, IR_CLASS_ELEMENTWISE_CHAINS, chain, n, ins, nins, out, dst);
        bool ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        if (ok)
            rules_fuse(r, IR_CLASS_ELEMENTWISE_CHAINS, i, chain + 1, n - 1, ins, access, nins, out, dst);
        free(ins);
        free(access);
    }
    free(chain);
}

const struct rules_rule rules_rule_elementwise_chains = {
    "elementwise_chains", RULES_GROUP, builds_elementwise_chains, 1, apply_elementwise_chains,
    guards_elementwise_chains, RULES_NGUARDS(guards_elementwise_chains), RULES_MOTION_HOIST_TO_FIRST,
    "a chain of elementwise ops, each read only by the next, runs as one op at the first slot: each link moves up "
    "past nothing that writes what it reads or touches what it writes"};

/* ── recompute_fanout ────────────────────────────────────────────────────────────────────────────────────── */

static const enum ir_class builds_recompute_fanout[] = {IR_CLASS_RECOMPUTE_FANOUT};

/* The producer is recomputed inside each reader and goes: legal when the host does not read its result, every reader
 * of the result is one that recomputes it, and nothing between the producer and each reader writes its input. */
static const struct rules_atom guards_recompute_fanout[] = {
    {.name = "not_observed", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_RESULT, RULES_FROM_SEED},
    {.name = "readers_within", .kind = RULES_ATOM_READERS_WITHIN, .t = RULES_ROLE_RESULT, .g = RULES_ROLE_MEMBERS,
     RULES_FROM_SEED},
    {.name = "untouched_input", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_INPUT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_EACH, .forall = RULES_ROLE_MEMBERS, RULES_FROM_SEED},
    {.name = "untouched_result", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_EACH, .forall = RULES_ROLE_MEMBERS, RULES_ADDED_BY("F1")},
};

/* The slots after i reading t that are lifted pointwise ops, into members (room for every slot); their count. */
static int32_t pointwise_readers(const struct rules_rewriter *r, int32_t i, ir_tid t, int32_t *members)
{
    int32_t n, count = 0;
    int32_t *readers = readers_of(r, t, &n);
    for (int32_t k = 0; k < n; k++)
        if ((readers[k] > i || rules_seed_rules()) && pointwise(rules_slot(r, readers[k])) >= 0) /* seed: F17 */
            members[count++] = readers[k];
    free(readers);
    return count;
}

/* Whether the chip runs each reader with the producer at i inside it whole (stopping at the first refusal). */
static bool each_admitted(struct rules_rewriter *r, int32_t i, const int32_t *members, int32_t n)
{
    bool ok = true;
    for (int32_t k = 0; k < n && ok; k++) {
        int32_t pair[2] = {i, members[k]};
        ir_tid *ins;
        struct ir_access *access;
        int32_t nins = group_operands(r, pair, 2, false, &ins, &access);
        const struct ir_op *c = rules_slot(r, members[k]);
        struct ir_op cand = rules_candidate_slots(r, IR_CLASS_RECOMPUTE_FANOUT, pair, 2, ins, nins, c->out, c->dst);
        ok = rules_admits(r, &cand);
        ir_op_free(&cand);
        free(ins);
        free(access);
    }
    return ok;
}

/* Replace the reader at slot k by one op of the producer at i then the reader, covering both. */
static void recompute_in(struct rules_rewriter *r, int32_t i, int32_t k)
{
    int32_t pair[2] = {i, k};
    ir_tid *ins;
    struct ir_access *access;
    int32_t nins = group_operands(r, pair, 2, false, &ins, &access);
    const struct ir_op *producer = rules_slot(r, i);
    struct ir_op *parts = rules_xmalloc(sizeof *parts * 2);
    parts[0] = ir_op_clone(producer);
    parts[1] = ir_slots_take(rules_slots(r), k);
    int32_t ncovers = parts[0].ncovers + parts[1].ncovers;
    int32_t *covers = rules_xmalloc(sizeof *covers * (size_t)(ncovers ? ncovers : 1));
    memcpy(covers, parts[0].covers, sizeof *covers * (size_t)parts[0].ncovers);
    memcpy(covers + parts[0].ncovers, parts[1].covers, sizeof *covers * (size_t)parts[1].ncovers);
    qsort(covers, (size_t)ncovers, sizeof *covers, rules_cmp_i32);
    ir_tid out = parts[1].out;
    struct ir_dst dst = parts[1].dst;
    struct ir_op fused = ir_op_fused(IR_CLASS_RECOMPUTE_FANOUT, parts, 2, ins, access, nins, out, dst);
    ir_op_set_covers(&fused, covers, ncovers);
    ir_slots_put(rules_slots(r), k, fused);
    rules_record(r, IR_CLASS_RECOMPUTE_FANOUT, k);
    free(covers);
    free(ins);
    free(access);
}

/* A cheap pointwise op (an activation or a scale) read by several pointwise ops is recomputed inside each of them and
 * its result never stored. Legal: the host never reads the result, every reader recomputes it, and the producer's
 * input is unwritten up to each reader. */
static void apply_recompute_fanout(struct rules_rewriter *r)
{
    int32_t *members = rules_xmalloc(sizeof *members * (size_t)(ir_slots_len(r->s) + 1));
    for (int32_t i = 0; i < ir_slots_len(r->s); i++) {
        const struct ir_op *op = rules_slot(r, i);
        if (!op || !cheap(op) || pointwise(op) < 0)
            continue;
        int32_t n = pointwise_readers(r, i, op->out, members);
        if (n < 2)
            continue;
        struct rules_binding bind = rules_binding_empty();
        bind.slot[RULES_ROLE_PRODUCER] = i;
        bind.tensor[RULES_ROLE_RESULT] = op->out;
        bind.tensor[RULES_ROLE_INPUT] = op->ins[0];
        bind.set[RULES_ROLE_MEMBERS] = members;
        bind.nset[RULES_ROLE_MEMBERS] = n;
        if (!rules_guards_hold(r, r->rule, &bind, NULL) || !each_admitted(r, i, members, n))
            continue;
        for (int32_t k = 0; k < n; k++)
            recompute_in(r, i, members[k]);
        struct ir_op gone = ir_slots_take(rules_slots(r), i);
        ir_op_free(&gone);
    }
    free(members);
}

const struct rules_rule rules_rule_recompute_fanout = {
    "recompute_fanout", RULES_GROUP, builds_recompute_fanout, 1, apply_recompute_fanout, guards_recompute_fanout, RULES_NGUARDS(guards_recompute_fanout),
    RULES_MOTION_RECOMPUTE,
    "a cheap pointwise op read only by pointwise ops is recomputed inside each and goes: the host never reads its "
    "result and its input is unwritten up to each reader"};
