/* tests/test_sim.c — the simulated device (`--device sim`): kernels/kernels.cu and kernels/device.cu, the sources
 * nvcc builds, compiled by the C++ compiler and run on the CPU, every launch under three schedules. The tiny zoo
 * under the lane points the nightly checks, each launch and each step equal to the host lane bit for bit, and every
 * launch kind of kernels/launches.txt a tiny graph makes run among them; the planted device faults caught, each
 * naming its kernel; a launch over its chip's shared memory refused; every attention's shared memory within every
 * chip's limit. By default the zoo runs in decode under the three lane points; TEST_SIM_PART=full (ci/nightly's sim
 * stage) adds a short prefill and every launch kind of kernels/launches.txt; TEST_SIM_PART=quick (the asan preset's)
 * runs the zoo in decode under one lane point a model. */
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

/* One tolerance run of model/mode under shim `name` on D (steps, fault f; the point's chip replaced by `chip` when
 * set): its result and 0, or -1 with the run's error in err. */
static int sim_run(struct kernels_device *D, const char *model, const char *mode, const char *name,
                   enum kernels_fault f, int steps, const struct kernels_chip *chip, struct kernels_tol_result *res,
                   char err[IR_ERR_LEN])
{
    struct models_options mo = models_default_options();
    struct kernels_point p;
    struct rules_optimized o;
    memset(res, 0, sizeof *res);
    err[0] = 0;
    struct ir_graph *g = models_parse_mode(mode, &mo.mode, err) ? NULL : models_lift(models_find(model), &mo, err);
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
 * lane's; launched one by one instead, the stale row is gone). */
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
    kernels_device_use_graphs(D, false); /* launched one by one, no capture keeps a row index */
    CHECKF(sim_run(D, "tiny-llama", "decode", "cuda-lane:h100:int8", KERNELS_FAULT_STALE_ROW, 3, NULL, &r, err) == 0 &&
               r.failed == 0,
           "stale_row without graphs: %s %d failed", err, (int)r.failed);
    kernels_tol_result_free(&r);
    kernels_device_use_graphs(D, true);
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
                    CHECKF(l.smem_bytes <= (int64_t)p.chip->smem_kib * 1024, "%s %s under %s: launch %d (%s) asks %lld "
                           "bytes of shared memory, the chip gives %d KiB", zoo[z], m2[m], name, (int)i, l.kernel,
                           (long long)l.smem_bytes, (int)p.chip->smem_kib);
                }
                rules_optimized_free(&o);
                shim_free(shim);
                ir_graph_free(g);
            }
}

/* Whether line `sig` (a kind of kernels/launches.txt) has run. */
static bool kind_ran(const char *sig)
{
    for (int k = 0; k < nkinds; k++)
        if (strcmp(kinds[k], sig) == 0)
            return true;
    return false;
}

/* Every kind kernels/launches.txt lists whose first graph is a tiny model's: run (its graph run when the zoo's
 * runs did not make it); the kinds only a full-size model makes are counted apart. */
static void test_launch_kinds(struct kernels_device *D)
{
    FILE *f = fopen(FUSECHECK_SOURCE_DIR "/kernels/launches.txt", "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char line[2048];
    int total = 0, ran = 0, full = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strstr(line, "   # ");
        if (line[0] == '#' || !hash)
            continue;
        *hash = 0;
        char model[64], mode[64], shim[256];
        total++;
        if (sscanf(hash + 5, "%63[^/]/%63s under %255s", model, mode, shim) != 3) {
            CHECKF(0, "launches.txt: %s", hash + 5);
            continue;
        }
        if (!kind_ran(line) && strncmp(model, "tiny-", 5) == 0)
            sim_pass(D, model, mode, shim);
        if (strncmp(model, "tiny-", 5) != 0) {
            full++;
            continue;
        }
        CHECKF(kind_ran(line), "launch kind never run on the simulator: %s (%s/%s under %s)", line, model, mode, shim);
        ran += kind_ran(line);
    }
    fclose(f);
    printf("test_sim: %d of the %d launch kinds of kernels/launches.txt run on the simulator; %d only a full-size "
           "model makes\n", ran, total, full);
}

int main(void)
{
    const char *part = getenv("TEST_SIM_PART");
    bool quick = part && strcmp(part, "quick") == 0, full = part && strcmp(part, "full") == 0;
    char err[IR_ERR_LEN];
    kernels_sim_schedules(3, 1);
    struct kernels_device *D = kernels_device_open(KERNELS_DEVICE_SIM, err);
    CHECKF(D != NULL, "%s", err);
    if (!D)
        return check_done("test_sim");
    test_parse(D);
    test_attention_smem();
    test_smem_refused(D);
    test_faults(D);
    static const char *const zoo[] = {"tiny-llama",   "tiny-qwen3",    "tiny-qwen3-moe", "tiny-gemma2",
                                      "tiny-qwen3-next", "tiny-nemotron", "tiny-qwen2.5", "tiny-granite",
                                      "tiny-minicpm", "tiny-deepseek", "tiny-gpt-oss",  "tiny-olmo2"};
    for (int z = 0; z < (int)(sizeof zoo / sizeof *zoo); z++)
        for (int m = 0; m < (full ? 2 : 1); m++)
            for (int s = 0; s < 3; s++)
                if (!quick || s == z % 3)
                    sim_pass(D, zoo[z], modes[m], shims[s]);
    if (full)
        test_launch_kinds(D);
    for (int k = 0; k < nkinds; k++)
        free(kinds[k]);
    free(kinds);
    kernels_device_close(D);
    return check_done("test_sim");
}
