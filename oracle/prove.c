/* oracle/prove.c — per-rule obligations and their mutants. A rule's dataflow obligation asks Z3 for a schedule that
 * satisfies the invariants, the rule's premises and its guard atoms (one dropped, for a mutant) while its motion
 * breaks a dependence: first over windows of any length (quantified), else over every window of up to K ops; a
 * refutation is shrunk to the shortest window that has one and returned as a concrete schedule. Placements add their
 * index-map obligations (oracle/places.c). */
#include "oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ── The rules ───────────────────────────────────────────────────────────────────────────────────────────── */

/* Shims whose chip rules the oracle reads (each chip rule once, by name). */
static const char *const chip_shims[] = {"cuda-lane:h100:dequant", "cuda-lane:h100:int8"};

/* Whether name is among the first n rules of list. */
static bool listed(const struct rules_rule **list, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i]->name, name) == 0)
            return true;
    return false;
}

/* Append rule to out (room cap) unless it is there by name; returns the new count. */
static int add_rule(const struct rules_rule **out, int n, int cap, const struct rules_rule *rule, int *total)
{
    if (!rule || (n > 0 && out && listed(out, n < cap ? n : cap, rule->name)))
        return n;
    if (out && n < cap)
        out[n] = rule;
    (*total)++;
    return n + 1;
}

int oracle_rules(const struct rules_rule **out, int cap)
{
    int n = 0, total = 0, count;
    const struct rules_rule *const *table = rules_table(&count);
    for (int i = 0; i < count; i++)
        n = add_rule(out, n, cap, table[i], &total);
    table = rules_late(&count);
    for (int i = 0; i < count; i++)
        n = add_rule(out, n, cap, table[i], &total);
    n = add_rule(out, n, cap, rules_advance(), &total);
    n = add_rule(out, n, cap, &rules_rule_fused_quant, &total);
    for (size_t s = 0; s < sizeof chip_shims / sizeof chip_shims[0]; s++) {
        char err[IR_ERR_LEN];
        struct shim *shim = shim_lookup(chip_shims[s], err);
        for (int i = 0; shim && i < shim->nrules; i++)
            n = add_rule(out, n, cap, (const struct rules_rule *)shim->rules[i].rule, &total);
        if (shim)
            shim_free(shim);
    }
    return n;
}

const struct rules_rule *oracle_rule_find(const char *name)
{
    const struct rules_rule *list[256];
    int n = oracle_rules(list, 256);
    for (int i = 0; i < n && i < 256; i++)
        if (strcmp(list[i]->name, name) == 0)
            return list[i];
    return NULL;
}

/* ── Building a query ────────────────────────────────────────────────────────────────────────────────────── */

/* Milliseconds since an arbitrary start (for timings only). */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The second solver's time on its queries so far (0 without one). */
static double cross_ms(const struct oracle_options *opt) { return opt->cross ? opt->cross->ms : 0; }

/* Set an outcome's times from its start (t0, and c0 the second solver's time then): the second solver's own, and the
 * oracle's without it. */
static void timed(struct oracle_outcome *o, const struct oracle_options *opt, double t0, double c0)
{
    o->cross_ms = cross_ms(opt) - c0;
    o->ms = now_ms() - t0 - o->cross_ms;
}

/* Whether the caller asked that no further obligation start (oracle_options.stop). */
static bool stopped(const struct oracle_options *opt) { return opt->stop && opt->stop(); }

/* The number of tensors a bounded query of rule ranges over: its tensor roles and three more. */
static int tensors_for(const struct rules_rule *rule)
{
    static const char kinds[] = {
#define X(e, s, k) k,
        RULES_ROLES(X)
#undef X
    };
    bool used[RULES_ROLE_COUNT];
    oracle_rule_roles(rule, used);
    int n = 0;
    for (int r = 0; r < RULES_ROLE_COUNT; r++)
        n += used[r] && kinds[r] == 'T';
    return n + 3;
}

/* The guards of rule (atom `drop` left out) as one formula. */
static struct oracle_term guards_term(struct oracle_builder *b, const struct rules_rule *rule, const char *drop)
{
    struct oracle_term f = oracle_ob_bool(b, true);
    for (int i = 0; i < rule->nguards; i++)
        if ((!drop || strcmp(rule->guards[i].name, drop) != 0) &&
            !(rules_seed_rules() && rules_seed_drops(&rule->guards[i])))
            f = oracle_ob_and(b, f, oracle_atom_term(b, &rule->guards[i]));
    return f;
}

