/* tests/test_coverage.c — docs/coverage.md's findings, pinned. For each step that fires on no zoo graph under
 * `reference`, its nearest tiny zoo graph: there the step does not fire (and the earlier rule that takes the shape
 * first does); the smallest edit of that graph that makes the failing condition true makes the step fire, and the
 * rewrite stays bit-identical to the edited graph. Also the two steps that fire only away from the zoo's plain
 * checks: fused_quant (a quantizing lane) and latent_expanded (a chunk wider than prefill:8); and dual_norm, the last
 * step to gain a zoo architecture (olmo2), where it fires and why DeepSeek's norms do not. When either half of a
 * case changes, the step's section of coverage.md must be revisited. */
#include "check.h"
#include "check_values.h"
#include "models/models.h"
#include "rules/rules.h"
#include "shim/shim.h"

#include <stdlib.h>
#include <string.h>

/* A tiny zoo model lifted in `mode`. */
static struct ir_graph *lift(const char *model, const char *mode)
{
    char err[IR_ERR_LEN] = "";
    struct models_options o = models_default_options();
    const struct models_config *c = models_find(model);
    CHECKF(c != NULL && models_parse_mode(mode, &o.mode, err) == 0, "%s %s", model, mode);
    struct ir_graph *g = c ? models_lift(c, &o, err) : NULL;
    CHECKF(g != NULL, "%s %s: %s", model, mode, g ? "" : err);
    return g;
}

/* How many of `rule`'s decisions had `outcome` optimizing g under the shim named `shim` with `held` held, or -1 on
 * an error. With `check` set, the rewritten graph must also be valid and bit-identical to g. */
static int decided(const struct ir_graph *g, const char *shim, const char *const *held, int nheld, const char *rule,
                   enum rules_outcome outcome, bool check)
{
    char err[IR_ERR_LEN];
    struct shim *s = shim_lookup(shim, err);
    struct rules_optimized o;
    int n = -1;
    if (s && rules_optimize(g, s, held, nheld, &o, err) == 0) {
        n = rules_report_count(&o.report, outcome, rule);
        if (check) {
            CHECKF(ir_validate(o.graph, err) == 0, "%s: %s", rule, err);
            CHECKF(check_same_values(g, o.graph, 7), "%s: the rewrite differs from the edited graph", rule);
        }
        rules_optimized_free(&o);
    }
    shim_free(s);
    return n;
}

/* How many times `rule` fired (decided() with outcome fired). */
static int fired(const struct ir_graph *g, const char *shim, const char *const *held, int nheld, const char *rule,
                 bool check)
{
    return decided(g, shim, held, nheld, rule, RULES_FIRED, check);
}

/* ── Edits of a lifted graph's text ──────────────────────────────────────────────────────────────────────── */

/* One edit: `old` replaced by `new_text` (it must occur exactly once), or, with `move` set, the op line of that
 * name moved to just before the op line named `before`. */
struct edit {
    const char *old, *new_text;
    const char *move, *before;
};

/* Where the op line `name` starts in text ("op NAME = " at a line's start), or NULL. */
static char *op_line(char *text, const char *name)
{
    char key[256];
    snprintf(key, sizeof key, "\nop %s = ", name);
    char *at = strstr(text, key);
    return at ? at + 1 : NULL;
}

/* text with `old` (occurring once) replaced by `rep`, malloc'd; NULL (and a failed check) otherwise. */
static char *replace_once(const char *text, const char *old, const char *rep)
{
    const char *at = strstr(text, old);
    CHECKF(at && !strstr(at + 1, old), "\"%s\" occurs %s", old, at ? "more than once" : "nowhere");
    if (!at || strstr(at + 1, old))
        return NULL;
    size_t head = (size_t)(at - text), lo = strlen(old), lr = strlen(rep), tail = strlen(at + lo);
    char *out = malloc(head + lr + tail + 1);
    if (!out)
        abort();
    memcpy(out, text, head);
    memcpy(out + head, rep, lr);
    memcpy(out + head + lr, at + lo, tail + 1);
    return out;
}

