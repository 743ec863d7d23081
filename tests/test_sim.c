/* tests/test_sim.c — the simulated device (`--device sim`): kernels/kernels.cu and kernels/device.cu, the sources
 * nvcc builds, compiled by the C++ compiler and run on the CPU. Every launch kind of kernels/launches.txt
 * (`fusecheck launches`) run, each launch and each step equal to the host lane bit for bit: the fewest tiny runs that
 * make them all (a greedy cover over the tiny zoo and three tiny variants whose query projection takes the GEMV's four
 * rows a warp, the kinds only full-size graphs made before). The tiny zoo in decode under the lane points the nightly
 * checks, one a model, every launch under three schedules; the planted device faults caught, each naming its kernel;
 * a launch over its chip's shared memory refused; every attention's shared memory within every chip's limit. By
 * default the cover's runs take one schedule; TEST_SIM_PART=sanitized (the asan preset's) runs no zoo beside the
 * cover; TEST_SIM_PART=full (ci/nightly's sim stage) runs the cover under three schedules and the zoo in decode and a
 * short prefill under all three lane points. */
#include "check.h"

#include <stdlib.h>

#include "kernels/kernels.h"
#include "models/models.h"
#include "rules/rules.h"

/* The lane points the nightly checks (ci/nightly --quick); the modes: decode and a short prefill. */
static const char *const shims[] = {"cuda-lane:h100:int8", "cuda-lane:a100:dequant",
                                    "cuda-lane:rtx4090:int8x2:cache=f32"};
static const char *const modes[] = {"decode", "prefill:4"};

/* The launch kinds run on the simulator so far (kernels_launch_signature's text). */
static char **kinds;
static int nkinds, capkinds;

/* Note the signature of every launch of g at point p. */
static void note_kinds(const struct kernels_point *p, const struct ir_graph *g)
{
    for (int32_t i = 0; i < g->nops; i++) {
        char sig[1024];
        kernels_launch_signature(p, g, i, sig, sizeof sig);
        bool seen = false;
        for (int k = 0; k < nkinds && !seen; k++)
            seen = strcmp(kinds[k], sig) == 0;
        if (seen)
            continue;
        if (nkinds == capkinds) {
            capkinds = capkinds ? 2 * capkinds : 64;
            kinds = realloc(kinds, sizeof *kinds * (size_t)capkinds);
        }
        kinds[nkinds++] = strdup(sig);
    }
}

/* The tiny variants whose query projection is KERNELS_ROWS_A_WARP_MIN_N wide: a zoo model's with as many heads as
 * make it so, its key and value projections as narrow as the model's. Their GEMV takes q four rows a warp and k and v
 * one, so q is no part of one launch with k and v (shim/lane.c, gemv_in_parts): q stays a qkv_head_epilogue of its
 * own and k and v are a merged_qkv of two, the 21 kinds of kernels/launches.txt the tiny zoo (q at most 512 wide)
 * never makes and only full-size graphs did (llama3-8b, qwen3-8b, gpt-oss-20b). */
static const char *const wide_q[] = {"tiny-llama:q4096", "tiny-qwen3:q4096", "tiny-gpt-oss:q4096"};

/* Model `name` (a zoo model, or a wide_q variant "<zoo model>:q4096") lifted in `mode`, or NULL with err. */
static struct ir_graph *lift(const char *name, const char *mode, char err[IR_ERR_LEN])
{
    struct models_options mo = models_default_options();
    if (models_parse_mode(mode, &mo.mode, err))
        return NULL;
    char base[64];
    snprintf(base, sizeof base, "%s", name);
    char *wide = strstr(base, ":q4096");
    if (wide)
        *wide = 0;
    const struct models_config *c = models_find(base);
    if (!c || !wide)
        return models_lift(c, &mo, err);
    struct models_config v = *c;
    v.name = name;
    v.heads = KERNELS_ROWS_A_WARP_MIN_N / c->head_dim;
    return models_lift(&v, &mo, err);
}

/* One tolerance run of model/mode under shim `name` on D (steps, fault f; the point's chip replaced by `chip` when
 * set): its result and 0, or -1 with the run's error in err. */
