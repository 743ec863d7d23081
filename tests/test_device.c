/* tests/test_device.c — the device runner. Everywhere: the --device value, the backend name, the memory a graph
 * needs, what a build without CUDA or a machine without a device says, and the CLI's errors and --version. On a
 * CUDA device (cudaGetDeviceCount finds one): every tiny model × mode × lane point within its bounds and equal to the
 * host lane bit for bit, a planted fault caught, a graph past the device's memory refused before any launch.
 * Without a device the suite says so in one line and exits 77 (ctest's skip) once everything else has passed. */
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

/* The memory need: every tensor's buffer (checkpoint rows in their block format) plus the largest launch's scratch;
 * an attention and a mixture take scratch, a norm none. */
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
    for (ir_tid t = 0; t < r->ntensors; t++) {
        const struct ir_tensor *T = &r->tensors[t];
        int64_t srows = T->transposed ? T->cols : T->rows, slen = T->transposed ? T->rows : T->cols;
        int64_t b = T->checkpoint ? srows * ir_ggml_row_bytes(T->format, slen) : 4 * ir_tensor_len(r, t);
        if (T->checkpoint && T->format == IR_FMT_Q8_0) { /* 34 bytes a block of 32 values */
            CHECK(b == ir_tensor_len(r, t) / 32 * 34);
            ckpt++;
        }
        bytes += b;
        CHECK(kernels_device_tensor_bytes(r, t) == b);
        words += kernels_device_words_bytes(r, t);
    }
    CHECK(words > 0); /* int8 activations: the quantize results' words, 32 values a block */
    for (int32_t i = 0; i < r->nops; i++) {
        int64_t s = kernels_device_scratch(&p, r, i);
        CHECK(s >= 0);
        most = s > most ? s : most;
        char sig[1024];
        kernels_launch_signature(&p, r, i, sig, sizeof sig);
        bool a = strstr(sig, " attention") != NULL, m = strstr(sig, " moe[") != NULL;
        CHECKF(a || m ? s > 0 : s == 0, "%s: scratch %lld", sig, (long long)s); /* only they take scratch here */
        attention = attention || a;
        moe = moe || m;
    }
    CHECK(ckpt > 0);
    CHECK(attention && moe);
    CHECKF(kernels_device_need(&p, r) == bytes + words + most, "need %lld, tensors %lld + words %lld + scratch %lld",
           (long long)kernels_device_need(&p, r), (long long)bytes, (long long)words, (long long)most);
    rules_optimized_free(&o);
    shim_free(shim);
    ir_graph_free(g);
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

/* One tolerance run of model/mode under shim `name` on device D with fault f planted; its result; 0 when it ran. */
static int device_tolerance(struct kernels_device *D, const char *model, const char *mode, const char *name,
                            enum kernels_fault f, struct kernels_tol_result *res)
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
    struct kernels_tol_input in = {o.graph, ref, g, &p, 7, 2, f, false, D};
    int rc = kernels_tolerance(&in, res, err);
    if (rc)
        fprintf(stderr, "%s %s under %s on %s: %s\n", model, mode, name, kernels_device_backend(D), err);
    ir_graph_free(ref);
    rules_optimized_free(&o);
    shim_free(shim);
    ir_graph_free(g);
    return rc;
}

/* Every tiny model × mode × activations × cache/state knobs: within bound and equal to the host lane. */
static void test_device_zoo(struct kernels_device *D)
{
    static const char *const models[] = {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe", "tiny-gemma2",
                                         "tiny-qwen3-next", "tiny-gpt-oss", "tiny-olmo2"};
    static const char *const modes[] = {"decode", "prefill:8", "batch:4"};
    static const char *const acts[] = {"dequant", "int8", "int8x2"};
    static const char *const knobs[] = {"cache=f16", "cache=f32:state=bf16", "cache=f16:fuse_quant=off"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        for (int k = 0; k < 3; k++)
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

/* A planted fault in the device's GEMV is caught: rows outside their bound and unequal to the host lane. */
static void test_device_fault(struct kernels_device *D)
{
    struct kernels_tol_result r;
    CHECK(device_tolerance(D, "tiny-llama", "decode", "cuda-lane:h200:dequant", KERNELS_FAULT_GEMV_ROW, &r) == 0);
    CHECKF(r.failed > 0, "%d rows, none failed", (int)r.nrows);
    kernels_tol_result_free(&r);
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
    CHECK(kernels_device_prepare(D, &p, g, err) == -1);
    CHECKF(strstr(err, "needs 549755813888 bytes"), "%s", err);
    ir_graph_free(g);
}

int main(void)
{
    test_parse();
    test_backend_name();
    test_need();
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
        test_device_zoo(D);
        kernels_device_close(D);
    }
    return check_done("test_device");
}
