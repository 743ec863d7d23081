/* tests/test_oracle.c — the oracle: its symbolic atoms agree with the optimizer's own interpreter of the atoms
 * (rules/guards.c over ir/facts.c) on every schedule of up to 6 ops over 3 tensors that each atom's inputs span; it
 * proves every shipped rule (or refutes it with a counterexample that fails concretely on the faithful optimizer);
 * it refutes deliberately wrong rules; its counterexamples replay as diff failures under rules_drop_atom; its
 * index maps hold; translation validation passes a zoo optimization and catches a mutant's illegal firing. */
#include "check.h"
#include "oracle/oracle.h"
#include "models/models.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef FUSECHECK_SOURCE_DIR
#define FUSECHECK_SOURCE_DIR "."
#endif

#define FIXTURES FUSECHECK_SOURCE_DIR "/tests/rules"

/* Under a sanitizer every question costs some twenty times more: the agreement test then spans windows of up to 4
 * ops (tensor columns) and 2 ops (whole rows), the full spans (6 and 4) in optimized builds. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#define COLUMN_OPS 4
#define PAIR_OPS 2
#define RANDOM_SCHEDULES 200
#define ROW_FLAGS 1
#define Z3_SAMPLES 60
#else
#define COLUMN_OPS 6
#define PAIR_OPS 4
#define RANDOM_SCHEDULES 1500
#define ROW_FLAGS 2
#define Z3_SAMPLES 140
#endif

/* ── Agreement: the twins against the optimizer's interpreter ────────────────────────────────────────────── */

/* A schedule made into slots once, asked under many bindings. */
struct probe {
    struct oracle_sched *s;
    struct ir_graph *g;
    struct rules_rewriter r;
    long long asked, disagreed;
};

/* Build the probe's slots from its schedule. */
static void probe_open(struct probe *p)
{
    memset(&p->r, 0, sizeof p->r);
    p->r.s = oracle_sched_slots(p->s, &p->g);
    p->r.g = p->g;
}

static void probe_close(struct probe *p)
{
    oracle_sched_slots_free(p->r.s, p->g);
    p->r.s = NULL;
    p->g = NULL;
}

/* Ask one atom under one binding both ways; count a disagreement (printing the first few). */
static void ask(struct probe *p, const struct rules_atom *at, const struct rules_binding *b)
{
    bool concrete = rules_atom_holds(&p->r, at, b);
    bool twin = oracle_atom_twin(p->s, b, at);
    p->asked++;
    if (concrete == twin)
        return;
    if (p->disagreed++ < 5) {
        char *text = oracle_sched_text(p->s);
        fprintf(stderr, "disagree on %s (t=%d a=%d b=%d, g of %d): facts %d, twin %d\n%s", rules_atom_name(at->kind),
                (int)b->tensor[at->t], (int)b->slot[at->a], (int)b->slot[at->b], (int)b->nset[at->g], concrete,
                twin, text);
        free(text);
    }
}

/* The atom of kind k over roles t (INPUT), a (PRODUCER), b (CONSUMER), g (MEMBERS), forall none. */
static struct rules_atom atom_of(enum rules_atom_kind k)
{
    struct rules_atom at = {"probe", k, RULES_ROLE_INPUT, RULES_ROLE_PRODUCER, RULES_ROLE_CONSUMER,
                            RULES_ROLE_MEMBERS, RULES_ROLE_NONE, RULES_ORIGIN_SEED, NULL, false};
    return at;
}

/* Whether the atom kind reads the slot a, the slot b, the set g, the tensor's flags. */
static bool uses_a(enum rules_atom_kind k) { return k != RULES_ATOM_NOT_OBSERVED && k != RULES_ATOM_NOT_CARRIED && k != RULES_ATOM_READERS_WITHIN; }
static bool uses_b(enum rules_atom_kind k)
{
    return k == RULES_ATOM_UNTOUCHED || k == RULES_ATOM_UNREAD_UNWRITTEN || k == RULES_ATOM_NO_CROSS ||
           k == RULES_ATOM_NO_SINK_PAST;
}
static bool uses_g(enum rules_atom_kind k)
{
    return uses_b(k) || k == RULES_ATOM_READERS_WITHIN || k == RULES_ATOM_READ_ONLY_WITHIN;
}

/* Bind g to the slots of mask. */
static void bind_mask(struct rules_binding *b, int32_t *store, unsigned mask, int n)
{
    int32_t m = 0;
    for (int k = 0; k < n; k++)
        if (mask & (1u << k))
            store[m++] = k;
    b->set[RULES_ROLE_MEMBERS] = store;
    b->nset[RULES_ROLE_MEMBERS] = m;
}

/* Every g the probe asks for slots a, b over n ops: every subset when n ≤ 4, else every subset of the slots
 * between a and b together with a and b (the others cannot matter by the atoms' meanings), and for atoms whose g
 * ranges over readers, every subset. */
static void each_g(struct probe *p, const struct rules_atom *at, struct rules_binding *b, int n)
{
    int32_t store[8];
    if (!uses_g(at->kind)) {
        ask(p, at, b);
        return;
    }
    bool all = n <= 4 || at->kind == RULES_ATOM_READERS_WITHIN || at->kind == RULES_ATOM_READ_ONLY_WITHIN;
    unsigned span = 0;
    for (int k = 0; k < n; k++)
        if (all || (k >= b->slot[at->a] && k <= b->slot[at->b]))
            span |= 1u << k;
    for (unsigned mask = 0;; mask = (mask - span) & span) {
        bind_mask(b, store, mask, n);
        ask(p, at, b);
        if (mask == span)
            break;
    }
}

/* Every binding of the slots (a, b in -1..n-1, as the kind reads them) with tensor t. */
static void each_binding(struct probe *p, enum rules_atom_kind k, ir_tid t, int n)
{
    struct rules_atom at = atom_of(k);
    struct rules_binding b = rules_binding_empty();
    b.tensor[RULES_ROLE_INPUT] = t;
    for (int a = -1; a < (uses_a(k) ? n : 0); a++)
        for (int bb = -1; bb < (uses_b(k) ? n : 0); bb++) {
            b.slot[RULES_ROLE_PRODUCER] = a;
            b.slot[RULES_ROLE_CONSUMER] = bb;
            each_g(p, &at, &b, n);
        }
}

/* The kinds whose meaning speaks of one tensor's readers, writers or flags. */
static const enum rules_atom_kind tensor_kinds[] = {
    RULES_ATOM_ONLY_READER,      RULES_ATOM_FIRST_READER, RULES_ATOM_READERS_WITHIN, RULES_ATOM_UNTOUCHED,
    RULES_ATOM_UNREAD_UNWRITTEN, RULES_ATOM_NOT_OBSERVED, RULES_ATOM_NOT_CARRIED,
};

/* Part A: every column of tensor 0 over 1..6 ops (each op reads it or not, writes it or not), every flag pair of it
 * for the kinds that read flags, every binding; the other two tensors touched differently so a twin that looks at
 * the wrong tensor disagrees. Tensors 1, 2 and none are bound too on the smaller windows. */
