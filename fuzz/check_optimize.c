/* fuzz/check_optimize.c — the optimizer harness's checks: a graph under a shim, knobs and holds chosen by the case
 * is optimized, and its report must keep the report's contract (oracle_report_check), the result validate, print
 * back to itself (when a rewrite fired), still write every result the host reads,
 * evaluate bit-identically to the lifted graph, pass the translation validators, and, with every step from the
 * case's k on held, be the graph the earlier steps make, step k's dry run reporting held just where the full compile
 * fired it (with nothing held: the same graph and digest again). That last check costs a second compile, so it runs
 * on one input in four (the prefix byte's low two bits zero; its other bits choose k), keeping the harness's speed
 * near the optimizer's own; the text round trip runs on another one in four (the low bits one).
 *
 * A failure's signature names the step to blame where one can be found: the first k such that running steps
 * 0..k (holding the rest) already fails names step k. */
#include "fuzz.h"
#include "oracle/oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Graphs whose values would take more than this are optimized and checked but not evaluated. */
#define EVAL_BUDGET_BYTES ((int64_t)4 << 20)
#define MAX_STEPS 256
#define MAX_HELD (MAX_STEPS + 4)

/* The steps a compile under a shim can hold, in order. */
struct steps {
    const char *name[MAX_STEPS];
    int n;
};

/* Collect one step's name. */
static void add_step(const char *name, void *ctx)
{
    struct steps *s = ctx;
    if (s->n < MAX_STEPS)
        s->name[s->n++] = name;
}

/* What a check needs: the lifted graph, the shim, the steps, the case's holds, the diff's reference side (the
 * lifted graph with the quantize ops the shim's numerics insert, nothing folded) and its values. */
struct run {
    const struct ir_graph *g;
    struct ir_graph *ref;
    struct shim *shim;
    struct steps steps;
    const char *held[MAX_HELD];
    int nheld;
    struct ir_values *lifted; /* the reference side's values once evaluated; NULL when it is not (yet) */
    bool evaluated;           /* the reference side's evaluation was tried */
    uint64_t seed;
    const char *shim_name;     /* as the case names it: what a request to an external optimizer carries */
    struct fuzz_finding *fault; /* an external optimizer's first fault (check[0] is '\0' while none) */
};

/* The case's holds and every step from `from` on into held; returns how many. */
static int held_from(const struct run *r, int from, const char *held[MAX_HELD])
{
    int n = 0;
    for (int i = 0; i < r->nheld; i++)
        held[n++] = r->held[i];
    for (int i = from; i < r->steps.n && n < MAX_HELD; i++)
        held[n++] = r->steps.name[i];
    return n;
}

/* Optimize with the case's holds and every step from `from` on held too: in process, or by the external optimizer
 * (the holds travel in the request), whose first fault is kept in r->fault and fails this compile. */
static int optimize_from(const struct run *r, int from, struct rules_optimized *o, char err[IR_ERR_LEN])
{
    const char *held[MAX_HELD];
    int n = held_from(r, from, held);
    if (!fuzz_external_on())
        return rules_optimize(r->g, r->shim, held, n, o, err);
    struct fuzz_finding f;
    if (fuzz_external_optimize(r->g, r->shim_name, held, n, o, &f) == 0)
        return 0;
    if (!r->fault->check[0])
        *r->fault = f;
    snprintf(err, IR_ERR_LEN, "%s", f.message);
    return -1;
}

/* Hold the report of the compile with the steps from `from` on held to the report's contract: the index of the first
 * decision that breaks it (why in msg), or -1. */
static int32_t report_broken(const struct run *r, int from, const struct rules_optimized *o, char msg[IR_ERR_LEN])
{
    const char *held[MAX_HELD];
    int n = held_from(r, from, held);
    return oracle_report_check(r->g, r->shim, held, n, &o->report, msg);
}

/* The canonical text of g (malloc'd), or NULL. */
static char *text_of(const struct ir_graph *g, size_t *len)
{
    size_t n = 0;
    char *t = ir_print(g, &n);
    if (len)
        *len = n;
    return t;
}

/* What one compile got wrong, when anything: 0 when right, else 1 with check and message filled. */
typedef int (*verdict_fn)(struct run *r, const struct rules_optimized *o, char check[32], char msg[IR_ERR_LEN]);

