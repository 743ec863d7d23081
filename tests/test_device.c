/* tests/test_device.c — the device runner. Everywhere: the --device value, the backend name, the memory a graph
 * needs and the room its reads take, which tensors the host gives, what a build without CUDA or a machine without a
 * device says, and the CLI's errors and --version. On a CUDA device (cudaGetDeviceCount finds one): every tiny model
 * × mode × lane point within its bounds and equal to the host lane bit for bit (launch by launch, and each step run
 * on the device's own buffers), the planted faults caught (GEMV_ROW, STALE_STATE), steps keeping their state on the
 * device and replaying one captured graph (equal to steps launched one by one), a graph past the device's memory
 * refused before any launch. Without a device the suite says so in one line and exits 77 (ctest's skip) once
 * everything else has passed; TEST_DEVICE_ZOO=model[,model] runs part of the zoo. */
#include "check.h"

#include <stdlib.h>
#include <sys/wait.h>

#include "kernels/kernels.h"
#include "models/models.h"
#include "rules/rules.h"

/* ── What runs without a GPU ─────────────────────────────────────────────────────────────────────────────── */

/* --device values: host, cuda, cuda:N; anything else refused with what is expected. */
static void test_parse(void)
{
    char err[IR_ERR_LEN];
    int index = 7;
    CHECK(kernels_device_parse("host", &index, err) == 0 && index == -1);
    CHECK(kernels_device_parse("cuda", &index, err) == 0 && index == 0);
    CHECK(kernels_device_parse("cuda:3", &index, err) == 0 && index == 3);
    static const char *const bad[] = {"gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1x", "cuda:1024", "CUDA", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        CHECKF(kernels_device_parse(bad[i], &index, err) == -1 && strstr(err, "expected host, cuda or cuda:N"),
               "'%s': %s", bad[i], err);
    }
}

/* The backend name results.db keeps a device's rows under. */
static void test_backend_name(void)
{
    char out[128];
    kernels_device_backend_name("NVIDIA H200", 9, 0, out, sizeof out);
    CHECK_STR(out, "cuda:NVIDIA H200:sm_90");
    kernels_device_backend_name("NVIDIA L40S", 8, 9, out, sizeof out);
    CHECK_STR(out, "cuda:NVIDIA L40S:sm_89");
}

/* A model's lifted and rewritten step under shim `name`: 0, or -1 (said why). */
static int rewritten_of(const char *model, const char *mode, const char *name, struct ir_graph **lifted,
                        struct shim **shim, struct kernels_point *p, struct rules_optimized *o)
{
    char err[IR_ERR_LEN];
    struct models_options mo = models_default_options();
    *shim = NULL;
    *lifted = models_parse_mode(mode, &mo.mode, err) ? NULL : models_lift(models_find(model), &mo, err);
    *shim = *lifted ? shim_lookup(name, err) : NULL;
    if (!*shim || kernels_point_of(*shim, p, err) || rules_optimize(*lifted, *shim, NULL, 0, o, err)) {
        fprintf(stderr, "%s %s under %s: %s\n", model, mode, name, err);
        shim_free(*shim);
        ir_graph_free(*lifted);
        return -1;
    }
    return 0;
}

/* The memory need: every tensor's buffer (checkpoint rows in their block format), the quantize results' words, a
 * flag word a launch, plus the largest launch's room, each rounded to the alignment; an attention and a mixture take
 * room for their kernels. */