static void agreement_columns(struct probe *p)
{
    for (int n = 1; n <= COLUMN_OPS; n++) {
        unsigned columns = 1u << (2 * n);
        for (unsigned col = 0; col < columns; col++)
            for (int flags = 0; flags < 4; flags++) {
                p->s = oracle_sched_new(n, 3);
                for (int k = 0; k < n; k++) {
                    bool r = col >> (2 * k) & 1, w = col >> (2 * k + 1) & 1;
                    p->s->reads[k * 3 + 0] = r;
                    p->s->writes[k * 3 + 0] = w;
                    p->s->reads[k * 3 + 1] = !r;
                    p->s->writes[k * 3 + 1] = !w && k % 2;
                    p->s->reads[k * 3 + 2] = p->s->writes[k * 3 + 2] = true;
                }
                p->s->observed[0] = flags & 1;
                p->s->carried[0] = flags & 2;
                p->s->observed[1] = true;
                p->s->carried[2] = true;
                probe_open(p);
                for (size_t i = 0; i < sizeof tensor_kinds / sizeof tensor_kinds[0]; i++) {
                    enum rules_atom_kind k = tensor_kinds[i];
                    bool flag_kind = k == RULES_ATOM_NOT_OBSERVED || k == RULES_ATOM_NOT_CARRIED;
                    if (flags && !flag_kind)
                        continue;
                    each_binding(p, k, 0, n);
                    if (n <= 3 || flag_kind)
                        for (ir_tid t = -1; t < 3; t += 2)
                            each_binding(p, k, t, n);
                }
                probe_close(p);
                oracle_sched_free(p->s);
            }
    }
}

/* Set op k's row of a 3-tensor schedule from 6 bits: reads of t0..t2, then writes. */
static void set_row(struct oracle_sched *s, int k, unsigned bits)
{
    for (int t = 0; t < 3; t++) {
        s->reads[k * 3 + t] = bits >> t & 1;
        s->writes[k * 3 + t] = bits >> (3 + t) & 1;
    }
}

/* Ask an op-kind atom with the mover at slot m: its partner slot every value -1..n-1, g empty, {o} or all. */
static void ask_mover(struct probe *p, enum rules_atom_kind k, int n, int m, int o)
{
    struct rules_atom at = atom_of(k);
    struct rules_binding b = rules_binding_empty();
    int32_t store[8];
    bool mover_is_b = k == RULES_ATOM_NO_CROSS;
    unsigned masks[3] = {0, 1u << o, (1u << n) - 1};
    for (int x = -1; x < n; x++) {
        b.slot[RULES_ROLE_PRODUCER] = mover_is_b ? x : m;
        b.slot[RULES_ROLE_CONSUMER] = mover_is_b ? m : x;
        for (int gi = 0; gi < 3; gi++) {
            bind_mask(&b, store, masks[gi], n);
            ask(p, &at, &b);
        }
    }
}

/* Part B: the kinds that speak of whole ops (no_cross, no_sink_past, read_only_within): every schedule of up to 2
 * ops over 3 tensors with every binding; and on windows of 3 and 4 ops, every pair of rows for the moving op and one
 * other op at every pair of positions, the other ops touching nothing or everything, every binding of the moving
 * op's partner slot and g empty, the other op, or all. */
static void agreement_rows(struct probe *p)
{
    static const enum rules_atom_kind kinds[] = {RULES_ATOM_NO_CROSS, RULES_ATOM_NO_SINK_PAST,
                                                 RULES_ATOM_READ_ONLY_WITHIN};
    for (int n = 1; n <= 2; n++)
        for (unsigned rows = 0; rows < (1u << (6 * n)); rows++)
            for (int flags = 0; flags < ROW_FLAGS; flags++) {
                p->s = oracle_sched_new(n, 3);
                for (int k = 0; k < n; k++)
                    set_row(p->s, k, rows >> (6 * k) & 63);
                p->s->observed[1] = flags;
                p->s->carried[2] = flags;
                probe_open(p);
                for (int i = 0; i < 3; i++)
                    each_binding(p, kinds[i], 0, n);
                probe_close(p);
                oracle_sched_free(p->s);
            }
    for (int n = 3; n <= PAIR_OPS; n++)
        for (int m = 0; m < n; m++)
            for (int o = 0; o < n; o++)
                for (int fill = 0; fill < 2 && o != m; fill++)
                    for (unsigned mover = 0; mover < 64; mover++) {
                        p->s = oracle_sched_new(n, 3);
                        p->s->observed[0] = p->s->carried[1] = true;
                        for (int k = 0; k < n; k++)
                            set_row(p->s, k, fill ? 63 : 0);
                        set_row(p->s, m, mover);
                        for (unsigned other = 0; other < 64; other++) {
                            set_row(p->s, o, other);
                            probe_open(p);
                            for (int i = 0; i < 3; i++)
                                ask_mover(p, kinds[i], n, m, o);
                            probe_close(p);
                        }
                        oracle_sched_free(p->s);
                    }
}

/* A deterministic pseudo-random number (xorshift). */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A random schedule of 6 ops over 3 tensors, flags and roles included. */
static struct oracle_sched *random_sched(uint64_t *rng)
{
    struct oracle_sched *s = oracle_sched_new(6, 3);
    for (int k = 0; k < 6; k++)
        set_row(s, k, (unsigned)(next_random(rng) & 63));
    for (int t = 0; t < 3; t++) {
        unsigned x = (unsigned)next_random(rng);
        s->observed[t] = x & 1;
        s->carried[t] = x & 2;
        s->role[t] = (x >> 2) % 3 == 0 ? IR_ROLE_STATE : (x >> 2) % 3 == 1 ? IR_ROLE_ACTIVATION : IR_ROLE_INPUT;
    }
    return s;
}

/* A random binding over a 6-op, 3-tensor schedule (sets in store). */
static struct rules_binding random_binding(uint64_t *rng, int32_t *store)
{
    struct rules_binding b = rules_binding_empty();
    b.tensor[RULES_ROLE_INPUT] = (ir_tid)(next_random(rng) % 4) - 1;
    b.slot[RULES_ROLE_PRODUCER] = (int32_t)(next_random(rng) % 7) - 1;
    b.slot[RULES_ROLE_CONSUMER] = (int32_t)(next_random(rng) % 7) - 1;
    bind_mask(&b, store, (unsigned)(next_random(rng) & 63), 6);
    return b;
}

/* Part C: random full schedules of 6 ops over 3 tensors, random bindings, every kind (the quantified form too). */
static void agreement_random(struct probe *p, int schedules)
{
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < schedules; i++) {
        p->s = random_sched(&rng);
        probe_open(p);
        for (int j = 0; j < 24; j++) {
            int32_t store[8], each[8];
            struct rules_binding b = random_binding(&rng, store);
            for (int k = 0; k < RULES_ATOM_COUNT; k++) {
                struct rules_atom at = atom_of((enum rules_atom_kind)k);
                ask(p, &at, &b);
                /* The same atom under a quantifier over a second set, EACH standing for a or b. */
                struct rules_binding q = b;
                int32_t m = 0;
                unsigned mask = (unsigned)(next_random(&rng) & 63);
                for (int x = 0; x < 6; x++)
                    if (mask & (1u << x))
                        each[m++] = x;
                q.set[RULES_ROLE_PRODUCERS] = each;
                q.nset[RULES_ROLE_PRODUCERS] = m;
                at.forall = RULES_ROLE_PRODUCERS;
                if (j & 1)
                    at.a = RULES_ROLE_EACH;
                else
                    at.b = RULES_ROLE_EACH;
                ask(p, &at, &q);
            }
        }
        probe_close(p);
        oracle_sched_free(p->s);
    }
}