/* The rewritten graph validates. */
static int verdict_valid(struct run *r, const struct rules_optimized *o, char check[32], char msg[IR_ERR_LEN])
{
    (void)r;
    char err[IR_ERR_LEN];
    if (ir_validate(o->graph, err) == 0)
        return 0;
    snprintf(check, 32, "invalid");
    snprintf(msg, IR_ERR_LEN, "the rewritten graph does not validate: %.400s", err);
    return 1;
}

static struct ir_values *evaluate_lifted(const struct ir_graph *g, const struct ir_graph *lifted, uint64_t seed);

/* The reference side's values, evaluated on first use (NULL when the graph is too large or does not evaluate). */
static const struct ir_values *lifted_values(struct run *r)
{
    if (!r->evaluated) {
        r->evaluated = true;
        r->lifted = r->ref ? evaluate_lifted(r->ref, r->g, r->seed) : NULL;
    }
    return r->lifted;
}

/* The rewritten graph evaluates to the lifted graph's observed and carried values, bit for bit, and under a
 * quantizing chip each value a quantize makes is within the mode's bound of what it reads. A rewritten graph
 * that is the reference side's program again (nothing fired, or only what the reference side has too) evaluates
 * alike from the same seed, so neither side is evaluated for it. */
static int verdict_diff(struct run *r, const struct rules_optimized *o, char check[32], char msg[IR_ERR_LEN])
{
    if (!r->ref || ir_graph_same_program(o->graph, r->ref) || !lifted_values(r))
        return 0;
    char err[IR_ERR_LEN];
    /* Filled as the lifted graph uses each tensor: a rewrite that changes a tensor's reader keeps its values. The
     * weights the reference side has alike are copied from its values, not generated again. */
    struct ir_values *v = ir_values_new_shared(o->graph, r->seed, r->g, r->ref, r->lifted, err);
    int words = shim_activation_words(r->shim);
    struct shim_quant_excess x;
    bool within = true;
    if (!v || shim_quantized_eval(o->graph, v, words, &within, &x, NULL, err) != 0) {
        ir_values_free(v);
        snprintf(check, 32, "eval");
        snprintf(msg, IR_ERR_LEN, "the lifted graph evaluates but the rewritten one does not: %.400s", err);
        return 1;
    }
    struct ir_compare c = ir_values_compare(r->ref, r->lifted, o->graph, v);
    ir_values_free(v);
    if (!within && c.identical) {
        snprintf(check, 32, "unquantized");
        snprintf(msg, IR_ERR_LEN, "%s[%lld] is %.9g, beyond the %d-word bound %.3g of the value it quantizes, %.9g",
                 o->graph->tensors[x.tensor].name, (long long)x.index, x.quantized, words, x.bound, x.source);
        return 1;
    }
    if (c.identical)
        return 0;
    snprintf(check, 32, "diff");
    snprintf(msg, IR_ERR_LEN, "%s[%lld] differs: lifted %.9g, rewritten %.9g",
             c.tensor >= 0 && c.tensor < r->ref->ntensors ? r->ref->tensors[c.tensor].name : "?", (long long)c.index,
             (double)c.a, (double)c.b);
    return 1;
}

/* Every tensor the rewritten graph's ops write (their buffers, placed parts, keeps, state written in place), as a
 * flag per tensor id (malloc'd). */
static bool *written(const struct ir_graph *g)
{
    bool *w = calloc((size_t)g->ntensors + 1, sizeof *w);
    ir_tid *buf = malloc(sizeof *buf * ((size_t)g->ntensors + 1));
    if (!w || !buf)
        abort();
    for (int32_t i = 0; i < g->nops; i++) {
        int n = ir_op_writes(&g->ops[i], buf, g->ntensors + 1);
        for (int k = 0; k < n && k <= g->ntensors; k++)
            if (buf[k] >= 0 && buf[k] < g->ntensors)
                w[buf[k]] = true;
    }
    free(buf);
    return w;
}

/* Every result the host sees (observed or carried) that the lifted graph writes, the rewritten graph writes too.
 * (The evaluator computes every op's own result even where a placement sends it elsewhere, so the diff alone does
 * not see a result the rewrite stopped writing.) */