static int sim_run(struct kernels_device *D, const char *model, const char *mode, const char *name,
                   enum kernels_fault f, int steps, const struct kernels_chip *chip, struct kernels_tol_result *res,
                   char err[IR_ERR_LEN])
{
    struct kernels_point p;
    struct rules_optimized o;
    memset(res, 0, sizeof *res);
    err[0] = 0;
    struct ir_graph *g = lift(model, mode, err);
    struct shim *shim = g ? shim_lookup(name, err) : NULL;
    if (!shim || kernels_point_of(shim, &p, err) || rules_optimize(g, shim, NULL, 0, &o, err)) {
        shim_free(shim);
        ir_graph_free(g);
        return -1;
    }
    if (chip)
        p.chip = chip;
    struct ir_graph *ref = rules_quantized_lifted(g, shim);
    struct kernels_tol_input in = {o.graph, ref, g, &p, 7, steps, f, false, D, NULL};
    int rc = kernels_tolerance(&in, res, err);
    if (!rc)
        note_kinds(&p, o.graph);
    ir_graph_free(ref);
    rules_optimized_free(&o);
    shim_free(shim);
    ir_graph_free(g);
    return rc;
}

/* A run expected to pass: every row within bound and equal to the host lane. */
static void sim_pass(struct kernels_device *D, const char *model, const char *mode, const char *name)
{
    struct kernels_tol_result r;
    char err[IR_ERR_LEN];
    int rc = sim_run(D, model, mode, name, KERNELS_FAULT_NONE, 1, NULL, &r, err);
    CHECKF(rc == 0 && r.failed == 0 && r.nrows > 0, "%s %s under %s: %s%d of %d rows failed", model, mode, name,
           rc ? err : "", (int)r.failed, (int)r.nrows);
    for (int32_t i = 0; i < r.nrows && check_failed < 20; i++)
        if (!r.rows[i].pass)
            fprintf(stderr, "  launch %d %s %s: %s\n", (int)r.rows[i].launch, r.rows[i].kernel, r.rows[i].tensor,
                    r.rows[i].why);
    CHECK(rc || strcmp(r.backend, "sim") == 0);
    kernels_tol_result_free(&r);
}

/* --device sim parses, and the simulated device keeps its rows under "sim". */
static void test_parse(struct kernels_device *D)
{
    char err[IR_ERR_LEN];
    int index = 0;
    CHECK(kernels_device_parse("sim", &index, err) == 0 && index == KERNELS_DEVICE_SIM);
    CHECKF(kernels_device_parse("simulator", &index, err) == -1 && strstr(err, "or sim"), "%s", err);
    CHECK_STR(kernels_device_backend(D), "sim");
}

/* A planted fault's run: -1 with an error naming `kernel` and saying `what`. */
static void caught_by_error(struct kernels_device *D, enum kernels_fault f, const char *model, const char *mode,
                            const char *shim, const char *kernel, const char *what)
{
    struct kernels_tol_result r;
    char err[IR_ERR_LEN];
    int rc = sim_run(D, model, mode, shim, f, 1, NULL, &r, err);
    CHECKF(rc == -1 && strstr(err, kernel) && strstr(err, what) && strstr(err, "block ("), "fault %d: rc %d: %s",
           (int)f, rc, err);
    printf("test_sim: fault %d caught: %.300s\n", (int)f, err);
    kernels_tol_result_free(&r);
}

/* The planted device faults, each caught naming its kernel: a missing __syncthreads before a staged tile is read
 * and a tile staged one row short (the schedules disagree), a reduction over a partial warp (a shuffle with inactive
 * lanes), a grid-stride loop one element short (the device unequal to the host lane at the last value), a captured
 * step replayed with the row index of its capture and steps that upload stale state (a later step unequal to the host
 * lane's; launched one by one instead, the stale row is gone); an elementwise loop one value past its row (its read
 * of the guard page after the buffer). */