/* Part D: the twin's two interpreters — evaluated, and built as a Z3 formula and decided — agree on samples. */
static void agreement_z3(int samples)
{
    uint64_t rng = 0x243f6a8885a308d3ULL;
    int bad = 0, failed = 0;
    for (int i = 0; i < samples; i++) {
        struct oracle_sched *s = random_sched(&rng);
        int32_t store[8];
        struct rules_binding b = random_binding(&rng, store);
        struct rules_atom at = atom_of((enum rules_atom_kind)(i % RULES_ATOM_COUNT));
        int z = oracle_atom_twin_z3(s, &b, &at);
        failed += z < 0;
        bad += z >= 0 && (z == 1) != oracle_atom_twin(s, &b, &at);
        oracle_sched_free(s);
    }
    CHECKF(failed == 0, "%d of %d Z3 evaluations failed", failed, samples);
    CHECKF(bad == 0, "the Z3 twin and the evaluated twin disagree on %d of %d samples", bad, samples);
}

/* The whole agreement test. */
static void test_agreement(void)
{
    struct probe p;
    memset(&p, 0, sizeof p);
    agreement_columns(&p);
    long long columns = p.asked;
    agreement_rows(&p);
    long long rows = p.asked - columns;
    agreement_random(&p, RANDOM_SCHEDULES);
    CHECKF(p.disagreed == 0, "the twins and the facts disagree on %lld of %lld questions", p.disagreed, p.asked);
    CHECKF(columns > 100000 && rows > 100000, "too few questions asked: %lld + %lld", columns, rows);
    printf("agreement: %lld questions (%lld on tensor columns up to %d ops, %lld on op rows up to %d ops), "
           "%lld disagreements\n",
           p.asked, columns, COLUMN_OPS, rows, PAIR_OPS > 2 ? PAIR_OPS : 2, p.disagreed);
    agreement_z3(Z3_SAMPLES);
}

/* ── The shipped rules ───────────────────────────────────────────────────────────────────────────────────── */

/* What the outcomes of one rule's proof said. */
struct verdicts {
    int consistent, dataflow, dataflow_a5, index, index_proved;
    enum oracle_verdict faithful, a5;
    struct oracle_sched *cex; /* the faithful refutation's schedule (a copy) */
};

/* A copy of a schedule. */
static struct oracle_sched *copy_sched(const struct oracle_sched *s)
{
    struct oracle_sched *c = oracle_sched_new(s->nops, s->ntensors);
    size_t cells = (size_t)s->nops * (size_t)s->ntensors;
    memcpy(c->reads, s->reads, cells * sizeof *c->reads);
    memcpy(c->writes, s->writes, cells * sizeof *c->writes);
    memcpy(c->observed, s->observed, (size_t)s->ntensors * sizeof *c->observed);
    memcpy(c->carried, s->carried, (size_t)s->ntensors * sizeof *c->carried);
    memcpy(c->role, s->role, (size_t)s->ntensors * sizeof *c->role);
    c->bind = s->bind;
    for (int g = 0; g < RULES_ROLE_COUNT; g++)
        if (s->bind.set[g])
            oracle_sched_set(c, (enum rules_role)g, s->bind.set[g], s->bind.nset[g]);
    c->half[0] = s->half[0];
    c->half[1] = s->half[1];
    memcpy(c->note, s->note, sizeof c->note);
    return c;
}

/* Collect a rule's outcomes. */
static void collect(const struct oracle_outcome *o, void *ctx)
{
    struct verdicts *v = ctx;
    if (strcmp(o->obligation, "assumptions satisfiable") == 0)
        v->consistent += o->verdict == ORACLE_PROVED;
    else if (strcmp(o->obligation, "dataflow") == 0) {
        v->dataflow++;
        v->faithful = o->verdict;
        if (o->cex && !v->cex)
            v->cex = copy_sched(o->cex);
    } else if (strcmp(o->obligation, "dataflow under A5") == 0) {
        v->dataflow_a5++;
        v->a5 = o->verdict;
    } else if (strncmp(o->obligation, "index:", 6) == 0) {
        v->index++;
        v->index_proved += o->verdict == ORACLE_PROVED;
    }
}

/* Whether the guards of rule (atom `drop` left out) hold on a schedule by the optimizer's own interpreter. */
static bool guards_hold_concretely(const struct rules_rule *rule, const char *drop, const struct oracle_sched *s)
{
    struct ir_graph *g;
    struct rules_rewriter r;
    memset(&r, 0, sizeof r);
    r.s = oracle_sched_slots(s, &g);
    r.g = g;
    bool all = true;
    for (int i = 0; i < rule->nguards && all; i++)
        if (!drop || strcmp(rule->guards[i].name, drop) != 0)
            all = rules_atom_holds(&r, &rule->guards[i], &s->bind);
    oracle_sched_slots_free(r.s, g);
    return all;
}

/* Whether a faithful rule's counterexample fails concretely: its replay graph differs under the faithful optimizer. */
static bool replays_faithfully(const struct rules_rule *rule, const struct oracle_sched *cex)
{
    struct oracle_replay rp;
    char err[IR_ERR_LEN];
    if (oracle_replay_graph(rule, NULL, cex, FIXTURES, &rp, err)) {
        fprintf(stderr, "%s: no replay: %s\n", rule->name, err);
        return false;
    }
    struct ir_graph *g = ir_parse(rp.text, strlen(rp.text), rule->name, err);
    bool differs = false;
    int fired = 0;
    if (!g || oracle_replay_diff(g, rp.shim, rp.hold, NULL, rule->name, &differs, &fired, err))
        fprintf(stderr, "%s: replay failed: %s\n", rule->name, err);
    ir_graph_free(g);
    oracle_replay_free(&rp);
    return differs && fired > 0;
}

/* Every shipped rule: its assumptions admit a firing, its index maps hold, and its dataflow obligation is proved —
 * or refuted only through a state result (proved under A5) with a counterexample the optimizer's own interpreter
 * accepts and that fails concretely on the faithful optimizer (a real bug the report names). */
