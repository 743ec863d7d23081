/* cli/llamacpp.c — the crosscheck's other side: a GGUF file run through llama.cpp's C API, the logits of every
 * position returned. Built with llama.cpp when CMake found it (FUSECHECK_HAVE_LLAMACPP, the folder of ggml's CPU
 * backends in FUSECHECK_LLAMACPP_BACKENDS); otherwise the same functions fail saying how to configure it. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Free a run's logits and zero it. */
void cli_llama_run_free(struct cli_llama_run *run)
{
    if (!run)
        return;
    free(run->logits);
    memset(run, 0, sizeof *run);
}

/* Check what every build refuses alike: no path, no run to fill, no tokens; then that the file opens for reading.
 * 0, or -1 with err. */
static int check_request(const char *path, const int32_t *tokens, int32_t n, struct cli_llama_run *out,
                         char err[IR_ERR_LEN])
{
    if (!path || !out) {
        snprintf(err, IR_ERR_LEN, "llama.cpp: no GGUF file or no run to fill");
        return -1;
    }
    if (n < 1 || !tokens) {
        snprintf(err, IR_ERR_LEN, "%s: llama.cpp: no tokens to run (n = %d)", path, (int)n);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, IR_ERR_LEN, "%s: %s", path, strerror(errno));
        return -1;
    }
    fclose(f);
    return 0;
}

#ifdef FUSECHECK_HAVE_LLAMACPP

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#ifndef FUSECHECK_LLAMACPP_ORIGIN
#define FUSECHECK_LLAMACPP_ORIGIN "a llama.cpp folder"
#endif

/* ── llama.cpp's log: dropped, but the latest error lines kept for the message of a failed call ─────────────── */

#define LOG_KEEP 4      /* error lines kept (the latest) */
#define LOG_LINE 320    /* bytes kept of each */

static struct {
    char lines[LOG_KEEP][LOG_LINE];
    int n;                      /* lines kept, at most LOG_KEEP (the oldest dropped first) */
    char partial[LOG_LINE];     /* an error line not yet ended by '\n' */
    size_t partial_len;
    enum ggml_log_level level;  /* the level of the message under way: a continuation (CONT) keeps it */
    int echo;                   /* FUSECHECK_LLAMACPP_LOG set: llama.cpp's whole log also goes to stderr */
} logbook;

/* Forget every kept line: a new call's messages begin. */
static void log_reset(void)
{
    logbook.n = 0;
    logbook.partial_len = 0;
    logbook.level = GGML_LOG_LEVEL_NONE;
}

/* Keep the partial line as the newest line (the oldest dropped when LOG_KEEP are kept). */
static void log_end_line(void)
{
    if (logbook.partial_len == 0)
        return;
    if (logbook.n == LOG_KEEP) {
        memmove(logbook.lines[0], logbook.lines[1], sizeof logbook.lines[0] * (LOG_KEEP - 1));
        logbook.n--;
    }
    memcpy(logbook.lines[logbook.n], logbook.partial, logbook.partial_len);
    logbook.lines[logbook.n][logbook.partial_len] = '\0';
    logbook.n++;
    logbook.partial_len = 0;
}

/* llama.cpp's and ggml's log callback: error text gathered into lines, everything else dropped (or echoed). */
static void log_take(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (logbook.echo)
        fputs(text, stderr);
    if (level != GGML_LOG_LEVEL_CONT) {
        log_end_line(); /* a new message ends one left without its '\n' */
        logbook.level = level;
    }
    if (logbook.level != GGML_LOG_LEVEL_ERROR)
        return;
    for (const char *c = text; *c; c++) {
        if (*c == '\n')
            log_end_line();
        else if (logbook.partial_len + 1 < LOG_LINE)
            logbook.partial[logbook.partial_len++] = (unsigned char)*c < ' ' ? ' ' : *c;
    }
}

/* A kept line without llama.cpp's leading "function_name: " and a repeated "error loading model: ". */
static const char *log_plain(const char *line)
{
    const char *c = line;
    while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')
        c++;
    if (c > line && c[0] == ':' && c[1] == ' ')
        line = c + 2;
    static const char twice[] = "error loading model: error loading model";
    if (strncmp(line, twice, sizeof twice - 1) == 0)
        line += strlen("error loading model: ");
    return line;
}

/* err = "path: llama.cpp: " and the kept error lines (oldest first, "; " between), else `fallback`. */
static void log_error(char err[IR_ERR_LEN], const char *path, const char *fallback)
{
    log_end_line();
    size_t at = (size_t)snprintf(err, IR_ERR_LEN, "%s: llama.cpp: ", path);
    if (logbook.n == 0) {
        if (at < IR_ERR_LEN)
            snprintf(err + at, IR_ERR_LEN - at, "%s", fallback);
        return;
    }
    for (int i = 0; i < logbook.n && at < IR_ERR_LEN; i++)
        at += (size_t)snprintf(err + at, IR_ERR_LEN - at, "%s%s", i ? "; " : "", log_plain(logbook.lines[i]));
}