/* The two obligations a rule's guards answer for: its motion's dataflow, and its class's kernel contract. */
enum obligation { OB_DATAFLOW, OB_CONTRACT };
static const char *const obligation_names[] = {"dataflow", "contract"};

/* The query of obligation ob of rule over builder b: invariants, premises, guards and a broken dependence (or a
 * breach of the kernel contract). */
static Z3_ast dataflow_query(struct oracle_builder *b, const struct rules_rule *rule, const char *drop,
                             enum obligation ob)
{
    struct oracle_term f = oracle_invariants(b);
    f = oracle_ob_and(b, f, oracle_premises(b, rule));
    f = oracle_ob_and(b, f, guards_term(b, rule, drop));
    struct oracle_term broken = ob == OB_CONTRACT ? oracle_contract_breach(b, rule) : oracle_violation(b, rule);
    return oracle_ob_and(b, f, broken).z;
}

/* The query's name for dumps: rule, obligation, mutant and window. */
static void query_name(char *buf, size_t n, const struct rules_rule *rule, const char *obligation, const char *drop,
                       int nslots)
{
    char window[32];
    if (nslots > 0)
        snprintf(window, sizeof window, "k%d", nslots);
    else
        snprintf(window, sizeof window, "any");
    snprintf(buf, n, "%s.%s%s%s.%s", rule->name, obligation, drop ? ".without-" : "", drop ? drop : "", window);
}

/* ── Counterexamples ─────────────────────────────────────────────────────────────────────────────────────── */

struct oracle_sched *oracle_sched_from_model(struct oracle_builder *b, Z3_model m, const struct rules_rule *rule)
{
    Z3_context z = b->z;
    struct oracle_sched *s = oracle_sched_new(b->nslots, b->ntensors);
    for (int k = 0; k < s->nops; k++)
        for (int t = 0; t < s->ntensors; t++) {
            struct oracle_term kk = oracle_ob_int(b, k), tt = oracle_ob_int(b, t);
            s->reads[k * s->ntensors + t] = oracle_model_value(z, m, oracle_ob_reads(b, kk, tt).z) != 0;
            s->writes[k * s->ntensors + t] = oracle_model_value(z, m, oracle_ob_writes(b, kk, tt).z) != 0;
        }
    for (int t = 0; t < s->ntensors; t++) {
        struct oracle_term tt = oracle_ob_int(b, t);
        s->observed[t] = oracle_model_value(z, m, oracle_ob_observed(b, tt).z) != 0;
        s->carried[t] = oracle_model_value(z, m, oracle_ob_carried(b, tt).z) != 0;
        s->role[t] = oracle_model_value(z, m, oracle_ob_state(b, tt).z)        ? IR_ROLE_STATE
                     : oracle_model_value(z, m, oracle_ob_activation(b, tt).z) ? IR_ROLE_ACTIVATION
                                                                        : IR_ROLE_INPUT;
    }
    static const char kinds[] = {
#define X(e, str, k) k,
        RULES_ROLES(X)
#undef X
    };
    bool used[RULES_ROLE_COUNT];
    oracle_rule_roles(rule, used);
    int32_t *members = calloc((size_t)s->nops + 1, sizeof *members);
    if (!members)
        abort();
    for (int r = 1; r < RULES_ROLE_COUNT; r++) {
        if (!used[r])
            continue;
        if (kinds[r] == 'S')
            s->bind.slot[r] = (int32_t)oracle_model_value(z, m, oracle_ob_slot(b, (enum rules_role)r).z);
        else if (kinds[r] == 'T')
            s->bind.tensor[r] = (ir_tid)oracle_model_value(z, m, oracle_ob_tensor(b, (enum rules_role)r).z);
        else {
            int32_t n = 0;
            for (int k = 0; k < s->nops; k++)
                if (oracle_model_value(z, m, oracle_ob_in(b, (enum rules_role)r, oracle_ob_int(b, k)).z))
                    members[n++] = k;
            oracle_sched_set(s, (enum rules_role)r, members, n);
        }
    }
    free(members);
    if (rule->motion == RULES_MOTION_PLACE_UNITS)
        for (int h = 0; h < 2; h++)
            s->half[h] = (int32_t)oracle_model_value(z, m, oracle_half_producer(b, h).z);
    return s;
}