static int verdict_visible(struct run *r, const struct rules_optimized *o, char check[32], char msg[IR_ERR_LEN])
{
    bool *before = written(r->g), *after = written(o->graph);
    int bad = 0;
    for (ir_tid t = 0; t < r->g->ntensors && !bad; t++) {
        const struct ir_tensor *x = &r->g->tensors[t];
        if (!before[t] || !(x->observed || x->carried) || x->role != IR_ROLE_ACTIVATION)
            continue;
        ir_tid u = ir_tensor_find(o->graph, x->name, strlen(x->name));
        if (u == IR_NONE || !after[u]) {
            snprintf(check, 32, "unwritten");
            snprintf(msg, IR_ERR_LEN,
                     "the host reads %.200s after the step, but the rewritten graph no longer writes it", x->name);
            bad = 1;
        }
    }
    free(before);
    free(after);
    return bad;
}

/* Validity first, then the results the host sees, then the diff. */
static int verdict_all(struct run *r, const struct rules_optimized *o, char check[32], char msg[IR_ERR_LEN])
{
    return verdict_valid(r, o, check, msg) || verdict_visible(r, o, check, msg) || verdict_diff(r, o, check, msg);
}

/* The step to blame for a failing verdict: the first k such that running steps 0..k fails ("unholdable" when even
 * holding every step fails: the views pre-pass or argmax_advance). */
static void blame(struct run *r, verdict_fn verdict, char *step, size_t cap)
{
    char err[IR_ERR_LEN], check[32], msg[IR_ERR_LEN];
    for (int k = 0; k <= r->steps.n; k++) {
        struct rules_optimized o;
        if (optimize_from(r, k, &o, err) != 0)
            continue;
        int bad = verdict(r, &o, check, msg);
        rules_optimized_free(&o);
        if (bad) {
            snprintf(step, cap, "%s", k == 0 ? "unholdable" : r->steps.name[k - 1]);
            return;
        }
    }
    snprintf(step, cap, "unknown");
}

/* The rewritten graph prints, parses and prints back to the same text. */
static int check_roundtrip(const struct rules_optimized *o, struct fuzz_finding *f)
{
    size_t n1, n2;
    char *t1 = text_of(o->graph, &n1), err[IR_ERR_LEN];
    struct ir_graph *back = t1 ? ir_parse_unchecked(t1, n1, "rewritten", err) : NULL;
    char *t2 = back ? text_of(back, &n2) : NULL;
    int bad = 0;
    if (!back)
        bad = fuzz_fail(f, "format", "rewritten", "the rewritten graph's text does not parse: %s", err);
    else if (!t2 || n1 != n2 || memcmp(t1, t2, n1) != 0)
        bad = fuzz_fail(f, "format", "rewritten", "the rewritten graph's text does not print back to itself");
    free(t1);
    free(t2);
    ir_graph_free(back);
    return bad;
}

/* Every fired decision passes the installed validators: the run validator over its own compile, the decision
 * validator over this one's report. */
static int check_decisions(const struct run *r, const struct rules_optimized *o, struct fuzz_finding *f)
{
    fuzz_run_validator rv = fuzz_external_on() ? NULL : fuzz_run_validator_installed(); /* it compiles in process */
    char rule[64] = "", why[IR_ERR_LEN] = "";
    if (rv && rv(r->g, r->shim, rule, why) != 0)
        return fuzz_fail(f, "validate", rule, "translation validation fails: %s", why);
    fuzz_decision_validator v = fuzz_validator();
    if (!v)
        return 0;
    for (int32_t i = 0; i < o->report.n; i++) {
        if (o->report.d[i].outcome != RULES_FIRED)
            continue;
        char why[IR_ERR_LEN] = "";
        if (v(r->g, r->shim, o, i, why) != 0) {
            char *line = rules_decision_line(&o->report.d[i]);
            int bad = fuzz_fail(f, "validate", o->report.d[i].rule, "decision %d (%s) fails validation: %s", (int)i,
                                line ? line : "?", why);
            free(line);
            return bad;
        }
    }
    return 0;
}