static void test_faults(struct kernels_device *D)
{
    caught_by_error(D, KERNELS_FAULT_MISSING_SYNC, "tiny-llama", "prefill:4", "cuda-lane:h100:dequant",
                    "kc_attention_chunk", "schedules in order and");
    caught_by_error(D, KERNELS_FAULT_TILE_SHORT, "tiny-llama", "decode", "cuda-lane:h100:dequant",
                    "kc_attention_chunk", "schedules in order and");
    caught_by_error(D, KERNELS_FAULT_PARTIAL_WARP, "tiny-llama", "decode", "cuda-lane:h100:dequant", "kc_gemv",
                    "a shuffle over mask 0xffffffff waits for threads");
    struct kernels_tol_result r;
    char err[IR_ERR_LEN];
    CHECKF(sim_run(D, "tiny-llama", "decode", "cuda-lane:h100:dequant", KERNELS_FAULT_GRID_SHORT, 1, NULL, &r, err) ==
               0, "%s", err);
    int32_t grid = 0;
    for (int32_t i = 0; i < r.nrows; i++)
        if (!r.rows[i].pass && strstr(r.rows[i].why, "the host lane") && grid++ == 0)
            printf("test_sim: grid_short caught: launch %d (%s) %s: %s\n", (int)r.rows[i].launch, r.rows[i].kernel,
                   r.rows[i].tensor, r.rows[i].why);
    CHECKF(grid > 0, "grid_short: %d rows, %d failed, none unequal to the host lane", (int)r.nrows, (int)r.failed);
    kernels_tol_result_free(&r);
    static const enum kernels_fault stale[] = {KERNELS_FAULT_STALE_ROW, KERNELS_FAULT_STALE_STATE};
    for (int k = 0; k < 2; k++) {
        CHECKF(sim_run(D, "tiny-llama", "decode", "cuda-lane:h100:int8", stale[k], 3, NULL, &r, err) == 0, "%s", err);
        int32_t step_rows = 0;
        for (int32_t i = 0; i < r.nrows; i++)
            step_rows += !r.rows[i].pass && strcmp(r.rows[i].kernel, "step") == 0 && r.rows[i].step > 0;
        CHECKF(step_rows > 0, "fault %d: %d rows, %d failed, none a later step's", (int)stale[k], (int)r.nrows,
               (int)r.failed);
        kernels_tol_result_free(&r);
    }
    caught_by_error(D, KERNELS_FAULT_ROW_PAST, "tiny-llama", "decode", "cuda-lane:h100:dequant", "kc_elementwise",
                    "read byte 0 past the end of a 1024-byte device buffer");
    kernels_device_use_graphs(D, false); /* launched one by one, no capture keeps a row index */
    CHECKF(sim_run(D, "tiny-llama", "decode", "cuda-lane:h100:int8", KERNELS_FAULT_STALE_ROW, 3, NULL, &r, err) == 0 &&
               r.failed == 0,
           "stale_row without graphs: %s %d failed", err, (int)r.failed);
    kernels_tol_result_free(&r);
    kernels_device_use_graphs(D, true);
}

/* Every buffer ends exactly at its guard page, whatever its size (an access one byte past any of them is caught), its
 * start aligned as its elements need (to 16, or to the largest power of two dividing its size). */
static void test_guard_gap(void)
{
    static const int64_t sizes[] = {4, 8, 12, 34, 68, 1020, 1024, 1028, 4100, 8204, 65536};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int64_t n = sizes[i], align = 0, need = (n & -n) < 16 ? (n & -n) : 16;
        int64_t gap = kernels_sim_guard_gap(n, &align);
        CHECKF(gap == 0 && align % need == 0, "a %lld-byte buffer: %lld bytes before its guard page, start aligned to %lld",
               (long long)n, (long long)gap, (long long)align);
    }
}

/* A launch asking more shared memory than its chip gives a block is refused, naming the kernel and the chip. */
static void test_smem_refused(struct kernels_device *D)
{
    struct kernels_chip small = *kernels_chip_find("h100");
    small.name = "small";
    small.smem_kib = 8;
    struct kernels_tol_result r;
    char err[IR_ERR_LEN];
    CHECK(sim_run(D, "tiny-llama", "decode", "cuda-lane:h100:dequant", KERNELS_FAULT_NONE, 1, &small, &r, err) == -1);
    CHECKF(strstr(err, "bytes of shared memory a block") && strstr(err, "over the 8192 small gives one"), "%s", err);
    kernels_tol_result_free(&r);
}

/* Each launch is charged its own kernel's static shared memory, as a device charges it: on a chip giving a block 13
 * KiB, tiny-llama's decode runs whole (kc_argmax's 12,288 static bytes the most any kernel declares), where every
 * kernel's together (20,880 bytes) would be over it; kc_rms_norm is charged kc_block_sum's 144 (each variable 16-byte
 * aligned); the attention's own static bytes are its logits tile, KERNELS_ATTN_STATIC_SMEM, what the attention's plan
 * leaves for them. */