/* What a bounded query over nslots ops found. */
struct bounded {
    enum oracle_verdict v;
    char reason[ORACLE_REASON_LEN];
    struct oracle_sched *cex;
};

/* A model of q with as few reads, writes, flags and state tensors as possible (Z3's optimizer, each a soft
 * constraint of weight one), or NULL when the optimizer does not answer. Referenced: the caller releases it. */
static Z3_model minimal_model(struct oracle_builder *b, Z3_ast q, const struct oracle_options *opt)
{
    Z3_context z = b->z;
    Z3_optimize o = Z3_mk_optimize(z);
    Z3_optimize_inc_ref(z, o);
    Z3_params p = Z3_mk_params(z);
    Z3_params_inc_ref(z, p);
    Z3_params_set_uint(z, p, Z3_mk_string_symbol(z, "timeout"), opt->timeout_ms ? opt->timeout_ms : 10000);
    Z3_params_set_bool(z, p, Z3_mk_string_symbol(z, "ctrl_c"), false); /* SIGINT is the command's (configure) */
    Z3_optimize_set_params(z, o, p);
    Z3_params_dec_ref(z, p);
    Z3_optimize_assert(z, o, q);
    /* Weights: fewest facts first; among as few, those on lower tensors and earlier ops (a canonical choice, so
     * the same counterexample comes out whatever the build). */
    Z3_symbol group = Z3_mk_string_symbol(z, "size");
    char w[32];
    for (int t = 0; t < b->ntensors; t++) {
        struct oracle_term tt = oracle_ob_int(b, t);
        for (int k = 0; k < b->nslots; k++) {
            struct oracle_term kk = oracle_ob_int(b, k);
            snprintf(w, sizeof w, "%d", 1000 + 20 * t + k);
            Z3_optimize_assert_soft(z, o, oracle_ob_not(b, oracle_ob_reads(b, kk, tt)).z, w, group);
            Z3_optimize_assert_soft(z, o, oracle_ob_not(b, oracle_ob_writes(b, kk, tt)).z, w, group);
        }
        snprintf(w, sizeof w, "%d", 1000 + 20 * t);
        Z3_optimize_assert_soft(z, o, oracle_ob_not(b, oracle_ob_observed(b, tt)).z, w, group);
        Z3_optimize_assert_soft(z, o, oracle_ob_not(b, oracle_ob_carried(b, tt)).z, w, group);
        Z3_optimize_assert_soft(z, o, oracle_ob_not(b, oracle_ob_state(b, tt)).z, w, group);
    }
    Z3_model m = NULL;
    if (Z3_optimize_check(z, o, 0, NULL) == Z3_L_TRUE) {
        m = Z3_optimize_get_model(z, o);
        Z3_model_inc_ref(z, m);
    }
    Z3_optimize_dec_ref(z, o);
    return m;
}

/* Ask the dataflow query over windows of exactly nslots ops (shorter ones embed: ops that touch nothing); a
 * counterexample is made minimal in what it reads, writes and flags when `minimize`. */
static struct bounded ask_bounded(const struct rules_rule *rule, const char *drop, const struct oracle_options *opt,
                                  int nslots, bool minimize, enum obligation ob)
{
    struct bounded out = {ORACLE_UNKNOWN, "", NULL};
    Z3_context z = oracle_z3_new(opt);
    struct oracle_builder b;
    oracle_ob_symbolic(&b, z, nslots, tensors_for(rule));
    b.fresh_results = opt->fresh_results;
    Z3_ast q = dataflow_query(&b, rule, drop, ob);
    char name[256];
    query_name(name, sizeof name, rule, obligation_names[ob], drop, nslots);
    Z3_model m = NULL;
    out.v = oracle_check(z, q, opt, name, &m, out.reason);
    if (out.v == ORACLE_REFUTED && minimize) {
        Z3_model small = minimal_model(&b, q, opt);
        if (small) {
            if (m)
                Z3_model_dec_ref(z, m);
            m = small;
        }
    }
    if (out.v == ORACLE_REFUTED && m)
        out.cex = oracle_sched_from_model(&b, m, rule);
    if (m)
        Z3_model_dec_ref(z, m);
    oracle_z3_free(z);
    return out;
}

