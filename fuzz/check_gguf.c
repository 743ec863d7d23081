/* fuzz/check_gguf.c — the GGUF harness's checks: any bytes go to the reader. A refusal names its byte; a file that
 * reads keeps every tensor's bytes inside the input, every array's items readable, and, when its metadata names a
 * family small enough to lift, lifts (or is refused naming the tensor or the key) with values from its own bytes. */
#include "fuzz.h"
#include "models/models.h"

#include <stdlib.h>
#include <string.h>

/* The most parameters a file's model may have for the harness to lift it and fill its values. */
#define LIFT_PARAMS ((int64_t)1 << 22)

/* Read the first items of every array value (nested ones too); whether each read. */
static bool items_read(const struct ir_gguf_value *v, int depth)
{
    if (v->type != IR_GGUF_ARRAY)
        return true;
    struct ir_gguf_value item;
    for (uint64_t i = 0; i < v->n && i < 16; i++)
        if (ir_gguf_array_item(v, i, &item) != 0 || depth > IR_GGUF_MAX_DEPTH || !items_read(&item, depth + 1))
            return false;
    return true;
}

/* Lift the file's model (when its configuration reads and is small) and fill its values from the file. */
static int lift_check(const struct ir_gguf *file, struct fuzz_finding *f)
{
    char err[IR_ERR_LEN];
    struct models_config *c = models_gguf_config(file, err);
    int64_t params = c ? models_param_count(c) : -1;
    bool small = c && params >= 0 && params < LIFT_PARAMS && c->layers <= 4 && c->ctx <= 256;
    models_config_free(c);
    if (!small)
        return 0;
    struct models_options o = models_default_options();
    struct ir_graph *g = models_gguf_lift(file, &o, err);
    int bad = 0;
    if (!g && !strstr(err, "input"))
        bad = fuzz_fail(f, "gguf", "lift-message", "a refused lift does not name the file: %s", err);
    if (g && ir_validate(g, err) != 0)
        bad = fuzz_fail(f, "gguf", "lift-valid", "a lifted file's graph is invalid: %s", err);
    if (g && !bad && ir_values_plan_bytes(g) >= 0 && ir_values_plan_bytes(g) < ((int64_t)1 << 28)) {
        ir_values_use_gguf(file);
        struct ir_values *v = ir_values_new(g, 1, err);
        ir_values_use_gguf(NULL);
        ir_values_free(v);
    }
    ir_graph_free(g);
    return bad;
}

int fuzz_check_gguf(const uint8_t *data, size_t size, struct fuzz_finding *f)
{
    char err[IR_ERR_LEN];
    struct ir_gguf *file = ir_gguf_parse(data, size, "input", err);
    if (!file)
        return strncmp(err, "input: byte ", 12) == 0
                   ? 0
                   : fuzz_fail(f, "gguf", "message", "a refusal does not name its byte: %s", err);
    int bad = 0;
    for (int64_t k = 0; k < file->ntensors && !bad; k++) {
        const struct ir_gguf_tensor *t = &file->tensors[k];
        if (t->data < data || t->bytes > size || (size_t)(t->data - data) > size - t->bytes)
            bad = fuzz_fail(f, "gguf", "bounds", "tensor %lld's bytes lie outside the input", (long long)k);
    }
    for (int64_t k = 0; k < file->nkv && !bad; k++)
        if (!items_read(&file->kv[k].value, 0))
            bad = fuzz_fail(f, "gguf", "items", "key %lld's array items do not read", (long long)k);
    if (!bad)
        bad = lift_check(file, f);
    ir_gguf_close(file);
    return bad;
}