static void test_smem_own(struct kernels_device *D)
{
    struct kernels_chip tight = *kernels_chip_find("h100");
    tight.name = "tight";
    tight.smem_kib = 13;
    struct kernels_tol_result r;
    char err[IR_ERR_LEN];
    int rc = sim_run(D, "tiny-llama", "decode", "cuda-lane:h100:dequant", KERNELS_FAULT_NONE, 1, &tight, &r, err);
    CHECKF(rc == 0 && r.failed == 0, "a 13 KiB chip: %s %d failed", rc ? err : "", (int)r.failed);
    kernels_tol_result_free(&r);
    CHECKF(kernels_sim_static_smem("kc_attention_chunk") == KERNELS_ATTN_STATIC_SMEM, "kc_attention_chunk: %lld",
           (long long)kernels_sim_static_smem("kc_attention_chunk"));
    CHECKF(kernels_sim_static_smem("kc_argmax") == 12288, "kc_argmax: %lld",
           (long long)kernels_sim_static_smem("kc_argmax"));
    CHECKF(kernels_sim_static_smem("kc_rms_norm") == 128 + 16, "kc_rms_norm: %lld",
           (long long)kernels_sim_static_smem("kc_rms_norm"));
    CHECK(kernels_sim_static_smem("kc_swiglu") == 0);
    CHECK(kernels_sim_static_smem("no_such_kernel") == -1);
}

/* Every attention launch of the tiny zoo (decode and prefill:16) asks at most its chip's shared memory a block, on
 * every chip: the plan of finding F36 (tiny-deepseek's 320-wide heads asked 146 KiB of the 99 KiB rtx4090 and l40s
 * give). */
static void test_attention_smem(void)
{
    static const char *const zoo[] = {"tiny-llama", "tiny-gemma2", "tiny-deepseek", "tiny-gpt-oss", "tiny-qwen3-next"};
    static const char *const m2[] = {"decode", "prefill:16"};
    for (int c = 0; c < kernels_chip_count(); c++)
        for (size_t z = 0; z < sizeof zoo / sizeof *zoo; z++)
            for (int m = 0; m < 2; m++) {
                char err[IR_ERR_LEN], name[64];
                struct models_options mo = models_default_options();
                snprintf(name, sizeof name, "cuda-lane:%s:dequant", kernels_chip_get(c)->name);
                struct ir_graph *g = models_parse_mode(m2[m], &mo.mode, err) ? NULL
                                                                             : models_lift(models_find(zoo[z]), &mo, err);
                struct shim *shim = g ? shim_lookup(name, err) : NULL;
                struct kernels_point p;
                struct rules_optimized o;
                if (!shim || kernels_point_of(shim, &p, err) || rules_optimize(g, shim, NULL, 0, &o, err)) {
                    CHECKF(0, "%s %s: %s", zoo[z], name, err);
                    shim_free(shim);
                    ir_graph_free(g);
                    continue;
                }
                for (int32_t i = 0; i < o.graph->nops; i++) {
                    struct kernels_launch l = kernels_launch_plan(&p, o.graph, i);
                    int64_t statics = strcmp(l.kernel, "attention") == 0 ? KERNELS_ATTN_STATIC_SMEM : 0;
                    CHECKF(l.smem_bytes + statics <= (int64_t)p.chip->smem_kib * 1024, "%s %s under %s: launch %d (%s) "
                           "asks %lld bytes of shared memory, the chip gives %d KiB", zoo[z], m2[m], name, (int)i,
                           l.kernel, (long long)(l.smem_bytes + statics), (int)p.chip->smem_kib);
                }
                rules_optimized_free(&o);
                shim_free(shim);
                ir_graph_free(g);
            }
}

/* Whether `sig` (a kind of kernels/launches.txt) has run. */
static bool kind_ran(const char *sig)
{
    for (int k = 0; k < nkinds; k++)
        if (strcmp(kinds[k], sig) == 0)
            return true;
    return false;
}

/* ── Every launch kind on the simulator ───────────────────────────────────────────────────────────────────── */

/* The kinds of kernels/launches.txt (`fusecheck launches`): a signature and the graph and shim it first came from. */
struct listed {
    char sig[1024], model[64], mode[32], shim[128];
};
static struct listed *listed;
static int nlisted;