/* Ask the dataflow query over windows of any length. */
static enum oracle_verdict ask_unbounded(const struct rules_rule *rule, const char *drop,
                                         const struct oracle_options *opt, char reason[ORACLE_REASON_LEN],
                                         enum obligation ob)
{
    Z3_context z = oracle_z3_new(opt);
    struct oracle_builder b;
    oracle_ob_symbolic(&b, z, 0, 0);
    b.fresh_results = opt->fresh_results;
    Z3_ast q = dataflow_query(&b, rule, drop, ob);
    char name[256];
    query_name(name, sizeof name, rule, obligation_names[ob], drop, 0);
    enum oracle_verdict v = oracle_check(z, q, opt, name, NULL, reason);
    oracle_z3_free(z);
    return v;
}

/* The shortest window (2..K ops) with a counterexample, or NULL; the outcome says whether the search was cut short
 * by an unknown answer. */
static struct oracle_sched *shortest(const struct rules_rule *rule, const char *drop, const struct oracle_options *opt,
                                     int upto, enum obligation ob)
{
    for (int n = 1; n <= upto; n++) {
        struct bounded r = ask_bounded(rule, drop, opt, n, true, ob);
        if (r.v == ORACLE_REFUTED)
            return r.cex;
        oracle_sched_free(r.cex);
    }
    return NULL;
}

/* Describe the first read the counterexample breaks (or the contract's first breach) into its note. */
static void describe(struct oracle_sched *s, const struct rules_rule *rule, enum obligation ob)
{
    bool premises = false;
    bool legal = oracle_motion_legal(s, rule, &premises);
    if (premises && ob == OB_CONTRACT)
        oracle_contract_note(s, rule, s->note, sizeof s->note);
    else if (!premises)
        snprintf(s->note, sizeof s->note, "(the concrete premises do not hold: a modelling error)");
    else if (legal)
        snprintf(s->note, sizeof s->note, "(the concrete motion is legal: a modelling error)");
    else
        oracle_violation_note(s, rule, s->note, sizeof s->note);
}

/* Record a refutation's counterexample (the shortest window that has one) into o. */
static void refuted_with(const struct rules_rule *rule, struct oracle_outcome *o, struct oracle_sched *cex,
                         struct oracle_sched **out, enum obligation ob)
{
    o->verdict = ORACLE_REFUTED;
    o->bound = cex->nops;
    describe(cex, rule, ob);
    snprintf(o->reason, sizeof o->reason, "%s", cex->note);
    *out = cex;
}

/* The dataflow obligation of rule (atom drop dropped) into o: windows of any length first; when Z3 does not decide
 * them, every window of up to K ops. A refutation is shown on the shortest window that has one. */
static void dataflow(const struct rules_rule *rule, const char *drop, const struct oracle_options *opt,
                     struct oracle_outcome *o, struct oracle_sched **cex, enum obligation ob)
{
    int k = opt->bound >= 2 ? opt->bound : 2;
    *cex = NULL;
    if (opt->unbounded) {
        enum oracle_verdict v = ask_unbounded(rule, drop, opt, o->reason, ob);
        if (v == ORACLE_PROVED) {
            o->verdict = ORACLE_PROVED;
            o->bound = 0;
            return;
        }
        if (v == ORACLE_REFUTED) {
            struct oracle_sched *small = shortest(rule, drop, opt, k, ob);
            if (small) {
                refuted_with(rule, o, small, cex, ob);
                return;
            }
            o->verdict = ORACLE_REFUTED;
            o->bound = 0;
            snprintf(o->reason, sizeof o->reason, "refuted on a window longer than %d ops (none shown)", k);
            return;
        }
    }
    struct bounded r = ask_bounded(rule, drop, opt, k, false, ob);
    o->verdict = r.v;
    o->bound = k;
    snprintf(o->reason, sizeof o->reason, "%s", r.reason);
    if (r.v != ORACLE_REFUTED) {
        oracle_sched_free(r.cex);
        return;
    }
    struct oracle_sched *small = shortest(rule, drop, opt, k, ob);
    if (small) {
        oracle_sched_free(r.cex);
        r.cex = small;
    }
    refuted_with(rule, o, r.cex, cex, ob);
}

/* ── Entry points ────────────────────────────────────────────────────────────────────────────────────────── */