/* ── The backend, the model, the context ──────────────────────────────────────────────────────────────────── */

/* Start llama.cpp once (its log taken, ggml's backends loaded from their folder): 0 when a CPU backend is there, else
 * -1 with err, now and on every later call. */
static int backend_start(char err[IR_ERR_LEN])
{
    static int state; /* 0: not started, 1: ready, -1: no CPU backend */
    if (state == 0) {
        const char *echo = getenv("FUSECHECK_LLAMACPP_LOG");
        logbook.echo = echo && *echo && strcmp(echo, "0") != 0;
        llama_log_set(log_take, NULL);
        llama_backend_init();
        ggml_backend_load_all_from_path(FUSECHECK_LLAMACPP_BACKENDS);
        state = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) ? 1 : -1;
    }
    if (state < 0) {
        snprintf(err, IR_ERR_LEN, "llama.cpp: no CPU backend: none was built in or loads from %s",
                 FUSECHECK_LLAMACPP_BACKENDS);
        return -1;
    }
    return 0;
}

/* The model's settings: weights in host memory on the CPU backend (no offload device, no layer on a GPU), mapped
 * from the file and read whole, in the file's own formats (no repacking into the CPU backend's extra layouts). */
static struct llama_model_params model_params(void)
{
    static ggml_backend_dev_t no_devices[1] = {NULL};
    struct llama_model_params p = llama_model_default_params();
    p.devices = no_devices;
    p.n_gpu_layers = 0;
    p.split_mode = LLAMA_SPLIT_MODE_NONE;
    p.load_mode = LLAMA_LOAD_MODE_MMAP;
    p.lazy_mode = LLAMA_LAZY_MODE_OFF;
    p.use_extra_bufts = false;
    return p;
}

/* The context's settings for a run of n tokens: one sequence, room for n positions (llama.cpp rounds the context
 * up to a multiple of 256), batches of up to n tokens with a logit row for each, one thread, f32 K and V caches, no
 * flash attention, nothing offloaded. */
static struct llama_context_params context_params(int32_t n)
{
    struct llama_context_params p = llama_context_default_params();
    uint32_t rows = (uint32_t)n;
    p.n_ctx = (rows + 255u) / 256u * 256u;
    p.n_batch = rows;
    p.n_ubatch = rows;
    p.n_seq_max = 1;
    p.n_outputs_max = 0;         /* as many outputs as the batch holds */
    p.n_outputs_max_per_seq = 0; /* and all of them in the one sequence */
    p.n_threads = 1;
    p.n_threads_batch = 1;
    p.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    p.type_k = GGML_TYPE_F32;
    p.type_v = GGML_TYPE_F32;
    p.embeddings = false;
    p.offload_kqv = false;
    p.op_offload = false;
    p.no_perf = true;
    return p;
}

/* Refuse a token outside 0..vocab-1 (llama.cpp is never asked to decode one). 0, or -1 with err. */
static int check_tokens(const char *path, const int32_t *tokens, int32_t n, int64_t vocab, char err[IR_ERR_LEN])
{
    for (int32_t i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= vocab) {
            snprintf(err, IR_ERR_LEN, "%s: llama.cpp: token %d at position %d is outside the vocabulary (0..%lld)",
                     path, (int)tokens[i], (int)i, (long long)vocab - 1);
            return -1;
        }
    }
    return 0;
}

/* Decode tokens[at..at+count-1] at their positions as one batch of sequence 0, each asking for its logits, and copy
 * the rows into logits (row at+i for token at+i); with last_only, only the batch's last token asks, its row copied
 * into logits' first row. 0, or -1 with err. */
static int decode_rows(struct llama_context *ctx, struct llama_batch *b, const char *path, const int32_t *tokens,
                       int32_t at, int32_t count, bool last_only, int64_t vocab, float *logits, char err[IR_ERR_LEN])
{
    b->n_tokens = count;
    for (int32_t i = 0; i < count; i++) {
        b->token[i] = tokens[at + i];
        b->pos[i] = at + i;
        b->n_seq_id[i] = 1;
        b->seq_id[i][0] = 0;
        b->logits[i] = !last_only || i == count - 1;
    }
    log_reset();
    int32_t rc = llama_decode(ctx, *b);
    if (rc != 0) {
        char why[64];
        snprintf(why, sizeof why, "llama_decode returned %d", (int)rc);
        log_error(err, path, why);
        return -1;
    }
    for (int32_t i = last_only ? count - 1 : 0; i < count; i++) {
        const float *row = llama_get_logits_ith(ctx, i);
        if (!row) {
            log_error(err, path, "no logits for a token that asked for them");
            return -1;
        }
        memcpy(logits + (size_t)(last_only ? 0 : at + i) * (size_t)vocab, row, (size_t)vocab * sizeof *row);
    }
    return 0;
}