/* kernels/launches.txt read into `listed`: 0, or -1 (a check failed). */
static int read_listed(void)
{
    FILE *f = fopen(FUSECHECK_SOURCE_DIR "/kernels/launches.txt", "r");
    CHECK(f != NULL);
    if (!f)
        return -1;
    char line[2048];
    int bad = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strstr(line, "   # ");
        if (line[0] == '#' || !hash)
            continue;
        *hash = 0;
        listed = realloc(listed, sizeof *listed * (size_t)(nlisted + 1));
        struct listed *k = &listed[nlisted++];
        snprintf(k->sig, sizeof k->sig, "%.1023s", line);
        if (sscanf(hash + 5, "%63[^/]/%31s under %127s", k->model, k->mode, k->shim) != 3) {
            CHECKF(0, "launches.txt: %s", hash + 5);
            bad = 1;
        }
    }
    fclose(f);
    return bad ? -1 : 0;
}

/* A run the cover may pick: a tiny graph (the zoo's or a wide_q variant) in a mode under a shim, the listed kinds
 * its launches make, and its cost: the threads of its launches, what the simulator runs as fibers. */
struct candidate {
    const char *model, *mode, *shim;
    bool *makes;
    int64_t cost;
};

/* The listed kinds model/mode under `shim` makes into c (its cost too): 0, or -1 with err. */
static int candidate_of(struct candidate *c, char err[IR_ERR_LEN])
{
    struct ir_graph *g = lift(c->model, c->mode, err);
    struct shim *shim = g ? shim_lookup(c->shim, err) : NULL;
    struct kernels_point p;
    struct rules_optimized o;
    if (!shim || kernels_point_of(shim, &p, err) || rules_optimize(g, shim, NULL, 0, &o, err)) {
        shim_free(shim);
        ir_graph_free(g);
        return -1;
    }
    c->makes = calloc((size_t)nlisted, sizeof *c->makes);
    c->cost = 0;
    for (int32_t i = 0; i < o.graph->nops; i++) {
        char sig[1024];
        kernels_launch_signature(&p, o.graph, i, sig, sizeof sig);
        for (int k = 0; k < nlisted; k++)
            c->makes[k] |= strcmp(listed[k].sig, sig) == 0;
        struct kernels_launch l = kernels_launch_plan(&p, o.graph, i);
        c->cost += l.grid * l.block;
    }
    rules_optimized_free(&o);
    shim_free(shim);
    ir_graph_free(g);
    return 0;
}

/* The modes `fusecheck launches` walks. */
static const char *const launch_modes[] = {"decode", "prefill:8", "prefill:16", "batch:4"};

/* Every candidate: each tiny graph in each launch mode under each shim kernels/launches.txt names; their number. */
static int candidates(struct candidate **out)
{
    const char *shimv[16];
    int nshim = 0;
    for (int k = 0; k < nlisted; k++) {
        bool seen = false;
        for (int i = 0; i < nshim && !seen; i++)
            seen = strcmp(shimv[i], listed[k].shim) == 0;
        if (!seen && nshim < 16)
            shimv[nshim++] = listed[k].shim;
    }
    const char *modelv[64];
    int nmodel = 0;
    for (int m = 0; m < models_count() && nmodel < 60; m++)
        if (models_get(m)->tiny)
            modelv[nmodel++] = models_get(m)->name;
    for (size_t w = 0; w < sizeof wide_q / sizeof *wide_q; w++)
        modelv[nmodel++] = wide_q[w];
    struct candidate *c = calloc((size_t)(nmodel * 4 * nshim), sizeof *c);
    int n = 0;
    for (int m = 0; m < nmodel; m++)
        for (int d = 0; d < 4; d++)
            for (int s = 0; s < nshim; s++) {
                char err[IR_ERR_LEN];
                c[n] = (struct candidate){modelv[m], launch_modes[d], shimv[s], NULL, 0};
                if (candidate_of(&c[n], err) == 0)
                    n++; /* a mode past a model's context is no graph */
            }
    *out = c;
    return n;
}

/* The listed kinds candidate c makes that `covered` lacks. */
static int gain(const struct candidate *c, const bool *covered)
{
    int n = 0;
    for (int k = 0; k < nlisted; k++)
        n += c->makes[k] && !covered[k];
    return n;
}