static void test_shipped(void)
{
    const struct rules_rule *list[256];
    int n = oracle_rules(list, 256), proved = 0, real = 0;
    struct oracle_options opt = oracle_defaults();
    CHECK(n >= 44);
    CHECK(oracle_rule_find("add_norm") && oracle_rule_find("argmax_advance") && oracle_rule_find("fused_quant"));
    for (int i = 0; i < n && i < 256; i++) {
        struct verdicts v;
        memset(&v, 0, sizeof v);
        oracle_prove(list[i], NULL, &opt, collect, &v);
        CHECKF(v.consistent == 1, "%s: its assumptions admit no firing", list[i]->name);
        CHECKF(v.dataflow == 1, "%s: no dataflow obligation", list[i]->name);
        CHECKF(v.index == v.index_proved, "%s: an index map is not proved", list[i]->name);
        if (list[i]->kind == RULES_PLACE)
            CHECKF(v.index >= 1, "%s: a placement without index obligations", list[i]->name);
        if (v.faithful == ORACLE_PROVED) {
            proved++;
        } else {
            CHECKF(v.faithful == ORACLE_REFUTED && v.a5 == ORACLE_PROVED,
                   "%s: dataflow %s, under A5 %s", list[i]->name, oracle_verdict_name(v.faithful),
                   oracle_verdict_name(v.a5));
            CHECKF(v.cex && guards_hold_concretely(list[i], NULL, v.cex),
                   "%s: the counterexample does not satisfy the guards concretely", list[i]->name);
            bool legal = v.cex ? oracle_motion_legal(v.cex, list[i], NULL) : true;
            CHECKF(!legal, "%s: the counterexample's motion is legal concretely", list[i]->name);
            bool replayed = v.cex && replays_faithfully(list[i], v.cex);
            CHECKF(replayed, "%s: the counterexample does not fail concretely", list[i]->name);
            real += replayed;
        }
        oracle_sched_free(v.cex);
    }
    printf("shipped: %d rules, %d proved, %d refuted with a concrete diff failure (state results)\n", n, proved,
           real);
    CHECK(proved >= 30);
}

/* ── Deliberately wrong rules ────────────────────────────────────────────────────────────────────────────── */

/* Each wrong rule is written here with a shipped rule's name, so the oracle assumes that rule's matcher's premises
 * (what the matched ops read and write), and a guard set that misses what makes the motion legal. */
static const enum ir_class builds_test[] = {IR_CLASS_ADD_NORM};

/* A fusion past a write of its input: add_norm's sink with the first summand left unchecked. */
static const struct rules_atom guards_sink_past_write[] = {
    {.name = "first_reader", .kind = RULES_ATOM_FIRST_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER},
    {.name = "untouched_b", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_OTHER, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER},
};
static const struct rules_rule sink_past_write = {
    "add_norm", RULES_GROUP, builds_test, 1, NULL, guards_sink_past_write, 2, RULES_MOTION_SINK_TO_CONSUMER,
    "wrong: nothing checks that the first summand is unwritten up to the norm"};

/* A row write over a row read between: the table is checked unwritten between, not unread. */
static const struct rules_atom guards_row_over_read[] = {
    {.name = "only_reader", .kind = RULES_ATOM_ONLY_READER, .t = RULES_ROLE_RESULT, .a = RULES_ROLE_CONSUMER},
    {.name = "not_observed", .kind = RULES_ATOM_NOT_OBSERVED, .t = RULES_ROLE_RESULT},
    {.name = "table_unwritten", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_TABLE, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER},
    {.name = "index_untouched", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_PARAM, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER},
};
static const struct rules_rule row_over_read = {
    "row_write", RULES_PLACE, builds_test, 1, NULL, guards_row_over_read, 4, RULES_MOTION_PLACE_ROWS,
    "wrong: a read of the table between the producer and the row set sees the row early"};

/* A dropped kept result: a slice read in place although another op, or the host, reads the slice. */
static const struct rules_atom guards_dropped_result[] = {
    {.name = "untouched_source", .kind = RULES_ATOM_UNTOUCHED, .t = RULES_ROLE_SOURCE, .a = RULES_ROLE_PRODUCER,
     .b = RULES_ROLE_CONSUMER},
};
static const struct rules_rule dropped_result = {
    "slice_read", RULES_PLACE, builds_test, 1, NULL, guards_dropped_result, 1, RULES_MOTION_READ_IN_PLACE,
    "wrong: the slice's result goes though another op or the host reads it"};

/* What a wrong rule's proof found. */
struct refutation {
    const struct rules_rule *rule;
    enum oracle_verdict v;
    char note[ORACLE_REASON_LEN];
    bool guards_hold, motion_breaks, shape;
};

/* Whether some op strictly between slots a and b of s reads (or writes) tensor t. */
static bool touched_between(const struct oracle_sched *s, int a, int b, int t, bool write)
{
    for (int k = a + 1; k < b; k++)
        if (t >= 0 && (write ? s->writes : s->reads)[k * s->ntensors + t])
            return true;
    return false;
}

/* Whether the counterexample is the mistake the wrong rule was written to make. */
static bool the_mistake(const struct rules_rule *rule, const struct oracle_sched *s)
{
    int p = s->bind.slot[RULES_ROLE_PRODUCER], c = s->bind.slot[RULES_ROLE_CONSUMER];
    if (rule == &sink_past_write)
        return touched_between(s, p, c, s->bind.tensor[RULES_ROLE_INPUT], true);
    if (rule == &row_over_read)
        return touched_between(s, p, c, s->bind.tensor[RULES_ROLE_TABLE], false);
    int t = s->bind.tensor[RULES_ROLE_RESULT];
    bool other_reader = false;
    for (int k = 0; k < s->nops; k++)
        other_reader |= k != c && s->reads[k * s->ntensors + t];
    return s->observed[t] || s->carried[t] || other_reader;
}

/* Keep the dataflow outcome, and check its counterexample with the concrete interpreters. */
static void keep_refutation(const struct oracle_outcome *o, void *ctx)
{
    struct refutation *r = ctx;
    if (strcmp(o->obligation, "dataflow under A5") != 0 && strcmp(o->obligation, "dataflow") != 0)
        return;
    r->v = o->verdict;
    if (!o->cex)
        return;
    snprintf(r->note, sizeof r->note, "%s", o->cex->note);
    r->guards_hold = guards_hold_concretely(r->rule, NULL, o->cex);
    r->motion_breaks = !oracle_motion_legal(o->cex, r->rule, NULL);
    r->shape = the_mistake(r->rule, o->cex);
}

/* Each wrong rule is refuted (under A5, so not through a state result) by a counterexample that makes the rule's
 * mistake, that the optimizer's interpreter accepts, and whose motion breaks a dependence concretely. */
static void test_wrong_rules(void)
{
    const struct rules_rule *wrong[] = {&sink_past_write, &row_over_read, &dropped_result};
    struct oracle_options opt = oracle_defaults();
    opt.fresh_results = true;
    for (int i = 0; i < 3; i++) {
        struct refutation r;
        memset(&r, 0, sizeof r);
        r.rule = wrong[i];
        r.v = ORACLE_UNKNOWN;
        oracle_prove(wrong[i], NULL, &opt, keep_refutation, &r);
        CHECKF(r.v == ORACLE_REFUTED, "%s: %s", wrong[i]->what, oracle_verdict_name(r.v));
        CHECKF(r.guards_hold && r.motion_breaks, "%s: counterexample not concrete (%s)", wrong[i]->what, r.note);
        CHECKF(r.shape, "%s: the counterexample is another mistake (%s)", wrong[i]->what, r.note);
        printf("%s — refuted: %s\n", wrong[i]->what, r.note);
    }
}

/* ── Counterexamples replay ──────────────────────────────────────────────────────────────────────────────── */

/* The mutant outcome of one atom: its counterexample (a copy). */
struct mutant_cex {
    const char *atom;
    enum oracle_verdict v;
    struct oracle_sched *cex;
};