/* The index of step `name` in the steps (or -1: argmax_advance and anything else not holdable). */
static int step_index(const struct steps *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (rules_same_name(s->name[i], name))
            return i;
    return -1;
}

/* The report's lines of the decisions made by steps in [from, to), joined (malloc'd); with as_held, a firing is
 * written as the held decision a dry run of its step reports. */
static char *lines_of_steps(const struct steps *s, const struct rules_report *rep, int from, int to, bool as_held)
{
    size_t cap = 256, n = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (int32_t i = 0; i < rep->n; i++) {
        int at = step_index(s, rep->d[i].rule);
        if (at < from || at >= to)
            continue;
        struct rules_decision d = rep->d[i];
        if (as_held && d.outcome == RULES_FIRED)
            d.outcome = RULES_HELD;
        char *line = rules_decision_line(&d);
        size_t l = line ? strlen(line) : 0;
        if (n + l + 2 > cap) {
            while (n + l + 2 > cap)
                cap *= 2;
            char *p = realloc(out, cap);
            if (!p) {
                free(line);
                free(out);
                return NULL;
            }
            out = p;
        }
        if (line)
            memcpy(out + n, line, l);
        n += l;
        out[n++] = '\n';
        out[n] = '\0';
        free(line);
    }
    return out;
}

/* Whether two compiles' reports list the same decisions for the steps in [from, to) (the first's firings written as
 * held when as_held). */
static bool same_lines(const struct steps *s, const struct rules_report *a, const struct rules_report *b, int from,
                       int to, bool as_held)
{
    char *la = lines_of_steps(s, a, from, to, as_held), *lb = lines_of_steps(s, b, from, to, false);
    bool same = !la || !lb || strcmp(la, lb) == 0;
    free(la);
    free(lb);
    return same;
}

/* Whether the case itself holds step name. */
static bool case_holds(const struct run *r, const char *name)
{
    for (int i = 0; i < r->nheld; i++)
        if (rules_same_name(r->held[i], name))
            return true;
    return false;
}

/* What a validator message blames: the top-level op's label and the field ("op 7 (quantize): covers: ..." gives
 * "quantize.covers"; an operand's index is dropped: "ins[3]" gives "ins"), or "graph". */
static void offender(const char *msg, char *out, size_t cap)
{
    const char *open = strstr(msg, "op "), *paren = open ? strchr(open, '(') : NULL;
    const char *close = paren ? strchr(paren, ')') : NULL;
    if (!close || close - paren > 64) {
        snprintf(out, cap, "graph");
        return;
    }
    const char *field = msg, *p;
    while ((p = strstr(field, "): ")) != NULL) /* past the last part's label */
        field = p + 3;
    size_t n = strcspn(field, ":[ ");
    snprintf(out, cap, "%.*s.%.*s", (int)(close - paren - 1), paren + 1, (int)(n < 32 ? n : 32), field);
}

/* The last step (by index) that fired in a report, or -1. */
static int last_fired(const struct steps *s, const struct rules_report *rep)
{
    int last = -1;
    for (int32_t i = 0; i < rep->n; i++) {
        int at = rep->d[i].outcome == RULES_FIRED ? step_index(s, rep->d[i].rule) : -1;
        if (at > last)
            last = at;
    }
    return last;
}

/* Whether two graphs print the same text. */
static bool same_text(const struct ir_graph *a, const struct ir_graph *b)
{
    size_t na, nb;
    char *ta = text_of(a, &na), *tb = text_of(b, &nb);
    bool same = ta && tb && na == nb && memcmp(ta, tb, na) == 0;
    free(ta);
    free(tb);
    return same;
}

/* A second compile with every step from k on held (k past the last step: nothing more held, a plain repeat). It
 * validates; no held step fires; the steps before k decide as in the full compile; when no step from k on fired in
 * the full compile, the graph is the full compile's (the graph the earlier steps make); a plain repeat gives the
 * same graph and the same report digest. */
