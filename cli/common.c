/* cli/common.c — loading graphs from files or the zoo, writing outputs whole, usage errors, digests. */
#include "cli.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cli_lift cli_lift_defaults(void)
{
    struct cli_lift l;
    l.options = models_default_options();
    l.mode_set = false;
    return l;
}

/* Parse a positive int32 from s; 0 on success. */
static int parse_count(const char *s, int32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > INT32_MAX)
        return 1;
    *out = (int32_t)v;
    return 0;
}

int cli_lift_option(struct cli_lift *l, const char *name, const char *value)
{
    char err[IR_ERR_LEN];
    if (strcmp(name, "mode") == 0) {
        if (models_parse_mode(value, &l->options.mode, err)) {
            fprintf(stderr, "fusecheck: --mode: %s\n", err);
            return 1;
        }
        l->mode_set = true;
        return 0;
    }
    if (strcmp(name, "layers") == 0) {
        if (parse_count(value, &l->options.layers)) {
            fprintf(stderr, "fusecheck: --layers: expected a positive count, got '%s'\n", value);
            return 1;
        }
        return 0;
    }
    if (strcmp(name, "weights") == 0) {
        int f = ir_format_lookup(value, strlen(value));
        if (f < 0) {
            fprintf(stderr, "fusecheck: --weights: unknown format '%s' (f32 f16 bf16 q8_0 q4_0 q4_k q6_k)\n", value);
            return 1;
        }
        l->options.weights = (enum ir_format)f;
        return 0;
    }
    fprintf(stderr, "fusecheck: unknown lift option '%s'\n", name);
    return 1;
}

struct ir_graph *cli_load(const char *arg, const struct cli_lift *l)
{
    char err[IR_ERR_LEN];
    const struct models_config *c = models_find(arg);
    struct ir_graph *g = c ? models_lift(c, &l->options, err) : ir_parse_file(arg, err);
    if (!g)
        fprintf(stderr, "%s\n", err);
    return g;
}

int cli_write(const char *path, const char *data, size_t len)
{
    if (!path || strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "fusecheck: writing standard output: %s\n", strerror(errno));
            return 1;
        }
        return 0;
    }
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        abort();
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = false;
    if (ok && rename(tmp, path) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr, "fusecheck: writing %s: %s\n", path, strerror(errno));
        remove(tmp);
    }
    free(tmp);
    return ok ? 0 : 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fusecheck %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (fusecheck help %s)\n", cmd);
    return CLI_USAGE;
}

void cli_sha256_hex(const void *data, size_t len, char hex[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

void cli_git_revision(char *out, size_t cap)
{
    const char *env = getenv("FUSECHECK_GIT_REV");
    out[0] = '\0';
    if (env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    FILE *p = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r");
    if (!p)
        return;
    if (fgets(out, (int)cap, p))
        out[strcspn(out, "\n")] = '\0';
    pclose(p);
}