static void keep_mutant(const struct oracle_outcome *o, void *ctx)
{
    struct mutant_cex *m = ctx;
    /* The first outcome is the obligation under the options' basis (a refuted one is followed by its A5 form). */
    if (!o->dropped || strcmp(o->dropped, m->atom) != 0 || m->v != ORACLE_UNKNOWN)
        return;
    m->v = o->verdict;
    if (o->cex)
        m->cex = copy_sched(o->cex);
}

/* For a few atoms, the mutant's counterexample becomes a graph on which the optimizer with that atom dropped (the
 * test hook rules_drop_atom) fires and gives a different result, while the faithful optimizer does not. */
static void test_replay(void)
{
    /* rule, atom, and whether the rule needs A5 to be proved (then its mutants are judged under A5). */
    static const char *const cases[][3] = {
        {"add_norm", "untouched_a", "A5"},       {"add_norm", "first_reader", "A5"},
        {"row_write", "table_untouched", "A5"},  {"gemv_bias", "no_cross", ""},
        {"head_norm_rope", "no_sink_past", ""},  {"recompute_fanout", "untouched_input", "A5"},
    };
    struct oracle_options opt = oracle_defaults();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct rules_rule *rule = oracle_rule_find(cases[i][0]);
        CHECK(rule != NULL);
        if (!rule)
            continue;
        /* The mutant's own obligation, under the basis that proves the rule. */
        opt.fresh_results = cases[i][2][0] != '\0';
        struct mutant_cex m = {cases[i][1], ORACLE_UNKNOWN, NULL};
        oracle_prove(rule, m.atom, &opt, keep_mutant, &m);
        CHECKF(m.v == ORACLE_REFUTED && m.cex, "%s:%s is not shown necessary", cases[i][0], cases[i][1]);
        if (!m.cex)
            continue;
        CHECKF(guards_hold_concretely(rule, m.atom, m.cex), "%s:%s: the counterexample breaks another guard",
               cases[i][0], cases[i][1]);
        struct oracle_replay rp;
        char err[IR_ERR_LEN], spec[256];
        int rc = oracle_replay_graph(rule, m.atom, m.cex, FIXTURES, &rp, err);
        CHECKF(rc == 0, "%s:%s: %s", cases[i][0], cases[i][1], err);
        struct ir_graph *g = rc == 0 ? ir_parse(rp.text, strlen(rp.text), "replay", err) : NULL;
        CHECKF(rc != 0 || g, "%s:%s: the replay graph does not parse: %s", cases[i][0], cases[i][1], err);
        if (g) {
            snprintf(spec, sizeof spec, "%s:%s", cases[i][0], cases[i][1]);
            bool mutant_differs = false, faithful_differs = true;
            int mutant_fired = 0, faithful_fired = 0;
            CHECK(oracle_replay_diff(g, rp.shim, rp.hold, spec, rule->name, &mutant_differs, &mutant_fired, err) == 0);
            CHECK(oracle_replay_diff(g, rp.shim, rp.hold, NULL, rule->name, &faithful_differs, &faithful_fired, err) ==
                  0);
            CHECKF(mutant_fired > 0 && mutant_differs, "%s: the mutant does not fail on the replay", spec);
            CHECKF(!faithful_differs, "%s: the faithful optimizer fails on the replay", spec);
            CHECK(strstr(rp.text, "# replay: fusecheck diff FILE --shim") != NULL);
            ir_graph_free(g);
        }
        if (rc == 0)
            oracle_replay_free(&rp);
        oracle_sched_free(m.cex);
    }
}

/* ── Mutants, dumps, validation ──────────────────────────────────────────────────────────────────────────── */

/* Count a rule's mutant verdicts. */
static void count_mutants(const struct oracle_outcome *o, void *ctx)
{
    int *counts = ctx;
    counts[o->verdict]++;
}

/* The mutants of the two norm rules: add_norm's four atoms are all needed (untouched_result among them: a state sum
 * overwritten between the add and the norm); sandwich_norm's four too — not_carried, redundant for dataflow (a fused
 * op keeps what the host sees), by the kernel contract (a norm_then_add kernel never writes memory kept across
 * steps). gemv_bias's only_reader likewise: the gemm_bias kernel stores no product for another op. */
static void test_mutants(void)
{
    struct oracle_options opt = oracle_defaults();
    int counts[3] = {0, 0, 0};
    CHECK(oracle_mutants(oracle_rule_find("add_norm"), &opt, count_mutants, counts) == 4);
    CHECK(oracle_mutants(oracle_rule_find("sandwich_norm"), &opt, count_mutants, counts) == 4);
    CHECK(counts[ORACLE_REFUTED] == 8 && counts[ORACLE_PROVED] == 0 && counts[ORACLE_UNKNOWN] == 0);
    memset(counts, 0, sizeof counts);
    CHECK(oracle_mutants(oracle_rule_find("gemv_bias"), &opt, count_mutants, counts) == 2);
    CHECK(counts[ORACLE_PROVED] == 0 && counts[ORACLE_REFUTED] == 2);
}

/* The atoms the dataflow does not need, each held by its class's kernel contract. */
static const char *const contract_atoms[][2] = {
    {"sandwich_norm", "not_carried"}, {"gemv_bias", "only_reader"}, {"gemm_scale", "only_reader"},
    {"affine_input_fold", "only_reader"}, {"gemv_norm_epilogue", "only_reader"},
    {"prefill_norm_epilogues", "only_reader"}, {"norm_scale", "only_reader"}, {"head_norm_rope", "only_reader"},
    {"qkv_head_epilogue", "only_reader"}, {"conv_silu", "only_reader"}, {"conv_silu_l2", "only_reader"},
    {"gates", "only_reader_b"}, {"gates", "only_reader_a"}, {"gate_projections", "only_reader_b"},
    {"gate_projections", "only_reader_a"}, {"gdn_input_epilogue", "made_for"}, {"gdn_post_conv_prep", "made_for"},
    {"gdn_decode_whole", "made_for"}, {"act_gate", "only_reader"}, {"attn_output_gate", "not_observed"},
    {"attn_output_gate", "readers_within"}, {"attn_output_gate", "made_for"}, {"glu_pair", "only_reader_gate"},
    {"glu_pair", "only_reader_up"}, {"relu_sqr", "only_reader"}, {"elementwise_regions", "not_carried"},
    {"elementwise_chains", "only_reader"}, {"elementwise_chains", "not_carried"},
    {"shared_expert", "only_reader_mixture"}, {"shared_expert", "only_reader_shared"},
    {"shared_expert", "only_reader_hidden"}, {"moe_rows", "table_untouched"}, {"moe_rows", "views_read_within"},
    {"moe_deferred_finalize", "only_reader_mixture"}, {"moe_deferred_finalize", "only_reader_sum"},
    {"gather_scale", "only_reader"}, {"embed_norm", "first_reader"}, {"mla_unabsorb_in_fold", "only_reader"},
    {"mla_prologue", "made_for"}, {"last_layer_rows", "made_for"}, {"latent_expanded", "made_for"},
};

#ifdef SANITIZED
#define CONTRACT_STEP 4
#else
#define CONTRACT_STEP 1
#endif

/* The verdicts of one dropped atom's obligations: its dataflow, its kernel contract. */
struct dropped_verdicts {
    int dataflow, contract;
};