static int check_prefix(struct run *r, const struct rules_optimized *full, int k, struct fuzz_finding *f)
{
    struct rules_optimized a;
    char err[IR_ERR_LEN], check[32], msg[IR_ERR_LEN];
    if (optimize_from(r, k, &a, err) != 0)
        return fuzz_fail(f, "optimize", "prefix", "the compile holding steps from %d failed: %s", k, err);
    int bad = 0;
    const char *stepk = k < r->steps.n ? r->steps.name[k] : "end";
    if (k > r->steps.n) {
        char d1[65], d2[65];
        rules_report_digest(&full->report, d1);
        rules_report_digest(&a.report, d2);
        if (strcmp(d1, d2) != 0)
            bad = fuzz_fail(f, "nondeterministic", "digest", "two compiles report digests %s and %s", d1, d2);
        else if (!same_text(full->graph, a.graph))
            bad = fuzz_fail(f, "nondeterministic", "graph", "two compiles give different graphs");
        rules_optimized_free(&a);
        return bad;
    }
    int32_t broken = report_broken(r, k, &a, msg);
    if (broken >= 0) /* a held step's dry run reports too: its report keeps the same contract */
        bad = fuzz_fail(f, "report", a.report.d[broken].rule ? a.report.d[broken].rule : "-",
                        "holding every step from %s, the report breaks its contract: %s", stepk, msg);
    else if (verdict_valid(r, &a, check, msg)) {
        char what[80];
        offender(msg, what, sizeof what);
        bad = fuzz_fail(f, "prefix-invalid", what, "holding every step from %s: %s", stepk, msg);
    }
    for (int32_t i = 0; !bad && i < a.report.n; i++) {
        int at = step_index(&r->steps, a.report.d[i].rule);
        if (at >= k && a.report.d[i].outcome == RULES_FIRED)
            bad = fuzz_fail(f, "held-fired", a.report.d[i].rule, "step %s fired although every step from %s was held",
                            a.report.d[i].rule, stepk);
    }
    if (!bad && !same_lines(&r->steps, &full->report, &a.report, 0, k, false))
        bad = fuzz_fail(f, "prefix-decisions", stepk,
                        "the steps before %s decide differently when the later ones are held", stepk);
    /* Step k meets the graph the full compile gave it: its dry run must report held just where it fired. */
    if (!bad && !case_holds(r, stepk) && rules_step_linked(r->shim, stepk) &&
        !same_lines(&r->steps, &full->report, &a.report, k, k + 1, true))
        bad = fuzz_fail(f, "dry-run", stepk, "held, step %s reports other decisions than it makes when it runs", stepk);
    if (!bad && last_fired(&r->steps, &full->report) < k && !same_text(full->graph, a.graph))
        bad = fuzz_fail(f, "prefix-graph", stepk,
                        "no step from %s on fired, yet holding them gives another graph than the full compile", stepk);
    rules_optimized_free(&a);
    return bad;
}

/* Evaluate the diff's reference side g (filled as the lifted graph uses each tensor) when it is small enough and
 * evaluates (an input the evaluator refuses is not a finding). */
static struct ir_values *evaluate_lifted(const struct ir_graph *g, const struct ir_graph *lifted, uint64_t seed)
{
    int64_t bytes = ir_values_plan_bytes(g);
    if (bytes < 0 || bytes > EVAL_BUDGET_BYTES)
        return NULL;
    char err[IR_ERR_LEN];
    struct ir_values *v = ir_values_new_like(g, seed, lifted, err);
    if (v && ir_eval(g, v, err) != 0) {
        ir_values_free(v);
        v = NULL;
    }
    return v;
}