/* text with the op line `name` moved before the op line `before`, malloc'd; NULL (and a failed check) otherwise. */
static char *move_op(char *text, const char *name, const char *before)
{
    char *from = op_line(text, name), *end = from ? strchr(from, '\n') : NULL;
    CHECKF(end && op_line(text, before), "op %s or op %s missing", name, before);
    if (!end || !op_line(text, before))
        return NULL;
    size_t len = (size_t)(end + 1 - from);
    char *line = malloc(len + 1);
    if (!line)
        abort();
    memcpy(line, from, len);
    line[len] = '\0';
    memmove(from, end + 1, strlen(end + 1) + 1);
    char *anchor = op_line(text, before);
    size_t head = (size_t)(anchor - text), tail = strlen(anchor);
    char *out = malloc(head + len + tail + 1);
    if (!out)
        abort();
    memcpy(out, text, head);
    memcpy(out + head, line, len);
    memcpy(out + head + len, anchor, tail + 1);
    free(line);
    return out;
}

/* g printed, edited and parsed back (NULL, with a failed check, when an edit does not apply or the result is not
 * a valid graph). */
static struct ir_graph *edited(const struct ir_graph *g, const struct edit *edits)
{
    size_t len;
    char *text = ir_print(g, &len);
    for (const struct edit *e = edits; text && (e->old || e->move); e++) {
        char *next = e->move ? move_op(text, e->move, e->before) : replace_once(text, e->old, e->new_text);
        free(text);
        text = next;
    }
    char err[IR_ERR_LEN] = "";
    struct ir_graph *out = text ? ir_parse(text, strlen(text), "edited", err) : NULL;
    CHECKF(!text || out, "the edited %s does not parse: %s", g->name, err);
    free(text);
    return out;
}

/* ── The cases ───────────────────────────────────────────────────────────────────────────────────────────── */

/* Every state tensor that is a convolution's ring (named "….ring" or, a batch's, "….ring.<b>") no longer carried;
 * how many. */
static int uncarry_rings(struct ir_graph *g)
{
    int n = 0;
    for (int32_t t = 0; t < g->ntensors; t++) {
        const char *ring = strstr(g->tensors[t].name, ".ring");
        if (!ring || !g->tensors[t].carried || (ring[5] != '\0' && (ring[5] != '.' || strchr(ring + 6, '.'))))
            continue;
        g->tensors[t].carried = false;
        n++;
    }
    return n;
}

/* A step that fires on no zoo graph, at its nearest real graph. `taker`: the earlier step that takes the shape there
 * (NULL: none). `atom` ("rule:atom"): where the failing condition is one of the step's guard atoms, that atom; with
 * it dropped the step fires on the lifted graph (NULL: the matcher's shape fails, not a guard). `edits`, then
 * `rings` (the convolution rings no longer carried, that many): the smallest change that makes the failing
 * condition true, after which the step fires `fires` times. */
struct coverage_case {
    const char *rule, *model, *mode;
    const char *held[3];
    const char *taker, *atom;
    struct edit edits[6];
    int rings;
    int fires;
};

/* No edit but the rings. */
#define NO_EDITS {{NULL, NULL, NULL, NULL}}