/* Note a dropped atom's dataflow and kernel-contract verdicts. */
static void note_dropped(const struct oracle_outcome *o, void *ctx)
{
    struct dropped_verdicts *v = ctx;
    if (strcmp(o->obligation, "dataflow") == 0)
        v->dataflow = (int)o->verdict;
    else if (strcmp(o->obligation, "kernel contract") == 0)
        v->contract = (int)o->verdict;
}

/* Every atom the dataflow does not need is needed by the kernel contract: dropped, the dataflow is still proved and
 * the contract refuted (under a sanitizer, every fourth). The faithful rules' contracts are proved. */
static void test_contract_atoms(void)
{
    struct oracle_options opt = oracle_defaults();
    size_t n = sizeof contract_atoms / sizeof contract_atoms[0];
    CHECK(n == 41);
    for (size_t i = 0; i < n; i += CONTRACT_STEP) {
        const struct rules_rule *rule = oracle_rule_find(contract_atoms[i][0]);
        CHECK(rule && rules_contract_of(rule));
        if (!rule)
            continue;
        struct dropped_verdicts v = {-1, -1};
        oracle_prove(rule, contract_atoms[i][1], &opt, note_dropped, &v);
        CHECKF(v.dataflow == ORACLE_PROVED && v.contract == ORACLE_REFUTED, "%s:%s", contract_atoms[i][0],
                  contract_atoms[i][1]);
        v = (struct dropped_verdicts){-1, -1};
        oracle_prove(rule, NULL, &opt, note_dropped, &v);
        CHECKF(v.contract == ORACLE_PROVED, "%s", contract_atoms[i][0]);
    }
}

/* --smt2: every query of a proof is written as a replayable SMT-LIB 2 file. */
static void test_smt2(void)
{
    char dir[] = "/tmp/fusecheck-oracle-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct oracle_options opt = oracle_defaults();
    opt.smt2_dir = dir;
    oracle_prove(oracle_rule_find("gemv_bias"), NULL, &opt, NULL, NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/gemv_bias.dataflow.any.smt2", dir);
    FILE *f = fopen(path, "r");
    CHECKF(f != NULL, "no dump at %s", path);
    if (f) {
        char line[256] = "";
        CHECK(fgets(line, sizeof line, f) && strstr(line, "fusecheck oracle query"));
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/gemv_bias.dataflow.any.smt2", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/gemv_bias.consistent.k4.smt2", dir);
    unlink(path);
    rmdir(dir);
}

/* A check's tally. */
static void tally(const struct oracle_check *c, void *ctx)
{
    int *bad = ctx;
    if (!(c->atoms && c->premises && c->legal && c->admitted && c->positions)) {
        (*bad)++;
        fprintf(stderr, "validate: %s at %d: %s\n", c->rule, (int)c->at, c->why);
    }
}

/* Under the lane: a firing is checked against the binding of the group that fired, not a later candidate the chip
 * refused after its guards held (merged_projections on tiny-qwen3-next's chunk of 16, three firings once mispaired);
 * and a firing the chip refuses fails — the seed's latent_expanded, asking no admission, fuses a soft-capped latent
 * attention (F19), which fusecheck's own rule leaves refused. */
static void test_validate_lane(void)
{
    char err[IR_ERR_LEN];
    struct oracle_options opt = oracle_defaults();
    struct shim *shim = shim_lookup("cuda-lane:h200:int8", err);
    const struct models_config *c = models_find("tiny-qwen3-next");
    struct models_options mo = models_default_options();
    mo.mode = (struct models_mode){.kind = MODELS_PREFILL, .n = 16};
    struct ir_graph *g = c ? models_lift(c, &mo, err) : NULL;
    CHECK(shim && g);
    struct oracle_validation v;
    int bad = 0;
    if (shim && g) {
        CHECK(oracle_validate_run(g, shim, &opt, tally, &bad, &v, err) == 0);
        CHECKF(v.checked > 100 && v.failed == 0 && bad == 0, "checked %d, failed %d", v.checked, v.failed);
    }
    ir_graph_free(g);
    /* A held step's dry run fires on a copy the chip need not admit (it no longer counts on the step): its firings
     * are not refusals (tiny-qwen3 decode under hold=gemv_parts: two false failures before). */
    struct shim *held = shim_lookup("cuda-lane:h200:int8:hold=gemv_parts", err);
    c = models_find("tiny-qwen3");
    mo = models_default_options();
    g = c ? models_lift(c, &mo, err) : NULL;
    CHECK(held && g);
    if (held && g) {
        bad = 0;
        CHECK(oracle_validate_run(g, held, &opt, tally, &bad, &v, err) == 0);
        CHECKF(v.checked > 10 && v.failed == 0 && bad == 0, "held: checked %d, failed %d", v.checked, v.failed);
    }
    shim_free(held);
    ir_graph_free(g);
    g = ir_parse_file(FIXTURES "/latent_expanded/refused_softcap.fc", err);
    CHECKF(g != NULL, "%s", err);
    for (int seed = 0; seed < 2 && shim && g; seed++) {
        rules_seed_mode(seed == 1);
        bad = 0;
        CHECK(oracle_validate_run(g, shim, &opt, NULL, &bad, &v, err) == 0);
        rules_seed_mode(false);
        CHECKF(v.failed == seed, "seed rules %d: rewrites %d, failed %d", seed, v.rewrites, v.failed);
    }
    ir_graph_free(g);
    shim_free(shim);
}

/* Translation validation passes a zoo model's optimization, and catches a mutant firing on a near miss. */
static void test_validate(void)
{
    char err[IR_ERR_LEN];
    struct oracle_options opt = oracle_defaults();
    struct shim *shim = shim_lookup("reference", err);
    const struct models_config *c = models_find("tiny-qwen3");
    struct models_options mo = models_default_options();
    struct ir_graph *g = c ? models_lift(c, &mo, err) : NULL;
    CHECK(shim && g);
    if (shim && g) {
        struct oracle_validation v;
        int bad = 0;
        CHECK(oracle_validate_run(g, shim, &opt, tally, &bad, &v, err) == 0);
        CHECKF(v.checked > 10 && v.failed == 0 && bad == 0, "checked %d, failed %d", v.checked, v.failed);
    }
    ir_graph_free(g);
    g = ir_parse_file(FIXTURES "/add_norm/near_untouched_a.fc", err);
    CHECK(g != NULL);
    if (shim && g) {
        struct oracle_validation v;
        int bad = 0;
        CHECK(oracle_validate_run(g, shim, &opt, NULL, &bad, &v, err) == 0);
        CHECK(v.rewrites == 0 && v.failed == 0);
        rules_drop_atom("add_norm:untouched_a");
        CHECK(oracle_validate_run(g, shim, &opt, NULL, &bad, &v, err) == 0);
        rules_drop_atom(NULL);
        CHECKF(v.rewrites == 1 && v.failed == 1, "rewrites %d, failed %d", v.rewrites, v.failed);
    }
    ir_graph_free(g);
    shim_free(shim);
    test_validate_lane();
}

/* ── Long windows: the index and the window against the formulas and the full cut ─────────────────────────── */

/* A random schedule of n ops over nt tensors, its flags, roles and a binding of every role (sets random subsets,
 * slots and tensors anything from -1 on, the join's producers too). */
static struct oracle_sched *random_bound_sched(uint64_t *rng, int n, int nt)
{
    struct oracle_sched *s = oracle_sched_new(n, nt);
    for (int k = 0; k < n; k++)
        for (int t = 0; t < nt; t++) {
            unsigned x = (unsigned)next_random(rng) % 8;
            s->reads[k * nt + t] = x == 0 || x == 1;
            s->writes[k * nt + t] = x == 1 || x == 2;
        }
    for (int t = 0; t < nt; t++) {
        unsigned x = (unsigned)next_random(rng);
        s->observed[t] = x % 5 == 0;
        s->carried[t] = x % 7 == 0;
        s->role[t] = (x >> 3) % 3 == 0 ? IR_ROLE_STATE : (x >> 3) % 3 == 1 ? IR_ROLE_ACTIVATION : IR_ROLE_INPUT;
    }
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        s->bind.slot[r] = (int32_t)(next_random(rng) % (uint64_t)(n + 1)) - 1;
        s->bind.tensor[r] = (ir_tid)(next_random(rng) % (uint64_t)(nt + 1)) - 1;
        int32_t members[16], m = 0;
        for (int k = 0; k < n; k++)
            if (next_random(rng) % 3 == 0)
                members[m++] = k;
        oracle_sched_set(s, (enum rules_role)r, members, m);
    }
    s->bind.slot[RULES_ROLE_EACH] = -1;
    s->half[0] = (int32_t)(next_random(rng) % (uint64_t)(n + 1)) - 1;
    s->half[1] = (int32_t)(next_random(rng) % (uint64_t)(n + 1)) - 1;
    return s;
}