/* Run every check of one compile; 0 when all pass. */
static int check_compile(struct run *r, const struct fuzz_plan *plan, struct fuzz_finding *f)
{
    struct rules_optimized o;
    char err[IR_ERR_LEN], check[32], msg[IR_ERR_LEN], step[128];
    if (optimize_from(r, r->steps.n + 1, &o, err) != 0)
        return fuzz_fail(f, "optimize", "-", "the compile failed: %s", err);
    int bad = 0;
    int32_t at = report_broken(r, r->steps.n + 1, &o, msg);
    if (at >= 0) {
        int fail = fuzz_fail(f, "report", o.report.d[at].rule ? o.report.d[at].rule : "-",
                             "the report breaks its contract: %s", msg);
        rules_optimized_free(&o);
        return fail;
    }
    if (verdict_valid(r, &o, check, msg)) {
        char what[80], detail[220];
        blame(r, verdict_valid, step, sizeof step);
        offender(msg, what, sizeof what);
        snprintf(detail, sizeof detail, "%s/%s", step, what);
        bad = fuzz_fail(f, check, detail, "%s", msg);
    }
    /* The text format's round trip over what the rewrites make: fused ops, placements, keeps, covers. A compile
     * that fired nothing leaves the lifted ops as they were (with the numerics' quantize ops at most), text that
     * fuzz_format's round trip covers. A print, a parse and a print again cost a fifth of a case, so it runs on one
     * input in four (the prefix byte's low two bits one), as the prefix check does on another. */
    if (!bad && plan->prefix % 4 == 1 && rules_report_count(&o.report, RULES_FIRED, NULL) > 0)
        bad = check_roundtrip(&o, f);
    if (!bad && (verdict_visible(r, &o, check, msg) || verdict_diff(r, &o, check, msg))) {
        blame(r, verdict_all, step, sizeof step);
        bad = fuzz_fail(f, check, step, "%s", msg);
    }
    if (!bad)
        bad = check_decisions(r, &o, f);
    if (!bad)
        bad = plan->prefix % 4 == 0 ? check_prefix(r, &o, (plan->prefix / 4) % (r->steps.n + 2), f) : 0;
    rules_optimized_free(&o);
    return bad;
}

int fuzz_check_graph(const struct ir_graph *g, const struct fuzz_plan *plan, struct fuzz_finding *f)
{
    if (g->nops > FUZZ_MAX_CASE_OPS)
        return 0;
    char err[IR_ERR_LEN];
    const char *dead = fuzz_shim_dead_row();
    if (dead)
        return fuzz_fail(f, "shim-table", dead, "the shim list offers '%s', yet no name it stands for loads", dead);
    /* a name one edit from the plan's: refused, or spelled as the list says (the seed's bits pick the edit) */
    char probe[FUZZ_NAME_LEN + 2];
    if (fuzz_shim_name_probe(plan->shim, plan->seed * 0x9E3779B97F4A7C15ull, probe, sizeof probe))
        return fuzz_fail(f, "shim-name", fuzz_shim_name(plan->shim), "'%s' loads a shim, yet is no name the shim "
                         "list spells", probe);
    struct run r;
    memset(&r, 0, sizeof r);
    struct fuzz_finding fault;
    memset(&fault, 0, sizeof fault);
    r.g = g;
    r.seed = plan->seed;
    r.shim_name = fuzz_shim_name(plan->shim);
    r.fault = &fault;
    r.shim = shim_lookup(fuzz_shim_name(plan->shim), err);
    if (!r.shim)
        return fuzz_fail(f, "shim", fuzz_shim_name(plan->shim), "the shim list offers a shim that does not load: %s",
                         err);
    rules_steps(r.shim, add_step, &r.steps);
    for (int i = 0; i < 2; i++)
        if (plan->hold[i] >= 0 && r.steps.n > 0)
            r.held[r.nheld++] = r.steps.name[plan->hold[i] % r.steps.n];
    /* the reference: under a quantizing chip, built from the chip's activation answers without the optimizer */
    r.ref = shim_quantized_reference(g, r.shim, err);
    if (!r.ref) {
        shim_free(r.shim);
        return fuzz_fail(f, "reference", fuzz_shim_name(plan->shim), "the quantized reference: %s", err);
    }
    int bad = check_compile(&r, plan, f);
    if (fault.check[0]) { /* an external optimizer's fault is the finding, whichever compile met it */
        *f = fault;
        bad = 1;
    }
    ir_values_free(r.lifted);
    ir_graph_free(r.ref);
    shim_free(r.shim);
    return bad;
}

int fuzz_check_optimize(const uint8_t *data, size_t size, struct fuzz_finding *f)
{
    struct fuzz_case c;
    char err[IR_ERR_LEN];
    if (fuzz_case_decode(data, size, &c, err) != 0)
        return fuzz_fail(f, "generator", "invalid", "the generator made a graph the validator refuses: %s", err);
    int bad = fuzz_check_graph(c.g, &c.plan, f);
    fuzz_case_free(&c);
    return bad;
}