static void test_need(void)
{
    struct ir_graph *g;
    struct shim *shim;
    struct kernels_point p;
    struct rules_optimized o;
    if (rewritten_of("tiny-qwen3-moe", "decode", "cuda-lane:h200:int8", &g, &shim, &p, &o)) {
        CHECK(!"tiny-qwen3-moe lifts");
        return;
    }
    const struct ir_graph *r = o.graph;
    int64_t bytes = 0, most = 0, ckpt = 0, words = 0;
    bool attention = false, moe = false;
    CHECK(kernels_device_flags_bytes(r) == kernels_device_round(4 * (int64_t)r->nops));
    CHECK(kernels_device_round(0) == 0 && kernels_device_round(1) == 256 && kernels_device_round(256) == 256 &&
          kernels_device_round(257) == 512);
    for (ir_tid t = 0; t < r->ntensors; t++) {
        const struct ir_tensor *T = &r->tensors[t];
        int64_t srows = T->transposed ? T->cols : T->rows, slen = T->transposed ? T->rows : T->cols;
        int64_t b = T->checkpoint ? srows * ir_ggml_row_bytes(T->format, slen) : 4 * ir_tensor_len(r, t);
        if (T->checkpoint && T->format == IR_FMT_Q8_0) { /* 34 bytes a block of 32 values */
            CHECK(b == ir_tensor_len(r, t) / 32 * 34);
            ckpt++;
        }
        CHECK(kernels_device_tensor_bytes(r, t) == b);
        bytes += kernels_device_round(b) + kernels_device_round(kernels_device_words_bytes(r, t));
        words += kernels_device_words_bytes(r, t);
    }
    CHECK(words > 0); /* int8 activations: the quantize results' words, 32 values a block */
    for (int32_t i = 0; i < r->nops; i++) {
        int64_t s = kernels_device_scratch(&p, r, i);
        CHECK(s >= 0 && s % KERNELS_DEVICE_ALIGN == 0);
        most = s > most ? s : most;
        char sig[1024];
        kernels_launch_signature(&p, r, i, sig, sizeof sig);
        bool a = strstr(sig, " attention") != NULL, m = strstr(sig, " moe[") != NULL;
        CHECKF(!(a || m) || s > 0, "%s: scratch %lld", sig, (long long)s); /* their kernels' own room */
        attention = attention || a;
        moe = moe || m;
    }
    CHECK(ckpt > 0);
    CHECK(attention && moe);
    bytes += kernels_device_flags_bytes(r);
    CHECKF(kernels_device_need(&p, r) == bytes + most, "need %lld, buffers %lld + room %lld",
           (long long)kernels_device_need(&p, r), (long long)bytes, (long long)most);
    rules_optimized_free(&o);
    shim_free(shim);
    ir_graph_free(g);
}

/* The room a launch's reads take: a strided read gathered, a checkpoint read as plain values decoded whole first, a
 * matrix read whole in its block format none; which tensors the host gives (their row indices checked on the host). */
static void test_room_and_given(void)
{
    static const char text[] = "graph room family=test mode=decode\n"
                               "tensor tok i32 1x1 param\n"
                               "tensor w f32 16x32 constant q8_0\n"
                               "tensor nw f32 1x32 constant f32\n"
                               "tensor x f32 1x32 activation\n"
                               "tensor h f32 1x16 activation\n"
                               "tensor y f32 1x16 activation observed\n"
                               "op x = row_gather(w, tok) rows=16 cols=32 index=named\n"
                               "op h = scale(x[2:0:1]) n=16 factor=2\n"
                               "op y = rms_norm(h, nw[2:1:1]) rows=1 cols=16 eps=1e-06 weight offset=0\n";
    static const char computed[] = "graph computed family=test mode=decode\n"
                                   "tensor tok i32 1x1 param\n"
                                   "tensor w f32 16x32 constant q8_0\n"
                                   "tensor x f32 1x32 activation\n"
                                   "tensor a i32 1x1 activation\n"
                                   "tensor z f32 1x32 activation observed\n"
                                   "op x = row_gather(w, tok) rows=16 cols=32 index=named\n"
                                   "op a = argmax(x) rows=1 cols=32\n"
                                   "op z = row_gather(w, a) rows=16 cols=32 index=named\n";
    char err[IR_ERR_LEN] = "";
    struct kernels_point p = {kernels_chip_find("h200"), KERNELS_ACTS_DEQUANT, SHIM_KEEP_F32, SHIM_KEEP_F32};
    struct ir_graph *g = ir_parse(text, sizeof text - 1, "room.fc", err);
    CHECKF(g != NULL, "%s", err);
    if (g) {
        CHECK(kernels_device_scratch(&p, g, 0) == 0);   /* q8_0 rows read whole where they lie */
        CHECK(kernels_device_scratch(&p, g, 1) == 256); /* 16 values gathered */
        CHECK(kernels_device_scratch(&p, g, 2) == 512); /* nw decoded (32 values), 16 of them gathered */
        int64_t buffers = 0;
        for (ir_tid t = 0; t < g->ntensors; t++)
            buffers += kernels_device_round(kernels_device_tensor_bytes(g, t));
        CHECK(kernels_device_need(&p, g) == buffers + kernels_device_flags_bytes(g) + 512);
        CHECK(kernels_device_host_given(g, ir_tensor_find(g, "tok", 3)));
        CHECK(kernels_device_host_given(g, ir_tensor_find(g, "w", 1)));
        CHECK(!kernels_device_host_given(g, ir_tensor_find(g, "x", 1)));
        ir_graph_free(g);
    }
    g = ir_parse(computed, sizeof computed - 1, "computed.fc", err);
    CHECKF(g != NULL, "%s", err);
    if (g) {
        CHECK(!kernels_device_host_given(g, ir_tensor_find(g, "a", 1))); /* a row the step computes */
        CHECK(kernels_device_scratch(&p, g, 2) == 0);
        ir_graph_free(g);
    }
}