/* The indexed twins and motion answer as the formulas do: every shipped rule's atoms, premises and motion on random
 * schedules of 1 to 9 ops over 1 to 4 tensors, evaluated from the matrix and again once indexed. */
static void indexed_random(void)
{
    const struct rules_rule *rules[256];
    int nrules = oracle_rules(rules, 256);
    uint64_t rng = 0x5851f42d4c957f2dULL;
    long long asked = 0, differ = 0, broken = 0;
    for (int i = 0; i < 3000; i++) {
        int n = 1 + (int)(next_random(&rng) % 9), nt = 1 + (int)(next_random(&rng) % 4);
        struct oracle_sched *s = random_bound_sched(&rng, n, nt);
        struct oracle_sched *x = copy_sched(s);
        x->half[0] = s->half[0];
        x->half[1] = s->half[1];
        oracle_sched_index(x);
        for (int r = 0; r < nrules; r++) {
            for (int a = 0; a < rules[r]->nguards; a++) {
                bool want = oracle_atom_twin(s, &s->bind, &rules[r]->guards[a]);
                differ += want != oracle_atom_twin(x, &x->bind, &rules[r]->guards[a]);
                asked++;
            }
            bool p1, p2;
            bool want = oracle_motion_legal(s, rules[r], &p1), got = oracle_motion_legal(x, rules[r], &p2);
            differ += want != got || p1 != p2;
            broken += !want;
            asked++;
        }
        oracle_sched_free(s);
        oracle_sched_free(x);
    }
    CHECKF(differ == 0, "indexed and formula disagree on %lld of %lld questions", differ, asked);
    CHECKF(broken > 1000 && broken < asked / 2, "too few broken motions to tell: %lld of %lld", broken, asked);
    printf("indexed: %lld questions, %lld motions broken, %lld disagreements\n", asked, broken, differ);
}

/* One validate-run's checks, in order, as text. */
struct transcript {
    char *text;
    size_t n, cap;
};

/* Append a check to the transcript. */
static void transcribe(const struct oracle_check *c, void *ctx)
{
    struct transcript *t = ctx;
    char line[ORACLE_REASON_LEN + 256];
    int len = snprintf(line, sizeof line, "%s %d %d %d%d%d%d%d%d%d %s\n", c->rule, (int)c->cls, (int)c->at, c->bound,
                       c->atoms, c->premises, c->legal, c->positions, c->unknown, c->admitted, c->why);
    if (t->n + (size_t)len + 1 > t->cap) {
        t->cap = 2 * (t->n + (size_t)len + 1);
        t->text = realloc(t->text, t->cap);
    }
    memcpy(t->text + t->n, line, (size_t)len + 1);
    t->n += (size_t)len;
}

/* Validate g under shim with the full cut and with the window: the same checks, in order, and the same totals. */
static void same_checks(const char *what, const struct ir_graph *g, const struct shim *shim)
{
    char err[IR_ERR_LEN];
    struct oracle_options opt = oracle_defaults();
    struct transcript t[2] = {{NULL, 0, 0}, {NULL, 0, 0}};
    struct oracle_validation v[2];
    for (int k = 0; k < 2; k++) {
        opt.full_cut = k == 0;
        CHECK(oracle_validate_run(g, shim, &opt, transcribe, &t[k], &v[k], err) == 0);
    }
    CHECKF(t[0].n > 0 && t[1].n == t[0].n && memcmp(t[0].text, t[1].text, t[0].n) == 0 &&
               v[0].checked == v[1].checked && v[0].failed == v[1].failed,
           "%s: the window's checks differ from the full cut's (%d/%d checked, %d/%d failed)", what, v[0].checked,
           v[1].checked, v[0].failed, v[1].failed);
    free(t[0].text);
    free(t[1].text);
}

/* The window and the index change no check of validate-run: zoo graphs (decode, prefill, batch) under the reference
 * shim and the lane, and with a guard atom dropped so that firings fail. */
static void test_window(void)
{
    indexed_random();
    static const struct {
        const char *model, *shim;
        enum models_mode_kind kind;
        int n;
    } cases[] = {
        {"tiny-qwen3-moe", "reference", MODELS_PREFILL, 8},
        {"tiny-qwen3-moe", "cuda-lane:h200:int8", MODELS_PREFILL, 8},
        {"tiny-qwen3-next", "cuda-lane:h200:int8", MODELS_PREFILL, 8},
        {"tiny-qwen3", "reference", MODELS_BATCH, 4},
        {"tiny-llama", "cuda-lane:h100:int8", MODELS_DECODE, 1},
    };
    char err[IR_ERR_LEN];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct shim *shim = shim_lookup(cases[i].shim, err);
        const struct models_config *c = models_find(cases[i].model);
        struct models_options mo = models_default_options();
        mo.mode = (struct models_mode){.kind = cases[i].kind, .n = cases[i].n};
        struct ir_graph *g = c ? models_lift(c, &mo, err) : NULL;
        CHECKF(shim && g, "%s: %s", cases[i].model, err);
        if (shim && g)
            same_checks(cases[i].model, g, shim);
        ir_graph_free(g);
        shim_free(shim);
    }
    /* The optimizer's planted bugs: the same checks under each. */
    struct shim *lane = shim_lookup("cuda-lane:h200:int8x2", err);
    const struct models_config *moe = models_find("tiny-qwen3-moe");
    struct models_options mo = models_default_options();
    struct ir_graph *lifted = moe ? models_lift(moe, &mo, err) : NULL;
    CHECK(lane && lifted);
    for (int plant = RULES_PLANT_NONE + 1; plant < RULES_PLANT_COUNT && lane && lifted; plant++) {
        rules_plant(rules_plant_name((enum rules_plant)plant));
        same_checks(rules_plant_name((enum rules_plant)plant), lifted, lane);
        rules_plant(NULL);
    }
    ir_graph_free(lifted);
    shim_free(lane);
    struct shim *shim = shim_lookup("reference", err);
    struct ir_graph *g = ir_parse_file(FIXTURES "/add_norm/near_untouched_a.fc", err);
    CHECK(shim && g);
    if (shim && g) {
        rules_drop_atom("add_norm:untouched_a");
        same_checks("near_untouched_a, atom dropped", g, shim);
        rules_drop_atom(NULL);
    }
    ir_graph_free(g);
    shim_free(shim);
}