/* Run the n tokens through ctx into logits (n × vocab): one decode a token, or one of them all. 0, or -1 with err. */
static int decode_all(struct llama_context *ctx, const char *path, const int32_t *tokens, int32_t n,
                      bool step_by_step, bool last_only, int64_t vocab, float *logits, char err[IR_ERR_LEN])
{
    int32_t per = step_by_step ? 1 : n;
    struct llama_batch b = llama_batch_init(per, 0, 1);
    int rc = 0;
    for (int32_t at = 0; at < n && rc == 0; at += per)
        rc = decode_rows(ctx, &b, path, tokens, at, per, last_only, vocab, logits, err);
    llama_batch_free(b);
    return rc;
}

/* Which llama.cpp fusecheck runs: ggml's commit and version as the library reports them, and where it came from. */
const char *cli_llama_version(void)
{
    static char text[160];
    if (!text[0])
        snprintf(text, sizeof text, "llama.cpp %s (ggml %s, %s)", ggml_commit(), ggml_version(),
                 FUSECHECK_LLAMACPP_ORIGIN);
    return text;
}

/* Whether fusecheck was built with llama.cpp: yes. */
bool cli_llama_available(void) { return true; }

/* Run the tokens through the model (step by step, or one batch with every row's logits or the last row's alone). */
static int llama_run(const char *gguf_path, const int32_t *tokens, int32_t n, bool step_by_step, bool last_only,
                     struct cli_llama_run *out, char err[IR_ERR_LEN])
{
    if (out)
        memset(out, 0, sizeof *out);
    if (check_request(gguf_path, tokens, n, out, err) != 0 || backend_start(err) != 0)
        return -1;
    log_reset();
    struct llama_model *model = llama_model_load_from_file(gguf_path, model_params());
    if (!model) {
        log_error(err, gguf_path, "the model did not load");
        return -1;
    }
    int rc = -1;
    struct llama_context *ctx = NULL;
    float *logits = NULL;
    int64_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (vocab < 1) {
        snprintf(err, IR_ERR_LEN, "%s: llama.cpp: the model has no vocabulary", gguf_path);
        goto done;
    }
    if (check_tokens(gguf_path, tokens, n, vocab, err) != 0)
        goto done;
    if ((uint64_t)vocab > SIZE_MAX / sizeof(float) / (uint64_t)n ||
        !(logits = malloc((size_t)n * (size_t)vocab * sizeof(float)))) {
        snprintf(err, IR_ERR_LEN, "%s: llama.cpp: out of memory for %d × %lld logits", gguf_path, (int)n,
                 (long long)vocab);
        goto done;
    }
    log_reset();
    ctx = llama_init_from_model(model, context_params(n));
    if (!ctx) {
        log_error(err, gguf_path, "the context was not made");
        goto done;
    }
    if (decode_all(ctx, gguf_path, tokens, n, step_by_step, last_only, vocab, logits, err) != 0)
        goto done;
    out->vocab = vocab;
    out->n = last_only ? 1 : n;
    out->logits = logits;
    logits = NULL;
    rc = 0;
done:
    free(logits);
    if (ctx)
        llama_free(ctx);
    llama_model_free(model);
    return rc;
}

/* Run the tokens through the GGUF file's model in llama.cpp (cli.h says how). */
int cli_llama_logits(const char *gguf_path, const int32_t *tokens, int32_t n, bool step_by_step,
                     struct cli_llama_run *out, char err[IR_ERR_LEN])
{
    return llama_run(gguf_path, tokens, n, step_by_step, false, out, err);
}

/* The tokens as one batch, the last row's logits alone (cli.h says how). */
int cli_llama_last_logits(const char *gguf_path, const int32_t *tokens, int32_t n, struct cli_llama_run *out,
                          char err[IR_ERR_LEN])
{
    return llama_run(gguf_path, tokens, n, false, true, out, err);
}

#else /* built without llama.cpp */

/* Whether fusecheck was built with llama.cpp: no. */
bool cli_llama_available(void) { return false; }

/* Which llama.cpp fusecheck runs: none. */
const char *cli_llama_version(void) { return "none: built without llama.cpp"; }

/* Refuse: there is no llama.cpp to run the file through; the message says how to build with it. */
int cli_llama_logits(const char *gguf_path, const int32_t *tokens, int32_t n, bool step_by_step,
                     struct cli_llama_run *out, char err[IR_ERR_LEN])
{
    (void)step_by_step;
    if (out)
        memset(out, 0, sizeof *out);
    if (check_request(gguf_path, tokens, n, out, err) != 0)
        return -1;
    snprintf(err, IR_ERR_LEN,
             "%s: fusecheck was built without llama.cpp: run ci/llamacpp and configure again (FUSECHECK_LLAMACPP=AUTO "
             "or ON), or configure with -DFUSECHECK_LLAMACPP=/path/to/llama.cpp",
             gguf_path);
    return -1;
}

/* Refuse, as cli_llama_logits does. */
int cli_llama_last_logits(const char *gguf_path, const int32_t *tokens, int32_t n, struct cli_llama_run *out,
                          char err[IR_ERR_LEN])
{
    return cli_llama_logits(gguf_path, tokens, n, false, out, err);
}

#endif