/* A fresh outcome for rule and obligation. */
static struct oracle_outcome outcome(const struct rules_rule *rule, const char *obligation, const char *drop)
{
    struct oracle_outcome o;
    memset(&o, 0, sizeof o);
    o.rule = rule->name;
    o.dropped = drop;
    snprintf(o.obligation, sizeof o.obligation, "%s", obligation);
    return o;
}

/* Run one of a rule's schedule obligations (dataflow, or its class's kernel contract) under the name it reports as,
 * and report it; whether it was proved. */
static bool report_schedule(const struct rules_rule *rule, const char *name, enum obligation kind, const char *drop,
                            const struct oracle_options *opt, oracle_outcome_fn fn, void *ctx)
{
    if (stopped(opt))
        return false;
    struct oracle_outcome o = outcome(rule, name, drop);
    struct oracle_sched *cex;
    double t0 = now_ms(), c0 = cross_ms(opt);
    dataflow(rule, drop, opt, &o, &cex, kind);
    timed(&o, opt, t0, c0);
    o.cex = cex;
    if (fn)
        fn(&o, ctx);
    oracle_sched_free(cex);
    return o.verdict == ORACLE_PROVED;
}

/* Run the dataflow obligation and report it; whether it was proved. */
static bool report_dataflow(const struct rules_rule *rule, const char *drop, const struct oracle_options *opt,
                            oracle_outcome_fn fn, void *ctx)
{
    return report_schedule(rule, opt->fresh_results ? "dataflow under A5" : "dataflow", OB_DATAFLOW, drop, opt, fn,
                           ctx);
}

/* Run the kernel-contract obligation of a rule with a contract row and report it; whether it was proved (true for a
 * rule without one). */
static bool report_contract(const struct rules_rule *rule, const char *drop, const struct oracle_options *opt,
                            oracle_outcome_fn fn, void *ctx)
{
    return !rules_contract_of(rule) || report_schedule(rule, "kernel contract", OB_CONTRACT, drop, opt, fn, ctx);
}

/* Run index obligation i and report it; whether it was proved. */
static bool report_index(const struct rules_rule *rule, int i, const char *name, const struct oracle_options *opt,
                         oracle_outcome_fn fn, void *ctx)
{
    char label[ORACLE_NAME_LEN];
    if (stopped(opt))
        return false;
    snprintf(label, sizeof label, "index: %s", name);
    struct oracle_outcome o = outcome(rule, label, NULL);
    double t0 = now_ms(), c0 = cross_ms(opt);
    Z3_context z = oracle_z3_new(opt);
    char qname[256];
    snprintf(qname, sizeof qname, "%s.index%d", rule->name, i);
    o.verdict = oracle_check(z, oracle_index_query(z, rule, i), opt, qname, NULL, o.reason);
    oracle_z3_free(z);
    o.bound = 0;
    if (o.verdict == ORACLE_REFUTED)
        snprintf(o.reason, sizeof o.reason, "the placed indices differ from those of the op it replaces");
    timed(&o, opt, t0, c0);
    if (fn)
        fn(&o, ctx);
    return o.verdict == ORACLE_PROVED;
}

/* A query's verdict read as the statement that a model exists: proved when satisfiable, refuted when not. */
static enum oracle_verdict invert(enum oracle_verdict v)
{
    return v == ORACLE_REFUTED ? ORACLE_PROVED : v == ORACLE_PROVED ? ORACLE_REFUTED : ORACLE_UNKNOWN;
}

/* Check that the rule's assumptions (invariants, premises, guards) admit a firing at all — else every proof of it
 * would hold vacuously — and report it; whether they do. */