/* A schedule prints what it is. */
static void test_text(void)
{
    struct oracle_sched *s = oracle_sched_new(2, 2);
    s->writes[0 * 2 + 1] = s->reads[1 * 2 + 1] = true;
    s->observed[1] = true;
    s->bind.slot[RULES_ROLE_PRODUCER] = 0;
    s->bind.tensor[RULES_ROLE_RESULT] = 1;
    char *text = oracle_sched_text(s);
    CHECK(text && strstr(text, "op 0 [producer]: reads -; writes t1"));
    CHECK(text && strstr(text, "tensor t1 activation observed [result]"));
    free(text);
    oracle_sched_free(s);
}

/* A part of the suite, with its running time printed (for the log; nothing asserts on it). */
static void part(const char *name, void (*fn)(void))
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fn();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("  %-10s %.1f s\n", name, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/* A report of one decision, for the contract test: rule, covers, outcome, reason (copied). */
static void push(struct rules_report *rep, const char *rule, const int32_t *covers, int32_t n, enum rules_outcome out,
                 const char *why)
{
    rules_report_push(rep, rule, IR_CLASS_ADD_NORM, covers, n, out, why);
}

/* The report's contract: a well-kept report passes (repeated firings and covers as the seed makes them among it);
 * each way of breaking it is caught at the decision that breaks it, with what is wrong said. */
static void test_report_contract(void)
{
    char err[IR_ERR_LEN];
    struct ir_graph *g = ir_parse_file(FIXTURES "/add_norm/refused_none.fc", err); /* two ops: covers 0 and 1 */
    struct shim *ref = shim_lookup("reference", err), *none = shim_lookup("none", err);
    CHECKF(g && ref && none, "%s", err);
    if (!g || !ref || !none) {
        ir_graph_free(g);
        shim_free(ref);
        shim_free(none);
        return;
    }
    static const int32_t one[] = {0}, both[] = {0, 1}, twice[] = {0, 0, 1}, far[] = {0, 2}, down[] = {1, 0};
    struct rules_report ok = {0};
    push(&ok, "add_norm", both, 2, RULES_REFUSED, "too wide");
    push(&ok, "add_norm", one, 1, RULES_REFUSED, "too wide");
    push(&ok, "add_norm", both, 2, RULES_REFUSED, "too wide");
    push(&ok, "add_norm", both, 2, RULES_FIRED, NULL);
    push(&ok, "add_norm", both, 2, RULES_FIRED, NULL); /* two ops covering the same lifted ops, each fused */
    push(&ok, "gemv_bias", twice, 3, RULES_FIRED, NULL); /* a recomputed op covered by each copy */
    push(&ok, "gemv_bias", both, 2, RULES_HELD, NULL);
    push(&ok, "gemv_bias", one, 0, RULES_REFUSED, "a candidate of parts that cover nothing");
    CHECKF(oracle_report_check(g, ref, NULL, 0, &ok, err) == -1, "a well-kept report fails: %s", err);
    rules_report_free(&ok);
    static const struct {
        const char *rule;
        const int32_t *covers;
        int32_t n;
        enum rules_outcome outcome;
        const char *why, *said;
    } broken[] = {
        {"add_norm", both, 2, RULES_REFUSED, "too wide", "twice in a row"}, /* pushed twice */
        {"add_norm", far, 2, RULES_FIRED, NULL, "which no op of the compiled graph covers"},
        {"add_norm", far, 2, RULES_REFUSED, "too wide", "which no op of the compiled graph covers"},
        {"add_norm", one, 0, RULES_FIRED, NULL, "covers no lifted op"},
        {"add_norm", one, 0, RULES_HELD, NULL, "covers no lifted op"},
        {"add_norm", both, 2, RULES_REFUSED, "", "gives no reason"},
        {"add_norm", both, 2, RULES_HELD, "held back", "other than a refusal"},
        {"", both, 2, RULES_FIRED, NULL, "names no rule"},
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        struct rules_report rep = {0};
        push(&rep, "add_norm", one, 1, RULES_FIRED, NULL);
        push(&rep, broken[i].rule, broken[i].covers, broken[i].n, broken[i].outcome, broken[i].why);
        if (i == 0) /* the same refusal once more */
            push(&rep, broken[i].rule, broken[i].covers, broken[i].n, broken[i].outcome, broken[i].why);
        int32_t at = oracle_report_check(g, ref, NULL, 0, &rep, err);
        CHECKF(at == (i == 0 ? 2 : 1) && strstr(err, broken[i].said), "case %zu: decision %d, '%s'", i, (int)at,
               at >= 0 ? err : "");
        rules_report_free(&rep);
    }
    /* Covers out of order: rules_report_push sorts, so the decision is written as another optimizer might. */
    struct rules_report rep = {0};
    push(&rep, "add_norm", both, 2, RULES_FIRED, NULL);
    memcpy(rep.d[0].covers, down, sizeof down);
    CHECKF(oracle_report_check(g, ref, NULL, 0, &rep, err) == 0 && strstr(err, "ascending"), "unordered covers: '%s'",
           err);
    rules_report_free(&rep);
    /* A step the chip does not link runs dry, each firing reported refused: two firings alike are two refusals
     * alike. Under `none` (which links no fused class) add_norm's may repeat, unless the compile held it. */
    struct rules_report dry = {0};
    push(&dry, "add_norm", both, 2, RULES_REFUSED, "the chip runs `add_norm` as its parts");
    push(&dry, "add_norm", both, 2, RULES_REFUSED, "the chip runs `add_norm` as its parts");
    const char *held[] = {"gemv_bias", "add_norm"};
    CHECKF(oracle_report_check(g, none, NULL, 0, &dry, err) == -1, "an unlinked step's dry refusals: %s", err);
    CHECKF(oracle_report_check(g, none, held, 1, &dry, err) == -1, "another step held: %s", err);
    CHECK(oracle_report_check(g, none, held, 2, &dry, err) == 1 && strstr(err, "twice in a row"));
    CHECK(oracle_report_check(g, ref, NULL, 0, &dry, err) == 1 && strstr(err, "twice in a row"));
    rules_report_free(&dry);
    shim_free(ref);
    shim_free(none);
    ir_graph_free(g);
}

int main(void)
{
    part("text", test_text);
    part("report contract", test_report_contract);
    part("agreement", test_agreement);
    part("shipped", test_shipped);
    part("wrong", test_wrong_rules);
    part("replay", test_replay);
    part("mutants", test_mutants);
    part("contract atoms", test_contract_atoms);
    part("smt2", test_smt2);
    part("validate", test_validate);
    part("window", test_window);
    oracle_shutdown();
    return check_done("test_oracle");
}