/* An edit marking layer l's activation `name` (of `shape`) observed: the host reads it after the step. */
#define OBSERVE(l, name, shape)                                                                                  \
    {"tensor blk." #l "." name " f32 " shape " activation\n",                                                   \
     "tensor blk." #l "." name " f32 " shape " activation observed\n", NULL, NULL}

static const struct coverage_case cases[] = {
    /* A plain norm's scaled result read only by the LM head: affine_input_fold takes the scale into the product.
     * A second reader of the scaled rows leaves it to norm_scale. */
    {"norm_scale", "tiny-minicpm", "prefill:8", {NULL}, "affine_input_fold", NULL,
     {{"tensor logits ", "tensor output_norm.probe f32 1x256 activation observed\ntensor logits ", NULL, NULL},
      {"op logits = ", "op output_norm.probe = scale(output_norm.scaled) n=256 factor=1\nop logits = ", NULL, NULL}},
     0, 1},
    /* In a decode step the same edit is not enough: the final norm reads the last residual add, which add_norm
     * folds into it, so it is no plain norm. */
    {"norm_scale", "tiny-minicpm", "decode", {NULL}, "add_norm", NULL,
     {{"tensor logits ", "tensor output_norm.probe f32 1x256 activation observed\ntensor logits ", NULL, NULL},
      {"op logits = ", "op output_norm.probe = scale(output_norm.scaled) n=256 factor=1\nop logits = ", NULL, NULL}},
     0, 0},
    /* The ReLU and its square are two pointwise ops joined, and relu_sqr takes them; squaring two ReLUs of the up
     * product makes a region of three. */
    {"elementwise_regions", "tiny-nemotron", "decode", {NULL}, "relu_sqr", NULL,
     {{"tensor blk.0.ffn_act ", "tensor blk.0.ffn_relu2 f32 1x512 activation\ntensor blk.0.ffn_act ", NULL, NULL},
      {"op blk.0.ffn_act = elementwise(blk.0.ffn_relu, blk.0.ffn_relu)",
       "op blk.0.ffn_relu2 = relu(blk.0.ffn_up) n=512\nop blk.0.ffn_act = elementwise(blk.0.ffn_relu, blk.0.ffn_relu2)",
       NULL, NULL}},
     0, 1},
    /* The ReLU is read by one op (its square, twice); a second pointwise reader makes it recomputed in each. */
    {"recompute_fanout", "tiny-nemotron", "decode", {NULL}, "relu_sqr", NULL,
     {{"tensor blk.0.ffn_act ", "tensor blk.0.ffn_relu.probe f32 1x512 activation observed\ntensor blk.0.ffn_act ",
       NULL, NULL},
      {"op blk.0.ffn_act = ", "op blk.0.ffn_relu.probe = scale(blk.0.ffn_relu) n=512 factor=1\nop blk.0.ffn_act = ",
       NULL, NULL}},
     0, 2},
    /* dual_norm fires on olmo2 (test_dual_norm_olmo2). DeepSeek's two low-rank norms are the nearest other pair: the
     * query's and the latent's norms, where slice_read and join_in_place take the latent norm first. */
    {"dual_norm", "tiny-deepseek", "decode", {NULL}, "slice_read", NULL,
     {{NULL, NULL, "blk.0.kv_a", "blk.0.q_a_norm"}, {NULL, NULL, "blk.0.kv_latent", "blk.0.q_a_norm"}}, 0, 0},
    /* With those two held, the latent's slice lies between the norms (no_cross); lifting the latent's product and
     * slice before the query's norm lets the first layer's two norms run as one. */
    {"dual_norm", "tiny-deepseek", "decode", {"slice_read", "join_in_place"}, NULL, "dual_norm:no_cross",
     {{NULL, NULL, "blk.0.kv_a", "blk.0.q_a_norm"}, {NULL, NULL, "blk.0.kv_latent", "blk.0.q_a_norm"}}, 0, 1},
    /* row_write writes every appended row from its producer, so no row set is left; rows the host reads too stay
     * row sets, and each layer's two appends (at `pos`) run as one launch. */
    {"cross_layer_launch", "tiny-llama", "decode", {NULL}, "row_write", NULL,
     {OBSERVE(0, "k_rope", "1x128"), OBSERVE(0, "v", "1x128"), OBSERVE(1, "k_rope", "1x128"),
      OBSERVE(1, "v", "1x128")},
     0, 2},
    /* The Gated DeltaNet groups: each convolution writes its ring, which the host carries, so no convolution is
     * "made for" its delta rule (read_only_within). With the rings not carried they fire. */
    {"gdn_input_epilogue", "tiny-qwen3-next", "decode", {NULL}, NULL, "gdn_input_epilogue:made_for", NO_EDITS, 9, 3},
    {"gdn_post_conv_prep", "tiny-qwen3-next", "prefill:8", {NULL}, NULL, "gdn_post_conv_prep:made_for", NO_EDITS, 9,
     3},
    {"gdn_decode_whole", "tiny-qwen3-next", "batch:4", {NULL}, NULL, "gdn_decode_whole:made_for", NO_EDITS, 36, 12},
    /* In decode gdn_input_epilogue takes the step first; held, gdn_decode_whole takes it. */
    {"gdn_decode_whole", "tiny-qwen3-next", "decode", {"gdn_input_epilogue"}, NULL, "gdn_decode_whole:made_for",
     NO_EDITS, 9, 3},
};

/* How many names `held` lists. */
static int count_held(const char *const *held)
{
    int n = 0;
    while (n < 3 && held[n])
        n++;
    return n;
}

/* One case: the step does not fire on the lifted graph (its taker does); the edited graph makes it fire as said. */
static void test_case(const struct coverage_case *c)
{
    struct ir_graph *g = lift(c->model, c->mode);
    if (!g)
        return;
    int nheld = count_held(c->held);
    CHECKF(fired(g, "reference", c->held, nheld, c->rule, false) == 0, "%s fires on %s %s", c->rule, c->model,
           c->mode);
    if (c->taker)
        CHECKF(fired(g, "reference", c->held, nheld, c->taker, false) > 0, "%s takes nothing on %s %s", c->taker,
               c->model, c->mode);
    if (c->atom) {
        rules_drop_atom(c->atom);
        int n = fired(g, "reference", c->held, nheld, c->rule, false);
        rules_drop_atom(NULL);
        CHECKF(n > 0, "%s dropped: %s fired %d times on %s %s", c->atom, c->rule, n, c->model, c->mode);
    }
    struct ir_graph *e = edited(g, c->edits);
    if (e) {
        if (c->rings) {
            int rings = uncarry_rings(e);
            CHECKF(rings == c->rings, "%s %s: %d rings", c->model, c->mode, rings);
        }
        int n = fired(e, "reference", c->held, nheld, c->rule, true);
        CHECKF(n == c->fires, "%s on the edited %s %s: fired %d, want %d", c->rule, c->model, c->mode, n, c->fires);
        ir_graph_free(e);
    }
    ir_graph_free(g);
}

/* fused_quant fires under a quantizing lane, never under reference; latent_expanded (the lane's rule for a wide
 * chunk's latent attention) fires at prefill:16, not at prefill:8. */
static void test_lane_steps(void)
{
    struct ir_graph *g = lift("tiny-llama", "decode");
    if (g) {
        CHECK(fired(g, "reference", NULL, 0, "fused_quant", false) == 0);
        CHECK(fired(g, "cuda-lane:h100:int8", NULL, 0, "fused_quant", false) > 0);
        ir_graph_free(g);
    }
    static const struct {
        const char *mode;
        int fires;
    } wide[] = {{"prefill:8", 0}, {"prefill:16", 3}};
    for (size_t k = 0; k < sizeof wide / sizeof wide[0]; k++) {
        g = lift("tiny-deepseek", wide[k].mode);
        if (!g)
            continue;
        int n = fired(g, "cuda-lane:h100:int8", NULL, 0, "latent_expanded", false);
        CHECKF(n == wide[k].fires, "latent_expanded on tiny-deepseek %s: fired %d", wide[k].mode, n);
        ir_graph_free(g);
    }
}

/* dual_norm on the zoo's olmo2: each layer's whole-width q and k norms (one row shape, as many kv heads as heads),
 * the products before both, fire as one op under reference in every mode (a batch: once a sequence), the rewrite
 * valid and bit-identical; the lane runs the class as its parts and refuses each. With the model code's order (the
 * q norm right after the q product, before the k product) the k product lies between the norms (no_cross) and only
 * the other layer's pair fires. */
static void test_dual_norm_olmo2(void)
{
    static const struct {
        const char *mode;
        int fires;
    } modes[] = {{"decode", 2}, {"prefill:8", 2}, {"batch:4", 8}};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        struct ir_graph *g = lift("tiny-olmo2", modes[m].mode);
        if (!g)
            continue;
        int n = fired(g, "reference", NULL, 0, "dual_norm", true);
        CHECKF(n == modes[m].fires, "dual_norm on tiny-olmo2 %s: fired %d", modes[m].mode, n);
        n = decided(g, "cuda-lane:h200:int8", NULL, 0, "dual_norm", RULES_REFUSED, false);
        CHECKF(n == modes[m].fires, "dual_norm on tiny-olmo2 %s under the lane: refused %d", modes[m].mode, n);
        ir_graph_free(g);
    }
    struct ir_graph *g = lift("tiny-olmo2", "decode");
    if (!g)
        return;
    char err[IR_ERR_LEN];
    struct shim *s = shim_lookup("reference", err);
    struct rules_optimized o;
    if (s && rules_optimize(g, s, NULL, 0, &o, err) == 0) {
        size_t len;
        char *text = ir_print(o.graph, &len);
        CHECK(text && strstr(text, "fused dual_norm blk.0.q_norm = (blk.0.q, blk.0.attn_q_norm.weight, blk.0.k, "
                                   "blk.0.attn_k_norm.weight) keep blk.0.k_norm"));
        free(text);
        rules_optimized_free(&o);
    }
    shim_free(s);
    static const struct edit model_order[] = {{NULL, NULL, "blk.0.q_norm", "blk.0.k"}, {NULL, NULL, NULL, NULL}};
    struct ir_graph *e = edited(g, model_order);
    if (e) {
        int n = fired(e, "reference", NULL, 0, "dual_norm", true);
        CHECKF(n == 1, "dual_norm on tiny-olmo2 in the model code's order: fired %d", n);
        ir_graph_free(e);
    }
    ir_graph_free(g);
}

int main(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        test_case(&cases[k]);
    test_lane_steps();
    test_dual_norm_olmo2();
    return check_done("coverage");
}