static bool report_consistent(const struct rules_rule *rule, const struct oracle_options *opt, oracle_outcome_fn fn,
                              void *ctx)
{
    if (stopped(opt))
        return false;
    struct oracle_outcome o = outcome(rule, "assumptions satisfiable", NULL);
    double t0 = now_ms(), c0 = cross_ms(opt);
    int k = opt->bound >= 2 ? opt->bound : 2;
    enum oracle_verdict v = ORACLE_UNKNOWN;
    /* A small window usually has a firing; the full bound only when it has none. */
    for (int n = k < 4 ? k : 4; v != ORACLE_REFUTED; n = k) {
        Z3_context z = oracle_z3_new(opt);
        struct oracle_builder b;
        oracle_ob_symbolic(&b, z, n, tensors_for(rule));
        b.fresh_results = opt->fresh_results;
        struct oracle_term f = oracle_ob_and(&b, oracle_invariants(&b), oracle_premises(&b, rule));
        f = oracle_ob_and(&b, f, guards_term(&b, rule, NULL));
        char name[256];
        query_name(name, sizeof name, rule, "consistent", NULL, b.nslots);
        v = oracle_check(z, f.z, opt, name, NULL, o.reason);
        oracle_z3_free(z);
        if (n == k)
            break;
    }
    /* A model is the witness sought: the statement "some schedule satisfies them" holds. The second solver's verdict
     * on the same query reads the same way, so results.db logs both of the statement. */
    o.verdict = invert(v);
    if (opt->cross)
        opt->cross->last = invert(opt->cross->last);
    o.bound = opt->bound;
    if (o.verdict == ORACLE_REFUTED)
        snprintf(o.reason, sizeof o.reason, "vacuous: no schedule satisfies the invariants, premises and guards");
    timed(&o, opt, t0, c0);
    if (fn)
        fn(&o, ctx);
    return o.verdict == ORACLE_PROVED;
}

int oracle_prove(const struct rules_rule *rule, const char *drop, const struct oracle_options *opt,
                 oracle_outcome_fn fn, void *ctx)
{
    int failed = drop ? 0 : !report_consistent(rule, opt, fn, ctx);
    bool proved = report_dataflow(rule, drop, opt, fn, ctx);
    failed += !proved;
    if (!proved && !opt->fresh_results) {
        /* Say also whether the rule holds once what its producers compute is an activation (A5). */
        struct oracle_options a5 = *opt;
        a5.fresh_results = true;
        report_dataflow(rule, drop, &a5, fn, ctx);
    }
    failed += !report_contract(rule, drop, opt, fn, ctx);
    if (drop)
        return failed;
    const char *names[16];
    int n = oracle_index_obligations(rule, names, 16);
    for (int i = 0; i < n && i < 16; i++)
        failed += !report_index(rule, i, names[i], opt, fn, ctx);
    return failed;
}

/* The assumptions a rule's mutants are judged under: the stated ones when they prove the rule, else with A5 when
 * that proves it; false when neither does (a mutant of a refuted rule says nothing). */
static bool mutant_basis(const struct rules_rule *rule, const struct oracle_options *opt, struct oracle_options *use)
{
    *use = *opt;
    for (int pass = 0; pass < 2; pass++) {
        struct oracle_outcome o = outcome(rule, "dataflow", NULL);
        struct oracle_sched *cex;
        use->fresh_results = opt->fresh_results || pass == 1;
        dataflow(rule, NULL, use, &o, &cex, OB_DATAFLOW);
        oracle_sched_free(cex);
        if (o.verdict == ORACLE_PROVED)
            return true;
        if (opt->fresh_results)
            break;
    }
    return false;
}

int oracle_mutants(const struct rules_rule *rule, const struct oracle_options *opt, oracle_outcome_fn fn, void *ctx)
{
    int needed = 0;
    struct oracle_options use;
    bool judged = mutant_basis(rule, opt, &use);
    for (int i = 0; i < rule->nguards && !stopped(opt); i++) {
        struct oracle_outcome o = outcome(rule, use.fresh_results ? "dataflow under A5" : "dataflow",
                                          rule->guards[i].name);
        struct oracle_sched *cex = NULL;
        double t0 = now_ms(), c0 = cross_ms(opt);
        if (!judged) {
            o.verdict = ORACLE_UNKNOWN;
            snprintf(o.reason, sizeof o.reason, "the rule itself is refuted: its mutants say nothing");
            timed(&o, opt, t0, c0);
            if (fn)
                fn(&o, ctx);
            continue;
        }
        dataflow(rule, rule->guards[i].name, &use, &o, &cex, OB_DATAFLOW);
        if (o.verdict == ORACLE_PROVED && rules_contract_of(rule)) {
            /* Redundant for the dataflow: the kernel contract may still need it. */
            struct oracle_outcome c = outcome(rule, "kernel contract", rule->guards[i].name);
            dataflow(rule, rule->guards[i].name, &use, &c, &cex, OB_CONTRACT);
            if (c.verdict != ORACLE_PROVED)
                o = c;
        }
        timed(&o, opt, t0, c0);
        o.cex = cex;
        needed += o.verdict == ORACLE_REFUTED;
        if (fn)
            fn(&o, ctx);
        oracle_sched_free(cex);
    }
    return needed;
}