/* The cover: candidates picked greedily, each the one making the most kinds not yet covered for its cost (the first
 * of equals), until none adds a kind; the picks into pick[] and the kinds each adds into adds[] (their number
 * returned), covered[] the kinds they make. */
static int cover(const struct candidate *c, int n, bool *covered, int *pick, int *adds)
{
    int npick = 0;
    for (;;) {
        int best = -1, bg = 0;
        for (int i = 0; i < n; i++) {
            int g = gain(&c[i], covered);
            if (g > 0 && (best < 0 || (int64_t)g * c[best].cost > (int64_t)bg * c[i].cost)) {
                best = i;
                bg = g;
            }
        }
        if (best < 0)
            return npick;
        adds[npick] = bg;
        pick[npick++] = best;
        for (int k = 0; k < nlisted; k++)
            covered[k] |= c[best].makes[k];
    }
}

/* Every kind of kernels/launches.txt run on the simulator, equal to the host lane: the fewest tiny runs (by the
 * cover) that make them all, the full-size graphs' kinds by the wide_q variants; a listed kind no run made fails,
 * named with the graph it first came from. */
static void test_launch_kinds(struct kernels_device *D)
{
    if (read_listed())
        return;
    struct candidate *c;
    int n = candidates(&c);
    bool *covered = calloc((size_t)nlisted, sizeof *covered);
    int *pick = calloc((size_t)n + 1, sizeof *pick), *adds = calloc((size_t)n + 1, sizeof *adds);
    int npick = cover(c, n, covered, pick, adds);
    int64_t threads = 0;
    for (int i = 0; i < npick; i++) {
        const struct candidate *r = &c[pick[i]];
        printf("test_sim: cover %2d: %-20s %-10s under %-36s %3d new kinds, %lld threads\n", i + 1, r->model, r->mode,
               r->shim, adds[i], (long long)r->cost);
        threads += r->cost;
        sim_pass(D, r->model, r->mode, r->shim);
    }
    int ran = 0;
    for (int k = 0; k < nlisted; k++) {
        CHECKF(covered[k], "launch kind no tiny graph makes: %s (%s/%s under %s)", listed[k].sig, listed[k].model,
               listed[k].mode, listed[k].shim);
        CHECKF(kind_ran(listed[k].sig), "launch kind never run on the simulator: %s (%s/%s under %s)",
               listed[k].sig, listed[k].model, listed[k].mode, listed[k].shim);
        ran += kind_ran(listed[k].sig);
    }
    printf("test_sim: %d of the %d launch kinds of kernels/launches.txt run on the simulator, by %d runs of %d "
           "candidates (%lld threads)\n", ran, nlisted, npick, n, (long long)threads);
    for (int i = 0; i < n; i++)
        free(c[i].makes);
    free(c);
    free(covered);
    free(pick);
    free(adds);
    free(listed);
}

int main(void)
{
    const char *part = getenv("TEST_SIM_PART");
    bool full = part && strcmp(part, "full") == 0, sanitized = part && strcmp(part, "sanitized") == 0;
    char err[IR_ERR_LEN];
    kernels_sim_schedules(3, 1);
    struct kernels_device *D = kernels_device_open(KERNELS_DEVICE_SIM, err);
    CHECKF(D != NULL, "%s", err);
    if (!D)
        return check_done("test_sim");
    test_parse(D);
    test_attention_smem();
    test_smem_refused(D);
    test_smem_own(D);
    test_faults(D);
    test_guard_gap();
    static const char *const zoo[] = {"tiny-llama",   "tiny-qwen3",    "tiny-qwen3-moe", "tiny-gemma2",
                                      "tiny-qwen3-next", "tiny-nemotron", "tiny-qwen2.5", "tiny-granite",
                                      "tiny-minicpm", "tiny-deepseek", "tiny-gpt-oss",  "tiny-olmo2"};
    for (int z = 0; z < (int)(sizeof zoo / sizeof *zoo) && !sanitized; z++)
        for (int m = 0; m < (full ? 2 : 1); m++)
            for (int s = 0; s < 3; s++)
                if (full || s == z % 3)
                    sim_pass(D, zoo[z], modes[m], shims[s]);
    kernels_sim_schedules(full ? 3 : 1, 1);
    test_launch_kinds(D);
    for (int k = 0; k < nkinds; k++)
        free(kinds[k]);
    free(kinds);
    kernels_device_close(D);
    return check_done("test_sim");
}