/* What the runner says with no device to open: a build without CUDA says so; a build with it names CUDA's error. */
static void test_no_device_words(int count, const char *why)
{
    char err[IR_ERR_LEN] = "";
    if (!kernels_device_built()) {
        CHECK(count == -1);
        CHECK_STR(why, "fusecheck was built without CUDA");
        CHECK(kernels_device_archs() == NULL);
        CHECK(kernels_device_open(0, err) == NULL && strcmp(err, "fusecheck was built without CUDA") == 0);
        return;
    }
    CHECK_STR(kernels_device_archs(), "sm_80, sm_89, sm_90");
    if (count > 0)
        return;
    CHECKF(strncmp(why, "no CUDA device", 14) == 0, "%s", why);
    CHECK(kernels_device_open(0, err) == NULL && strncmp(err, "no CUDA device", 14) == 0);
}

/* Run the fusecheck binary with `args`; its exit status, and stdout and stderr together into out. */
static int run_cli(const char *args, char *out, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", FUSECHECK_BINARY, args);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The CLI: --version says whether CUDA is built in; --device errors are exit 2 with the reason. */
static void test_cli(int count)
{
    char out[8192];
    CHECK(run_cli("--version", out, sizeof out) == 0);
    CHECKF(strstr(out, kernels_device_built() ? "cuda: built for sm_80, sm_89, sm_90\n" : "cuda: not built\n"), "%s",
           out);
    CHECK(run_cli("tolerance tiny-llama --shim cuda-lane:h200:int8 --device gpu", out, sizeof out) == 2);
    CHECKF(strstr(out, "fusecheck: tolerance: --device: expected host, cuda or cuda:N"), "%s", out);
    CHECK(run_cli("check tiny-llama --db /dev/null --device cuda", out, sizeof out) == 2);
    CHECKF(strstr(out, "fusecheck: check: --device runs the tolerance runs' launches: it needs --tolerance"), "%s",
           out);
    if (count > 0) { /* a device index past the last */
        CHECK(run_cli("tolerance tiny-llama --shim cuda-lane:h200:int8 --device cuda:1023", out, sizeof out) == 2);
        CHECKF(strstr(out, "fusecheck: tolerance: --device cuda:1023: no CUDA device 1023"), "%s", out);
        return;
    }
    const char *why = kernels_device_built() ? "fusecheck: tolerance: --device cuda: no CUDA device ("
                                             : "fusecheck: tolerance: --device cuda: fusecheck was built without CUDA";
    CHECK(run_cli("tolerance tiny-llama --shim cuda-lane:h200:int8 --device cuda", out, sizeof out) == 2);
    CHECKF(strstr(out, why), "%s", out);
    CHECK(run_cli("check tiny-llama --mode decode --shim cuda-lane:h200:int8 --tolerance --device cuda:0 --db "
                  "/dev/null", out, sizeof out) == 2);
    CHECKF(strstr(out, kernels_device_built() ? "fusecheck: check: --device cuda:0: no CUDA device ("
                                              : "fusecheck: check: --device cuda:0: fusecheck was built without CUDA"),
           "%s", out);
    /* the host lane is still the default, and "host" names it */
    CHECK(run_cli("tolerance tiny-llama --shim cuda-lane:h200:int8 --device host", out, sizeof out) == 0);
    CHECKF(strstr(out, "host lane"), "%s", out);
}

/* ── On a device ─────────────────────────────────────────────────────────────────────────────────────────── */

/* One tolerance run of model/mode under shim `name` on device D with fault f planted, `steps` steps, only the steps
 * end to end when chain_only; its result; 0 when it ran. */
static int device_run(struct kernels_device *D, const char *model, const char *mode, const char *name,
                      enum kernels_fault f, int steps, bool chain_only, struct kernels_tol_result *res)
{
    struct ir_graph *g;
    struct shim *shim;
    struct kernels_point p;
    struct rules_optimized o;
    char err[IR_ERR_LEN];
    memset(res, 0, sizeof *res);
    if (rewritten_of(model, mode, name, &g, &shim, &p, &o))
        return -1;
    struct ir_graph *ref = rules_quantized_lifted(g, shim);
    struct kernels_tol_input in = {o.graph, ref, g, &p, 7, steps, f, chain_only, D, NULL};
    int rc = kernels_tolerance(&in, res, err);
    if (rc)
        fprintf(stderr, "%s %s under %s on %s: %s\n", model, mode, name, kernels_device_backend(D), err);
    ir_graph_free(ref);
    rules_optimized_free(&o);
    shim_free(shim);
    ir_graph_free(g);
    return rc;
}

/* One tolerance run of two steps, launch by launch and end to end. */
static int device_tolerance(struct kernels_device *D, const char *model, const char *mode, const char *name,
                            enum kernels_fault f, struct kernels_tol_result *res)
{
    return device_run(D, model, mode, name, f, 2, false, res);
}

/* Whether `name` is one of the comma-separated names of `list`. */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

/* Every tiny model × mode × activations × cache/state knobs: within bound and equal to the host lane (the models
 * TEST_DEVICE_ZOO lists, when it is set, so that parts of the zoo run side by side). */
static void test_device_zoo(struct kernels_device *D)
{
    static const char *const models[] = {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe", "tiny-gemma2",
                                         "tiny-qwen3-next", "tiny-gpt-oss", "tiny-olmo2"};
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    static const char *const acts[] = {"dequant", "int8", "int8x2"};
    static const char *const knobs[] = {"cache=f16", "cache=f32:state=bf16", "cache=f16:fuse_quant=off"};
    const char *only = getenv("TEST_DEVICE_ZOO"); /* a comma-separated list of models: a part of the zoo */
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        for (int k = 0; k < 3 && (!only || listed(only, models[m])); k++)
            for (int a = 0; a < 3; a++)
                for (int n = 0; n < 3; n++) {
                    char name[128];
                    snprintf(name, sizeof name, "cuda-lane:h200:%s:%s", acts[a], knobs[n]);
                    struct kernels_tol_result r;
                    int rc = device_tolerance(D, models[m], modes[k], name, KERNELS_FAULT_NONE, &r);
                    CHECKF(rc == 0 && r.failed == 0 && r.nrows > 0, "%s %s %s: %d of %d rows failed", models[m],
                           modes[k], name, (int)r.failed, (int)r.nrows);
                    for (int32_t i = 0; i < r.nrows && check_failed < 20; i++)
                        if (!r.rows[i].pass)
                            fprintf(stderr, "  launch %d %s %s: %s\n", (int)r.rows[i].launch, r.rows[i].kernel,
                                    r.rows[i].tensor, r.rows[i].why);
                    CHECK(strncmp(r.backend, "cuda:", 5) == 0);
                    kernels_tol_result_free(&r);
                }
}

/* Planted faults on the device are caught: the GEMV's shifted outputs (rows outside their bound and unequal to the
 * host lane), and steps that lose their caches (the device's step unequal to the host lane's from the second on). */
static void test_device_fault(struct kernels_device *D)
{
    struct kernels_tol_result r;
    CHECK(device_tolerance(D, "tiny-llama", "decode", "cuda-lane:h200:dequant", KERNELS_FAULT_GEMV_ROW, &r) == 0);
    CHECKF(r.failed > 0, "%d rows, none failed", (int)r.nrows);
    kernels_tol_result_free(&r);
    for (int chain_only = 0; chain_only < 2; chain_only++) {
        CHECK(device_run(D, "tiny-llama", "decode", "cuda-lane:h200:int8", KERNELS_FAULT_STALE_STATE, 3,
                         chain_only, &r) == 0);
        int32_t step_rows = 0;
        for (int32_t i = 0; i < r.nrows; i++)
            step_rows += !r.rows[i].pass && strcmp(r.rows[i].kernel, "step") == 0 && r.rows[i].step > 0;
        CHECKF(step_rows > 0, "stale state (chain only %d): %d rows, %d failed, none a later step's", chain_only,
               (int)r.nrows, (int)r.failed);
        kernels_tol_result_free(&r);
    }
}

/* Steps on the device keep their caches there: after the first step of a run only the inputs and params go up;
 * steps are captured once as a graph and replayed as the position moves; launched one by one instead, the figures are
 * the same bit for bit. */
static void test_device_steps(struct kernels_device *D)
{
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    for (int m = 0; m < 3; m++) {
        struct kernels_tol_result r1, r4, rn;
        struct kernels_device_stats a, b, c, d;
        kernels_device_use_graphs(D, true);
        kernels_device_stats_get(D, &a);
        CHECK(device_run(D, "tiny-qwen3", modes[m], "cuda-lane:h200:int8", KERNELS_FAULT_NONE, 1, true, &r1) == 0);
        kernels_device_stats_get(D, &b);
        CHECK(device_run(D, "tiny-qwen3", modes[m], "cuda-lane:h200:int8", KERNELS_FAULT_NONE, 4, true, &r4) == 0);
        kernels_device_stats_get(D, &c);
        CHECKF(r1.failed == 0 && r4.failed == 0 && r4.nsteps == 4, "%s: %d, %d failed, %d steps", modes[m],
               (int)r1.failed, (int)r4.failed, (int)r4.nsteps);
        CHECK(c.steps - b.steps == 4 && c.replays - b.replays == 4);
        CHECKF(c.captures - b.captures == 1 && c.instantiations - b.instantiations == 1,
               "%s: %lld captures, %lld instantiations", modes[m], (long long)(c.captures - b.captures),
               (long long)(c.instantiations - b.instantiations));
        int64_t up1 = b.uploaded - a.uploaded, up4 = c.uploaded - b.uploaded;
        CHECKF(up4 - up1 < up1 / 4, "%s: one step uploads %lld bytes, four %lld: the later steps re-upload state",
               modes[m], (long long)up1, (long long)up4);
        kernels_device_use_graphs(D, false);
        CHECK(device_run(D, "tiny-qwen3", modes[m], "cuda-lane:h200:int8", KERNELS_FAULT_NONE, 4, true, &rn) == 0);
        kernels_device_stats_get(D, &d);
        CHECK(d.replays == c.replays && d.steps - c.steps == 4);
        CHECK(rn.nsteps == r4.nsteps);
        for (int32_t i = 0; i < rn.nsteps && i < r4.nsteps; i++)
            CHECKF(rn.steps[i].nmse == r4.steps[i].nmse && rn.steps[i].max_abs == r4.steps[i].max_abs,
                   "%s step %d: graph and launches differ", modes[m], (int)i);
        kernels_device_use_graphs(D, true);
        kernels_tol_result_free(&r1);
        kernels_tol_result_free(&r4);
        kernels_tol_result_free(&rn);
    }
}

/* A graph past the device's memory is refused before any launch, saying how much it needs. */
static void test_device_oom(struct kernels_device *D)
{
    static const char text[] = "graph huge family=test mode=decode\n"
                               "tensor x f32 1073741824x64 input\n"
                               "tensor y f32 1073741824x64 activation observed\n"
                               "op y = scale(x) n=68719476736 factor=2\n";
    char err[IR_ERR_LEN] = "";
    struct ir_graph *g = ir_parse(text, sizeof text - 1, "huge.fc", err);
    CHECKF(g != NULL, "%s", err);
    if (!g)
        return;
    struct kernels_point p = {kernels_chip_find("h200"), KERNELS_ACTS_DEQUANT, SHIM_KEEP_F32, SHIM_KEEP_F32};
    char want[64];
    snprintf(want, sizeof want, "needs %lld bytes", (long long)kernels_device_need(&p, g));
    CHECK(kernels_device_need(&p, g) > 549755813888LL); /* x and y, 2^38 bytes each, and the flag word */
    CHECK(kernels_device_prepare(D, &p, g, err) == -1);
    CHECKF(strstr(err, want) && strstr(err, "free"), "%s", err);
    ir_graph_free(g);
}

int main(void)
{
    test_parse();
    test_backend_name();
    test_need();
    test_room_and_given();
    char why[IR_ERR_LEN] = "";
    int count = kernels_device_count(why);
    test_no_device_words(count, why);
    test_cli(count);
    if (count <= 0 && !check_failed) { /* one line: what passed, and why the rest did not run */
        printf("test_device: %d passed, 0 failed; the device tests skipped: %s\n", check_passed, why);
        return 77;
    }
    if (count <= 0)
        return check_done("test_device");
    char err[IR_ERR_LEN];
    struct kernels_device *D = kernels_device_open(0, err);
    CHECKF(D != NULL, "%s", err);
    if (D) {
        printf("test_device: on %s\n", kernels_device_backend(D));
        test_device_oom(D);
        test_device_fault(D);
        test_device_steps(D);
        test_device_zoo(D);
        kernels_device_close(D);
    }
    return check_done("test_device");
}
